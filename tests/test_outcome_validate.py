"""The cross-validation's per-arm errors, its held-out outcome score, and the success fit's test on the slope."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from cli_capture import cli
from outcome_fixtures import OH_HEAD, RAW, raw_rows
from prunesim.studies import outcome_fit
from prunesim.studies.outcome_arms import FIGURES
from prunesim.studies.outcome_fit import KAPPAS, Params, fit_success, outcome_loglik, solve_probability
from prunesim.studies.outcome_runs import PairRuns
from prunesim.studies.outcome_validate import error_table, excess

SUBSET_RAW = "toy_maxiter_250-raw_agent-verified_50-run_1"
M10 = "toy_maxiter_250-observation_masking-M_10-run_1"
M10_TWIN = "toy_maxiter_250-observation_masking-M_10-verified_50-run_1"
M30 = "toy_maxiter_250-observation_masking-M_30-run_1"


@pytest.fixture(scope="module")
def validated(tmp_path_factory):
    """Three masking arms cross-validated: M = 10 on two instance sets (twins, one setting) and M = 30."""
    folder = tmp_path_factory.mktemp("dev")
    runs = folder / "dev.csv"
    rows = [OH_HEAD, *raw_rows(10, seed=4), *raw_rows(8, seed=5, experiment=SUBSET_RAW)]
    rows += [r.replace(RAW, M10) for r in raw_rows(10, seed=10)]
    rows += [r.replace(SUBSET_RAW, M10_TWIN) for r in raw_rows(8, seed=11, experiment=SUBSET_RAW)]
    rows += [r.replace(RAW, M30) for r in raw_rows(10, seed=30)]
    runs.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = folder / "cv.json"
    code, text, err = cli(*["outcomes", "validate", str(runs), "--replicates", "2", "--jobs", "1", "--per-arm",
                            "--out", str(out)])
    assert code == 0, err
    return text, json.loads(out.read_text())


def test_a_fold_never_fits_the_held_out_arm_nor_its_twin(validated):
    _, data = validated
    held = {row["experiment"]: row["fitted_on"] for row in data["rows"]}
    assert set(held) == {M10, M10_TWIN, M30}
    assert held[M10] == [M30] and held[M10_TWIN] == [M30]
    assert sorted(held[M30]) == sorted([M10, M10_TWIN])


def test_the_per_arm_table_averages_to_the_printed_errors(validated):
    text, data = validated
    table = error_table(data["rows"])
    assert len(table) == len(data["rows"]) + 1
    for who in ("forecast", "null", "simple"):
        for f in FIGURES:
            assert table[-1][1][who][f] == pytest.approx(data["score"][who][f])
            assert table[-1][1][who][f] == pytest.approx(np.mean([e[who][f] for _, e in table[:-1]]))
    # The printed mean row is the printed mean absolute errors, figure by figure.
    mae = {who: [float(x) for x in re.search(rf"^{who} +(.+)$", text, re.M).group(1).split()]
           for who in ("forecast", "null", "simple")}
    mean_row = [float(x) for x in re.search(r"^mean {20,}(.+)$", text, re.M).group(1).split()]
    printed = [mae[who][i] for i in range(len(FIGURES)) for who in ("forecast", "null", "simple")]
    assert mean_row == pytest.approx(printed, abs=0.006)


def test_the_arms_shares_sum_to_the_forecasts_excess_over_the_better_baseline(validated):
    _, data = validated
    score = data["score"]
    for f in FIGURES:
        best, shares = excess(data["rows"], f)
        assert score[best][f] <= score[{"null": "simple", "simple": "null"}[best]][f]
        assert sum(v for _, v in shares) == pytest.approx(score["forecast"][f] - score[best][f])


# -- the success fit on made-up runs ------------------------------------------------------------------------------
def made_up_runs(slope: float, n: int = 4000, seed: int = 1) -> tuple[PairRuns, Params]:
    """Runs whose outcomes follow the success model with ``slope``: half of them lengthened by L = 1 at every node,
    none capped, the raw arm solving 40%."""
    rng = np.random.default_rng(seed)
    nodes = 18
    y_raw = rng.random(n) < 0.4
    length = np.zeros((n, 1, 1, nodes))
    length[n // 2:] = 1.0
    params = Params(1.0, 1.0, 7.0, None, 0.3, 0.07, 0.45, slope)
    p = solve_probability(y_raw, float(y_raw.mean()), 0.45, slope, False, length[:, 0, 0, 0], 0.0, 0.0)
    y_pol = rng.random(n) < p
    runs = PairRuns(None, "openhands", 0, None, None, np.zeros((n, 1, 1, nodes, 1)), np.arange(n), np.arange(n),
                    None, np.zeros((n, 1, 1, nodes), dtype=bool), length, None, np.zeros(n, dtype=bool), y_raw,
                    y_pol)
    return runs, params


def loglik(runs: PairRuns, params: Params, kappa: float, slope: float) -> float:
    c = np.ones(len(runs.y_raw))
    p = outcome_fit.instance_chances(runs, c, params, np.array([kappa]), np.array([slope]))[0, 0]
    return float(np.log(np.where(runs.y_pol, p, 1 - p)).sum())


def test_the_slope_enters_only_when_the_outcomes_identify_it(monkeypatch):
    monkeypatch.setattr(outcome_fit.grid, "DECAYS", np.array([7.0]))
    flat, params = made_up_runs(0.0)
    kappa, slope = fit_success([flat], [np.ones(len(flat.y_raw))], params)
    assert slope == 0.0 and abs(kappa - 0.45) <= 0.1
    steep, params = made_up_runs(1.0)
    kappa, slope = fit_success([steep], [np.ones(len(steep.y_raw))], params)
    assert slope >= 0.5 and kappa in KAPPAS
    # 300 runs of a mild slope: the best slope (0.25) gains less than the test asks, so the fit keeps none.
    weak, params = made_up_runs(0.5, n=300, seed=3)
    c = [np.ones(300)]
    kappa, slope = fit_success([weak], c, params)
    monkeypatch.setattr(outcome_fit, "SLOPE_TEST", 0.0)
    free_kappa, free_slope = fit_success([weak], c, params)
    assert slope == 0.0 and free_slope > 0
    gain = 2 * (loglik(weak, params, free_kappa, free_slope) - loglik(weak, params, kappa, 0.0))
    assert 0 < gain <= 3.841


def test_the_held_out_outcome_score_prefers_the_model_that_made_the_outcomes(monkeypatch):
    monkeypatch.setattr(outcome_fit.grid, "DECAYS", np.array([7.0]))
    runs, truth = made_up_runs(1.5)
    wrong = Params(truth.need_rate, truth.need_cv, truth.need_decay, None, 0.3, 0.07, 0.45, 0.0)
    assert outcome_loglik(runs, truth) > outcome_loglik(runs, wrong)
    assert outcome_loglik(runs, truth) < 0


# -- prices that grow with the prompt -------------------------------------------------------------------------------
def priced_arm(growth: float, n: int = 60, seed: int = 7):
    """An arm whose runs cost 0.5/M per prompt token plus ``growth`` per token of their mean prompt, 2.5/M out."""
    from prunesim.io import outcomes

    rng = np.random.default_rng(seed)
    rows = [OH_HEAD]
    for i in range(n):
        turns, prompt, out = int(rng.integers(5, 120)), float(rng.uniform(4000, 60000)), 150
        cost = turns * prompt * (0.5e-6 + growth * prompt) + turns * out * 2.5e-6
        rows.append(f"{RAW},inst-{i},{cost:.8f},0,False,0,{turns},50,{out - 50},{prompt:.0f},0")
    return outcomes.parse("\n".join(rows) + "\n", "priced")[0]


def test_the_price_grows_with_the_prompt_only_where_the_rows_say_so():
    from prunesim.studies.outcome_workload import fit_prices

    flat = fit_prices(priced_arm(0.0))
    assert flat.growth == pytest.approx(0.0, abs=1e-15) and flat.input == pytest.approx(0.5e-6, rel=1e-3)
    growing = fit_prices(priced_arm(1e-11))
    assert growing.growth == pytest.approx(1e-11, rel=1e-3) and growing.input == pytest.approx(0.5e-6, rel=1e-2)
    assert growing.output == pytest.approx(2.5e-6, rel=1e-2) and growing.r2 > 0.999


def test_a_bill_with_growth_charges_a_shorter_prompt_less_per_token():
    from prunesim.studies.agent_kernel import N_COLUMNS
    from prunesim.studies.outcome_forecast import Bills
    from prunesim.studies.outcome_workload import Prices

    def record(calls: int, prompt: float) -> np.ndarray:
        rec = np.zeros(N_COLUMNS)
        rec[0], rec[6] = calls, prompt
        return rec

    bill = Bills(Prices(0.5e-6, 0.0, 1.0, 10, 1e-11), 1.0, 0.5e-6, 0.25)
    long, short = record(10, 10 * 40000.0), record(10, 10 * 10000.0)
    assert bill.uncached(long) / long[6] == pytest.approx(0.5e-6 + 1e-11 * 40000)
    assert bill.uncached(short) / short[6] == pytest.approx(0.5e-6 + 1e-11 * 10000)
    assert Bills(Prices(0.5e-6, 0.0, 1.0, 10), 1.0, 0.5e-6, 0.25).uncached(long) == pytest.approx(0.2)


def test_predict_names_the_growth_of_the_price_only_where_it_was_fitted(tmp_path):
    from outcome_fixtures import toy_fit

    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps(toy_fit(replicates=2).to_json()), encoding="utf-8")
    said = {}
    for growth in (0.0, 1e-11):
        arm = priced_arm(growth, n=20)
        runs = tmp_path / f"priced-{growth}.csv"
        rows = [f"{RAW},{name},{cost:.8f},0,False,0,{turns},50,100,{prompt:.0f},0" for name, cost, turns, prompt
                in zip(arm.instances, arm.cost, arm.turns, arm.prompt, strict=True)]
        runs.write_text("\n".join([OH_HEAD, *rows]) + "\n", encoding="utf-8")
        code, out, err = cli(*["outcomes", "predict", str(runs), "--experiment", RAW, "--agent", "openhands",
                               "--fit", str(fit), "--policy", "noop", "--json"])
        assert code == 0, err
        bill = json.loads(out)["cached_bill"]
        said[growth] = bill["input_growth_per_million_per_1k_prompt"]
        code, text, _ = cli(*["outcomes", "predict", str(runs), "--experiment", RAW, "--agent", "openhands",
                              "--fit", str(fit), "--policy", "noop"])
        assert code == 0 and ("of the run's mean prompt" in text) == (growth > 0)
        # Under no policy both bills are the raw arm's recorded cost, whatever the price's shape.
        assert json.loads(out)["arm"]["total_cost"] == pytest.approx(float(arm.cost.sum()), rel=1e-9)
    assert said[0.0] == 0.0 and said[1e-11] == pytest.approx(1e-11 * 1e9, rel=1e-2)
