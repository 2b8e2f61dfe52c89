"""prunesim plot and replay --plot from the command line; the story figures from run directories."""

from __future__ import annotations

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from plot_fixtures import add_event, make_run, make_sweep, read_rows, write_rows
from prunesim.cli import main
from prunesim.plots.stories import oscillation_figures, reentrancy_figures


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("cli"), "naive")


def test_plot_commands_write_figures(run_dir, tmp_path, capsys):
    sweep = make_sweep(tmp_path)
    cases = [
        (["plot", "trace", str(run_dir), str(run_dir), "--x", "time", "--out", str(tmp_path / "t.svg")], "t.svg"),
        (["plot", "ledger", str(run_dir), "--out", str(tmp_path / "figs"), "--format", "svg"], "figs/ledger.svg"),
        (["plot", "trace", str(run_dir), "--ylim", "full", "--out", str(tmp_path / "full.pdf")], "full.pdf"),
        (["plot", "sweep", str(sweep), "--metric", "passes", "--x", "trigger", "--out", str(tmp_path)],
         "sweep-passes-trigger.png"),
        (["plot", "phase", str(sweep), "--x", "trigger", "--y", "decision.rationale_per_span", "--metric",
          "oscillating", "--policy", "naive", "--out", str(tmp_path / "p.png")], "p.png"),
        (["plot", "sweep", str(sweep), "--metric", "oscillating", "--x", "trigger", "--stat", "share",
          "--out", str(tmp_path / "s.pdf")], "s.pdf"),
        (["plot", "cdf", str(sweep), "--metric", "passes", "--fix", "trigger=22000",
          "--fix", "decision.rationale_per_span=60", "--out", str(tmp_path / "c.svg")], "c.svg"),
        (["plot", "phase", str(sweep), "--x", "trigger", "--y", "decision.rationale_per_span", "--metric",
          "oscillating", "--policy", "naive", "--out", str(tmp_path / "p.png")], "p.png"),
    ]
    for argv, name in cases:
        assert main(argv) == 0, argv
        assert (tmp_path / name).stat().st_size > 1000
    assert capsys.readouterr().out.splitlines()[-1].endswith("p.png")


def test_plot_output_bytes_are_identical_across_runs(run_dir, tmp_path):
    for fmt in ("svg", "png"):
        a, b = tmp_path / f"a.{fmt}", tmp_path / f"b.{fmt}"
        assert main(["plot", "trace", str(run_dir), "--out", str(a)]) == 0
        assert main(["plot", "trace", str(run_dir), "--out", str(b)]) == 0
        assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["plot", "trace", "{tmp}/missing"], "no such run directory"),
        (["plot", "ledger", "{tmp}/empty"], "summary.json: missing"),
        (["plot", "sweep", "{sweep}", "--metric", "nope", "--x", "trigger"], "--metric: nope: not a column"),
        (["plot", "sweep", "{sweep}", "--metric", "passes", "--x", "budget"], "--x: budget: not a grid parameter"),
        (["plot", "sweep", "{sweep}", "--metric", "passes"], "choose one of"),
        (["plot", "phase", "{sweep}", "--x", "trigger", "--y", "window", "--metric", "passes", "--policy", "naive"],
         "--y: window: not a grid parameter"),
        (["plot", "phase", "{sweep}", "--x", "trigger", "--y", "decision.rationale_per_span", "--metric",
          "passes", "--policy", "recency"], "not in this sweep"),
        (["plot", "sweep", "{sweep}", "--metric", "passes", "--x", "trigger", "--stat", "mode"], "invalid choice"),
        (["plot", "cdf", "{sweep}", "--metric", "passes", "--fix", "trigger=22000"],
         "--fix: decision.rationale_per_span: grid parameter varies"),
        (["plot", "cdf", "{sweep}", "--metric", "passes", "--fix", "trigger=1", "--fix",
          "decision.rationale_per_span=60"], "no runs at that grid point"),
        (["plot", "cdf", "{sweep}", "--metric", "passes", "--fix", "trigger=22000", "--fix",
          "decision.rationale_per_span=60", "--policies", "naive,magic"], "--policies: naive,magic: not in the file"),
        (["plot", "cdf", "{tmp}/missing", "--metric", "passes"], "no such sweep directory"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_no_file(tmp_path, capsys, argv, message):
    (tmp_path / "empty").mkdir()
    sweep = make_sweep(tmp_path)
    out = tmp_path / "out"
    argv = [a.format(tmp=tmp_path, sweep=sweep) for a in argv] + ["--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_oscillation_story_figure(tmp_path):
    dirs = {"naive @22k": make_run(tmp_path, "a", seed=0),
            "naive @20k": make_run(tmp_path, "b", seed=0, overrides={"trigger": 20000})}
    fig = oscillation_figures(dirs, tmp_path / "out")["oscillation"]
    assert (tmp_path / "out" / "oscillation.png").is_file()
    top, bottom = fig.axes
    assert [ln.get_label() for ln in top.get_lines() if (ln.get_gid() or "").startswith("trace:")] == list(dirs)
    named = {t.get_text() for t in top.texts if (t.get_gid() or "").startswith("limit-label:")}
    assert {"trigger 22,000 (naive @22k)", "trigger 20,000 (naive @20k)", "hard budget 24,000",
            "window 32,000 (above)"} == named
    assert top.get_ylabel() == "utilization (tokens)"  # the window above is named in the margin, not here
    # one key for both panels, under the figure: a column per variant (its passes, overhead ratio and band)
    (key,) = fig.legends
    texts = [t.get_text() for t in key.get_texts()]
    assert [t.split("\n")[0] for t in texts] == list(dirs)
    assert all("passes" in t and "overhead ratio" in t and "band [" in t for t in texts)
    assert top.get_legend() is None  # nothing between the panels
    assert [t.get_text() for t in bottom.get_legend().get_texts()] == ["model-driven prune pass\n(after)"]
    low, high = top.get_ylim()
    assert low < 20000 and 24000 < high < 32000  # the band, the triggers and the budget in view, not 0..32k
    for label, path in dirs.items():
        ledger = read_rows(path / "ledger.csv")
        (bars,) = [c for c in bottom.containers if c.get_label().startswith(label + ":")]
        assert [p.get_height() for p in bars.patches] == [float(r["net"]) for r in ledger]
        assert f"{len(ledger)} passes" in bars.get_label()


def test_the_story_panels_share_their_turns(tmp_path):
    dirs = {"naive @22k": make_run(tmp_path, "a", seed=0),
            "naive @20k": make_run(tmp_path, "b", seed=0, overrides={"trigger": 20000})}
    key = "kubectl describe pod web-0"
    for path in dirs.values():
        rows = read_rows(path / "trace.csv")
        for r in rows:
            if r["key"] == "cmd-5":
                r["key"] = key
        write_rows(path / "trace.csv", rows, list(rows[0]))
    for name, draw in (("oscillation", oscillation_figures), ("reentrancy", reentrancy_figures)):
        fig = draw(dirs, tmp_path / name)[name]
        canvas = FigureCanvasAgg(fig)
        canvas.draw()  # lay the figure out, as saving it does: the positions below are the printed ones
        top, bottom = fig.axes
        assert top.get_xlim() == bottom.get_xlim()
        assert list(top.get_xticks()) == list(bottom.get_xticks())
        # the same left and right edges: the margin's line labels and the key do not push one panel in
        a, b = top.get_position(), bottom.get_position()
        assert (a.x0, a.x1) == pytest.approx((b.x0, b.x1), abs=1e-9)
        assert a.y0 > b.y1  # one above the other
        # the top panel's turns are labelled too, with the bottom's numbers
        shown = [t.get_text() for t in top.get_xticklabels() if t.get_visible() and t.get_text()]
        assert shown and shown == [t.get_text() for t in bottom.get_xticklabels() if t.get_text()]
        # nothing drawn outside the figure: every label, legend and title lies within it
        box = fig.get_tightbbox(canvas.get_renderer())  # inches
        width, height = fig.get_size_inches()
        assert box.x0 >= -0.01 and box.y0 >= -0.01 and box.x1 <= width + 0.01 and box.y1 <= height + 0.01


def test_a_story_without_passes_says_so_on_a_readable_axis(tmp_path):
    fig = oscillation_figures({"noop": make_run(tmp_path, "n", policy="noop", seed=0)}, tmp_path / "out")["oscillation"]
    FigureCanvasAgg(fig).draw()
    top, bottom = fig.axes
    assert "no model-driven passes in any variant" in [t.get_text() for t in bottom.texts]
    ticks = [t.get_text() for t in bottom.get_yticklabels() if t.get_text()]
    assert len(set(ticks)) == len(ticks) and "-0" not in ticks  # a narrow range does not read 0, 0, -0
    assert top.get_xlim() == bottom.get_xlim()


def test_reentrancy_story_figure(tmp_path):
    key = "kubectl describe pod web-0"
    dirs = {"naive": make_run(tmp_path, "n", seed=3), "recency": make_run(tmp_path, "r", policy="recency", seed=3)}
    for path in dirs.values():  # give one tool output the story's key
        rows = read_rows(path / "trace.csv")
        for r in rows:
            if r["key"] == "cmd-5":
                r["key"] = key
        write_rows(path / "trace.csv", rows, list(rows[0]))
    add_event(dirs["naive"], 200.0, 30, "re_retrieval", {"key": key, "tokens": 400, "turns_since_prune": 6})
    fig = reentrancy_figures(dirs, tmp_path / "out")["reentrancy"]
    assert (tmp_path / "out" / "reentrancy.png").is_file()
    timeline = fig.axes[1]
    gids = [a.get_gid() for a in timeline.get_children() if a.get_gid()]
    assert "append:naive" in gids and "append:recency" in gids
    assert "life:naive" in gids and "re_retrieval:naive" in gids and "re_retrieval:recency" not in gids
    assert "drop:recency" in gids  # the recency policy dropped it without a model pass
    top = fig.axes[0]
    marks = {(a.get_gid() or "").split(":")[0] for a in top.get_lines()}
    assert "re_retrieval" in marks and not marks & {"pass", "fallback", "nonmodel"}  # not a mass of markers
    assert [t.get_text() for t in timeline.get_yticklabels()] == ["naive", "recency"]
    assert "kubectl describe" in timeline.get_title()


def test_a_scenario_without_a_trigger_draws_no_trigger(tmp_path):
    from prunesim.io.results import write_run
    from prunesim.io.scenario_files import load
    from prunesim.runner import run_one

    path = tmp_path / "soft"
    write_run(run_one(load("reentrancy-60"), "naive", 19, trace="all"), path)
    fig = reentrancy_figures({"naive": path}, tmp_path / "out")["reentrancy"]
    top = fig.axes[0]
    texts = [t.get_text() for t in top.texts] + [t.get_text() for t in top.get_legend().get_texts()]
    assert not any("trigger" in t for t in texts) and "soft budget 24,000" in texts
    assert not [ln for ln in top.get_lines() if (ln.get_gid() or "").startswith("trigger:")]
    low, high = top.get_ylim()
    assert low > 0 and 24000 < high < 32000


def test_replay_plot_writes_runs_and_figure(tmp_path, capsys):
    out = tmp_path / "figs"
    assert main(["replay", "oscillation", "--seeds", "0:2", "--plot", str(out)]) == 0
    assert (out / "oscillation.png").is_file()
    assert (out / "runs" / "naive-22k" / "trace.csv").is_file()
    assert (out / "runs" / "naive-20k" / "summary.json").is_file()
    assert "figure:" in capsys.readouterr().out
