"""Fidelity: replayed context against the API's prompt-token counts, cross-validated."""

from __future__ import annotations

import json
import shutil
import sys
import tracemalloc
from pathlib import Path

import pytest
from prunesim.cli import main
from prunesim.io.transcripts import calibration as cal
from prunesim.io.transcripts import tokens
from prunesim.io.transcripts import workload as wl
from prunesim.studies import fidelity
from prunesim.studies import transcript_replay as replay
from shared_traces import needs, traces_dir

FIXTURES = Path(__file__).resolve().parent / "fixtures"




def test_errors_leave_out_anchored_calls():
    (data,) = replay.iter_workloads(FIXTURES / "claude-code" / "session.jsonl", calibration="none")
    c = fidelity.calls_of(data)
    assert c.anchored == 1 and len(c.api) == 3  # call 1 sized the hidden system part: not a prediction
    assert c.api == [1308.0, 1351.0, 965.0]
    context = wl.context_before_calls(wl.sized_as(data, "calibrated"))  # fidelity judges the size model
    assert c.ours == [float(x) for x in context[1:]]
    assert c.error == pytest.approx(sum(abs(x - p) / p for x, p in zip(c.ours, c.api, strict=True)) / 3)


def test_context_before_each_call_includes_the_initial_parts():
    (data,) = replay.iter_workloads(FIXTURES / "mini.traj.json")
    c = fidelity.calls_of(data)
    initial = sum(p.get("calibrated", p["tokens"]) for p in data.parts if p["turn"] == 0)
    assert c.ours[0] == initial > 0
    assert c.api == [60, 110, 130, 190, 200, 215]
    assert c.ours == sorted(c.ours)  # nothing dropped: the window only grows


def test_transcripts_without_api_counts_are_skipped(capsys):
    assert main(["fidelity", str(FIXTURES / "tiny.traj"), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["transcripts"] == 0 and rep["skipped"] == 1


def test_fidelity_json_names_its_figures(capsys):
    assert main(["fidelity", str(FIXTURES / "openhands.jsonl"), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["transcripts"] == 2 and rep["headline"] == "as_imported"  # two runs: too few to lead with a fit
    assert rep["cross_validated"]["transcripts"] == 2  # but both were still cross-validated, one fold each
    assert 0 <= rep["median_error"] <= rep["p90_error"] < 1
    assert rep["median_error"] == rep["as_imported"]["median_error"]


def test_a_folder_with_bad_files_reports_them_and_exits_2_unless_they_are_skipped(tmp_path, capsys):
    assert main(["fidelity", str(FIXTURES), "--json"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "nothing written" in out.err.splitlines()[-1]  # no report over part of the folder
    assert main(["fidelity", str(FIXTURES), "--json", "--skip-bad"]) == 0
    out = capsys.readouterr()
    rep = json.loads(out.out)
    assert rep["failed"] == len(list((FIXTURES / "bad").iterdir()))
    assert sum(line.startswith("prunesim: error:") for line in out.err.splitlines()) == rep["failed"]
    assert main(["fidelity", str(FIXTURES / "bad")]) == 2


def _sessions(folder: Path, n: int) -> None:
    """``n`` sessions s0.jsonl.. in ``folder``: the fixture, each with its own first prompt (a copy is one run)."""
    lines = (FIXTURES / "claude-code" / "session.jsonl").read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if '"type": "user"' in line)
    for i in range(n):
        record = json.loads(lines[first])
        record["message"]["content"] = f"{record['message']['content']} (session {i})"
        (folder / f"s{i}.jsonl").write_text("".join([*lines[:first], json.dumps(record) + "\n", *lines[first + 1:]]))


def test_cross_validation_never_measures_a_transcript_with_parameters_fitted_on_it(monkeypatch, tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    _sessions(folder, 6)  # six sessions that differ in one prompt: the folds must keep them apart
    trained: list[set[str]] = []
    measured: list[tuple[str, int]] = []
    real_fit, real_calls = cal.fit, fidelity.calls_of_assembly

    def spy_fit(data, tokenizer, name="fitted", fitted_on=""):
        trained.append({s.name for s in data()})
        return real_fit(data, tokenizer, name, fitted_on)

    def spy_calls(s, out, fmt, profile):
        measured.append((s.name, len(trained) - 1))
        return real_calls(s, out, fmt, profile)

    monkeypatch.setattr(cal, "fit", spy_fit)
    monkeypatch.setattr(fidelity, "calls_of_assembly", spy_calls)
    with fidelity.Study("pieces", folds=3) as study:
        rep = study.run(replay.expand([folder]))
    assert len(trained) == 3 and rep["cross_validated"]["transcripts"] == 6
    assert sorted(name for name, _ in measured) == [f"s{i}" for i in range(6)]
    for name, fit_index in measured:
        assert name not in trained[fit_index]
    # folds by sorted name: s0 and s3 share one, and are measured with the fit on the four others
    assert trained[0] == {"s1", "s2", "s4", "s5"}


def test_fit_out_writes_a_calibration_that_import_reads_back(tmp_path, capsys):
    folder = tmp_path / "runs"
    folder.mkdir()
    _sessions(folder, 3)
    fitted = tmp_path / "mine.json"
    assert main(["fidelity", str(folder), "--fit-out", str(fitted), "--calibration", "none"]) == 0
    profiles = cal.load_profiles(fitted)
    assert [p.name for p in profiles] == ["claude-code"] and "pieces" in profiles[0].by_tokenizer
    capsys.readouterr()
    assert main(["import", str(folder / "s0.jsonl"), "--calibration", str(fitted), "--out",
                 str(tmp_path / "w.jsonl")]) == 0
    assert wl.read(tmp_path / "w.jsonl").header["calibration"] == "claude-code"
    assert main(["import", str(folder / "s0.jsonl"), "--calibration", str(fitted), "--tokenizer", "chars",
                 "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "no entry for tokenizer 'chars'" in capsys.readouterr().err


@pytest.mark.parametrize("content, problem", [
    ("{", "malformed JSON"),
    ('{"prunesim_calibration": 9, "profiles": []}', "not a prunesim calibration file"),
    ('{"prunesim_calibration": 1, "profiles": [{"name": "x", "tokenizers": {"pieces": {"weights": {"user": [-1]},'
     ' "frames": {}}}}]}', "weights.user"),
    ('{"prunesim_calibration": 1, "profiles": [{"name": "x", "tokenizers": {"gpt-9": {}}}]}', "unknown tokenizer"),
])
def test_a_bad_calibration_file_is_one_line(tmp_path, capsys, content, problem):
    path = tmp_path / "c.json"
    path.write_text(content)
    assert main(["fidelity", str(FIXTURES / "mini.traj.json"), "--calibration", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and problem in err and str(path) in err


def test_a_progress_bar_shows_for_a_folder_of_more_than_a_few_files(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "runs"
    folder.mkdir()
    for i in range(6):
        shutil.copy(FIXTURES / "mini.traj.json", folder / f"m{i}.traj.json")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert main(["fidelity", str(folder), "--folds", "0"]) == 0
    assert "0/6 [" in capsys.readouterr().err  # tqdm's bar over the six files
    assert main(["replay-dir", str(folder), "--policies", "noop", "--out", str(tmp_path / "r.csv")]) == 0
    assert "0/6 [" in capsys.readouterr().err
    for path in list(folder.iterdir())[3:]:
        path.unlink()
    assert main(["fidelity", str(folder), "--folds", "0"]) == 0
    assert "/3 [" not in capsys.readouterr().err  # three files: no bar


def _peak(command: list[str]) -> int:
    tracemalloc.start()
    try:
        assert main(command) == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("command", ["fidelity", "replay-dir"])
def test_peak_memory_is_flat_in_the_number_of_files(tmp_path, capsys, command):
    # One ~70 kB run copied 3 and 12 times: the peak is one file's, not the folder's.
    big = json.loads((FIXTURES / "mini.traj.json").read_text())
    for m in big["messages"]:
        if m["role"] == "user" and m["content"].startswith("<returncode>"):
            m["content"] += "\n" + "line of output from the tool 12345\n" * 300
    peaks = []
    for n in (3, 12):
        folder = tmp_path / f"n{n}"
        folder.mkdir()
        for i in range(n):
            (folder / f"r{i}.traj.json").write_text(json.dumps(big))
        args = ["--folds", "0"] if command == "fidelity" else ["--policies", "noop", "--out", str(folder / "r.csv")]
        if not peaks:
            assert main([command, str(folder), *args]) == 0  # first use loads modules and profiles: not measured
        # The lower of two runs: a cache that fills once (from whichever test ran before) is not a file kept.
        peaks.append(min(_peak([command, str(folder), *args]), _peak([command, str(folder), *args])))
        capsys.readouterr()
    # Keeping each file's text would more than double the peak from 3 to 12 files.
    assert peaks[1] < 1.25 * peaks[0], peaks


# -- the dev folders, cross-validated --------------------------------------------------------
DEV = traces_dir() / "mini-swe-agent-dev"
SESSIONS = traces_dir() / "claude-code-dev"


def cross_validated(folder: Path, tokenizer: str = tokens.DEFAULT) -> dict:
    with fidelity.Study(tokenizer, folds=5) as study:
        rep = study.run(replay.expand([folder]))
    assert rep["failed"] == 0 and rep["headline"] == "cross_validated"
    return rep["cross_validated"]


@needs("mini-swe-agent-dev")
def test_mini_swe_agent_fidelity_meets_its_goal_on_unseen_runs():
    rep = cross_validated(DEV)
    assert rep["transcripts"] == 42
    assert rep["median_error"] <= 0.025 and rep["p90_error"] <= 0.05, rep


@needs("claude-code-dev")
def test_claude_code_fidelity_meets_its_goal_on_unseen_sessions():
    rep = cross_validated(SESSIONS)
    assert rep["transcripts"] == 23
    assert rep["median_error"] <= 0.05 and rep["p90_error"] <= 0.10, rep


@needs("mini-swe-agent-dev")
@pytest.mark.skipif(not tokens.bpe_available(),
                    reason="needs bpe-openai: pip install '.[tokens]' (the test extra has it)")
def test_exact_bpe_fidelity_meets_the_goal_on_unseen_runs():
    rep = cross_validated(DEV, "o200k_base")
    assert rep["median_error"] <= 0.025 and rep["p90_error"] <= 0.05, rep
