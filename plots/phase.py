"""A phase diagram of the failure: a metric over two grid parameters, with seed 000's boundary.

Each cell is the runs of one (x, y) grid point for one policy (other grid
parameters held at the values given with ``fix``). The cell shows either the
median of the metric over those runs or, with ``stat="share"``, the share of
runs where the metric is true or above zero (the default for booleans and for
failure counts such as ``net_negative_passes``).

The boundary drawn over it is where headroom equals the decision's overhead:
``budget - trigger = index + rationale``. When one axis is ``trigger`` (or
``budget``), for each value of the other axis the overhead is the median, over
that row's or column's runs that made at least one pass, of
``mean_index_tokens + mean_rationale_tokens``; the boundary trigger is
``budget - overhead`` (the boundary budget ``trigger + overhead``), with budget
and trigger from sweep.json's scenario unless the other axis sets them. It is
placed on the axis by linear interpolation between the grid's values and drawn
as a step across each row (column). On the trigger side beyond it (trigger
above ``budget - overhead``) a pass is decided with less headroom than it
costs. When neither axis is trigger or budget, no boundary is drawn and the
title says so.
"""

from __future__ import annotations

import math

import matplotlib
import numpy as np
from prunesim.errors import UserError
from prunesim.observe.metrics.intervals import wilson
from prunesim.plots import stats, style
from prunesim.plots.io import Sweep, as_float, parse_cell
from prunesim.plots.sweep import _key, metric_label, param_label, stat_label

STATS = ("median", "share")


def default_stat(sweep: Sweep, metric: str) -> str:
    return stats.default_stat(metric, (r.get(metric) for r in sweep.runs))


def select_runs(sweep: Sweep, x: str, y: str, policy: str | None, fix: dict[str, str]) -> tuple[str, list[dict]]:
    policies = sweep.policies
    if policy is None:
        if len(policies) != 1:
            raise UserError("--policy", None, f"the sweep has policies {', '.join(policies)}; choose one")
        policy = policies[0]
    elif policy not in policies:
        raise UserError("--policy", policy, f"not in this sweep (policies: {', '.join(policies)})")
    for p in fix:
        sweep.check_param(p, "--fix")
    # An axis qualified by another policy is blank in this policy's rows: a figure of it would be empty.
    for flag, axis in (("--x", x), ("--y", y)):
        owner = axis.rpartition(":")[0]
        if owner not in ("", policy):
            raise UserError(flag, axis, f"is swept for {owner} only; {policy}'s runs leave it blank "
                                        f"(choose --policy {owner} or another grid parameter)")
    # Axes qualified by another policy (``slack-gated:gate.headroom``) are empty in this policy's rows.
    rest = [p for p in sweep.grid if p not in (x, y) and p.rpartition(":")[0] in ("", policy)]
    for p in rest:
        if len(sweep.grid[p]) > 1 and p not in fix:
            raise UserError("--fix", p, f"grid parameter varies ({sweep.grid[p]}); fix it with --fix {p}=VALUE")
    wanted = {p: _key(parse_cell(str(v))) for p, v in fix.items()}
    runs = [r for r in sweep.runs
            if str(r["policy"]) == policy and all(_key(r.get(p)) == v for p, v in wanted.items())]
    if not runs:
        raise UserError("--fix", None, "no runs match the chosen policy and fixed parameters")
    return policy, runs


def to_index(values: list[float], v: float) -> float:
    """Position of ``v`` on an axis whose cells hold ``values`` (ascending), extrapolating linearly."""
    if len(values) == 1:
        return 0.0
    i = int(np.clip(np.searchsorted(values, v) - 1, 0, len(values) - 2))
    return i + (v - values[i]) / (values[i + 1] - values[i])


def boundary(sweep: Sweep, runs: list[dict], x: str, y: str, xs: list, ys: list):
    """(points as (x index, y index), legend text) of the headroom = overhead boundary, or (None, why)."""
    h = "trigger" if "trigger" in (x, y) else "budget" if "budget" in (x, y) else None
    if h is None:
        return None, "boundary not drawn: neither axis is trigger or budget"
    other = y if h == x else x
    hvals, ovals = (xs, ys) if h == x else (ys, xs)
    if not all(isinstance(v, float) for v in hvals):
        return None, f"boundary not drawn: {h} values are not numbers"
    if not runs or "mean_index_tokens" not in runs[0] or "mean_rationale_tokens" not in runs[0]:
        return None, "boundary not drawn: runs.csv lacks mean_index_tokens or mean_rationale_tokens"
    sc = sweep.meta.get("scenario") if isinstance(sweep.meta.get("scenario"), dict) else {}
    known = {k for k in ("budget", "trigger") if k in sc or k in runs[0] or k == other}
    missing = sorted({"budget", "trigger"} - {h} - known)
    if missing:
        return None, f"boundary not drawn: sweep.json's scenario gives no {', '.join(missing)}"
    pts = []
    for j, ov in enumerate(ovals):
        row = [r for r in runs if _key(r.get(other)) == ov and as_float(r.get("passes", 1)) > 0]
        if not row:
            continue
        overhead = float(np.median([as_float(r["mean_index_tokens"]) + as_float(r["mean_rationale_tokens"])
                                    for r in row]))
        budget = ov if other == "budget" else as_float(sc.get("budget", row[0].get("budget", math.nan)))
        trigger = ov if other == "trigger" else as_float(sc.get("trigger", row[0].get("trigger", math.nan)))
        target = budget - overhead if h == "trigger" else trigger + overhead
        if not math.isfinite(target):
            continue
        hp = to_index(hvals, target)
        for op in (j - 0.5, j + 0.5):
            pts.append((hp, op) if h == x else (op, hp))
    if not pts:
        return None, "boundary not drawn: no runs with passes to measure the overhead"
    return pts, "budget - trigger = median(index + rationale): headroom equals decision overhead"


CELL_WIDTH = 0.62  # inches per column of the heatmap


def _tick(v) -> str:
    """A grid value as a tick label: 20,500 with its thousands separator, 0.5 as it is, text as it is."""
    if not isinstance(v, float):
        return str(v)
    return f"{v:,.0f}" if v == int(v) and abs(v) >= 1000 else f"{v:g}"


def phase_figure(sweep: Sweep, x: str, y: str, metric: str, stat: str | None = None, policy: str | None = None,
                 fix: dict[str, str] | None = None):
    sweep.check_param(x, "--x")
    sweep.check_param(y, "--y")
    if x == y:
        raise UserError("--y", y, "must differ from --x")
    sweep.check_metric(metric)
    stat = stat or default_stat(sweep, metric)
    if stat not in STATS:
        raise UserError("--stat", stat, f"unknown statistic (known: {', '.join(STATS)})")
    policy, runs = select_runs(sweep, x, y, policy, fix or {})
    xs = sorted({_key(v) for v in sweep.grid[x]}, key=lambda v: (isinstance(v, str), v))
    ys = sorted({_key(v) for v in sweep.grid[y]}, key=lambda v: (isinstance(v, str), v))
    z = np.full((len(ys), len(xs)), np.nan)
    n = np.zeros((len(ys), len(xs)), dtype=int)
    for i, yv in enumerate(ys):
        for j, xv in enumerate(xs):
            vals = np.array([as_float(r[metric]) for r in runs if _key(r[x]) == xv and _key(r[y]) == yv])
            n[i, j] = vals.size
            if vals.size:
                z[i, j] = float(np.mean(vals > 0)) if stat == "share" else float(np.median(vals))
    # A cell is wide enough for its value and interval at a readable size: wider figures for more columns.
    width = max(style.FIGSIZE[0], 2.3 + CELL_WIDTH * len(xs))
    fig, axes = style.new_figure(size=(width, style.FIGSIZE[1] + 0.25 * max(0, len(ys) - 4)))
    ax = axes[0][0]
    texts = {}
    with style.rc():
        finite = z[np.isfinite(z)]
        vmin, vmax = (0.0, 1.0) if stat == "share" else (
            (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0))
        cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#dddddd")
        image = ax.imshow(np.ma.masked_invalid(z), origin="lower", aspect="auto", cmap=cmap,
                          vmin=vmin, vmax=vmax if vmax > vmin else vmin + 1)
        for i in range(len(ys)):
            for j in range(len(xs)):
                v = z[i, j]
                text = "-" if n[i, j] == 0 else "inf" if math.isinf(v) else f"{v:.2f}" if abs(v) < 100 else f"{v:,.0f}"
                light = not math.isfinite(v) or (v - vmin) / ((vmax - vmin) or 1) > 0.6
                if stat == "share" and n[i, j]:  # a share of a few runs: its Wilson 95% interval under it
                    low, high = wilson(int(round(v * n[i, j])), int(n[i, j]))
                    text += f"\n[{low:.2f}, {high:.2f}]"
                texts[(i, j)] = (text, "black" if light else "white")
        longest = max((len(line) for text, _ in texts.values() for line in text.split("\n")), default=1)
        cell = (width - 2.3) * 72 / max(1, len(xs))  # points, as wide as the axes allow
        size = max(5.5, min(style.SMALL, cell / (0.62 * longest)))
        for (i, j), (text, colour) in texts.items():
            ax.text(j, i, text, ha="center", va="center", fontsize=size, color=colour, gid=f"cell:{i},{j}")
        scale = stat_label(metric, stat, [r[metric] for r in runs])
        fig.colorbar(image, ax=ax, label=scale if stat == "share" else metric_label(metric))
        ax.set_xticks(range(len(xs)), [_tick(v) for v in xs])
        ax.set_yticks(range(len(ys)), [_tick(v) for v in ys])
        ax.set_xlabel(param_label(x))
        ax.set_ylabel(param_label(y))
        ax.grid(False)
        pts, note = boundary(sweep, runs, x, y, xs, ys)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color="#D55E00", lw=2.2, label=note)[0].set_gid(
                "boundary")
            ax.set_xlim(-0.5, len(xs) - 0.5)
            ax.set_ylim(-0.5, len(ys) - 0.5)
            handle = ax.get_lines()[-1]
            fig.legend([handle], [style.wrapped(note, 70)], loc="outside lower center")
        fixed = "".join(f", {p}={v}" for p, v in (fix or {}).items())
        seeds = style.seeds_text(r["seed"] for r in runs)
        interval = "Wilson 95% interval in brackets; " if stat == "share" else ""
        ax.set_title(style.wrapped(f"{sweep.scenario_name}, {policy}{fixed}: {scale}\n{interval}{seeds} per cell"
                                   + ("" if pts else f"\n{note}"), int(style.TITLE_WIDTH * width / style.FIGSIZE[0])))
    return fig
