"""`prunesim sweep --engine`: the compiled kernel runs the grid points it covers, with the same runs.csv."""

import pytest
from prunesim.cli import main
from prunesim.kernel import choice
from prunesim.studies.sweep import RUNS_FILE, choose_engines, describe_engines, plan_sweep, run_sweep

pytest.importorskip("numba")  # the kernel extra

GRID = {"trigger": [20000, 22000]}
SEEDS = range(4)


def test_the_kernel_writes_the_same_runs_csv_as_the_simpy_engine(tmp_path):
    run_sweep("oscillation-40", GRID, ["naive", "recency"], SEEDS, tmp_path / "simpy", jobs=1)
    run_sweep("oscillation-40", GRID, ["naive", "recency"], SEEDS, tmp_path / "kernel", jobs=1, engine="kernel")
    assert (tmp_path / "kernel" / RUNS_FILE).read_bytes() == (tmp_path / "simpy" / RUNS_FILE).read_bytes()
    assert (tmp_path / "kernel" / "sweep.json").read_bytes() == (tmp_path / "simpy" / "sweep.json").read_bytes()


def test_a_sweep_begun_on_one_engine_is_finished_on_the_other(tmp_path):
    whole = tmp_path / "whole"
    run_sweep("oscillation-40", GRID, ["naive"], SEEDS, whole, jobs=1)
    part = tmp_path / "part"
    run_sweep("oscillation-40", GRID, ["naive"], SEEDS, part, jobs=1)
    lines = (part / RUNS_FILE).read_text().splitlines(keepends=True)
    (part / RUNS_FILE).write_text("".join(lines[:3]))  # the header and two runs: a sweep stopped early
    rows = run_sweep("oscillation-40", GRID, ["naive"], SEEDS, part, jobs=1, engine="kernel")
    assert len(rows) == 2 * len(SEEDS)
    assert (part / RUNS_FILE).read_bytes() == (whole / RUNS_FILE).read_bytes()


def test_auto_gives_the_kernel_what_it_covers_and_simpy_the_rest(monkeypatch):
    plan = plan_sweep("oscillation-40", GRID, ["naive", "tombstoned"], SEEDS)
    monkeypatch.setattr(choice, "auto_min_turns", lambda: 0)
    engines = choose_engines(plan, "auto")
    assert engines == {(0, "naive"): "kernel", (1, "naive"): "kernel",
                       (0, "tombstoned"): "simpy", (1, "tombstoned"): "simpy"}
    monkeypatch.setattr(choice, "auto_min_turns", lambda: 10**12)  # too little work to pay for loading it
    assert set(choose_engines(plan, "auto").values()) == {"simpy"}
    assert set(choose_engines(plan, "auto", traces=True).values()) == {"simpy"}


def test_the_command_line_says_which_engine_runs_what(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive,tombstoned",
                 "--seeds", "0:2", "--jobs", "1", "--quiet", "--engine", "auto", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if x.startswith("sweep: engine:"))
    assert "simpy for tombstoned: policy 'tombstoned'" in line
    assert "simpy for naive: too few turns" in line or "kernel for naive" in line


@pytest.mark.parametrize("extra, says", [(["--policies", "naive,tombstoned"], "policy 'tombstoned'"),
                                          (["--policies", "naive", "--traces"], "--traces"),
                                          (["--policies", "naive", "--set", "decision.concurrent=true"],
                                           "decision.concurrent")])
def test_the_kernel_refuses_what_it_does_not_cover_before_anything_is_written(tmp_path, capsys, extra, says):
    out = tmp_path / "s"
    assert main(["sweep", "oscillation-40", "--seeds", "0:2", "--jobs", "1", "--quiet", "--engine", "kernel",
                 "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("prunesim: error: --engine") and says in err
    assert "Traceback" not in err and not out.exists()


def test_the_engine_line_names_each_reason_with_the_points_it_holds_for(monkeypatch):
    plan = plan_sweep("oscillation-40", {"decision.concurrent": [True, False]}, ["naive"], SEEDS)
    monkeypatch.setattr(choice, "auto_min_turns", lambda: 0)
    assert describe_engines(plan, choose_engines(plan, "auto")) == (
        "engine: kernel for naive at 1 of 2 grid points; simpy for naive at 1 of 2 grid points: decision.concurrent")


def test_under_auto_with_traces_the_engine_line_gives_traces_as_the_reason(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(choice, "auto_min_turns", lambda: 0)  # enough work for the kernel: --traces alone keeps SimPy
    out = tmp_path / "s"
    assert main(["sweep", "oscillation-40", "--set", "turns=5", "--policies", "naive,tombstoned", "--seeds", "0:2",
                 "--jobs", "1", "--quiet", "--engine", "auto", "--traces", "--out", str(out)]) == 0
    line = next(x for x in capsys.readouterr().err.splitlines() if x.startswith("sweep: engine:"))
    assert line == ("sweep: engine: simpy for naive: --traces (only the SimPy engine records a run's trace); "
                    "simpy for tombstoned: policy 'tombstoned' (the kernel runs noop, naive, recency, slack-gated)")


def test_kernel_runs_that_would_not_fit_in_memory_together_are_warned_of(tmp_path, capsys, monkeypatch):
    from prunesim.cli.commands import _common
    from prunesim.io import scenario_files

    monkeypatch.setattr(_common, "machine_memory", lambda: 64 << 20)  # a machine of 64 MB
    need = choice.record_bytes(scenario_files.load("oscillation-40", {"turns": 20000}))
    assert need > 64 << 20
    out = tmp_path / "s"
    assert main(["sweep", "oscillation-40", "--set", "turns=20000", "--policies", "naive", "--seeds", "0:1",
                 "--jobs", "1", "--quiet", "--engine", "kernel", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    warning = next(x for x in err.splitlines() if x.startswith("prunesim: warning:"))
    assert f"turns=20,000 on the kernel holds up to {need / 2**20:,.0f} MB of run records; this machine has 64 MB" \
        in warning
    monkeypatch.setattr(_common, "machine_memory", lambda: 1 << 40)
    assert main(["sweep", "oscillation-40", "--set", "turns=20000", "--policies", "naive", "--seeds", "0:1",
                 "--jobs", "1", "--quiet", "--engine", "kernel", "--out", str(tmp_path / "t")]) == 0
    assert "warning" not in capsys.readouterr().err


def test_auto_weighs_the_runs_left_to_run_not_all_planned(monkeypatch):
    plan = plan_sweep("oscillation-40", GRID, ["naive"], SEEDS)  # 8 runs of 40 turns: 320 turns
    monkeypatch.setattr(choice, "auto_min_turns", lambda: 200)
    assert set(choose_engines(plan, "auto").values()) == {"kernel"}
    done = {s.run_id for s in plan.runs[:5]}  # 3 runs (120 turns) left
    assert set(choose_engines(plan, "auto", done=done).values()) == {"simpy"}
    assert set(choose_engines(plan, "auto", done={s.run_id for s in plan.runs[:3]}).values()) == {"kernel"}
    assert set(choose_engines(plan, "kernel", done=done).values()) == {"kernel"}  # asked for: still given


def test_a_nearly_finished_sweep_resumed_with_auto_runs_what_is_left_on_simpy(tmp_path, capsys, monkeypatch):
    from prunesim.studies import sweep

    whole, part = tmp_path / "whole", tmp_path / "part"
    args = ["sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive", "--seeds", "0:4",
            "--jobs", "1", "--quiet"]
    assert main([*args, "--out", str(whole)]) == 0
    assert main([*args, "--out", str(part)]) == 0
    lines = (part / RUNS_FILE).read_text().splitlines(keepends=True)
    (part / RUNS_FILE).write_text("".join(lines[:6]))  # the header and 5 of 8 runs
    monkeypatch.setattr(choice, "auto_min_turns", lambda: 200)  # the whole sweep's 320 turns would pay, 120 not

    def no_kernel(*_):
        raise AssertionError("the kernel ran the runs left")

    monkeypatch.setattr(sweep, "_kernel_summaries", no_kernel)
    capsys.readouterr()
    assert main([*args, "--engine", "auto", "--out", str(part)]) == 0
    out, err = capsys.readouterr()
    assert "sweep: engine: simpy for naive: too few turns" in err and "3 run now, 5 already done" in out
    assert (part / RUNS_FILE).read_bytes() == (whole / RUNS_FILE).read_bytes()


def test_a_concurrent_runtime_runs_on_the_kernel_for_the_policies_that_never_run_a_pass(tmp_path, capsys):
    args = ["sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "noop,recency", "--seeds", "0:3",
            "--jobs", "1", "--quiet", "--set", "decision.concurrent=true"]
    assert main([*args, "--out", str(tmp_path / "simpy")]) == 0
    assert main([*args, "--engine", "kernel", "--out", str(tmp_path / "kernel")]) == 0
    assert "kernel for noop; kernel for recency" in capsys.readouterr().err
    assert (tmp_path / "kernel" / RUNS_FILE).read_bytes() == (tmp_path / "simpy" / RUNS_FILE).read_bytes()
