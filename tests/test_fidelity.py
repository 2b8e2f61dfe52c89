"""Fidelity: replayed utilization against the API's prompt-token counts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from prunesim.cli import main
from prunesim.io.scenario_files import load
from prunesim.io.transcripts import tokens
from prunesim.studies import fidelity
from prunesim.studies import transcript_replay as replay

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def traces_dir() -> Path:
    env = os.environ.get("PRUNESIM_TRACES")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "traces"


def test_proportional_counts_give_zero_error_and_the_right_scale():
    calls = [fidelity.Calls("a", "m", [100, 200, 300], [150, 300, 450]),
             fidelity.Calls("b", "m", [10, 20], [15, 30])]
    rep = fidelity.report(calls, "chars")
    assert rep["scale"] == {"m": 1.5}
    assert rep["median_error"] == 0 and rep["p90_error"] == 0


def test_one_scale_per_model():
    calls = [fidelity.Calls("a", "m1", [100], [200]), fidelity.Calls("b", "m2", [100], [50])]
    assert fidelity.fit_scales(calls) == {"m1": 2.0, "m2": 0.5}


def test_utilization_before_each_call_includes_the_initial_spans():
    (data,) = replay.iter_workloads(FIXTURES / "mini.traj.json")
    c = fidelity.calls_of(data, load("transcript"))
    initial = sum(p["tokens"] for p in data.parts if p["turn"] == 0)
    assert c.ours[0] == initial > 0
    assert c.api == [60, 110, 130, 190, 200, 215]
    assert c.ours == sorted(c.ours)  # noop: the window only grows


def test_transcripts_without_api_counts_are_skipped(capsys):
    assert main(["fidelity", str(FIXTURES / "tiny.traj"), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["transcripts"] == 0 and rep["skipped"] == 1


def test_fidelity_json_names_its_figures(capsys):
    assert main(["fidelity", str(FIXTURES / "openhands.jsonl"), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["transcripts"] == 2
    assert 0 <= rep["median_error"] <= rep["p90_error"] < 1


SAMPLES = traces_dir() / "mini-swe-agent"


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared/traces samples not present")
def test_sample_fidelity_with_the_default_estimator(capsys):
    # Measured: median 3.5%, p90 7.2% (chars/3.3); kept as a regression bound.
    assert main(["fidelity", str(SAMPLES), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["transcripts"] == 3
    assert rep["median_error"] <= 0.04 and rep["p90_error"] <= 0.08


@pytest.mark.skipif(not SAMPLES.is_dir() or not tokens.bpe_available(), reason="samples or bpe-openai missing")
def test_sample_fidelity_meets_the_target_with_exact_bpe(capsys):
    assert main(["fidelity", str(SAMPLES), "--json", "--tokenizer", "o200k_base"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["median_error"] <= 0.03 and rep["p90_error"] <= 0.08
