"""The bad-input corpus: every case is one line naming the problem, exit code 2, no traceback, no output.

Files live in tests/bad_inputs/. Each case is a command line; ``{bad}`` is that
folder, ``{out}`` a fresh output path that must not exist afterwards, and
``{tmp}`` a scratch folder. Cases run in-process through ``sim.cli.main`` so
that an uncaught exception fails the test; a sample also runs as a real process.
"""

import subprocess
import sys
from pathlib import Path

import pytest
from prunesim.cli import main

BAD = Path(__file__).parent / "bad_inputs"

CASES = [
    # scenario files
    ("truncated TOML", "run {bad}/truncated.toml --out {out}", "malformed TOML"),
    ("wrong type", "run {bad}/wrong_type.toml --out {out}", "turns: must be an integer"),
    ("NaN", "run {bad}/nan.toml --out {out}", "budget: must be an integer"),
    ("infinity", "run {bad}/inf.toml --out {out}", "trigger: must be an integer"),
    ("huge number", "run {bad}/huge.toml --out {out}", "turns: 99999999999999999 is out of range"),
    ("negative size", "run {bad}/negative_size.toml --out {out}", "workload.tool_output.mean: must be positive"),
    ("unknown key", "run {bad}/unknown_key.toml --out {out}", "windows: unknown key"),
    ("unknown policy in file", "run {bad}/unknown_policy.toml --out {out}", "policy: unknown policy 'magic'"),
    ("budget above window", "run {bad}/budget_above_window.toml --out {out}", "budget: 24000 is above the window"),
    ("binary file", "run {bad}/binary.toml --out {out}", "not a text file"),
    ("event after the last turn", "run {bad}/event_after_end.toml --out {out}", "workload.events[0].turn"),
    ("unknown fallback", "run {bad}/bad_fallback.toml --out {out}", "gate.fallback: must be one of"),
    ("fraction above one", "run {bad}/quality_above_one.toml --out {out}", "selection_quality: must be between"),
    ("directory as scenario", "run {bad} --out {out}", "is a directory"),
    ("missing scenario file", "run {bad}/nope.toml --out {out}", "no such scenario file"),
    ("dangling symlink", "run {tmp}/dangling.toml --out {out}", "no such scenario file"),
    ("unknown shipped scenario", "run not-a-scenario --out {out}", "unknown scenario"),
    # command lines
    ("unknown policy flag", "run oscillation-40 --policy magic --out {out}", "unknown policy 'magic'"),
    ("--set without =", "run oscillation-40 --set trigger --out {out}", "expected key=value"),
    ("--set empty value", "run oscillation-40 --set trigger= --out {out}", "empty value"),
    ("--set NaN", "run oscillation-40 --set decision.rationale_per_span=nan --out {out}", "finite"),
    ("--set unknown key", "run oscillation-40 --set nonsense.key=1 --out {out}", "nonsense"),
    ("--set negative size", "run oscillation-40 --set window=-5 --out {out}", "window: must be positive"),
    ("--set trigger above budget", "run oscillation-40 --set trigger=30000 --out {out}", "above the budget"),
    ("negative seed", "run oscillation-40 --seed -4 --out {out}", "--seed"),
    ("unknown flag", "run oscillation-40 --turbo --out {out}", "unrecognized arguments"),
    ("bad seeds range", "replay oscillation --seeds 9:3", "--seeds"),
    ("seeds not numbers", "replay oscillation --seeds a:b", "--seeds"),
    ("unknown replay", "replay everything", "unknown replay"),
    ("unknown command", "frobnicate", "invalid choice"),
    ("compare unknown policy", "compare oscillation-40 --policies naive,magic", "unknown policy 'magic'"),
    # the runtime policies and the leaderboard
    ("leaderboard unknown policy", "leaderboard --scenario oscillation-40 --policies all,magic --out {out}",
     "unknown policy 'magic'"),
    ("keep below zero", "leaderboard --scenario oscillation-40 --set clear_tool_uses.keep=-1 --out {out}",
     "clear_tool_uses.keep: must not be negative"),
    ("compaction threshold above the window",
     "run oscillation-40 --policy llm-summary --set llm_summary.threshold=40000 --set llm_summary.unit=tokens "
     "--out {out}", "llm_summary.threshold: 40000 is above the window 32000"),
    ("eviction above the window", "run oscillation-40 --policy memory-pressure:letta "
     "--set memory_pressure.evict_at=1.1 --out {out}", "above the window"),
    # sweeps and aggregation
    ("empty grid", "sweep oscillation-40 --grid trigger= --seeds 0:2 --out {out}", "trigger: has no values"),
    ("empty range", "sweep oscillation-40 --grid trigger=5:1:1 --seeds 0:2 --out {out}", "the range is empty"),
    ("unknown grid parameter", "sweep oscillation-40 --grid trigerr=1,2 --seeds 0:2 --out {out}", "trigerr"),
    ("grid over a table", "sweep oscillation-40 --grid workload=1,2 --seeds 0:2 --out {out}", "is a table"),
    ("grid value given twice", "sweep oscillation-40 --grid trigger=20000,20000 --out {out}", "given twice"),
    ("negative grid value", "sweep oscillation-40 --grid turns=-1,2 --seeds 0:2 --out {out}", "must be positive"),
    ("sweep unknown policy", "sweep oscillation-40 --grid trigger=1,2 --policies magic --out {out}", "magic"),
    ("aggregate a folder that is no sweep", "aggregate {bad}", "sweep"),
    # workload files
    ("truncated workload", "run --workload {bad}/truncated.workload.jsonl --policy naive --out {out}", "malformed"),
    ("negative tokens", "run --workload {bad}/negative.workload.jsonl --policy naive --out {out}", "tokens"),
    ("NaN tokens", "run --workload {bad}/nan.workload.jsonl --policy naive --out {out}", "tokens"),
    ("string tokens", "run --workload {bad}/wrong_type.workload.jsonl --policy naive --out {out}", "tokens"),
    ("negative turn", "run --workload {bad}/negative_turn.workload.jsonl --policy naive --out {out}", "turn"),
    ("unknown part kind", "run --workload {bad}/unknown_kind.workload.jsonl --policy naive --out {out}", "teleport"),
    ("workload is a directory", "run --workload {bad} --policy naive --out {out}", "directory"),
    # transcripts
    ("truncated transcript", "import {bad}/truncated.traj.json --out {out}", "malformed JSON"),
    ("unknown transcript shape", "import {bad}/wrong_shape.traj --out {out}", "unknown transcript format"),
    ("empty transcript", "import {bad}/empty.json --out {out}", "malformed JSON"),
    ("missing transcript", "import {bad}/nothing-here.json --out {out}", "nothing-here.json"),
    ("missing calibration file", "import {bad}/truncated.traj.json --calibration {bad}/nope.json --out {out}",
     "no such calibration file"),
    ("calibration file that is no calibration", "fidelity {bad} --calibration {bad}/empty.json", "calibration"),
    ("unknown sidechains choice", "replay-dir {bad} --policies noop --sidechains some --out {out}", "--sidechains"),
    ("negative folds", "fidelity {bad} --folds -2", "--folds"),
]


@pytest.fixture
def paths(tmp_path):
    (tmp_path / "dangling.toml").symlink_to(tmp_path / "gone.toml")
    return {"bad": str(BAD), "out": str(tmp_path / "out"), "tmp": str(tmp_path)}


def test_the_corpus_has_at_least_thirty_cases():
    assert len(CASES) >= 30


@pytest.mark.parametrize("name, argv, words", CASES, ids=[c[0] for c in CASES])
def test_bad_input(name, argv, words, paths, capsys):
    args = argv.format(**paths).split()
    assert main(args) == 2
    captured = capsys.readouterr()
    err_lines = [line for line in captured.err.splitlines() if line.startswith("prunesim: error:")]
    assert err_lines and words in err_lines[0], captured.err
    assert "Traceback" not in captured.err
    assert not Path(paths["out"]).exists()


REAL = ["run {bad}/truncated.toml --out {out}", "import {bad}/truncated.traj.json --out {out}"]


@pytest.mark.parametrize("argv", REAL)
def test_a_real_process_prints_one_line(argv, paths):
    proc = subprocess.run([sys.executable, "-m", "prunesim", *argv.format(**paths).split()], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("prunesim: error:") == 1 and "Traceback" not in proc.stderr
    assert not Path(paths["out"]).exists()
