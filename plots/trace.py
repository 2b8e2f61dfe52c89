"""Utilization traces: one or more runs overlaid, with their limits, passes and band.

The y axis is scaled to the data: from 0 to the highest of the runs' peak
utilization, budget and trigger, and up to the window when the window is
within ``WINDOW_SCALE`` times that (a 128k window over an 18k trace would
flatten it; the legend then names the window instead of drawing it).
``ylim`` sets the axis by hand.

Against turns (``x="turn"``) the changes recorded within a turn are spread
evenly across it (turn t's k-th of n changes sits at t + k/n), so that a prune
pass's rise and fall stay visible; against simulated time (``x="time"``) each
change sits at its own time.
"""

from __future__ import annotations

import bisect

from matplotlib.lines import Line2D
from prunesim.plots import style
from prunesim.plots.io import Run

XLABELS = {
    "turn": "turn (changes within a turn spread evenly across it)",
    "time": "simulated time (s)",
}
MARKERS = {
    "pass": ("v", "model-driven prune pass (after)"),
    "fallback": ("X", "gate fallback (non-model eviction)"),
    "nonmodel": ("P", "non-model eviction (the policy's own)"),
    "re_retrieval": ("^", "re-retrieval (tool re-run)"),
}


def positions(run: Run, x: str) -> tuple[list[float], list[float]]:
    """x positions and simulated times of the trace rows, in row order."""
    rows = run.trace
    times = [float(r["time_s"]) for r in rows]
    if x == "time":
        return times, times
    counts: dict[int, int] = {}
    for r in rows:
        counts[int(r["turn"])] = counts.get(int(r["turn"]), 0) + 1
    seen: dict[int, int] = {}
    xs = []
    for r in rows:
        t = int(r["turn"])
        k = seen.get(t, 0)
        seen[t] = k + 1
        xs.append(t + k / counts[t])
    return xs, times


def at_time(xs: list[float], times: list[float], t: float) -> int | None:
    """Index of the last trace row at or before simulated time ``t``."""
    i = bisect.bisect_right(times, t + 1e-9) - 1
    return i if i >= 0 else None


WINDOW_SCALE = 1.5
MARGIN = 1.04


def y_top(runs: list[Run]) -> float:
    """The top of the y axis (see the module docstring)."""
    data = max((float(row["utilization"]) for r in runs for row in r.trace), default=0.0)
    limits = [float(r.summary.get(k) or 0) for r in runs for k in ("budget", "trigger")]
    data = max([data, *limits])
    window = max((float(r.summary.get("window") or 0) for r in runs), default=0.0)
    if window and (not data or window <= WINDOW_SCALE * data):
        return window * MARGIN
    return (data or 1.0) * MARGIN


def draw_traces(ax, runs: dict[str, Run], x: str = "turn", ylim: tuple[float, float] | None = None) -> list:
    """Draw each run's utilization, band and markers on ``ax``; returns legend handles."""
    if x not in XLABELS:
        raise ValueError(f"x must be one of {sorted(XLABELS)}")
    handles = []
    present: set[str] = set()
    for i, (label, run) in enumerate(runs.items()):
        c = style.colour(i)
        xs, times = positions(run, x)
        ys = [float(r["utilization"]) for r in run.trace]
        (line,) = ax.plot(xs, ys, color=c, lw=1.2, drawstyle="steps-post", label=label)
        line.set_gid(f"trace:{label}")
        handles.append(line)
        if not xs:
            continue
        m = run.metrics
        first, floor, trigger = m.get("first_trigger_turn", -1), m.get("band_floor", -1), run.summary.get("trigger")
        if isinstance(first, int) and first >= 0 and isinstance(floor, (int, float)) and floor >= 0 and trigger:
            x0 = next((xv for xv, r in zip(xs, run.trace, strict=True) if int(r["turn"]) >= first), xs[-1])
            band = ax.fill_between([x0, xs[-1]], floor, trigger, color=c, alpha=0.13, lw=0,
                                   label=f"{label}: band [{floor:,.0f}, {trigger:,.0f}]")
            band.set_gid(f"band:{label}")
            handles.append(band)
        px, py = [], []
        for row in run.ledger:
            j = at_time(xs, times, float(row["time_s"]))
            if j is not None:
                px.append(xs[j])
                py.append(float(row["utilization_after"]))
        marked = {"fallback": ([], []), "nonmodel": ([], [])}
        for xv, r in zip(xs, run.trace, strict=True):
            kind = str(r["event"]).split("_", 1)[0]
            if kind in marked and "_" in str(r["event"]):
                marked[kind][0].append(xv)
                marked[kind][1].append(float(r["utilization"]))
        rx, ry = [], []
        for ev in run.events_named("re_retrieval"):
            j = at_time(xs, times, float(ev["time_s"]))
            if j is not None:
                rx.append(xs[j])
                ry.append(ys[j])
        for kind, (mx, my) in {"pass": (px, py), **marked, "re_retrieval": (rx, ry)}.items():
            if mx:
                marker = MARKERS[kind][0]
                pts = ax.plot(mx, my, ls="none", marker=marker, ms=6, mfc=c, mec="black", mew=0.6)[0]
                pts.set_gid(f"{kind}:{label}")
                present.add(kind)
    for kind in MARKERS:
        if kind in present:
            marker, text = MARKERS[kind]
            handles.append(Line2D([], [], ls="none", marker=marker, ms=6, mfc="white", mec="black", label=text))
    low, high = ylim if ylim is not None else (0.0, y_top(list(runs.values())))
    handles += draw_limits(ax, list(runs.values()), high)
    ax.set_xlabel(XLABELS[x])
    ax.set_ylabel("utilization (tokens)")
    ax.set_ylim(low, high)
    return handles


def draw_limits(ax, runs: list[Run], top: float) -> list:
    """Horizontal lines at each distinct window, budget and trigger; a limit above ``top`` is only named."""
    handles = []
    styles = {"window": ("black", ":"), "budget": ("black", "--"), "trigger": (style.GREY, "-.")}
    for key, (c, ls) in styles.items():
        values = sorted({float(r.summary[key]) for r in runs if r.summary.get(key) is not None})
        for v in values:
            kind = runs[0].summary.get("budget_kind", "") if key == "budget" else ""
            name = f"{kind} budget" if kind else key
            if v > top:
                h = Line2D([], [], color=c, ls=ls, lw=1.0, label=f"{name} {v:,.0f} tokens (above the plot)")
            else:
                h = ax.axhline(v, color=c, ls=ls, lw=1.0, label=f"{name} {v:,.0f} tokens")
            h.set_gid(f"{key}:{v:g}")
            handles.append(h)
    return handles


def title_for(runs: list[Run], what: str) -> str:
    scenarios = sorted({r.scenario for r in runs})
    policies = list(dict.fromkeys(r.policy for r in runs))
    return f"{', '.join(scenarios)}: {what}, {' vs '.join(policies)} ({style.seeds_text(r.seed for r in runs)})"


def unique_labels(runs: list[Run]) -> dict[str, Run]:
    labels = [r.label for r in runs]
    out = {}
    for r in runs:
        label = r.label if labels.count(r.label) == 1 else f"{r.label} ({r.path.name})"
        while label in out:
            label += "'"
        out[label] = r
    return out


def trace_figure(runs: list[Run] | dict[str, Run], x: str = "turn", ylim: tuple[float, float] | None = None):
    """Utilization against turn or time for one or more runs; returns the Figure."""
    labelled = runs if isinstance(runs, dict) else unique_labels(runs)
    fig, axes = style.new_figure()
    ax = axes[0][0]
    with style.rc():
        handles = draw_traces(ax, labelled, x, ylim)
        ax.set_title(title_for(list(labelled.values()), "utilization"))
        style.legend_outside(ax, handles, [h.get_label() for h in handles])
    return fig
