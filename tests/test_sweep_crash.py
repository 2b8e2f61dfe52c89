"""A sweep killed with SIGKILL at an arbitrary moment, then resumed, has every run exactly once."""

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prunesim.studies.sweep import RUNS_FILE

ROOT = Path(__file__).resolve().parent.parent
# 3 grid points x 2 policies x 16 seeds = 96 runs of 600 turns: a second or two of work.
ARGS = ["sweep", "oscillation-40", "--grid", "trigger=20000:22000:1000", "--policies", "naive,recency",
        "--seeds", "0:16", "--set", "turns=600", "--jobs", "2", "--quiet"]
TOTAL = 96


def sweep_command(out):
    return [sys.executable, "-m", "prunesim", *ARGS, "--out", str(out)]


def data_lines(path):
    return path.read_bytes().count(b"\n") - 1 if path.exists() else 0


@pytest.mark.parametrize("kill_after_rows, whole_group", [(1, True), (20, True), (10, False)])
def test_sigkill_then_resume_gives_every_run_exactly_once(tmp_path, kill_after_rows, whole_group):
    out = tmp_path / "s"
    proc = subprocess.Popen(sweep_command(out), cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    runs = out / RUNS_FILE
    deadline = time.monotonic() + 60
    while data_lines(runs) < kill_after_rows and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the sweep finished before it could be killed; make it longer"
    if whole_group:  # the sweep and its workers, with no chance to clean up
        os.killpg(proc.pid, signal.SIGKILL)
    else:  # the sweep's own process only: its workers must not outlive it holding the lock
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    killed_at = data_lines(runs)
    assert 0 < killed_at < TOTAL

    resumed = subprocess.run(sweep_command(out), cwd=ROOT, capture_output=True, text=True, timeout=120)
    if not whole_group and _group_alive(proc.pid):  # tidy up, whatever happened
        os.killpg(proc.pid, signal.SIGKILL)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{TOTAL} runs" in resumed.stdout and "complete" in resumed.stdout

    with open(runs, newline="") as fh:
        rows = list(csv.DictReader(fh))
    ids = [r["run_id"] for r in rows]
    assert len(ids) == TOTAL and len(set(ids)) == TOTAL
    keys = {(r["policy"], r["trigger"], r["seed"]) for r in rows}
    assert len(keys) == TOTAL
    assert all(r["decision_share"] != "" for r in rows)  # every row complete
    try:
        import pandas as pd
    except ImportError:
        return
    frame = pd.read_csv(runs)
    assert len(frame) == TOTAL and frame["run_id"].is_unique


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
