"""prunesim compare: policies side by side over seeds."""

from __future__ import annotations

import json
import math

import pytest
from prunesim.cli import main
from prunesim.errors import UserError
from prunesim.io import scenario_files as sc
from prunesim.observe.metrics.intervals import wilson
from prunesim.runner import run_one
from prunesim.studies.compare import compare, quantile, reduce


def test_quantile_interpolates_and_survives_infinities():
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert quantile([5.0], 0.9) == 5.0
    assert quantile([1.0, math.inf, math.inf], 0.5) == math.inf
    assert quantile([1.0, 2.0, math.inf, math.inf], 0.9) == math.inf
    assert not math.isnan(quantile([math.inf] * 4, 0.5))


def test_reduce_gives_median_and_spread_per_numeric_metric():
    summaries = [{"passes": p, "oscillating": p > 2, "label": "x", "overhead_ratio": r}
                 for p, r in ((1, 0.5), (2, 1.0), (3, "inf"), (4, "inf"))]
    out = reduce(summaries)
    assert "label" not in out
    assert out["passes"] == {"median": 2.5, "p10": 1.3, "p90": pytest.approx(3.7)}
    # A yes/no metric is a share of seeds, not a median, with its Wilson 95% interval.
    assert out["oscillating"] == {"share": 0.5, "share_low": wilson(2, 4)[0], "share_high": wilson(2, 4)[1], "runs": 4}
    assert out["overhead_ratio"]["p90"] == math.inf


def test_compare_reduces_each_policy_over_the_same_seeds(oscillation):
    seeds = list(range(6))
    result = compare(oscillation, ["naive", "slack-gated"], seeds)
    assert result["policies"] == ["naive", "slack-gated"] and result["seeds"] == seeds
    json.dumps(result)  # plain data
    for policy in result["policies"]:
        m = result["metrics"][policy]
        for name in ("passes", "net_negative_passes", "peak_utilization", "refusals_decision_in_band"):
            assert m[name]["p10"] <= m[name]["median"] <= m[name]["p90"]
        passes = sorted(run_one(oscillation, policy, s, trace="none").summary["passes"] for s in seeds)
        assert m["passes"]["median"] == (passes[2] + passes[3]) / 2
    # the oracle gate runs no net-negative pass (the estimating one may: tests/test_slack_gated.py counts them)
    oracle = compare(sc.replace(oscillation, {"gate.knowledge": "oracle"}), ["slack-gated"], seeds)
    assert oracle["metrics"]["slack-gated"]["net_negative_passes"]["p90"] == 0
    # the same workload: with the gate consulted at the scenario's trigger, the first turn reaching it is the same
    same = compare(sc.replace(oscillation, {"gate.lead": 0}), ["naive", "slack-gated"], seeds)["metrics"]
    assert same["naive"]["first_trigger_turn"] == same["slack-gated"]["first_trigger_turn"]


def test_compare_rejects_an_unknown_policy(oscillation):
    with pytest.raises(UserError) as err:
        compare(oscillation, ["naive", "nope"], [0])
    assert err.value.where == "--policies"


def test_cli_prints_policies_side_by_side(capsys):
    assert main(["compare", "oscillation-40", "--seeds", "0:4"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("compare oscillation-40: 4 seeds 0..3")
    header = out[1].split()
    assert header == ["metric", "naive", "slack-gated"]
    rows = {line.split()[0]: line for line in out[2:]}
    assert "net_negative_passes" in rows and "refusals_insufficient_net" in rows
    assert rows["turns"].split()[1:] == ["40", "(40..40)", "40", "(40..40)"]


def test_cli_json_and_set(capsys):
    assert main(["compare", "oscillation-40", "--policies", "noop,slack-gated", "--seeds", "1,2",
                 "--set", "turns=12", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["policies"] == ["noop", "slack-gated"] and data["seeds"] == [1, 2]
    assert data["metrics"]["noop"]["turns"]["median"] == 12


def test_compare_matches_direct_runs_with_overrides(oscillation):
    scenario = sc.replace(oscillation, {"gate.fallback": "truncate"})
    result = compare(scenario, ["slack-gated"], [3])
    direct = run_one(scenario, "slack-gated", 3, trace="none").summary
    assert result["metrics"]["slack-gated"]["fallback_tokens"]["median"] == direct["fallback_tokens"]


@pytest.mark.parametrize("argv,needle", [
    (["compare", "oscillation-40", "--policies", "naive,nope"], "unknown policy 'nope'"),
    (["compare", "oscillation-40", "--policies", "naive,naive"], "given twice"),
    (["compare", "oscillation-40", "--policies", "naive,"], "comma-separated"),
    (["compare", "oscillation-40", "--seeds", "5:2"], "--seeds"),
    (["compare", "oscillation-40", "--set", "gate.fallback=nope"], "gate.fallback"),
    (["compare", "no-such-scenario"], "unknown scenario"),
])
def test_cli_bad_input_is_one_line_and_exit_2(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err
