"""The outcome forecast: the null it must keep, its reaction, its determinism, its fit file, and the fit itself."""

from __future__ import annotations

import json

import numpy as np
import pytest
from outcome_fixtures import RAW, raw_rows, toy_file, toy_fit
from prunesim.errors import UserError
from prunesim.io import outcomes
from prunesim.studies import agent_fit, outcome_grid
from prunesim.studies import agent_kernel as kernel
from prunesim.studies.outcome_arms import figures, weighted_median


def raw_arm(tmp_path, n=12):
    return outcomes.read(toy_file(tmp_path, n)).arms[0]


def test_under_no_policy_the_forecast_is_the_raw_arm(tmp_path):
    """The null: noop changes nothing, so the forecast's figures are the raw arm's as recorded (the solve rate
    in expectation, the cost by the bills' calibration) whatever the agent's parameters."""
    raw = raw_arm(tmp_path)
    out = agent_fit.predict(raw, "noop", "openhands", toy_fit(rate=3.0))
    rec = figures(raw, "openhands")
    for key in ("solve_rate", "median_turns", "capped_share", "total_cost"):
        assert out["arm"][key] == pytest.approx(rec[key], rel=1e-9), key
    assert out["arm"]["total_cost_cached"] == pytest.approx(rec["total_cost"], rel=1e-9)
    assert out["raw"] == rec and out["n"] == raw.n and out["failed_to_start"] == 1


def test_masking_that_removes_what_the_agent_needs_lengthens_runs_and_costs_success(tmp_path):
    raw = raw_arm(tmp_path, 20)
    calm = agent_fit.predict(raw, "observation-masking:openhands", "openhands", toy_fit(rate=0.005))
    busy = agent_fit.predict(raw, "observation-masking:openhands", "openhands", toy_fit(rate=3.0))
    assert busy["arm"]["median_turns"] > calm["arm"]["median_turns"]
    assert busy["arm"]["capped_share"] > calm["arm"]["capped_share"]
    assert busy["arm"]["solve_rate"] < calm["arm"]["solve_rate"]
    for key, (lo, hi) in busy["interval"].items():
        assert lo <= hi, key


def test_a_forecast_is_the_same_twice_and_moves_with_its_seed(tmp_path):
    raw = raw_arm(tmp_path)
    a = agent_fit.predict(raw, "observation-masking:openhands", "openhands", toy_fit(), seed=3)
    b = agent_fit.predict(raw, "observation-masking:openhands", "openhands", toy_fit(), seed=3)
    c = agent_fit.predict(raw, "observation-masking:openhands", "openhands", toy_fit(), seed=4)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert a["arm"] == c["arm"] and a["interval"] != c["interval"]  # the point is the fit's; the noise is seeded


def test_the_engine_path_gives_the_fast_paths_forecast(tmp_path):
    raw = raw_arm(tmp_path, 4)
    fast = agent_fit.predict(raw, "observation-masking:openhands", "openhands", toy_fit(replicates=2))
    slow = agent_fit.predict(raw, "observation-masking:openhands", "openhands", toy_fit(replicates=2), engine=True)
    assert fast["path"] == "fast" and slow["path"] == "engine"
    assert fast["arm"] == slow["arm"] and fast["interval"] == slow["interval"]


def test_the_fit_file_round_trips_and_refuses_what_it_cannot_use(tmp_path):
    fitted = toy_fit()
    data = json.loads(json.dumps(fitted.to_json()))
    back = agent_fit.AgentFit.from_json(data, "x.json")
    assert back.to_json() == fitted.to_json()
    assert set(data["profiles"]["openhands"]) <= {"need_rate", "need_cv", "need_decay", "summary_fidelity",
                                                  "discordance", "lengthening_slope", "cap_success_solved",
                                                  "cap_success_unsolved"}
    other = json.loads(json.dumps(data))
    other["method"]["decays"] = [1.0]
    with pytest.raises(UserError, match="another grid"):
        agent_fit.AgentFit.from_json(other, "x.json")
    for broken, message in (({"format": 9}, "format"), ({**data, "outcomes": {"x": {}}}, "unknown scaffold"),
                            ({"format": 1}, "not an agent fit file")):
        with pytest.raises(UserError, match=message):
            agent_fit.AgentFit.from_json(broken, "x.json")
    bad = tmp_path / "fit.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(UserError, match="malformed JSON"):
        agent_fit.read_fit(str(bad))
    bad.write_text("[]", encoding="utf-8")
    with pytest.raises(UserError, match="a JSON object"):
        agent_fit.read_fit(str(bad))


def test_gamma_weights_are_a_distribution_with_the_asked_mean():
    for mean, cv in ((0.05, 0.5), (0.3, 1.0), (1.0, 2.0)):
        w = outcome_grid.gamma_weights(mean, cv)
        assert w.sum() == pytest.approx(1.0) and (w >= 0).all()
        assert (w * outcome_grid.NODES).sum() == pytest.approx(mean, rel=0.05)
    w = outcome_grid.gamma_weights(0.3, 0.0)
    assert w.max() == 1.0 and abs(outcome_grid.NODES[w.argmax()] / 0.3 - 1) < 0.3


def test_weighted_median_is_numpys_median_of_the_repeated_values():
    rng = np.random.default_rng(1)
    for _ in range(20):
        values = rng.integers(1, 50, rng.integers(1, 9)).astype(float)
        counts = rng.integers(0, 4, len(values))
        if counts.sum() == 0:
            continue
        assert weighted_median(values, counts) == np.median(np.repeat(values, counts))


def test_the_fit_recovers_the_agent_that_made_two_synthetic_arms(tmp_path):
    """Parameter recovery: two masking arms (windows of 10 and 40 events) made by the model itself at known values
    and fitted back. One window alone cannot tell a high rate that fades fast from a low one that lasts; two can:
    the true values lie within the bootstrap's range and the fitted decay is the true one's grid neighbour."""
    from prunesim.studies.outcome_sims import instance_seed, setup
    from prunesim.studies.outcome_workload import base_tokens, instances

    rng = np.random.default_rng(5)
    head = ("experiment,instance_id,cost,summary_cost,has_summary,summary_count,turn_count,mean_reasoning_tokens,"
            "mean_completion_tokens,mean_prompt_tokens,outcome")
    lines = raw_rows(70, seed=2, failed=0)
    raw = outcomes.parse("\n".join([head, *lines]) + "\n", "raw")[0]
    truth = dict(rate=0.8, cv=0.7, decay=7.0)
    inst = instances(raw, base_tokens([raw]))  # the base the fit estimates from the same rows
    shape = 1 / truth["cv"] ** 2
    rates = rng.gamma(shape, truth["rate"] / shape, raw.n)
    for window in (10, 40):
        s = setup("observation-masking:openhands", {"observation_masking.n": window}, "openhands")
        for i, name in enumerate(raw.instances):
            rec = kernel.run_one(int(inst.work[i]), int(inst.base[i]), int(inst.call[i]), int(inst.output[i]),
                                 int(inst.billed_output[i]), s.fast, s.summary, rates[i], truth["decay"], 250, 0.0,
                                 1, 250, True, instance_seed(name))
            lines.append(f"toy_maxiter_250-observation_masking-M_{window}-run_1,{name},1,0,False,0,"
                         f"{int(rec[0] + rec[1])},20,80,5000,{int(raw.solved[i] and rng.random() < 0.8)}")
    path = tmp_path / "synthetic.csv"
    path.write_text("\n".join([head, *lines]) + "\n")
    sf = agent_fit.fit(outcomes.read_all([path]), replicates=12, jobs=1).scaffolds["openhands"]
    assert len(sf.arms) == 2 and RAW not in sf.arms
    fitted_rates = [r.need_rate for r in sf.replicates] + [sf.params.need_rate]
    assert min(fitted_rates) <= truth["rate"] <= max(fitted_rates)
    near = np.argsort(np.abs(np.log(outcome_grid.DECAYS / truth["decay"])))[:2]
    assert sf.params.need_decay in outcome_grid.DECAYS[near]
