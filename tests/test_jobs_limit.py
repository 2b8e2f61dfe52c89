"""--jobs past what the system lets a user start is named as --jobs, in one line, and the runs done are kept.

fork() refuses a process past the limit on a user's processes (``ulimit -u``: EAGAIN) or without memory for
one (ENOMEM). The refusal is made here by failing the k-th fork of the sweep's pool, whichever k.
"""

from __future__ import annotations

import errno
import os

import pytest
from cli_capture import cli


@pytest.mark.parametrize("fails_at, code", [(1, errno.EAGAIN), (2, errno.EAGAIN), (3, errno.ENOMEM)])
def test_a_worker_the_system_refuses_is_one_line_naming_jobs(tmp_path, monkeypatch, fails_at, code):
    real_fork, calls = os.fork, []

    def fork():
        calls.append(1)
        if len(calls) == fails_at:
            raise OSError(code, os.strerror(code))
        return real_fork()

    monkeypatch.setattr(os, "fork", fork)
    out = tmp_path / "sweep"
    argv = ("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive", "--seeds", "0:12",
            "--set", "turns=10", "--jobs", "3", "--quiet", "--out", out)
    status, stdout, err = cli(*argv)
    why = "past the limit on your processes (ulimit -u: " if code == errno.EAGAIN else "there is no memory for"
    assert status == 2 and stdout == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"prunesim: error: --jobs: 3: the system refused to start worker {fails_at} of 3: {why}")
    monkeypatch.setattr(os, "fork", real_fork)
    done = (out / "runs.csv").read_text().count("\n") - 1  # the first runs (one per policy) ran before the pool
    again = list(argv)
    again[again.index("--jobs") + 1] = "1"  # --jobs may change between attempts
    status, stdout, err = cli(*again)
    assert status == 0 and f"{done} already done" in stdout and "complete" in stdout, err
