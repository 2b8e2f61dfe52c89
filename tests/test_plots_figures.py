"""What the redrawn figures show, read from matplotlib's objects: shares of runs with Wilson intervals, the
acting trigger as the sweep's default axis, labelled and separated Pareto points, per-policy frontiers, short
policy labels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from plot_fixtures import (
    GATE_LEAD,
    LB_UNITS,
    PER_SPAN,
    SEEDS,
    TRIGGERS,
    leaderboard_values,
    make_leaderboard,
    make_sweep,
    metrics_for,
)
from prunesim.errors import UserError
from prunesim.io.labels import policy_label, policy_labels
from prunesim.observe.metrics.intervals import wilson
from prunesim.plots.io import read_sweep
from prunesim.plots.pareto import pareto_figure, read_leaderboard
from prunesim.plots.stats import bootstrap_mean, share
from prunesim.plots.sweep import DODGE, choose_x, sweep_figure


def by_gid(ax, prefix):
    return [a for a in ax.get_children() if (a.get_gid() or "").startswith(prefix)]


def legend_labels(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def interval_bounds(ax, label):
    """(low, high) of each Wilson error bar drawn for ``label``, in x order."""
    (bars,) = by_gid(ax, f"interval:{label}")
    segments = sorted(bars.get_segments(), key=lambda s: s[0][0])
    return [(float(min(s[0][1], s[1][1])), float(max(s[0][1], s[1][1]))) for s in segments]


# -- policy labels ------------------------------------------------------------------
def test_policy_labels_are_short_and_distinct():
    assert policy_label("naive") == "naive" and policy_label("clear-tool-uses:anthropic") == "clear-tool-uses:anthropic"
    assert policy_label("/a/b/c/mine.py:KeepTail") == "KeepTail"
    two = policy_labels(["/a/x.py:KeepTail", "/b/y.py:KeepTail", "naive"])
    assert two == {"/a/x.py:KeepTail": "x.py:KeepTail", "/b/y.py:KeepTail": "y.py:KeepTail", "naive": "naive"}
    # a class named like a registered policy: its file keeps it apart; the registered name stays as it is
    assert policy_labels(["naive", "p/q.py:naive"]) == {"naive": "naive", "p/q.py:naive": "q.py:naive"}
    # one file name in two folders: only the whole path tells them apart
    same = policy_labels(["/a/x.py:K", "/b/x.py:K"])
    assert same == {"/a/x.py:K": "/a/x.py:K", "/b/x.py:K": "/b/x.py:K"}


# -- plot sweep: shares of runs -----------------------------------------------------
def test_a_yes_no_metric_is_a_share_of_runs_with_wilson_intervals(tmp_path):
    sweep = read_sweep(make_sweep(tmp_path))
    ax = sweep_figure(sweep, "oscillating", x="trigger").axes[0]
    label = "naive, decision.rationale_per_span=120"
    (line,) = by_gid(ax, f"share:{label}")
    ks = [sum(metrics_for("naive", t, 120, s)["oscillating"] for s in SEEDS) for t in TRIGGERS]
    assert list(line.get_ydata()) == [k / len(SEEDS) for k in ks]
    assert any(0 < k < len(SEEDS) for k in ks) and any(k == 0 for k in ks)  # the fixture has both
    for (low, high), k in zip(interval_bounds(ax, label), ks, strict=True):
        assert (low, high) == pytest.approx(wilson(k, len(SEEDS)))
    assert ax.get_ylabel() == "share of runs oscillating"
    assert ax.get_ylim()[0] < 0 and 1 < ax.get_ylim()[1] < 1.1
    assert "share of runs and Wilson 95% interval" in ax.get_title().replace("\n", " ")
    assert not by_gid(ax, "median:")


def test_a_failure_count_defaults_to_the_share_of_runs_with_any(tmp_path):
    sweep = read_sweep(make_sweep(tmp_path))
    ax = sweep_figure(sweep, "net_negative_passes", x="trigger").axes[0]
    assert ax.get_ylabel() == "share of runs with any net_negative_passes"
    (line,) = by_gid(ax, "share:naive, decision.rationale_per_span=60")
    want = [np.mean([metrics_for("naive", t, 60, s)["net_negative_passes"] > 0 for s in SEEDS]) for t in TRIGGERS]
    assert list(line.get_ydata()) == pytest.approx(want)
    # its median, asked for, is still there, and the mean with its bootstrap band
    ax = sweep_figure(sweep, "net_negative_passes", x="trigger", stat="median").axes[0]
    assert by_gid(ax, "median:") and ax.get_ylabel() == "median net_negative_passes (passes per run)"
    ax = sweep_figure(sweep, "net_negative_passes", x="trigger", stat="mean").axes[0]
    (line,) = by_gid(ax, "mean:naive, decision.rationale_per_span=60")
    want = [np.mean([metrics_for("naive", t, 60, s)["net_negative_passes"] for s in SEEDS]) for t in TRIGGERS]
    assert list(line.get_ydata()) == pytest.approx(want)
    with pytest.raises(UserError, match="unknown statistic"):
        sweep_figure(sweep, "passes", x="trigger", stat="mode")


def test_share_and_mean_helpers():
    assert share([True, False, False, True]) == (0.5, *wilson(2, 4))
    assert share([0, 0, 3, float("nan")]) == (1 / 3, *wilson(1, 3))
    m, lo, hi = bootstrap_mean([0, 0, 0, 0, 0, 0, 1, 2, 3, 0])
    assert m == pytest.approx(0.6) and lo < m < hi and hi > 0 and (m, lo, hi) == bootstrap_mean(
        [0, 0, 0, 0, 0, 0, 1, 2, 3, 0])
    assert all(math.isnan(v) for v in share([]))


# -- plot sweep: the acting trigger -------------------------------------------------
def test_the_acting_trigger_is_the_default_axis_and_nominal_is_on_request(tmp_path):
    sweep = read_sweep(make_sweep(tmp_path, acting=True))
    assert choose_x(sweep, None) == "acting_trigger"
    assert choose_x(sweep, "nominal") == "trigger"
    assert choose_x(sweep, "trigger") == "trigger"
    ax = sweep_figure(sweep, "passes").axes[0]
    assert ax.get_xlabel().startswith("acting_trigger")
    gated = by_gid(ax, "median:slack-gated")
    naive = by_gid(ax, "median:naive")
    # trigger folds into x; the other grid parameter still splits lines
    assert len(gated) == len(naive) == len(PER_SPAN)
    span = TRIGGERS[-1] - (TRIGGERS[0] - GATE_LEAD)
    xs = np.asarray(gated[0].get_xdata()) - (np.asarray(TRIGGERS) - GATE_LEAD)
    lines = 2 * len(PER_SPAN)
    assert np.allclose(xs, xs[0]) and abs(xs[0]) <= DODGE * span * (lines - 1) / 2  # slack-gated sits where it acts
    ax = sweep_figure(sweep, "passes", "nominal").axes[0]
    xs = np.asarray(by_gid(ax, "median:slack-gated")[0].get_xdata()) - np.asarray(TRIGGERS)
    assert abs(xs[0]) <= DODGE * (TRIGGERS[-1] - TRIGGERS[0]) * (lines - 1) / 2


def test_equal_lines_stay_visible(tmp_path):
    """Two policies with the same values: apart along x, each with its own marker and line style."""
    sweep = read_sweep(make_sweep(tmp_path))
    ax = sweep_figure(sweep, "oscillating", x="trigger").axes[0]
    naive = by_gid(ax, "share:naive, decision.rationale_per_span=60")[0]
    gated = by_gid(ax, "share:slack-gated, decision.rationale_per_span=60")[0]
    assert set(gated.get_ydata()) == {0.0} and naive.get_ydata()[0] == 0.0  # equal at the lowest trigger
    assert gated.get_xdata()[0] != naive.get_xdata()[0]
    assert gated.get_marker() != naive.get_marker()
    assert len(legend_labels(ax)) == 4


# -- plot pareto ----------------------------------------------------------------------
def point_positions(fig, ax):
    """{policy: display (x, y)} of each drawn marker, offsets included."""
    fig.draw_without_rendering()
    out = {}
    for ln in ax.get_lines():
        gid = ln.get_gid() or ""
        if gid.startswith("point:"):
            x, y = ln.get_xdata()[0], ln.get_ydata()[0]
            out[gid.removeprefix("point:")] = tuple(ln.get_transform().transform((x, y)))
    return out


def test_pareto_points_are_labelled_and_coinciding_ones_stay_visible(tmp_path):
    board = read_leaderboard(make_leaderboard(tmp_path))
    fig = pareto_figure(board)
    ax = fig.axes[0]
    where = point_positions(fig, ax)
    assert set(where) == {"noop", "recency", "naive", "masking"}
    # noop, recency and naive coincide at (1, 0): drawn apart, around their place
    trio = [where[p] for p in ("noop", "recency", "naive")]
    assert len({(round(x), round(y)) for x, y in trio}) == 3
    labels = {t.get_gid(): t.get_text() for t in ax.texts if (t.get_gid() or "").startswith("label:")}
    assert labels["label:masking"] == "masking"
    assert labels["label:noop|recency|naive"] == "3 policies (key at right)"
    key = legend_labels(ax)
    assert key == ["noop: 1.00, 0.00", "recency: 1.00, 0.00", "naive: 1.00, 0.00"]


def test_pareto_policies_at_one_x_are_set_apart_and_stay_in_view(tmp_path):
    from prunesim.plots.pareto import DODGE, _dodge

    points = {"a": ((1.0, 0.9, 1.1), (5.0, 1, 9)), "b": ((1.0, 1, 1), (2.0, 0, 4)),
              "c": ((1.001, 1, 1), (9.0, 8, 10)), "far": ((1.4, 1.3, 1.5), (0.0, 0, 0))}
    offsets = _dodge(points, ["a", "b", "c", "far"], xr=0.4)
    assert offsets == {"b": -DODGE, "a": 0.0, "c": DODGE}  # side by side, bottom to top; "far" stays put
    # drawn with those offsets, every point and its interval stays within the axes
    board = read_leaderboard(make_leaderboard(tmp_path))
    ax = pareto_figure(board).axes[0]
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    for policy in ("noop", "recency", "naive", "masking"):
        (px, low_x, high_x) = board.point(policy, "input_ratio", board.stat_for("input_ratio"))
        (py, low_y, high_y) = board.point(policy, "re_retrievals", board.stat_for("re_retrievals"))
        assert x0 <= low_x <= high_x <= x1 and y0 <= low_y <= high_y <= y1


def test_pareto_counts_are_means_with_intervals_that_are_not_degenerate(tmp_path):
    board = read_leaderboard(make_leaderboard(tmp_path))
    values = [r["re_retrievals"] for r in leaderboard_values("masking")]
    assert np.median(values) == 0  # the median of this count, and its interval, sit at 0
    ax = pareto_figure(board).axes[0]
    assert ax.get_ylabel() == "re_retrievals per transcript, mean"
    assert ax.get_xlabel() == "input_ratio, median (ratio)"
    mean, low, high = board.point("masking", "re_retrievals", "mean")
    assert mean == pytest.approx(np.mean(values)) and low < mean < high and high > 0
    # a yes/no figure is the share of units, with its Wilson interval
    ax = pareto_figure(board, y="acted").axes[0]
    assert ax.get_ylabel() == "acted, share of transcripts"
    assert board.point("naive", "acted", "share") == (0.3, *wilson(3, LB_UNITS))
    # the table's medians on request
    ax = pareto_figure(board, stat="median").axes[0]
    assert ax.get_ylabel() == "re_retrievals, median (runs)"


def test_pareto_without_runs_csv_draws_the_tables_medians(tmp_path):
    path = make_leaderboard(tmp_path)
    (path / "runs.csv").unlink()
    board = read_leaderboard(path)
    assert board.stat_for("re_retrievals") == "median"
    assert pareto_figure(board).axes[0].get_ylabel() == "re_retrievals, median (runs)"


def test_pareto_frontier_over_each_policys_own_threshold(tmp_path):
    board = read_leaderboard(make_leaderboard(tmp_path, settings=True))
    assert board.settings("masking") == ["", "masking.keep=2", "masking.keep=8"]
    ax = pareto_figure(board).axes[0]
    assert not by_gid(ax, "frontier:")
    (note,) = by_gid(ax, "notes")
    assert "2 other setting(s) not drawn" in note.get_text()
    ax = pareto_figure(board, frontier=True).axes[0]
    (line,) = by_gid(ax, "frontier:masking")
    # in the order of the acting threshold: keep=2 (8k), the documented setting (16k), keep=8 (24k)
    want = [board.point("masking", "input_ratio", "median", s)[0] for s in ("masking.keep=2", "", "masking.keep=8")]
    assert list(line.get_xdata()) == pytest.approx(want)
    thresholds = sorted(t.get_text() for t in ax.texts if t.get_gid() == "threshold:masking")
    assert thresholds == ["16k", "24k", "8k"]
    assert not by_gid(ax, "frontier:noop")  # one setting: a point, no line
    assert not by_gid(ax, "notes")


def test_phase_cells_give_the_share_with_its_wilson_interval(tmp_path):
    from prunesim.plots.phase import phase_figure

    sweep = read_sweep(make_sweep(tmp_path))
    ax = phase_figure(sweep, "trigger", "decision.rationale_per_span", "oscillating", policy="naive").axes[0]
    cells = {t.get_gid(): t.get_text() for t in ax.texts if (t.get_gid() or "").startswith("cell:")}
    for i, per in enumerate(PER_SPAN):
        for j, t in enumerate(TRIGGERS):
            k = sum(metrics_for("naive", t, per, s)["oscillating"] for s in SEEDS)
            low, high = wilson(k, len(SEEDS))
            assert cells[f"cell:{i},{j}"] == f"{k / len(SEEDS):.2f}\n[{low:.2f}, {high:.2f}]"
    assert "Wilson 95% interval" in ax.get_title()


# -- plot cdf -----------------------------------------------------------------------------
def test_cdf_of_a_sweep_grid_point_is_each_policys_empirical_distribution(tmp_path):
    from prunesim.plots.cdf import cdf_figure, cdf_rows

    path = make_sweep(tmp_path)
    with pytest.raises(UserError, match="hold it with --fix trigger=VALUE"):
        cdf_rows(path, "passes", {"decision.rationale_per_span": "60"})
    rows, what, noun = cdf_rows(path, "passes", {"trigger": "23500", "decision.rationale_per_span": "60"})
    assert len(rows) == 2 * len(SEEDS) and "trigger=23500" in what and noun == "run"
    ax = cdf_figure(rows, "passes", what, noun).axes[0]
    (line,) = by_gid(ax, "cdf:naive")
    values = sorted(metrics_for("naive", 23500, 60, s)["passes"] for s in SEEDS)
    # a step from 0 at the lowest value, 1/n up at each value, held to the right edge
    assert list(line.get_xdata())[1:-1] == values and line.get_ydata()[0] == 0
    assert list(line.get_ydata())[1:-1] == pytest.approx([(k + 1) / len(SEEDS) for k in range(len(SEEDS))])
    label = legend_labels(ax)[0]
    p50, p90 = (np.quantile(values, q, method="inverted_cdf") for q in (0.5, 0.9))
    assert label == f"naive (n={len(SEEDS)}): p50 {p50:.3g}, p90 {p90:.3g}"
    assert ax.get_ylabel() == "share of runs at or below x" and ax.get_xlabel() == "passes (per run)"


def test_cdf_of_a_leaderboard_takes_the_documented_settings(tmp_path):
    from prunesim.plots.cdf import cdf_figure, cdf_rows

    rows, what, noun = cdf_rows(make_leaderboard(tmp_path, settings=True), "re_retrievals")
    assert noun == "transcript" and len(rows) == 4 * LB_UNITS  # the other settings are left out
    ax = cdf_figure(rows, "re_retrievals", what, noun).axes[0]
    (line,) = by_gid(ax, "cdf:masking")
    at_zero = max(y for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True) if x == 0)
    assert at_zero == pytest.approx(0.7)  # seven of ten transcripts had no re-retrieval
    assert ax.get_xlabel() == "re_retrievals (tool runs per transcript)"
    with pytest.raises(UserError, match="not a figure of this leaderboard"):
        cdf_rows(tmp_path / "lb", "happiness")


def test_tables_show_a_file_policy_by_its_class_as_the_plots_do():
    from prunesim.cli.commands.compare import format_comparison
    from prunesim.cli.commands.leaderboard import format_table

    spec = "/home/someone/experiments/v2/my_policies.py:KeepTail"
    result = {"scenario": "oscillation-40", "seeds": [0, 1], "policies": ["naive", spec],
              "metrics": {"naive": {"passes": {"median": 11, "p10": 9, "p90": 13}},
                          spec: {"passes": {"median": 0, "p10": 0, "p90": 0}}}}
    header = format_comparison(result).splitlines()[1].split()
    assert header == ["metric", "naive", "KeepTail"]
    from prunesim.studies.leaderboard import Entry

    table = [{"policy": spec, "setting": "", "acting_threshold": None, "figure": "input_ratio", "median": 0.5,
              "mean": 0.5, "ci_low": 0.4, "ci_high": 0.6, "interval": "median"}]
    row = format_table(table, [Entry(spec, "", None)], "2 transcripts").splitlines()[2]
    assert row.startswith("KeepTail ") and "/home" not in row


def test_a_broken_runs_csv_stops_only_the_figures_that_read_it(tmp_path):
    path = make_leaderboard(tmp_path)
    (path / "runs.csv").write_bytes(b"unit,policy\n\xff,x\n")
    board = read_leaderboard(path)
    assert pareto_figure(board, stat="median").axes[0].get_ylabel() == "re_retrievals, median (runs)"
    with pytest.raises(UserError, match="not UTF-8"):
        pareto_figure(read_leaderboard(path))  # the mean of a count needs each unit's figures


def test_settings_a_runs_csv_cannot_tell_apart_fall_back_to_the_tables_medians(tmp_path):
    from plot_fixtures import read_rows, write_rows

    path = make_leaderboard(tmp_path, settings=True)
    rows = read_rows(path / "runs.csv")
    write_rows(path / "runs.csv", [{k: v for k, v in r.items() if k != "setting"} for r in rows],
               [c for c in rows[0] if c != "setting"])
    board = read_leaderboard(path)
    assert board.stat_for("re_retrievals") == "median"  # a mean would pool the three settings' units
    assert pareto_figure(board, frontier=True).axes[0].get_ylabel() == "re_retrievals, median (runs)"
