"""Per-policy sweep axes, sweep plots against the acting trigger, and the output a reader sees first:
compare's shares, columns and files; trace plots scaled to the data."""

from __future__ import annotations

import csv
import io
import json

import pytest
from plot_fixtures import make_run
from prunesim.cli import main
from prunesim.errors import UserError
from prunesim.io import scenario_files as sc
from prunesim.observe.metrics.intervals import wilson
from prunesim.plots.io import read_run, read_sweep
from prunesim.plots.sweep import curves, sweep_figure
from prunesim.plots.trace import trace_figure
from prunesim.runner import run_one
from prunesim.studies.grid import parse_axes, split_axis
from prunesim.studies.sweep import plan_sweep, read_runs, run_sweep

AXES = {"trigger": [20000, 22000], "slack-gated:gate.lead": [0, 2000, 4000]}


def test_a_policy_qualified_axis_is_parsed_with_its_policy():
    axes = parse_axes(["trigger=20000,22000", "slack-gated:gate.lead=0:4000:2000"])
    assert axes == AXES
    assert split_axis("my.py:Mine:gate.lead") == ("my.py:Mine", "gate.lead")
    assert split_axis("clear-tool-uses:langchain:trigger") == ("clear-tool-uses:langchain", "trigger")
    with pytest.raises(UserError, match="empty policy name"):
        parse_axes([":trigger=1,2"])
    with pytest.raises(UserError, match="empty parameter name"):
        parse_axes(["naive:=1,2"])


def test_a_policy_qualified_axis_multiplies_only_that_policys_runs(tmp_path):
    plan = plan_sweep("oscillation-40", AXES, ["naive", "slack-gated"], range(2))
    by_policy = {p: [r for r in plan.runs if r.policy == p] for p in ("naive", "slack-gated")}
    assert len(by_policy["naive"]) == 2 * 2 and len(by_policy["slack-gated"]) == 2 * 3 * 2
    for r in by_policy["slack-gated"]:
        point = plan.points[r.point]
        assert plan.scenarios[r.point].gate.lead == point["slack-gated:gate.lead"]
    assert all("slack-gated:gate.lead" not in plan.points[r.point] for r in by_policy["naive"])
    rows = run_sweep("oscillation-40", AXES, ["naive", "slack-gated"], range(2), tmp_path / "s", jobs=1)
    naive = [r for r in rows if r["policy"] == "naive"]
    gated = [r for r in rows if r["policy"] == "slack-gated"]
    assert all(r["slack-gated:gate.lead"] is None for r in naive)  # an empty cell: not this policy's axis
    # the axis moves where slack-gated acts: trigger - lead
    assert {(r["trigger"], r["slack-gated:gate.lead"], r["acting_trigger"]) for r in gated} == {
        (t, lead, t - lead) for t in (20000, 22000) for lead in (0, 2000, 4000)}
    assert {r["acting_trigger"] for r in naive} == {20000, 22000}
    # each row is what run_one reports for its scenario
    one = next(r for r in gated if r["slack-gated:gate.lead"] == 2000 and r["trigger"] == 22000)
    scenario = sc.load("oscillation-40", {"trigger": 22000, "gate.lead": 2000})
    assert one["passes"] == run_one(scenario, "slack-gated", one["seed"], trace="none").summary["passes"]


@pytest.mark.parametrize("axes,needle", [
    ({"recency:gate.lead": [1000]}, "names the policy 'recency', which is not swept"),
    ({"gate.lead": [1000], "slack-gated:gate.lead": [2000]}, "give it in one place"),
    ({"slack-gated:gate.nope": [1]}, "unknown scenario parameter"),
    ({"slack-gated:seed": [1, 2]}, "use --seeds"),
])
def test_bad_policy_axes_are_one_clear_error(axes, needle):
    with pytest.raises(UserError, match=needle):
        plan_sweep("oscillation-40", axes, ["naive", "slack-gated"], range(1))


def test_the_command_line_sweeps_a_policy_qualified_axis(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--grid",
                 "slack-gated:gate.lead=0,2000", "--policies", "naive,slack-gated", "--seeds", "0:2",
                 "--out", str(out), "--quiet", "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    assert "12 runs" in captured.out and "naive 2, slack-gated 4" in captured.out
    assert "cannot affect" not in captured.err  # the qualified axis is slack-gated's only: nothing to warn of
    assert len(read_runs(out)) == 12


def test_plot_sweep_against_the_acting_trigger_puts_every_policy_on_one_axis(tmp_path):
    run_sweep("oscillation-40", {"naive:trigger": [20000, 22000], "slack-gated:gate.lead": [0, 2000]},
              ["naive", "slack-gated"], range(3), tmp_path / "s", jobs=1)
    sweep = read_sweep(tmp_path / "s")
    data, source = curves(sweep, "passes", "acting_trigger")
    # one line per policy: the axes that set where a policy acts fold into x
    assert sorted(data) == [("naive", ()), ("slack-gated", ())]
    assert sorted(data[("naive", ())]) == [20000.0, 22000.0]
    assert sorted(data[("slack-gated", ())]) == [20000.0, 22000.0]
    runs = [r for r in sweep.runs if r["policy"] == "naive" and r["acting_trigger"] == 22000]
    assert data[("naive", ())][22000.0][3] == len(runs) == 3
    fig = sweep_figure(sweep, "passes", "acting_trigger")
    assert fig.axes[0].get_xlabel() == "acting_trigger: utilization at which the policy acts (tokens)"
    assert main(["plot", "sweep", str(tmp_path / "s"), "--metric", "passes", "--x", "acting_trigger",
                 "--out", str(tmp_path / "p.png")]) == 0
    # against a qualified axis, only that policy has a line
    data, _ = curves(sweep, "passes", "slack-gated:gate.lead")
    assert {k[0] for k in data} == {"slack-gated"}
    title = sweep_figure(sweep, "passes", "slack-gated:gate.lead").axes[0].get_title().replace("\n", " ")
    assert title.endswith("naive: not swept along slack-gated:gate.lead") and "band slack-gated (" in title


# -- compare ------------------------------------------------------------------------
def test_compare_shows_yes_no_metrics_as_shares_and_only_the_metrics_asked(capsys, oscillation):
    assert main(["compare", "oscillation-40", "--seeds", "0:6", "--metrics", "oscillating,passes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines[2:]] == ["oscillating", "passes"]
    yes = sum(run_one(oscillation, "naive", s, trace="none").summary["oscillating"] for s in range(6))
    low, high = wilson(yes, 6)
    assert f"{yes / 6:.2f} [{low:.2f}..{high:.2f}] of seeds" in lines[2]


def test_compare_writes_csv_and_json(tmp_path, capsys):
    assert main(["compare", "oscillation-40", "--seeds", "0:3", "--metrics", "passes,oscillating",
                 "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["policy"], r["metric"]) for r in rows] == [
        ("naive", "passes"), ("naive", "oscillating"), ("slack-gated", "passes"), ("slack-gated", "oscillating")]
    assert rows[1]["share"] != "" and rows[1]["median"] == "" and rows[0]["median"] != ""
    out = tmp_path / "cmp.json"
    assert main(["compare", "oscillation-40", "--seeds", "0:3", "--metrics", "passes", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert list(data["metrics"]["naive"]) == ["passes"]


@pytest.mark.parametrize("argv,needle", [
    (["--metrics", "passes,nope"], "--metrics: nope: unknown metric"),
    (["--metrics", "passes,"], "comma-separated"),
    (["--json", "--format", "csv"], "contradicts --format csv"),
    (["--out", "/proc/no/such/dir/cmp.csv"],
     "--out: /proc/no/such/dir/cmp.csv: /proc is in the kernel's /proc file system"),
])
def test_compare_bad_output_flags_are_one_line(capsys, argv, needle):
    assert main(["compare", "oscillation-40", "--seeds", "0:2", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


# -- plot trace ---------------------------------------------------------------------
def test_trace_is_scaled_to_the_data_with_the_budget_drawn(tmp_path):
    # a big window over a small trace: the window is named, not drawn, and the budget is
    path = make_run(tmp_path, "wide", "recency", overrides={"window": 128000, "budget": 24000})
    run = read_run(path)
    ax = trace_figure([run]).axes[0]
    low, top = ax.get_ylim()
    assert 24000 < top < 26000 and low > 0
    labels = [t.get_text() for t in ax.texts if (t.get_gid() or "").startswith("limit-label:")]
    assert "window 128,000 (above)" in labels and "hard budget 24,000" in labels  # named in the margin
    assert ax.get_ylabel() == "utilization (tokens)"
    assert [ln for ln in ax.get_lines() if ln.get_gid() == "budget:24000"]
    ax = trace_figure([run], ylim=(10000, 26000)).axes[0]
    assert ax.get_ylim() == (10000, 26000)
    assert main(["plot", "trace", str(path), "--ylim", "30000", "--out", str(tmp_path / "t.png")]) == 0


@pytest.mark.parametrize("ylim", ["abc", "5:5", "1:2:3", "inf"])
def test_a_bad_ylim_is_one_line(tmp_path, capsys, ylim):
    path = make_run(tmp_path, "r", "noop", overrides={"turns": 5})
    assert main(["plot", "trace", str(path), f"--ylim={ylim}", "--out", str(tmp_path / "t.png")]) == 2
    assert "--ylim" in capsys.readouterr().err and not (tmp_path / "t.png").exists()
