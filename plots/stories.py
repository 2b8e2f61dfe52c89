"""The two story figures, drawn from run directories that a replay wrote.

``oscillation_figures``: the decision-in-band failure, variants of one workload
(e.g. naive at 22k against slack-gated) with their utilization traces overlaid
and, below, every pass's net reclamation. ``reentrancy_figures``: the life of
one tool output (the span keyed ``kubectl describe ...``) under each variant:
when it was appended, evicted, re-run, and whether a tombstone stayed behind.
These functions only read files; the replay command runs the simulations.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from prunesim.plots import style
from prunesim.plots.io import Run, read_run
from prunesim.plots.trace import at_time, draw_traces, positions, title_for

APPROACH_TURNS = 5  # turns shown before the first trigger in the oscillation figure


def _read(run_dirs: dict[str, Path]) -> dict[str, Run]:
    return {label: read_run(path) for label, path in run_dirs.items()}


def _ratio(run: Run) -> str:
    r = run.metrics.get("overhead_ratio")
    return r if isinstance(r, str) else f"{float(r):.2f}" if r is not None else "?"


def _share_turns(fig, top, bottom, left: float, right: float) -> None:
    """Both panels over the same turns, with the same ticks, each labelled (the axes are shared)."""
    bottom.set_xlim(left, right)
    top.tick_params(labelbottom=True)
    top.set_xlabel("")
    fig.align_ylabels([top, bottom])


def _story_legends(fig, bottom, variants: list, marks: list) -> None:
    """The variants under the figure, a column each; the kinds of marker in the bottom panel's right margin
    (the top panel's margin names the lines, and both panels share one width)."""
    fig.legend([h for h, _ in variants], [t for _, t in variants], loc="outside lower center",
               ncol=max(1, len(variants)), columnspacing=1.2, handlelength=1.5)
    if marks:
        bottom.legend([h for h, _ in marks], [textwrap.fill(t, 24) for _, t in marks], loc="upper left",
                      bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def oscillation_figures(run_dirs: dict[str, Path], out_dir: Path, fmt: str = "png") -> dict:
    """Write ``out_dir/oscillation.<fmt>``; returns {"oscillation": Figure}."""
    runs = _read(run_dirs)
    fig, axes = style.new_figure(2, 1, size=style.TWO_PANELS, sharex=True, height_ratios=(3, 2))
    top, bottom = axes[0][0], axes[1][0]
    with style.rc():
        handles, labels = draw_traces(top, runs, "turn")
        top.set_title(title_for(list(runs.values()), "the decision-in-band oscillation"))
        width = 0.8 / max(1, len(runs))
        key = []  # under both panels, a column per variant: the top's margin names the lines
        for i, (label, run) in enumerate(runs.items()):
            turns = np.array([int(r["turn"]) for r in run.ledger], dtype=float)
            net = np.array([float(r["net"]) for r in run.ledger])
            text = f"{label}: {len(turns)} passes, overhead ratio {_ratio(run)}"
            bottom.bar(turns + (i - (len(runs) - 1) / 2) * width, net, width, color=style.colour(i),
                       edgecolor="black", linewidth=0.3, label=text)
            band = labels[i][len(label):].lstrip(", ")  # "band [floor, trigger]", or nothing
            lines = (label, f"{len(turns)} passes", f"overhead ratio {_ratio(run)}", band)
            key.append((handles[i], "\n".join(t for t in lines if t)))
        bottom.axhline(0, color="black", lw=0.8)
        if not any(run.ledger for run in runs.values()):
            bottom.text(0.5, 0.5, "no model-driven passes in any variant", ha="center", va="center",
                        transform=bottom.transAxes)
        bottom.set_xlabel("turn")
        bottom.set_ylabel("net per pass (tokens)")
        style.thousands(bottom.yaxis)
        bottom.set_title("net per pass = evicted - index - rationale\n(below 0: the pass cost more than it freed)")
        # The story is in the band: from a few turns before the first trigger (the approach) to the end.
        firsts = [f for r in runs.values() if isinstance(f := r.metrics.get("first_trigger_turn"), int) and f >= 0]
        ends = [float(r["turn"]) + 1 for run in runs.values() for r in run.trace[-1:]]
        if firsts and ends:
            _share_turns(fig, top, bottom, max(0, min(firsts) - APPROACH_TURNS) - 0.5, max(ends) + 0.5)
        else:  # no run reached its trigger: every turn, still one axis for both panels
            _share_turns(fig, top, bottom, *top.get_xlim())
        _story_legends(fig, bottom, key, list(zip(handles[len(runs):], labels[len(runs):], strict=True)))
    style.save(fig, Path(out_dir) / f"oscillation.{fmt}", fmt)
    return {"oscillation": fig}


def _matches(run: Run, prefix: str) -> list[dict]:
    return [r for r in run.trace if str(r.get("key", "")).startswith(prefix)]


def reentrancy_figures(run_dirs: dict[str, Path], out_dir: Path, key_prefix: str = "kubectl describe",
                       fmt: str = "png") -> dict:
    """Write ``out_dir/reentrancy.<fmt>``; returns {"reentrancy": Figure}."""
    runs = _read(run_dirs)
    fig, axes = style.new_figure(2, 1, size=style.TWO_PANELS, sharex=True, height_ratios=(3, 2))
    top, bottom = axes[0][0], axes[1][0]
    kinds_seen: set[str] = set()
    with style.rc():
        # The passes and fallbacks of three variants over 60 turns would bury the traces: the bottom panel
        # tells what happened to the one output; here only the re-runs are marked.
        handles, labels = draw_traces(top, runs, "turn", marks=("re_retrieval",))
        top.set_title(title_for(list(runs.values()), "self-edit reentrancy"))
        for i, (label, run) in enumerate(runs.items()):
            xs, times = positions(run, "turn")
            end = xs[-1] if xs else 0.0
            where = {id(r): xv for r, xv in zip(run.trace, xs, strict=True)}
            rows = _matches(run, key_prefix)
            if not rows:
                bottom.text(0.0, i, f"  no span keyed {key_prefix!r}", va="center", fontsize=8)
            opened: dict[int, tuple[float, str]] = {}
            for r in rows:
                xv, kind, sid = where[id(r)], str(r["kind"]), int(r["span_id"])
                if kind == "tool_call":
                    continue
                if r["event"] == "append":
                    opened[sid] = (xv, kind)
                    kinds_seen.add("tombstone" if kind == "tombstone" else "append")
                    bottom.plot([xv], [i], marker="d" if kind == "tombstone" else "o", color="black" if
                                kind == "tombstone" else style.colour(i), mec="black", ls="none",
                                gid=f"{'tombstone' if kind == 'tombstone' else 'append'}:{label}")
                elif sid in opened:
                    start, k = opened.pop(sid)
                    _life(bottom, i, start, xv, k, style.colour(i), label)
                    model = r["event"] == "evict"
                    kinds_seen.add("evict" if model else "drop")
                    bottom.plot([xv], [i], marker="v" if model else "X", color=style.colour(i), mec="black",
                                ls="none", gid=f"{'evict' if model else 'drop'}:{label}")
            for start, k in opened.values():
                _life(bottom, i, start, end, k, style.colour(i), label)
            for ev in run.events_named("re_retrieval"):
                if str(ev["detail"].get("key", "")).startswith(key_prefix):
                    j = at_time(xs, times, float(ev["time_s"]))
                    if j is not None:
                        kinds_seen.add("re_retrieval")
                        bottom.plot([xs[j]], [i + 0.25], marker="^", ms=9, color="#D55E00", mec="black",
                                    ls="none", gid=f"re_retrieval:{label}")
        legend = {
            "append": Line2D([], [], ls="none", marker="o", mfc="white", mec="black", label="output appended"),
            "evict": Line2D([], [], ls="none", marker="v", mfc="white", mec="black", label="evicted by a pass"),
            "drop": Line2D([], [], ls="none", marker="X", mfc="white", mec="black",
                           label="dropped (non-model or forced)"),
            "re_retrieval": Line2D([], [], ls="none", marker="^", color="#D55E00", mec="black",
                                   label="re-retrieval: tool re-run"),
            "tombstone": Line2D([], [], ls="none", marker="d", color="black", label="tombstone left"),
        }
        hs = [Patch(color=style.GREY, alpha=0.6, label="output in the window")]
        hs += [h for k, h in legend.items() if k in kinds_seen]
        fig.legend(hs, [h.get_label() for h in hs], loc="outside lower center", ncol=2, columnspacing=1.2)
        # A long name on two lines (after its "+"), so it does not take the width from the panels.
        bottom.set_yticks(range(len(runs)), [label.replace("+", "+\n") if len(label) > 14 else label
                                             for label in runs])
        for i, tick in enumerate(bottom.get_yticklabels()):  # the variant's colour, as on its trace above
            tick.set_color(style.colour(i))
        bottom.set_ylim(-0.6, len(runs) - 0.4)
        bottom.set_xlabel("turn")
        bottom.set_title(f"the output keyed {key_prefix!r}...: appended, evicted, re-run")
        ends = [x for run in runs.values() if (x := positions(run, "turn")[0][-1:])]
        lefts = [top.get_xlim()[0]]
        _share_turns(fig, top, bottom, min(lefts), max(e[0] for e in ends) + 0.5 if ends else top.get_xlim()[1])
        # Inside the axes, lower right, which a context that grows leaves empty: the margin names the lines,
        # and the timeline's key runs under the figure.
        top.legend(handles, labels, loc="lower right", frameon=True, framealpha=0.9, edgecolor="none")
    style.save(fig, Path(out_dir) / f"reentrancy.{fmt}", fmt)
    return {"reentrancy": fig}


def _life(ax, i: int, start: float, stop: float, kind: str, colour: str, label: str) -> None:
    tomb = kind == "tombstone"
    height = 0.08 if tomb else 0.4
    bars = ax.broken_barh([(start, max(stop - start, 0.05))], (i - height / 2, height),
                          facecolors="black" if tomb else colour, alpha=0.4 if tomb else 0.6, lw=0)
    bars.set_gid(f"{'tombstone' if tomb else 'life'}:{label}")
