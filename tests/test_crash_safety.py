"""Crash safety of sweeps: many SIGKILLs at random moments, and two sweeps on one folder.

Half the kills land early, a seeded 0 to 0.5 s after the start of an attempt
(interpreter start-up, planning and validation, taking the lock, writing
sweep.json); the first of them at once, before any row can exist. The other
half wait until runs.csv has grown by a seeded 1 to 19 rows, so they land while
runs are being appended, however fast or loaded the machine is. After every
kill, runs.csv must be well formed (a partial last line at most), and no run
may appear twice.
"""

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from prunesim.studies.sweep import RUNS_FILE

ROOT = Path(__file__).resolve().parent.parent
KILLS = 20
# 4 grid points x 2 policies x 40 seeds = 320 runs of 400 turns.
ARGS = ["sweep", "oscillation-40", "--grid", "trigger=19000:22000:1000", "--policies", "naive,recency",
        "--seeds", "0:40", "--set", "turns=400", "--jobs", "2", "--quiet"]
TOTAL = 320


def command(out):
    return [sys.executable, "-m", "prunesim", *ARGS, "--out", str(out)]


def check_well_formed(path: Path) -> set[str]:
    """Every complete line is a full row; only the last line may be partial; no run twice."""
    if not path.exists():
        return set()
    data = path.read_bytes()
    complete = data[: data.rfind(b"\n") + 1].decode()
    rows = list(csv.reader(complete.splitlines()))
    if not rows:
        return set()
    header, body = rows[0], rows[1:]
    assert header[0] == "run_id"
    assert all(len(r) == len(header) for r in body)
    ids = [r[0] for r in body]
    assert len(ids) == len(set(ids)), "a run appears twice"
    return set(ids)


def complete_rows(path: Path) -> int:
    try:
        return max(0, path.read_bytes().count(b"\n") - 1)
    except FileNotFoundError:
        return 0


def test_twenty_random_kills_then_resume_every_run_exactly_once(tmp_path):
    rng = np.random.default_rng(20261129)
    out = tmp_path / "sweep"
    runs = out / RUNS_FILE
    kills = 0
    seen_counts = []
    while kills < KILLS:
        proc = subprocess.Popen(command(out), cwd=ROOT, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if kills % 2 == 0:  # early: before or while the sweep sets itself up
            time.sleep(0.0 if kills == 0 else float(rng.uniform(0.0, 0.5)))
        else:  # while rows are appended: once runs.csv has grown by a few rows
            wanted = len(check_well_formed(runs)) + int(rng.integers(1, 20))
            deadline = time.monotonic() + 300
            while proc.poll() is None and complete_rows(runs) < wanted and time.monotonic() < deadline:
                time.sleep(0.002)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        seen_counts.append(len(check_well_formed(runs)))
        if proc.returncode == 0:  # it finished before the kill: start over in a fresh folder
            out = tmp_path / f"sweep-{len(seen_counts)}"
            runs = out / RUNS_FILE
    assert kills >= KILLS
    done = subprocess.run(command(out), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ids = check_well_formed(runs)
    assert len(ids) == TOTAL
    with open(runs, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == TOTAL
    assert len({(r["policy"], r["trigger"], r["seed"]) for r in rows}) == TOTAL
    assert not list(out.glob("*.tmp")) and not list(out.glob(".*.tmp"))
    # the kills landed before any row existed, and while rows were being written
    assert 0 in seen_counts and any(0 < n < TOTAL for n in seen_counts)


def test_a_second_sweep_started_on_the_same_folder_is_refused(tmp_path):
    out = tmp_path / "sweep"
    first = subprocess.Popen(command(out), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out / "sweep.json").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    second = subprocess.run(command(out), cwd=ROOT, capture_output=True, text=True, timeout=120)
    stdout, stderr = first.communicate(timeout=300)
    assert second.returncode == 2
    assert second.stderr.count("prunesim: error:") == 1 and "another sweep is running" in second.stderr
    assert "Traceback" not in second.stderr
    assert first.returncode == 0, stderr
    assert len(check_well_formed(out / RUNS_FILE)) == TOTAL
