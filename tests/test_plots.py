"""The figures' content, checked through matplotlib's objects (Agg backend)."""

from __future__ import annotations

import numpy as np
import pytest
from plot_fixtures import (
    PER_SPAN,
    SEEDS,
    TRIGGERS,
    add_event,
    make_run,
    make_sweep,
    metrics_for,
    read_rows,
)
from prunesim.errors import UserError
from prunesim.plots import style
from prunesim.plots.io import read_run, read_sweep
from prunesim.plots.ledger import ledger_figure
from prunesim.plots.phase import phase_figure
from prunesim.plots.sweep import DODGE, bootstrap_median, sweep_figure
from prunesim.plots.trace import trace_figure


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runs")
    return {"naive": make_run(tmp, "naive"), "recency": make_run(tmp, "recency", policy="recency")}


def by_gid(ax, prefix):
    return [a for a in ax.get_children() if (a.get_gid() or "").startswith(prefix)]


def legend_labels(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def limit_labels(ax):
    return [t.get_text() for t in ax.texts if (t.get_gid() or "").startswith("limit-label:")]


def test_trace_draws_utilization_limits_passes_and_band(runs):
    run = read_run(runs["naive"])
    fig = trace_figure([run])
    ax = fig.axes[0]
    (line,) = by_gid(ax, "trace:")
    assert list(line.get_ydata()) == [float(r["utilization"]) for r in read_rows(runs["naive"] / "trace.csv")]
    turns = [int(r["turn"]) for r in run.trace]
    assert np.all(np.floor(line.get_xdata()) == turns)  # changes spread within their turn
    (passes,) = by_gid(ax, "pass:")
    assert len(passes.get_xdata()) == len(run.ledger) == run.metrics["passes"]
    assert list(passes.get_ydata()) == [float(r["utilization_after"]) for r in run.ledger]
    assert passes.get_markerfacecolor() == "none"  # hollow: the trace shows through
    (band,) = by_gid(ax, "band:")
    ys = band.get_paths()[0].vertices[:, 1]
    assert ys.min() == run.metrics["band_floor"] and ys.max() == 22000
    # the limits are named on their lines, not in the legend; the window, far above, at the top of the margin
    assert limit_labels(ax) == ["window 32,000 (above)", "hard budget 24,000", "trigger 22,000"]
    assert ax.get_ylabel() == "utilization (tokens)"
    assert not by_gid(ax, "window:")
    heights = {t.get_text(): t.xyann[1] for t in ax.texts if (t.get_gid() or "").startswith("limit-label:")}
    assert heights["window 32,000 (above)"] > heights["hard budget 24,000"] > heights["trigger 22,000"]
    # the y axis shows the band: the budget, the trigger and the band floor in view, not 0..32k
    low, high = ax.get_ylim()
    assert low <= run.metrics["band_floor"] and 24000 < high < 32000
    after = [float(r["utilization"]) for r in run.trace if int(r["turn"]) >= run.metrics["first_trigger_turn"]]
    assert low <= min(after) and high >= max(after) and low > 0.5 * min(after)
    assert legend_labels(ax) == [f"naive, seed 3, band [{run.metrics['band_floor']:,.0f}, 22,000]",
                                 "model-driven prune pass (after)"]
    assert "turn" in ax.get_xlabel()
    assert "oscillation-40" in ax.get_title() and "naive" in ax.get_title() and "seed 3" in ax.get_title()
    assert ax.get_legend().get_bbox_to_anchor().y1 < ax.get_window_extent().y0 + 1  # below the axes


def test_trace_full_range_on_request(runs):
    ax = trace_figure([read_run(runs["naive"])], ylim="full").axes[0]
    assert ax.get_ylim() == (0, 32000 * 1.04)
    assert "window 32,000" in limit_labels(ax) and "above the plot" not in ax.get_ylabel()


def bursts(rows, kind):
    """(last index, utilization after) of each run of consecutive ``kind_*`` rows within one turn."""
    out, last = [], None
    for i, r in enumerate(rows):
        if r["event"].startswith(kind + "_"):
            if last == i - 1 and rows[last]["turn"] == r["turn"]:
                out[-1] = (i, float(r["utilization"]))
            else:
                out.append((i, float(r["utilization"])))
            last = i
    return out


def test_trace_against_time_and_overlay_with_one_marker_per_eviction_burst(runs):
    naive, recency = read_run(runs["naive"]), read_run(runs["recency"])
    fig = trace_figure([naive, recency], x="time")
    ax = fig.axes[0]
    lines = by_gid(ax, "trace:")
    assert [ln.get_label() for ln in lines] == ["naive, seed 3", "recency, seed 3"]
    assert lines[0].get_color() != lines[1].get_color()
    assert list(lines[1].get_xdata()) == [float(r["time_s"]) for r in recency.trace]
    assert ax.get_xlabel() == "simulated time (s)"
    # recency's evictions are its own, not a gate's fallback: marked as non-model evictions, one per burst
    assert not by_gid(ax, "fallback:")
    (own,) = by_gid(ax, "nonmodel:")
    rows = read_rows(runs["recency"] / "trace.csv")
    want = bursts(rows, "nonmodel")
    evictions = sum(r["event"].startswith("nonmodel_") for r in rows)
    assert 0 < len(want) < evictions  # the fixture has bursts of several evictions
    assert list(own.get_ydata()) == [u for _, u in want]
    assert list(own.get_xdata()) == [float(rows[i]["time_s"]) for i, _ in want]
    assert "naive vs recency" in ax.get_title()
    labels = legend_labels(ax)
    assert "policy's own eviction (one per burst)" in labels
    assert len(labels) == 4  # two runs, two kinds of marker: no entry per limit
    # one trigger shared by both runs: one line, named once
    assert limit_labels(ax) == ["window 32,000 (above)", "hard budget 24,000", "trigger 22,000 (every run)"]


def test_trace_triggers_are_told_apart_on_their_lines(tmp_path):
    a = read_run(make_run(tmp_path, "a", seed=0))
    b = read_run(make_run(tmp_path, "b", seed=0, overrides={"trigger": 20000}))
    ax = trace_figure({"naive @22k": a, "naive @20k": b}).axes[0]
    labels = limit_labels(ax)
    assert "trigger 22,000 (naive @22k)" in labels and "trigger 20,000 (naive @20k)" in labels
    colours = {ln.get_gid(): ln.get_color() for ln in ax.get_lines() if (ln.get_gid() or "").startswith(("trig",
                                                                                                         "trace"))}
    assert colours["trigger:22000"] == colours["trace:naive @22k"] != colours["trigger:20000"]
    assert colours["trigger:20000"] == colours["trace:naive @20k"]
    low, high = ax.get_ylim()
    assert low < 20000 < 22000 < 24000 < high < 32000


def test_a_policy_from_a_file_is_labelled_by_its_class(tmp_path):
    import json

    paths = []
    for name, spec in (("x", "/home/someone/experiments/v2/my_policies.py:KeepTail"),
                       ("y", "/home/someone/experiments/v3/other.py:KeepTail")):
        path = make_run(tmp_path, name)
        summary = json.loads((path / "summary.json").read_text())
        summary["policy"] = spec
        (path / "summary.json").write_text(json.dumps(summary))
        paths.append(path)
    ax = trace_figure([read_run(paths[0])]).axes[0]
    assert "KeepTail" in ax.get_title() and "/home" not in ax.get_title()
    assert legend_labels(ax)[0].startswith("KeepTail, seed 3, band")
    # two files, one class name: the file names keep them apart, still without the folders
    ax = trace_figure([read_run(p) for p in paths]).axes[0]
    assert [ln.get_label() for ln in by_gid(ax, "trace:")] == ["my_policies.py:KeepTail, seed 3",
                                                                "other.py:KeepTail, seed 3"]
    assert "/home" not in ax.get_title() + "".join(legend_labels(ax))


def test_trace_marks_re_retrievals(tmp_path):
    path = make_run(tmp_path, "r")
    add_event(path, 50.0, 9, "re_retrieval", {"key": "cmd-2", "tokens": 300, "turns_since_prune": 4})
    ax = trace_figure([read_run(path)], ylim="full").axes[0]
    (marks,) = by_gid(ax, "re_retrieval:")
    assert len(marks.get_xdata()) == 1 and 8 <= marks.get_xdata()[0] < 10
    assert "re-retrieval (tool re-run)" in legend_labels(ax)


def test_ledger_bars_and_cumulative_overhead(runs):
    run = read_run(runs["naive"])
    fig = ledger_figure(run)
    top, bottom = fig.axes
    bars = {c.get_label(): [p.get_height() for p in c.patches] for c in top.containers}
    assert bars["index (read)"] == [float(r["index"]) for r in run.ledger]
    assert bars["net"] == [float(r["net"]) for r in run.ledger]
    assert bars["evicted"] == [float(r["evicted"]) for r in run.ledger]
    (cum,) = by_gid(bottom, "cumulative")
    assert cum.get_xdata()[-1] == run.metrics["sum_net_tokens"]
    assert cum.get_ydata()[-1] == run.metrics["sum_overhead_tokens"]
    assert "tokens" in top.get_ylabel() and "tokens" in bottom.get_xlabel() and "tokens" in bottom.get_ylabel()
    assert f"{len(run.ledger)} model-driven prune passes" in top.get_title()


def test_ledger_without_passes_says_so(runs):
    fig = ledger_figure(read_run(runs["recency"]))
    assert "no model-driven passes" in fig.axes[0].texts[0].get_text()


def test_bootstrap_is_deterministic_and_brackets_the_median():
    v = [3.0, 9.0, 4.0, 7.0, 5.0, 6.0]
    m, lo, hi = bootstrap_median(v)
    assert m == 5.5 and lo <= m <= hi and (m, lo, hi) == bootstrap_median(v)
    assert bootstrap_median([2.0]) == (2.0, 2.0, 2.0)


def dodged(xs, want, span, lines):
    """``xs`` are ``want`` moved by one offset, no more than the dodge of ``lines`` lines allows."""
    shift = np.asarray(xs, dtype=float) - np.asarray(want, dtype=float)
    return np.allclose(shift, shift[0]) and abs(shift[0]) <= DODGE * span * (lines - 1) / 2 + 1e-9


def test_sweep_curve_from_runs(tmp_path):
    sweep = read_sweep(make_sweep(tmp_path))
    with pytest.raises(UserError, match="choose one of"):
        sweep_figure(sweep, "passes")  # no acting_trigger column, two grid parameters
    ax = sweep_figure(sweep, "passes", x="trigger").axes[0]
    lines = by_gid(ax, "median:")
    assert len(lines) == 4  # 2 policies x 2 values of the other grid parameter
    naive60 = next(ln for ln in lines if ln.get_gid() == "median:naive, decision.rationale_per_span=60")
    want = [np.median([metrics_for("naive", t, 60, s)["passes"] for s in SEEDS]) for t in TRIGGERS]
    assert dodged(naive60.get_xdata(), TRIGGERS, TRIGGERS[-1] - TRIGGERS[0], 4)
    assert list(naive60.get_ydata()) == want
    band = next(b for b in by_gid(ax, "band:") if b.get_gid().endswith("naive, decision.rationale_per_span=60"))
    ys = band.get_paths()[0].vertices[:, 1]
    assert ys.min() <= min(want) and ys.max() >= max(want)
    assert ax.get_xlabel() == "trigger (tokens)" and ax.get_ylabel() == "median passes (per run)"
    assert "95% band" in ax.get_title() and "seeds 0-2" in ax.get_title()
    assert "naive, decision.rationale_per_span=60" in legend_labels(ax)
    assert len(legend_labels(ax)) == 4


def test_sweep_infinite_medians_are_drawn_at_the_top(tmp_path):
    sweep = read_sweep(make_sweep(tmp_path))
    ax = sweep_figure(sweep, "overhead_ratio", x="decision.rationale_per_span").axes[0]
    assert ax.get_ylabel() == "median overhead_ratio (ratio)"
    assert all(np.isfinite(ln.get_ydata()).all() for ln in by_gid(ax, "median:"))
    (inf,) = by_gid(ax, "inf:naive, trigger=23500")  # the naive median at 23.5k is infinite
    assert dodged(inf.get_xdata(), PER_SPAN, PER_SPAN[-1] - PER_SPAN[0], 2 * len(TRIGGERS))
    assert set(inf.get_ydata()) == {ax.get_ylim()[1]}
    assert "naive, trigger=23500: median infinite (drawn at the top)" in legend_labels(ax)


def test_sweep_prefers_aggregate(tmp_path):
    sweep = read_sweep(make_sweep(tmp_path, aggregate=True))
    ax = sweep_figure(sweep, "passes", x="trigger").axes[0]
    line = by_gid(ax, "median:naive")[0]
    assert list(line.get_ydata()) == [100 + t / 1000 for t in TRIGGERS]
    assert "aggregate.csv" in ax.get_title()


def test_phase_share_and_boundary(tmp_path):
    sweep = read_sweep(make_sweep(tmp_path))
    with pytest.raises(UserError, match="choose one"):
        phase_figure(sweep, "trigger", "decision.rationale_per_span", "oscillating")
    fig = phase_figure(sweep, "trigger", "decision.rationale_per_span", "oscillating", policy="naive")
    ax = fig.axes[0]
    z = ax.images[0].get_array()
    for i, per in enumerate(PER_SPAN):
        for j, t in enumerate(TRIGGERS):
            want = np.mean([metrics_for("naive", t, per, s)["oscillating"] for s in SEEDS])
            assert z[i, j] == pytest.approx(want)
    (line,) = by_gid(ax, "boundary")
    # per row: overhead = median(index + rationale) = 600 + 40 + 3*per; boundary trigger = 24000 - overhead
    for per, row in zip(PER_SPAN, range(len(PER_SPAN)), strict=True):
        target = 24000 - (640 + 3 * per)
        pos = np.interp(target, TRIGGERS, range(len(TRIGGERS)))
        assert list(line.get_xdata()[2 * row:2 * row + 2]) == pytest.approx([pos, pos])
        assert list(line.get_ydata()[2 * row:2 * row + 2]) == [row - 0.5, row + 0.5]
    assert ax.get_xlabel() == "trigger (tokens)" and ax.get_ylabel() == "decision.rationale_per_span (tokens)"
    assert "share of runs oscillating" in ax.get_title() and "naive" in ax.get_title()
    assert fig.axes[1].get_ylabel() == "share of runs oscillating"


def test_phase_median_and_share_of_counts(tmp_path):
    sweep = read_sweep(make_sweep(tmp_path))
    fig = phase_figure(sweep, "decision.rationale_per_span", "trigger", "passes", policy="slack-gated")
    assert "median passes" in fig.axes[0].get_title()
    fig = phase_figure(sweep, "trigger", "decision.rationale_per_span", "net_negative_passes", policy="naive")
    assert "share of runs with any net_negative_passes" in fig.axes[0].get_title().replace("\n", " ")
    assert set(np.unique(fig.axes[0].images[0].get_array())) <= {0.0, 1.0}


def test_phase_rejects_unknown_params(tmp_path):
    sweep = read_sweep(make_sweep(tmp_path))
    with pytest.raises(UserError, match="not a grid parameter"):
        phase_figure(sweep, "trigger", "budget", "passes", policy="naive")
    with pytest.raises(UserError, match="not a column"):
        phase_figure(sweep, "trigger", "decision.rationale_per_span", "nope", policy="naive")


def test_output_is_deterministic(runs, tmp_path):
    run = read_run(runs["naive"])
    for fmt in ("svg", "png"):
        a = style.render(trace_figure([run]), fmt)
        b = style.render(trace_figure([run]), fmt)
        assert a == b
    assert b"Date" not in style.render(ledger_figure(run), "svg")


def test_phase_without_a_budget_says_why_no_boundary(tmp_path):
    import json

    path = make_sweep(tmp_path)
    meta = json.loads((path / "sweep.json").read_text())
    del meta["scenario"]["budget"]  # a scenario (from another version, say) that does not give it
    (path / "sweep.json").write_text(json.dumps(meta))
    ax = phase_figure(read_sweep(path), "trigger", "decision.rationale_per_span", "passes", policy="naive").axes[0]
    assert not by_gid(ax, "boundary") and "gives no budget" in ax.get_title()
