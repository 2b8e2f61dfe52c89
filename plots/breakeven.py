"""What pruning costs in dollars: cumulative cost of two runs of one workload, and when each pass paid back.

Top: the cumulative cost of every model call (calls.csv) against the turn, one
line per run, with each run's prune passes marked on its line. Bottom: each
pass as a bar from its turn to its break-even turn (ledger.csv), at the height
of what it cost (its own call plus the cache rewrite it forced on the next
call); a pass that never pays back (it freed nothing net) runs to the edge, and
the dashed line is the end of the run: a bar that crosses it had not paid back
when the run ended.
"""

from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D
from prunesim.errors import UserError
from prunesim.io import reproduce
from prunesim.plots import style
from prunesim.plots.io import Run, read_json, require_columns
from prunesim.plots.trace import title_for, unique_labels

CALL_COLUMNS = ("turn", "cost_usd")
LEDGER_COLUMNS = ("pass", "turn", "pass_cost_usd", "breakeven_turn")


def check_comparable(a: Run, b: Run) -> None:
    for run in (a, b):
        if not run.calls:
            raise UserError(str(run.path), "calls.csv", "missing or empty: written by an older prunesim; run it again")
        require_columns(run, "calls", CALL_COLUMNS)
        require_columns(run, "ledger", LEDGER_COLUMNS)
    if (a.scenario, a.seed) != (b.scenario, b.seed):
        raise UserError(str(b.path), None, f"is {b.scenario} seed {b.seed}, not the same workload as {a.path} "
                                           f"({a.scenario} seed {a.seed})")
    problem = _other_workload(a, b)
    if problem:
        raise UserError(str(b.path), None, f"{problem}: not the same workload as {a.path}")


def _other_workload(a: Run, b: Run) -> str | None:
    """Why ``b`` did not run ``a``'s workload (same scenario name and seed, but another transcript, another
    workload file or other workload parameters), or None."""
    ta, tb = _transcript(a), _transcript(b)
    if ta != tb:
        return (f"replays {tb!r}" if tb else "is a synthetic run") + (f", that one {ta!r}" if ta else
                                                                       ", that one a synthetic run")
    fa, fb = _workload_file(a), _workload_file(b)
    if fa and fb and fa != fb:
        return f"replays a file of SHA-256 {fb[:12]}, that one {fa[:12]} (reproduce.json)"
    wa, wb = _workload_table(a), _workload_table(b)
    if wa is not None and wb is not None and wa != wb:
        return "draws its workload from other parameters (scenario.json: workload, turns)"
    return None


def _transcript(run: Run) -> str | None:
    name = run.summary.get("transcript")
    return name if isinstance(name, str) else None


def _workload_file(run: Run) -> str | None:
    """The SHA-256 of the file the run replayed (its ``--workload``, as reproduce.json records it), if it says."""
    record = reproduce.read(run.path)
    argv = record["command"] if record else None
    if not argv or "--workload" not in argv[:-1]:
        return None
    return record["inputs"].get(argv[argv.index("--workload") + 1])


def _workload_table(run: Run):
    """What draws the run's workload (scenario.json's ``workload`` and ``turns``), or None without the file."""
    path = run.path / "scenario.json"
    if not path.is_file():
        return None
    scenario = read_json(path)
    return (scenario.get("workload"), scenario.get("turns")) if isinstance(scenario, dict) else None


def cumulative(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """Turn and cumulative cost after each model call."""
    turns = np.array([float(r["turn"]) for r in run.calls])
    cost = np.cumsum([float(r["cost_usd"]) for r in run.calls])
    return turns, cost


def breakeven_figure(a: Run, b: Run):
    check_comparable(a, b)
    labelled = unique_labels([a, b])
    fig, axes = style.new_figure(2, 1, size=style.TWO_PANELS, sharex=True)
    top, bottom = axes[0][0], axes[1][0]
    last_turn = max(max(float(r["turn"]) for r in run.calls) for run in (a, b))
    with style.rc():
        top.set_title(title_for([a, b], "cumulative cost of model calls"))
        top.set_ylabel("cumulative cost (USD)")
        bottom.set_xlabel("turn")
        bottom.set_ylabel("cost of the pass (USD)")
        bottom.set_title("each pass, from its turn to its break-even turn")
        bars = 0
        key = []  # the bottom panel's own legend: one bar per run, the two ends, the end of the run
        ends = set()
        for i, (label, run) in enumerate(labelled.items()):
            c = style.colour(i)
            turns, cost = cumulative(run)
            top.step(turns, cost, where="post", color=c, label=f"{label}: ${cost[-1]:.4f}" if len(cost) else label,
                     ls=style.linestyle(i))[0].set_gid(f"cumulative-{i}")
            passes = [r for r in run.ledger]
            if passes:
                at = np.searchsorted(turns, [float(r["turn"]) for r in passes], side="right") - 1
                top.plot(turns[at.clip(0)], cost[at.clip(0)], "v", color=c, ms=5, ls="none", gid=f"passes-{i}")
            for r in passes:
                start, end = float(r["turn"]), float(r["breakeven_turn"])
                never = end < 0
                stop = last_turn * 1.08 if never or end > last_turn * 1.08 else end
                y = float(r["pass_cost_usd"])
                bottom.plot([start, stop], [y, y], color=c, lw=1.6, alpha=0.8, solid_capstyle="butt",
                            gid=f"pass-bar-{i}")
                # Passes of one cost overlap along their length: a dot at each one's turn tells them apart.
                bottom.plot([start], [y], "o", color=c, ms=3.5, mec="white", mew=0.5, gid=f"pass-start-{i}")
                unpaid = never or stop < end
                ends.add("unpaid" if unpaid else "paid")
                bottom.plot([stop], [y], ">" if unpaid else "|", color=c, ms=6)
                bars += 1
            if passes:
                key.append((Line2D([], [], color=c, lw=2), f"{label}: {len(passes)} passes"))
        end_line = bottom.axvline(last_turn, color=style.GREY, ls="--", lw=1.0)
        if "paid" in ends:
            key.append((Line2D([], [], ls="none", marker="|", color="black", ms=8), "paid back at this turn"))
        if "unpaid" in ends:
            key.append((Line2D([], [], ls="none", marker=">", color="black", ms=6), "not paid back in the run"))
        if bars:
            key.append((Line2D([], [], ls="none", marker="o", color="black", ms=3.5), "the pass's turn"))
        key.append((end_line, "end of the run"))
        if not bars:
            bottom.text(0.5, 0.5, "no model-driven passes in either run", ha="center", va="center",
                        transform=bottom.transAxes)
        bottom.set_xlim(0, last_turn * 1.1)  # the axes are shared: both panels over the same turns
        top.tick_params(labelbottom=True)
        handles, labels = top.get_legend_handles_labels()
        if any(run.ledger for run in (a, b)):  # one entry for the passes of both runs: the marker says which
            handles.append(Line2D([], [], ls="none", marker="v", color="black", ms=5))
            labels.append("prune pass (on its run's line)")
        # The cumulative costs rise from the lower left: their key sits in the empty upper left; the
        # passes' key under the figure, so that neither takes the panels' width.
        top.legend(handles, labels, loc="upper left", frameon=True, framealpha=0.9, edgecolor="none")
        bottom.legend([h for h, _ in key], [t for _, t in key], loc="upper center", bbox_to_anchor=(0.5, -0.22),
                      ncol=2, borderaxespad=0.0)
    return fig
