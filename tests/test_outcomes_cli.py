"""prunesim outcomes fit|predict|validate as a user runs them: outputs, every policy, and one line for bad input."""

from __future__ import annotations

import json

import pytest
from cli_capture import cli
from outcome_fixtures import OH_HEAD, RAW, raw_rows, toy_file, toy_fit
from prunesim.policies import REGISTRY

KEYS = {"solve_rate", "median_turns", "total_cost", "capped_share"}


@pytest.fixture
def files(tmp_path):
    runs = toy_file(tmp_path, 6)
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps(toy_fit(replicates=2).to_json()), encoding="utf-8")
    return runs, fit


def predict(files, *extra):
    runs, fit = files
    return cli(*["outcomes", "predict", str(runs), "--experiment", RAW, "--agent", "openhands", "--fit",
                    str(fit), *extra])


def test_predict_prints_the_forecast_and_its_json_has_the_documented_shape(files):
    code, out, err = predict(files, "--policy", "observation-masking:openhands")
    assert code == 0, err
    assert "median turns" in out and "total cost, cached" in out and "failed to start" in out
    code, out, err = predict(files, "--policy", "observation-masking:openhands", "--set", "observation_masking.n=20",
                             "--json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data["arm"]) == KEYS and set(data["interval"]) == KEYS and set(data["raw"]) == KEYS
    assert data["n"] == 6 and data["fit"]["profile"] == "openhands" and data["fit"]["replicates"] == 2
    assert all(lo <= hi for lo, hi in data["interval"].values())
    assert data["cached_bill"]["cache_read"] == 0.25


@pytest.mark.parametrize("policy", [*sorted(REGISTRY), "llm-summary:complexity-trap+observation-masking:openhands"])
def test_predict_works_for_every_registered_policy(tmp_path, policy):
    runs = tmp_path / "two.csv"
    runs.write_text("\n".join([OH_HEAD, *raw_rows(3, seed=9)]) + "\n", encoding="utf-8")
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps(toy_fit(replicates=1).to_json()), encoding="utf-8")
    code, out, err = cli(*["outcomes", "predict", str(runs), "--experiment", RAW, "--agent", "openhands",
                              "--fit", str(fit), "--policy", policy, "--json"])
    assert code == 0, err
    assert set(json.loads(out)["arm"]) == KEYS


@pytest.mark.parametrize(("args", "message"), [
    (["--experiment", "nope", "--policy", "noop"], "--experiment: nope: not in"),
    (["--experiment", RAW, "--policy", "no-such-policy"], "unknown policy"),
    (["--experiment", RAW, "--policy", "noop", "--cache-read", "2"], "--cache-read: 2"),
    (["--experiment", RAW, "--policy", "observation-masking:openhands", "--set", "observation_masking.n=0"],
     "observation_masking.n"),
])
def test_predict_refuses_bad_input_in_one_line(files, args, message):
    runs, fit = files
    code, out, err = cli(*["outcomes", "predict", str(runs), "--agent", "openhands", "--fit", str(fit), *args])
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_predict_refuses_another_scaffolds_agent_and_a_broken_fit(files, tmp_path):
    code, out, err = predict(files, "--policy", "noop")
    assert code == 0
    runs, fit = files
    code, _, err = cli(*["outcomes", "predict", str(runs), "--experiment", RAW, "--agent", "swe-agent",
                            "--fit", str(fit), "--policy", "noop"])
    assert code == 2 and "is an arm of openhands" in err
    masked = tmp_path / "masked.csv"
    masked.write_text("\n".join([OH_HEAD, *[r.replace(RAW, "toy_maxiter_250-observation_masking-M_10-run_1")
                                            for r in raw_rows(3)]]) + "\n", encoding="utf-8")
    code, _, err = cli(*["outcomes", "predict", str(masked), "--experiment",
                         "toy_maxiter_250-observation_masking-M_10-run_1", "--agent", "openhands", "--fit", str(fit),
                         "--policy", "noop"])
    assert code == 2 and "is not a raw arm" in err
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": 1}', encoding="utf-8")
    code, _, err = cli(*["outcomes", "predict", str(runs), "--experiment", RAW, "--agent", "openhands",
                            "--fit", str(broken), "--policy", "noop"])
    assert code == 2 and "not an agent fit file" in err and len(err.strip().splitlines()) == 1


def test_fit_writes_its_file_and_refuses_a_folder_out(tmp_path):
    runs = tmp_path / "arms.csv"
    masked = [r.replace(RAW, "toy_maxiter_250-observation_masking-M_10-run_1") for r in raw_rows(8, seed=3)]
    runs.write_text("\n".join([OH_HEAD, *raw_rows(8, seed=3), *masked]) + "\n", encoding="utf-8")
    out = tmp_path / "fit.json"
    code, text, err = cli(*["outcomes", "fit", str(runs), "--replicates", "2", "--jobs", "1", "--out", str(out)])
    assert code == 0, err
    data = json.loads(out.read_text())
    assert data["inputs"] == {"arms.csv": data["inputs"]["arms.csv"]} and "openhands" in data["profiles"]
    assert "need_rate" in text
    code, _, err = cli(*["outcomes", "fit", str(runs), "--out", str(tmp_path)])
    assert code == 2 and "folder" in err
    code, _, err = cli(*["outcomes", "fit", str(runs), "--out", str(runs)])  # an input is never overwritten
    assert code == 2 and runs.read_text().startswith(OH_HEAD)


def test_validate_reports_the_forecast_beside_both_baselines(tmp_path):
    runs = tmp_path / "dev.csv"
    rows = [OH_HEAD, *raw_rows(10, seed=4)]
    for m in (10, 30):
        rows += [r.replace(RAW, f"toy_maxiter_250-observation_masking-M_{m}-run_1") for r in raw_rows(10, seed=m)]
    runs.write_text("\n".join(rows) + "\n", encoding="utf-8")
    code, out, err = cli(*["outcomes", "validate", str(runs), "--replicates", "2", "--jobs", "1", "--json"])
    assert code == 0, err
    code, two, err = cli(*["outcomes", "validate", str(runs), "--replicates", "2", "--jobs", "2", "--json"])
    assert code == 0 and two == out, "the same output on one process and on two"
    data = json.loads(out)
    assert data["score"]["arms"] == 2
    assert set(data["score"]) >= {"forecast", "null", "simple", "coverage", "forecast_direction"}
    assert {row["m"] for row in data["rows"]} == {10, 30}
