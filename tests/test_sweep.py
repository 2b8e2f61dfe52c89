"""Sweeps: the tidy runs.csv, resume, partial lines, locking, refusal of a different sweep."""

import csv
import fcntl
import os

import pytest
from prunesim.cli import main
from prunesim.errors import UserError
from prunesim.io import scenario_files as scenario_mod
from prunesim.io.atomic import format_cell
from prunesim.observe.metrics import METRIC_NAMES
from prunesim.runner import run_one
from prunesim.studies.grid import inert_axes
from prunesim.studies.sweep import ID_COLUMNS, RUNS_FILE, execute, plan_sweep, read_runs, run_id, run_sweep

GRID = {"trigger": [20000, 22000]}
POLICIES = ["naive", "recency"]
SEEDS = range(3)


def small_plan(**kw):
    return plan_sweep("oscillation-40", kw.get("grid", GRID), kw.get("policies", POLICIES), kw.get("seeds", SEEDS))


def csv_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_runs_csv_is_one_tidy_row_per_run_with_fixed_columns(tmp_path):
    rows = run_sweep("oscillation-40", GRID, POLICIES, SEEDS, tmp_path / "s", jobs=1)
    assert len(rows) == 2 * 2 * 3
    with open(tmp_path / "s" / RUNS_FILE, newline="") as fh:
        header = next(csv.reader(fh))
    assert header[: len(ID_COLUMNS) + 1] == [*ID_COLUMNS, "trigger"]
    summary = run_one(scenario_mod.load("oscillation-40"), "naive", 0, trace="none").summary
    in_order = [m for m in METRIC_NAMES if m in summary]
    assert header[len(ID_COLUMNS) + 1 :] == in_order + sorted(set(summary) - set(METRIC_NAMES))
    assert len({r["run_id"] for r in rows}) == len(rows)
    # Sorted by (policy, grid point, seed) in the order given.
    assert [(r["policy"], r["trigger"], r["seed"]) for r in rows[:4]] == [
        ("naive", 20000, 0), ("naive", 20000, 1), ("naive", 20000, 2), ("naive", 22000, 0)
    ]
    assert rows[-1]["policy"] == "recency"


def test_each_row_holds_exactly_what_run_one_reports(tmp_path):
    rows = run_sweep("oscillation-40", GRID, POLICIES, SEEDS, tmp_path / "s", jobs=1)
    base = scenario_mod.load("oscillation-40")
    for row in (rows[1], rows[-1]):
        sc = scenario_mod.replace(base, {"trigger": row["trigger"]})
        summary = run_one(sc, row["policy"], row["seed"], trace="none").summary
        # Cells are written as sim.atomic.format_cell writes every result file (floats to 6 decimals).
        assert {k: format_cell(row[k]) for k in summary} == {k: format_cell(v) for k, v in summary.items()}
        assert row["run_id"] == run_id(sc.to_dict(), row["policy"], row["seed"])


def test_run_ids_are_stable_and_depend_on_every_input():
    sc = scenario_mod.load("oscillation-40").to_dict()
    assert run_id(sc, "naive", 1) == run_id(dict(sc), "naive", 1)
    ids = {run_id(sc, "naive", 1), run_id(sc, "naive", 2), run_id(sc, "recency", 1),
           run_id({**sc, "trigger": 21000}, "naive", 1), run_id(sc, "naive", 1, version="9.9")}
    assert len(ids) == 5


def test_runs_csv_is_byte_identical_whatever_the_number_of_jobs(tmp_path):
    plan = small_plan()
    execute(plan, tmp_path / "one", jobs=1, progress=False)
    execute(plan, tmp_path / "two", jobs=2, progress=False)
    assert (tmp_path / "one" / RUNS_FILE).read_bytes() == (tmp_path / "two" / RUNS_FILE).read_bytes()


def test_running_the_same_sweep_again_runs_nothing(tmp_path):
    plan = small_plan()
    first = execute(plan, tmp_path / "s", jobs=1, progress=False)
    before = (tmp_path / "s" / RUNS_FILE).read_bytes()
    again = execute(small_plan(), tmp_path / "s", jobs=1, progress=False)
    assert (first.ran, first.complete) == (12, True)
    assert (again.ran, again.already_done, again.complete) == (0, 12, True)
    assert (tmp_path / "s" / RUNS_FILE).read_bytes() == before


def test_a_trailing_partial_line_is_discarded_and_its_run_redone(tmp_path):
    out = tmp_path / "s"
    execute(small_plan(), out, jobs=1, progress=False)
    path = out / RUNS_FILE
    complete = path.read_bytes()
    lines = complete.splitlines(keepends=True)
    # A crash after five rows, in the middle of writing the sixth.
    path.write_bytes(b"".join(lines[:6]) + lines[6][: len(lines[6]) // 2])
    stats = execute(small_plan(), out, jobs=1, progress=False)
    assert (stats.already_done, stats.ran) == (5, 7)
    assert path.read_bytes() == complete
    ids = [r["run_id"] for r in csv_rows(path)]
    assert len(ids) == len(set(ids)) == 12


def test_a_different_sweep_in_the_same_directory_is_refused(tmp_path):
    out = tmp_path / "s"
    execute(small_plan(), out, jobs=1, progress=False)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(UserError, match=r"sweep.json: seeds: this directory holds a different sweep"):
        execute(small_plan(seeds=range(4)), out, jobs=1, progress=False)
    with pytest.raises(UserError, match=r"sweep.json: grid.trigger\[1\]: .*was 22000, now 21000"):
        execute(small_plan(grid={"trigger": [20000, 21000]}), out, jobs=1, progress=False)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_second_sweep_on_a_locked_directory_is_refused(tmp_path):
    out = tmp_path / "s"
    out.mkdir()
    fd = os.open(out / ".lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another sweep holds it
    try:
        with pytest.raises(UserError, match="another sweep is running in this directory"):
            execute(small_plan(), out, jobs=1, progress=False)
        assert sorted(p.name for p in out.iterdir()) == [".lock"]
    finally:
        os.close(fd)
    assert execute(small_plan(), out, jobs=1, progress=False).complete


def test_a_directory_that_is_not_a_sweep_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="is not empty and holds no sweep.json"):
        execute(small_plan(), tmp_path, jobs=1, progress=False)


def test_traces_are_written_per_run(tmp_path):
    rows = run_sweep("oscillation-40", {"trigger": [21000]}, ["naive"], range(2), tmp_path / "s", traces=True)
    for row in rows:
        run_dir = tmp_path / "s" / "traces" / row["run_id"]
        assert (run_dir / "summary.json").is_file() and (run_dir / "trace.csv").is_file()


def test_grid_names_are_columns_as_given_and_a_metric_they_shadow_is_prefixed(tmp_path):
    grid = {"workload.tool_output.mean": [300.0, 450.0], "turns": [20, 30]}
    rows = run_sweep("oscillation-40", grid, ["noop"], range(2), tmp_path / "s")
    assert len(rows) == 8
    assert {r["workload.tool_output.mean"] for r in rows} == {300.0, 450.0}
    assert all(r["turns"] == r["summary.turns"] for r in rows)


def test_bad_policies_and_seeds_are_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "s"
    for args, message in [
        (["--policies", "naive,nope"], "unknown policy 'nope'"),
        (["--policies", "naive,naive"], "a policy is given twice"),
        (["--seeds", "1,1"], "a seed is given twice"),
        (["--jobs", "0"], "--jobs: 0: must be at least 1"),
        (["--executor", "mpi"], "unknown executor"),
        (["--scheduler", "tcp://127.0.0.1:1"], "only applies with --executor dask"),
        (["--set", "trigger=23000", "--grid", "trigger=1,2"], "also given with --set"),
    ]:
        assert main(["sweep", "oscillation-40", "--seeds", "0:2", "--out", str(out), "--quiet", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
        assert not out.exists()


def test_the_command_line_sweeps_and_resumes(tmp_path, capsys):
    args = ["sweep", "oscillation-40", "--grid", "trigger=20000:21000:1000", "--policies", "naive",
            "--seeds", "0:3", "--jobs", "1", "--out", str(tmp_path / "s")]
    assert main(args) == 0
    assert "6 runs (2 grid points x 1 policy x 3 seeds), 6 run now, 0 already done" in capsys.readouterr().out
    assert main(args) == 0
    assert "0 run now, 6 already done" in capsys.readouterr().out
    assert capsys.readouterr().err == ""  # no progress bar when stderr is not a terminal


def test_pandas_reads_runs_csv_as_it_is(tmp_path):
    pd = pytest.importorskip("pandas", reason="needs pandas: pip install '.[test]'")
    run_sweep("oscillation-40", {"decision.rationale_per_span": [120.0, 3000.0]}, ["naive"], range(3), tmp_path / "s")
    frame = pd.read_csv(tmp_path / "s" / RUNS_FILE)
    assert len(frame) == 6 and frame["run_id"].is_unique
    assert frame["overhead_ratio"].dtype == float
    assert (frame["overhead_ratio"] == float("inf")).any()  # a rationale that never pays for itself
    assert frame["oscillating"].dtype == bool


def test_read_runs_ignores_a_partial_line_without_touching_the_file(tmp_path):
    out = tmp_path / "s"
    execute(small_plan(), out, jobs=1, progress=False)
    path = out / RUNS_FILE
    cut = path.read_bytes()[:-10]
    path.write_bytes(cut)
    rows = read_runs(out)
    assert len(rows) == 11
    assert path.read_bytes() == cut


def test_sweep_json_is_the_resolved_description_the_plots_read(tmp_path):
    import json

    from prunesim.plots.io import read_sweep

    out = tmp_path / "s"
    grid = {"trigger": [20000, 22000], "decision.rationale_per_span": [90.0, 300.0]}
    run_sweep("oscillation-40", grid, ["naive"], range(2), out)
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["scenario_name"] == meta["scenario"]["name"] == "oscillation-40"
    assert meta["scenario"]["budget"] == 24000
    assert list(meta["grid"]) == ["trigger", "decision.rationale_per_span"]  # axis order kept
    assert meta["policies"] == ["naive"] and meta["seeds"] == [0, 1]
    assert meta["columns"][5:7] == ["trigger", "decision.rationale_per_span"]
    sweep = read_sweep(out)
    assert sweep.grid == grid and sweep.policies == ["naive"] and len(sweep.runs) == 8


def test_the_api_takes_ranges_and_refuses_repeated_points(tmp_path):
    rows = run_sweep("oscillation-40", {"trigger": range(20000, 22001, 2000)}, ["noop"], range(2), tmp_path / "s")
    assert [r["trigger"] for r in rows] == [20000, 20000, 22000, 22000]
    with pytest.raises(UserError, match="two grid points give the same scenario"):
        plan_sweep("oscillation-40", {"trigger": [20000, 20000.0]}, ["noop"], range(2))


def test_a_trigger_sweep_moves_every_threshold_policy(tmp_path, capsys):
    """Sweeping trigger moves naive's, recency's and slack-gated's acting threshold: each policy's rows change."""
    out = tmp_path / "trig"
    assert main(["sweep", "oscillation-40", "--grid", "trigger=19000,22000", "--policies", "naive,recency,slack-gated",
                 "--seeds", "0:3", "--jobs", "1", "--out", str(out), "--quiet"]) == 0
    assert "cannot affect" not in capsys.readouterr().err
    rows = list(csv.DictReader(open(out / "runs.csv", newline="")))
    for policy in ("naive", "recency", "slack-gated"):
        by = {t: [r for r in rows if r["policy"] == policy and r["trigger"] == t] for t in ("19000", "22000")}
        assert len(by["19000"]) == len(by["22000"]) == 3
        # The acting threshold follows the trigger (slack-gated: trigger - gate.lead) ...
        lead = 0 if policy != "slack-gated" else scenario_mod.load("oscillation-40").gate.lead
        assert {int(r["acting_trigger"]) for r in by["19000"]} == {19000 - lead}
        assert {int(r["acting_trigger"]) for r in by["22000"]} == {22000 - lead}
        # ... and so does what the policy does.
        assert [r["peak_utilization"] for r in by["19000"]] != [r["peak_utilization"] for r in by["22000"]]


def test_an_axis_a_policy_cannot_feel_is_named_before_the_sweep_starts(tmp_path, capsys):
    out = tmp_path / "lead"
    assert main(["sweep", "oscillation-40", "--grid", "gate.lead=0,1000", "--grid", "recency.low_water_gap=500,900",
                 "--policies", "naive,slack-gated,recency", "--seeds", "0:1", "--jobs", "1", "--out", str(out),
                 "--quiet"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert "note: --grid gate.lead cannot affect naive (trigger would), recency (trigger would)" in err
    assert ("note: --grid recency.low_water_gap cannot affect naive (no parameter of it would), "
            "slack-gated (gate.low_water_gap would)") in err
    # An axis every run feels is not named.
    assert inert_axes(["workload.tool_output.mean", "budget"], ["noop", "naive"]) == []
    assert inert_axes(["trigger"], ["noop"]) == ["note: --grid trigger cannot affect noop (no parameter of it would)"]


def test_a_users_policy_that_declares_nothing_is_not_called_deaf(tmp_path):
    (tmp_path / "mine.py").write_text(
        "from prunesim.policies import Policy\n\n\nclass Quiet(Policy):\n    name = 'quiet'\n\n"
        "    def decide(self, view):\n        return []\n\n\n"
        "class Declared(Policy):\n    name = 'declared'\n    reads = ('recency',)\n\n"
        "    def decide(self, view):\n        return []\n")
    quiet, declared = f"{tmp_path / 'mine.py'}:Quiet", f"{tmp_path / 'mine.py'}:Declared"
    assert inert_axes(["trigger"], [quiet]) == [
        "note: --grid trigger may not affect Quiet: it does not declare the parameters it reads (Policy.reads)"]
    # One that says what it reads is judged by it, as a shipped policy is.
    assert inert_axes(["trigger"], [declared]) == ["note: --grid trigger cannot affect Declared "
                                                   "(no parameter of it would)"]
