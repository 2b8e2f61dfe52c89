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
from prunesim.plots.sweep import bootstrap_median, sweep_figure
from prunesim.plots.trace import trace_figure


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runs")
    return {"naive": make_run(tmp, "naive"), "recency": make_run(tmp, "recency", policy="recency")}


def by_gid(ax, prefix):
    return [a for a in ax.get_children() if (a.get_gid() or "").startswith(prefix)]


def legend_labels(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


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
    (band,) = by_gid(ax, "band:")
    ys = band.get_paths()[0].vertices[:, 1]
    assert ys.min() == run.metrics["band_floor"] and ys.max() == 22000
    labels = legend_labels(ax)
    assert {"window 32,000 tokens", "hard budget 24,000 tokens", "trigger 22,000 tokens"} <= set(labels)
    assert "model-driven prune pass (after)" in labels
    assert ax.get_ylabel() == "utilization (tokens)" and "turn" in ax.get_xlabel()
    assert "oscillation-40" in ax.get_title() and "naive" in ax.get_title() and "seed 3" in ax.get_title()
    assert ax.get_ylim() == (0, 32000 * 1.04)
    assert ax.get_legend().get_bbox_to_anchor().x0 > ax.get_window_extent().x1 - 1  # outside the axes


def test_trace_against_time_and_overlay_with_fallbacks(runs):
    naive, recency = read_run(runs["naive"]), read_run(runs["recency"])
    fig = trace_figure([naive, recency], x="time")
    ax = fig.axes[0]
    lines = by_gid(ax, "trace:")
    assert [ln.get_label() for ln in lines] == ["naive, seed 3", "recency, seed 3"]
    assert lines[0].get_color() != lines[1].get_color()
    assert list(lines[1].get_xdata()) == [float(r["time_s"]) for r in recency.trace]
    assert ax.get_xlabel() == "simulated time (s)"
    # recency's evictions are its own, not a gate's fallback: marked as non-model evictions
    assert not by_gid(ax, "fallback:")
    (own,) = by_gid(ax, "nonmodel:")
    assert len(own.get_xdata()) == sum(r["event"].startswith("nonmodel_") for r in recency.trace) > 0
    assert "naive vs recency" in ax.get_title()
    assert "non-model eviction (the policy's own)" in legend_labels(ax)


def test_trace_marks_re_retrievals(tmp_path):
    path = make_run(tmp_path, "r")
    add_event(path, 50.0, 9, "re_retrieval", {"key": "cmd-2", "tokens": 300, "turns_since_prune": 4})
    ax = trace_figure([read_run(path)]).axes[0]
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


def test_sweep_curve_from_runs(tmp_path):
    sweep = read_sweep(make_sweep(tmp_path))
    with pytest.raises(UserError, match="choose one of"):
        sweep_figure(sweep, "passes")
    ax = sweep_figure(sweep, "passes", x="trigger").axes[0]
    lines = by_gid(ax, "median:")
    assert len(lines) == 4  # 2 policies x 2 values of the other grid parameter
    naive60 = next(ln for ln in lines if ln.get_gid() == "median:naive, decision.rationale_per_span=60")
    want = [np.median([metrics_for("naive", t, 60, s)["passes"] for s in SEEDS]) for t in TRIGGERS]
    assert list(naive60.get_xdata()) == TRIGGERS and list(naive60.get_ydata()) == want
    band = next(b for b in by_gid(ax, "band:") if b.get_gid().endswith("naive, decision.rationale_per_span=60"))
    ys = band.get_paths()[0].vertices[:, 1]
    assert ys.min() <= min(want) and ys.max() >= max(want)
    assert ax.get_xlabel() == "trigger (tokens)" and ax.get_ylabel() == "passes (passes)"
    assert "95% band" in ax.get_title() and "seeds 0-2" in ax.get_title()
    assert "naive, decision.rationale_per_span=60: median, 95% band" in legend_labels(ax)


def test_sweep_infinite_medians_are_drawn_at_the_top(tmp_path):
    sweep = read_sweep(make_sweep(tmp_path))
    ax = sweep_figure(sweep, "overhead_ratio", x="decision.rationale_per_span").axes[0]
    assert ax.get_ylabel() == "overhead_ratio (ratio)"
    assert all(np.isfinite(ln.get_ydata()).all() for ln in by_gid(ax, "median:"))
    (inf,) = by_gid(ax, "inf:naive, trigger=23500")  # the naive median at 23.5k is infinite
    assert list(inf.get_xdata()) == PER_SPAN and set(inf.get_ydata()) == {ax.get_ylim()[1]}
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
    assert "share of runs with oscillating" in ax.get_title() and "naive" in ax.get_title()
    assert fig.axes[1].get_ylabel() == "share of runs with oscillating"


def test_phase_median_and_share_of_counts(tmp_path):
    sweep = read_sweep(make_sweep(tmp_path))
    fig = phase_figure(sweep, "decision.rationale_per_span", "trigger", "passes", policy="slack-gated")
    assert "median passes" in fig.axes[0].get_title()
    fig = phase_figure(sweep, "trigger", "decision.rationale_per_span", "net_negative_passes", policy="naive")
    assert "net_negative_passes > 0" in fig.axes[0].get_title()
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
