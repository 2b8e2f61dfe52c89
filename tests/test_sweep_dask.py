"""The Dask executor, on a local cluster on loopback, writes the same rows as the local executor."""

import pytest
from prunesim.studies.sweep import RUNS_FILE, execute, plan_sweep, read_runs

pytest.importorskip("distributed", reason="needs dask.distributed: pip install '.[dask]' (the test extra has it)")


def test_dask_rows_are_identical_to_the_local_executors(tmp_path):
    plan = plan_sweep("oscillation-40", {"trigger": [20000, 22000]}, ["naive", "recency"], range(4))
    local = execute(plan, tmp_path / "local", jobs=1, progress=False)
    dask = execute(plan, tmp_path / "dask", jobs=2, executor="dask", progress=False)
    assert local.complete and dask.complete and dask.ran == 16
    assert read_runs(tmp_path / "dask") == read_runs(tmp_path / "local")
    assert (tmp_path / "dask" / RUNS_FILE).read_bytes() == (tmp_path / "local" / RUNS_FILE).read_bytes()


def test_the_command_line_uses_a_running_scheduler(tmp_path, capsys):
    from distributed import LocalCluster
    from prunesim.cli import main

    with LocalCluster(n_workers=1, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as cluster:
        args = ["sweep", "oscillation-40", "--grid", "trigger=21000,22000", "--policies", "naive", "--seeds", "0:3",
                "--executor", "dask", "--scheduler", cluster.scheduler_address, "--out", str(tmp_path / "s")]
        assert main(args) == 0
    assert "6 run now" in capsys.readouterr().out
    assert len(read_runs(tmp_path / "s")) == 6


def test_an_unreachable_scheduler_is_one_line_and_nothing_is_written(tmp_path, capsys):
    import dask
    from prunesim.cli import main

    out = tmp_path / "s"
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        args = ["sweep", "oscillation-40", "--seeds", "0:2", "--executor", "dask", "--scheduler", "tcp://127.0.0.1:9",
                "--out", str(out)]
        assert main(args) == 2
    err = capsys.readouterr().err
    assert "--scheduler: tcp://127.0.0.1:9: cannot start or reach the Dask cluster" in err
    assert not out.exists()
