"""Utilization traces: one or more runs overlaid, with their limits, passes and band.

The y axis is scaled to the band, where the failure shows: from just below the
lowest of the runs' band floors, triggers and utilization after their first
trigger (all of the trace when a run never triggered) to just above the highest
of their peaks, budgets and triggers, plus the window when it lies near. A
window far above is named in the margin at the top ("window 32,000
(above)") instead of flattening the trace. ``ylim="full"`` draws from 0 to the window; a pair ``(low, high)`` sets
the axis by hand.

Each limit (window, budget, every distinct trigger) is a horizontal line with
its name written on it, at the left; a trigger that one run alone has is drawn
in that run's colour and names it. The legend holds one entry per run (its
line and band) and one per kind of marker drawn.

Against turns (``x="turn"``) the changes recorded within a turn are spread
evenly across it (turn t's k-th of n changes sits at t + k/n), so that a prune
pass's rise and fall, and each drop, stay visible; against simulated time
(``x="time"``) each change sits at its own time. Markers are hollow, so the
trace shows through them, and the non-model evictions of one burst (a gate's
fallback or a policy's own evictions, consecutive rows of one turn) get one
marker, after the burst's last eviction.
"""

from __future__ import annotations

import bisect

from matplotlib.lines import Line2D
from prunesim.io.labels import policy_labels
from prunesim.plots import style
from prunesim.plots.io import Run

XLABELS = {
    "turn": "turn",  # a turn's changes are spread evenly across it (docs/plots.md says so)
    "time": "simulated time (s)",
}
MARKERS = {
    "pass": ("v", "model-driven prune pass (after)"),
    "fallback": ("X", "gate fallback eviction (one per burst)"),
    "nonmodel": ("P", "policy's own eviction (one per burst)"),
    "re_retrieval": ("^", "re-retrieval (tool re-run)"),
}
MARKER_SIZE = 4.5
MARGIN = 0.06  # of the y range, above and below
WINDOW_NEAR = 0.35  # the window is drawn when it is within this share of the range above the top


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


def _trigger(run: Run) -> float | None:
    """The run's trigger, or None when it has none (a soft-budget scenario records 0)."""
    v = run.summary.get("trigger")
    return float(v) if v else None


def _limits(runs: list[Run], key: str) -> list[float]:
    if key == "trigger":
        return sorted({t for r in runs if (t := _trigger(r)) is not None})
    return sorted({float(r.summary[key]) for r in runs if r.summary.get(key)})


def y_top(runs: list[Run]) -> float:
    """The top of the full-range axis: the window, or the highest of peak, budget and trigger."""
    data = max((float(row["utilization"]) for r in runs for row in r.trace), default=0.0)
    data = max([data, *_limits(runs, "budget"), *_limits(runs, "trigger"), *_limits(runs, "window")])
    return (data or 1.0) * 1.04


def y_range(runs: list[Run]) -> tuple[float, float]:
    """The y axis that shows the band (see the module docstring)."""
    focus = []
    for r in runs:
        first = r.metrics.get("first_trigger_turn", -1)
        started = isinstance(first, int) and first >= 0
        focus += [float(row["utilization"]) for row in r.trace if not started or int(row["turn"]) >= first]
    floors = [float(f) for r in runs if isinstance(f := r.metrics.get("band_floor"), (int, float)) and f >= 0
              and _trigger(r) is not None]
    triggers, budgets = _limits(runs, "trigger"), _limits(runs, "budget")
    low = min([*focus, *floors, *triggers], default=0.0)
    high = max([*focus, *budgets, *triggers], default=1.0)
    windows = [w for w in _limits(runs, "window") if w <= high + WINDOW_NEAR * max(high - low, 1.0)]
    high = max([high, *windows])
    pad = MARGIN * (high - low) if high > low else max(high * 0.05, 1.0)
    return max(0.0, low - pad), high + pad


def _bursts(xs: list[float], rows: list[dict], kind: str) -> tuple[list[float], list[float]]:
    """One point per burst of ``kind_*`` rows (consecutive rows of one turn), after its last row."""
    px, py = [], []
    last = None
    for i, r in enumerate(rows):
        event = str(r["event"])
        if not (event.startswith(kind + "_")):
            continue
        if last is not None and last == i - 1 and int(rows[last]["turn"]) == int(r["turn"]):
            px[-1], py[-1] = xs[i], float(r["utilization"])
        else:
            px.append(xs[i])
            py.append(float(r["utilization"]))
        last = i
    return px, py


def draw_traces(ax, runs: dict[str, Run], x: str = "turn", ylim: tuple[float, float] | str | None = None,
                marks: tuple[str, ...] = tuple(MARKERS)) -> list:
    """Draw each run's utilization, band, limits and markers (``marks``) on ``ax``; returns legend handles."""
    if x not in XLABELS:
        raise ValueError(f"x must be one of {sorted(XLABELS)}")
    handles = []
    present: set[str] = set()
    for i, (label, run) in enumerate(runs.items()):
        c = style.colour(i)
        xs, times = positions(run, x)
        ys = [float(r["utilization"]) for r in run.trace]
        (line,) = ax.plot(xs, ys, color=c, lw=1.1, drawstyle="steps-post", label=label, zorder=3)
        line.set_gid(f"trace:{label}")
        entry, text = line, label
        if not xs:
            handles.append((entry, text))
            continue
        m = run.metrics
        first, floor, trigger = m.get("first_trigger_turn", -1), m.get("band_floor", -1), _trigger(run)
        if isinstance(first, int) and first >= 0 and isinstance(floor, (int, float)) and floor >= 0 and trigger:
            x0 = next((xv for xv, r in zip(xs, run.trace, strict=True) if int(r["turn"]) >= first), xs[-1])
            # Several runs' bands overlap: fainter, each floor drawn as a thin line of its run's colour.
            several = len(runs) > 1
            band = ax.fill_between([x0, xs[-1]], floor, trigger, color=c, alpha=0.07 if several else 0.12, lw=0,
                                   zorder=1)
            band.set_gid(f"band:{label}")
            if several:
                ax.plot([x0, xs[-1]], [floor, floor], color=c, lw=0.8, ls=(0, (4, 2)), zorder=2,
                        gid=f"floor:{label}")
            entry, text = (band, line), f"{label}, band [{floor:,.0f}, {trigger:,.0f}]"
        handles.append((entry, text))
        points = {"pass": ([], []), "re_retrieval": ([], [])}
        for row in run.ledger:
            j = at_time(xs, times, float(row["time_s"]))
            if j is not None:
                points["pass"][0].append(xs[j])
                points["pass"][1].append(float(row["utilization_after"]))
        for ev in run.events_named("re_retrieval"):
            j = at_time(xs, times, float(ev["time_s"]))
            if j is not None:
                points["re_retrieval"][0].append(xs[j])
                points["re_retrieval"][1].append(ys[j])
        points["fallback"] = _bursts(xs, run.trace, "fallback")
        points["nonmodel"] = _bursts(xs, run.trace, "nonmodel")
        for kind in MARKERS:
            mx, my = points[kind]
            if mx and kind in marks:
                rare = kind == "re_retrieval"  # few, and the story: filled, larger
                pts = ax.plot(mx, my, ls="none", marker=MARKERS[kind][0], ms=MARKER_SIZE + 2 * rare,
                              mfc=c if rare else "none", mec="black" if rare else c, mew=0.9, zorder=5)[0]
                pts.set_gid(f"{kind}:{label}")
                present.add(kind)
    for kind in MARKERS:
        if kind in present:
            rare = kind == "re_retrieval"  # drawn filled with the run's colour: grey in the legend
            handles.append((Line2D([], [], ls="none", marker=MARKERS[kind][0], ms=MARKER_SIZE + 2 * rare,
                                   mfc=style.GREY if rare else "none", mec="black", mew=1.1), MARKERS[kind][1]))
    if ylim == "full":
        low, high = 0.0, y_top(list(runs.values()))
    else:
        low, high = ylim if ylim is not None else y_range(list(runs.values()))
    ax.set_ylim(low, high)
    if ylim is None:  # the axis starts where the first trace enters the range, not in an empty warm-up
        entered = [xv for run in runs.values() for xv, r in zip(positions(run, x)[0], run.trace, strict=True)
                   if float(r["utilization"]) >= low]
        if entered:
            left = min(entered)
            ax.set_xlim(left=left - 0.03 * (max(entered) - left or 1.0))
    draw_limits(ax, runs, high)  # a limit above the axis is named at the top of the margin
    ax.set_xlabel(XLABELS[x])
    ax.set_ylabel("utilization (tokens)")
    style.thousands(ax.yaxis)
    return [h for h, _ in handles], [t for _, t in handles]


def draw_limits(ax, runs: dict[str, Run], top: float) -> list[str]:
    """A line at each distinct window, budget and trigger, its name written on it.

    A trigger one run alone has is in that run's colour and names the run.
    Returns the names of the limits above ``top``: they get no line, and their
    names sit at the top of the margin, marked "(above)".
    """
    labelled = list(runs.items())
    kind = next((r.summary.get("budget_kind") for _, r in labelled if r.summary.get("budget_kind")), "")
    names = {"window": "window", "budget": f"{kind} budget" if kind else "budget", "trigger": "trigger"}
    styles = {"window": ":", "budget": "--", "trigger": "-."}
    texts, above = [], []
    for key in ("window", "budget", "trigger"):
        for v in _limits([r for _, r in labelled], key):
            owners = [i for i, (_, r) in enumerate(labelled)
                      if (_trigger(r) if key == "trigger" else float(r.summary.get(key) or 0)) == v]
            c = style.colour(owners[0]) if key == "trigger" and len(owners) == 1 and len(labelled) > 1 else (
                "black" if key != "trigger" else style.GREY)
            text = f"{names[key]} {v:,.0f}"
            if key == "trigger" and len(labelled) > 1:
                text += f" ({', '.join(labelled[i][0] for i in owners)})" if len(owners) < len(labelled) else \
                    " (every run)"
            if v > top:
                above.append(text)
                texts.append((top, f"{text} (above)", c))
                continue
            h = ax.axhline(v, color=c, ls=styles[key], lw=1.0, zorder=2)
            h.set_gid(f"{key}:{v:g}")
            texts.append((v, text, c))
    for i, t in enumerate(style.label_lines(ax, texts)):
        t.set_gid(f"limit-label:{i}")  # one id each: an SVG (prunesim report) must not repeat an id
    return above


def title_for(runs: list[Run], what: str) -> str:
    scenarios = sorted({r.scenario for r in runs})
    names = policy_labels(r.policy for r in runs)
    policies = list(dict.fromkeys(names[r.policy] for r in runs))
    head = f"{', '.join(scenarios)}: {what}"
    tail = f"{' vs '.join(policies)} ({style.seeds_text(r.seed for r in runs)})"
    if len(head) + 2 + len(tail) <= style.TITLE_WIDTH:
        return f"{head}, {tail}"
    return style.wrapped(f"{head}\n{tail}")  # what is shown, then who: a break between them, not in a name


def unique_labels(runs: list[Run]) -> dict[str, Run]:
    """{label: run}: the policy's short name and the seed, with the folder's name where two would read the same."""
    names = policy_labels(r.policy for r in runs)
    labels = [f"{names[r.policy]}, seed {r.seed}" for r in runs]
    out = {}
    for r, label in zip(runs, labels, strict=True):
        if labels.count(label) > 1:
            label = f"{label} ({r.path.name})"
        while label in out:
            label += "'"
        out[label] = r
    return out


def trace_figure(runs: list[Run] | dict[str, Run], x: str = "turn", ylim: tuple[float, float] | str | None = None):
    """Utilization against turn or time for one or more runs; returns the Figure."""
    labelled = runs if isinstance(runs, dict) else unique_labels(runs)
    fig, axes = style.new_figure()
    ax = axes[0][0]
    with style.rc():
        handles, labels = draw_traces(ax, labelled, x, ylim)
        ax.set_title(title_for(list(labelled.values()), "utilization"))
        # Two columns of long entries would be wider than the axes (the margin names the lines) and be cut.
        style.legend_below(ax, handles, labels, ncol=1 if max(map(len, labels), default=0) > 28 else 2)
    return fig
