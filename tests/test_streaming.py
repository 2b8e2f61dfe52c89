"""Streaming output: the files a streamed run writes, bounded memory, and interrupts."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prunesim.cli import main
from prunesim.io import scenario_files as scenario_mod
from prunesim.io.results import write_run
from prunesim.io.stream import StagedFiles, stream_run
from prunesim.model.editlog import read_records, verify_records
from prunesim.policies import REGISTRY
from prunesim.runner import run_one

ROOT = Path(__file__).resolve().parent.parent
POLICIES = sorted(REGISTRY)


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("seed", range(5))
def test_streamed_files_equal_the_recorded_ones_byte_for_byte(tmp_path, oscillation, seed):
    for policy in POLICIES:
        for mode in ("all", "turns"):
            recorded, streamed = tmp_path / f"r-{policy}-{mode}", tmp_path / f"s-{policy}-{mode}"
            write_run(run_one(oscillation, policy, seed, trace=mode), recorded)
            stream_run(oscillation, policy, seed, streamed, mode)
            assert files_of(streamed) == files_of(recorded), (policy, mode)


def test_trace_turns_writes_one_row_per_turn_and_none_only_the_header(tmp_path):
    assert main(["run", "oscillation-40", "--trace", "turns", "--out", str(tmp_path / "t")]) == 0
    rows = (tmp_path / "t" / "trace.csv").read_text().splitlines()
    assert len(rows) == 1 + 40 and all(",turn_end," in r for r in rows[1:])
    assert main(["run", "oscillation-40", "--trace", "none", "--out", str(tmp_path / "n")]) == 0
    assert (tmp_path / "n" / "trace.csv").read_text().count("\n") == 1
    passes = json.loads((tmp_path / "n" / "summary.json").read_text())["metrics"]["passes"]
    assert passes > 0
    # No trace, but the passes, events and model calls are still written: the same files as --trace turns.
    for name in ("ledger.csv", "events.csv", "calls.csv"):
        assert (tmp_path / "n" / name).read_bytes() == (tmp_path / "t" / name).read_bytes(), name
    assert (tmp_path / "n" / "ledger.csv").read_text().count("\n") == 1 + passes


def test_trace_without_out_is_refused(capsys):
    assert main(["run", "oscillation-40", "--trace", "all"]) == 2
    assert "--trace" in capsys.readouterr().err


def test_files_take_the_users_umask(tmp_path):
    old = os.umask(0o027)
    try:
        with StagedFiles(tmp_path / "out") as staged:
            staged.write("a.csv", "x\n")
            staged.commit()
    finally:
        os.umask(old)
    assert (tmp_path / "out" / "a.csv").stat().st_mode & 0o777 == 0o640


def test_an_error_mid_run_leaves_no_file_and_the_old_ones_untouched(tmp_path, oscillation, monkeypatch):
    out = tmp_path / "run"
    stream_run(oscillation, "tombstoned", 0, out)
    before = files_of(out)
    from prunesim.model import engine

    def broken(self, *args):
        raise RuntimeError("boom")

    monkeypatch.setattr(engine.Engine, "forget_unreferenced", broken)
    monkeypatch.setattr("prunesim.model.provenance.FORGET_AT", 1)
    with pytest.raises(RuntimeError):
        stream_run(oscillation, "tombstoned", 1, out)
    assert files_of(out) == before  # no temporary file left, nothing replaced


def _start(out: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "prunesim", "run", "oscillation-40", "--policy", "naive",
           "--set", "turns=2000000", "--out", str(out), *extra]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_for_staged_rows(out: Path, proc: subprocess.Popen) -> None:
    """Until the run has flushed rows to a staged file (it is mid-run, files open)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        # Staged in a temporary folder beside a new --out, or inside an existing one.
        staged = list(out.parent.glob("**/.trace.csv.*.tmp"))
        if staged and staged[0].stat().st_size > 1 << 20:
            return
        time.sleep(0.05)
    proc.kill()
    proc.communicate()
    raise AssertionError("the run never got going")


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_leaves_no_partial_file(tmp_path, sig, code):
    fresh = tmp_path / "fresh"
    proc = _start(fresh)
    _wait_for_staged_rows(fresh, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert not fresh.exists()  # nothing partial: no folder, no staged files beside it
    assert not list(tmp_path.glob(".*"))

    # Over an earlier run: the earlier files stay whole and unchanged.
    kept = tmp_path / "kept"
    assert main(["run", "oscillation-40", "--out", str(kept)]) == 0
    before = files_of(kept)
    proc = _start(kept, "--trace", "turns")
    _wait_for_staged_rows(kept, proc)
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    assert proc.returncode == code
    assert files_of(kept) == before
    assert not list(kept.glob(".*")) and not list(tmp_path.glob(".*"))


def test_the_edit_log_streams_and_verifies_after_a_long_run(tmp_path):
    # 10,000 turns write some 20,000 records, twenty times the tail the run keeps in memory: the file is
    # verified from its anchor over far more records than memory ever held, as after 100,000 turns.
    # A tombstone budget keeps the window from clogging with tombstones, so evictions go on all run long.
    # Three spans a turn (no turn unit), so that the records outnumber the kept tail twenty times.
    sc = scenario_mod.load("oscillation-40", {"turns": 10_000, "tombstone.budget": 2000, "workload.turn_unit": False})
    result, _ = stream_run(sc, "slack-gated+tombstoned", 0, tmp_path / "run", trace="none")
    s = result.summary
    assert s["edit_log_verified"] is True and s["edit_log_records"] > 20 * 1024 and s["tombstone_folds"] > 100
    path = tmp_path / "run" / "editlog.jsonl"
    with path.open() as fh:
        assert verify_records(read_records(fh)).records == s["edit_log_records"]
    # the check can fail: one edited record breaks it
    lines = path.read_text().splitlines(keepends=True)
    lines[len(lines) // 2] = lines[len(lines) // 2].replace('"turn": ', '"turn": 1', 1)
    bad = verify_records(read_records(lines))
    assert not bad.ok and bad.bad_seq == len(lines) // 2 + 1
    assert len(result.edit_log) <= 1024  # the run kept only a tail in memory


# VmHWM, the process's own peak resident memory: ru_maxrss would carry over the parent's peak (the
# test runner's) through exec on Linux. A short run first, then a run ten times as long in the same
# process: memory that grew with the run shows as the second peak above the first.
_MEASURE = """
import sys
from prunesim.cli import main

def peak():
    with open("/proc/self/status") as fh:
        return next(line.split()[1] for line in fh if line.startswith("VmHWM:"))

policy, out = sys.argv[1:]
for turns in (1000, 10000):
    args = ["run", "oscillation-40", "--policy", policy, "--set", f"turns={turns}", "--trace", "turns"]
    if main([*args, "--out", f"{out}-{turns}"]) != 0:
        raise SystemExit(1)
    print("peak_kb", peak())
"""
MEMORY_BOUND_KB = 100 * 1024  # the interpreter, numpy and SimPy take about 45 MB of it
# Growth allowed from 1,000 to 10,000 turns. Keeping one trace row per turn in memory (what the
# streaming recorder replaced) costs about 2.8 kB a turn: 25 MB over the 9,000 extra turns.
GROWTH_BOUND_KB = 6 * 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(),
                    reason="needs /proc (Linux): reads peak memory from /proc/self/status")
def test_memory_stays_flat_and_within_a_fixed_bound_under_every_policy(tmp_path):
    """Each policy in a fresh process, two at a time; peak resident memory (VmHWM) under the bound, and
    a run ten times as long adds no more than GROWTH_BOUND_KB to it."""
    peaks = {}
    pending = list(POLICIES)
    while pending:
        batch, pending = pending[:2], pending[2:]
        procs = {
            p: subprocess.Popen([sys.executable, "-c", _MEASURE, p, str(tmp_path / p.replace(":", "-"))],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for p in batch
        }
        for p, proc in procs.items():
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err
            short, long = (int(line.split()[1]) for line in out.splitlines() if line.startswith("peak_kb "))
            peaks[p] = (short, long)
    assert all(long < MEMORY_BOUND_KB for _, long in peaks.values()), peaks
    assert all(long - short < GROWTH_BOUND_KB for short, long in peaks.values()), peaks


def test_an_unwritable_out_is_one_line_and_exit_code_2(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("mine")
    assert main(["run", "oscillation-40", "--out", str(blocker / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and "Traceback" not in err
    assert blocker.read_text() == "mine"
    # a folder where a file would go: nothing is written at all
    out = tmp_path / "run"
    (out / "summary.json").mkdir(parents=True)
    assert main(["run", "oscillation-40", "--out", str(out)]) == 2
    assert "summary.json" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]
