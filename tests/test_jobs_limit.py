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


def _refusal(code: int, wrapped: bool) -> BaseException:
    err = OSError(code, os.strerror(code))
    if not wrapped:
        return err
    try:  # a cluster that wraps what starting its worker met, as Dask's nanny does
        raise err
    except OSError as inner:
        try:
            raise RuntimeError("Nanny failed to start.") from inner
        except RuntimeError as outer:
            return outer


@pytest.mark.parametrize("code", [errno.EAGAIN, errno.ENOMEM])
@pytest.mark.parametrize("wrapped", [False, True], ids=["bare", "wrapped"])
def test_a_dask_cluster_the_system_refuses_workers_is_one_line_naming_jobs(tmp_path, monkeypatch, code, wrapped):
    distributed = pytest.importorskip("distributed", reason="needs dask.distributed: pip install '.[test]'")

    def refuse(*args, **kwargs):
        raise _refusal(code, wrapped)

    monkeypatch.setattr(distributed, "LocalCluster", refuse)
    out = tmp_path / "sweep"
    status, stdout, err = cli("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive",
                              "--seeds", "0:4", "--set", "turns=10", "--jobs", "64", "--executor", "dask", "--quiet",
                              "--out", out)
    assert status == 2 and stdout == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith("prunesim: error: --jobs: 64: the system refused to start a worker: "), err
    assert "give fewer --jobs" in err and "Traceback" not in err


def test_a_dask_cluster_that_fails_otherwise_keeps_its_own_words(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed", reason="needs dask.distributed: pip install '.[test]'")

    def refuse(*args, **kwargs):
        raise OSError(errno.EADDRINUSE, os.strerror(errno.EADDRINUSE))

    monkeypatch.setattr(distributed, "LocalCluster", refuse)
    status, _, err = cli("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive",
                         "--seeds", "0:4", "--set", "turns=10", "--jobs", "2", "--executor", "dask", "--quiet",
                         "--out", tmp_path / "sweep")
    assert status == 2 and err.startswith("prunesim: error: --executor: dask: cannot start or reach the Dask cluster")


@pytest.mark.parametrize("code", [errno.EAGAIN, errno.ENOMEM])
def test_the_outcome_fits_pool_refused_is_one_line_naming_jobs(monkeypatch, code):
    from prunesim.errors import UserError
    from prunesim.studies import agent_fit

    monkeypatch.setattr(agent_fit, "bases", lambda found: {"s": 0})
    monkeypatch.setattr(agent_fit, "pair_runs", abs)  # never reached: no worker starts

    class Kind:
        scaffold = "s"

    class Found:
        kind = Kind()

    real_fork = os.fork

    def fork():
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fork", fork)
    try:
        with pytest.raises(UserError) as refused:
            agent_fit.all_runs([Found(), Found(), Found()], jobs=3)
    finally:
        monkeypatch.setattr(os, "fork", real_fork)
    assert str(refused.value).startswith("--jobs: 3: the system refused to start worker 1 of 3: ")
