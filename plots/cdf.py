"""The distribution of one metric over runs: an empirical CDF per policy, with its median and 90th percentile.

A share or a median says where runs sit; the CDF shows all of them: how many
passes a run made, how far it overshot, how many units a policy broke at all.
The input is a sweep directory (its runs.csv: the runs of one grid point, each
grid parameter that varies held with ``fix``) or a leaderboard folder (its
runs.csv: one row per transcript or seed and policy, the documented setting
of each). Each policy is a step line, y the share of runs whose value is at
most x; its legend entry gives n, the median (p50) and p90, and how many runs
had an infinite value (drawn past the right edge, not on the line).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from prunesim.errors import UserError
from prunesim.io.labels import policy_labels
from prunesim.plots import style
from prunesim.plots.io import as_float, parse_cell, read_sweep
from prunesim.plots.pareto import UNIT_TEXT
from prunesim.plots.sweep import _key, metric_label

QUANTILES = (0.5, 0.9)


def _fixed(grid: dict, rows: list[dict], fix: dict[str, str]) -> tuple[list[dict], str]:
    """The rows of one grid point: every varying grid parameter held by ``fix`` (or a one-value axis)."""
    for p in fix:
        if p not in grid:
            raise UserError("--fix", p, f"not a grid parameter of this sweep (grid: {', '.join(grid) or 'none'})")
    for p, values in grid.items():
        if len(values) > 1 and p not in fix:
            raise UserError("--fix", p, f"grid parameter varies ({values}); hold it with --fix {p}=VALUE "
                                        "(a CDF pools the runs of one grid point)")
    wanted = {p: _key(parse_cell(str(v))) for p, v in fix.items()}
    # An axis of another policy (slack-gated:gate.lead) is blank in this policy's rows: it does not select them.
    picked = [r for r in rows if all(r.get(p) is None or _key(r.get(p)) == v for p, v in wanted.items())]
    if not picked:
        raise UserError("--fix", None, "no runs at that grid point")
    return picked, "".join(f", {p}={v}" for p, v in fix.items())


def cdf_rows(path, metric: str, fix: dict[str, str] | None = None) -> tuple[list[dict], str, str]:
    """(rows with ``policy`` and ``metric``, what they are, the noun of a row) from a sweep or a leaderboard."""
    path = Path(path)
    if (path / "leaderboard.csv").is_file() or path.name == "leaderboard.csv":
        from prunesim.plots.pareto import DOCUMENTED, read_leaderboard

        board = read_leaderboard(path)
        if fix:
            raise UserError("--fix", next(iter(fix)), "a leaderboard has no grid; --fix is for sweeps")
        if not board.units:
            raise UserError(str(board.path.parent / "runs.csv"), None, "missing: the CDF needs each unit's figures")
        if metric not in board.units[0] or metric in UNIT_TEXT:
            known = [k for k in board.units[0] if k not in UNIT_TEXT]
            raise UserError("--metric", metric, f"not a figure of this leaderboard (known: {', '.join(known)})")
        rows = [u for u in board.units if str(u.get("setting") or DOCUMENTED) == DOCUMENTED]
        source = Path(board.meta["source"]).name if board.meta.get("source") else "seeds"
        noun = "transcript" if board.meta.get("source") else "seed"
        return rows, f"{len({u['unit'] for u in rows})} {noun}s of {source}", noun
    sweep = read_sweep(path)
    sweep.check_metric(metric)
    rows, fixed = _fixed(sweep.grid, sweep.runs, fix or {})
    return rows, f"{sweep.scenario_name}{fixed}, {style.seeds_text(r['seed'] for r in rows)}", "run"


def cdf_figure(rows: list[dict], metric: str, what: str = "", noun: str = "run"):
    """One empirical CDF of ``metric`` per policy over ``rows``."""
    policies = list(dict.fromkeys(str(r["policy"]) for r in rows))
    if not any(not math.isnan(as_float(r.get(metric))) for r in rows):
        raise UserError("--metric", metric, "holds no number in these rows: nothing to draw")
    names = policy_labels(policies)
    many = len(policies) > 4  # a leaderboard's fifteen: the full text width, and room for their key below
    fig, axes = style.new_figure(size=(style.WIDE[0] + 0.5, style.WIDE[1] + 0.16 * math.ceil(len(policies) / 2))
                                 if many else style.FIGSIZE)
    counts = {sum(1 for r in rows if str(r["policy"]) == p and not math.isnan(as_float(r.get(metric))))
              for p in policies}
    one_n = many and len(counts) == 1  # the same n for every policy: said once, in the title
    ax = axes[0][0]
    handles, labels = [], []
    looks = style.family_looks(policies)
    right = max((v for r in rows if math.isfinite(v := as_float(r.get(metric)))), default=0.0)
    with style.rc():
        for policy in policies:
            colour, _, _ = looks[policy]
            ls = style.linestyle(policies.index(policy))  # each line its own style: apart in grey print too
            values = np.array([as_float(r.get(metric)) for r in rows if str(r["policy"]) == policy])
            values = values[~np.isnan(values)]
            finite = np.sort(values[np.isfinite(values)])
            infinite = int(values.size - finite.size)
            if not values.size:
                continue
            n = values.size
            # The share of runs at or below each value; infinite runs never reach the line's top.
            ys = np.arange(1, finite.size + 1) / n
            xs = finite
            if finite.size:  # from 0 at the lowest value, on to the right edge at the share reached
                xs = np.concatenate([[finite[0]], finite, [right]])
                ys = np.concatenate([[0.0], ys, [ys[-1]]])
            (line,) = ax.plot(xs, ys, drawstyle="steps-post", color=colour, ls=ls, lw=1.5, gid=f"cdf:{policy}")
            q = {p: float(np.quantile(values, p, method="inverted_cdf")) for p in QUANTILES}
            text = f"{names[policy]}{'' if one_n else f' (n={n})'}: p50 {_num(q[0.5])}, p90 {_num(q[0.9])}"
            if infinite:
                text += f"; {infinite} infinite"
            handles.append(line)
            labels.append(text)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel(metric_label(metric, per=noun))
        ax.set_ylabel(f"share of {noun}s at or below x")
        each = f" (n={counts.pop()} per policy)" if one_n else ""
        ax.set_title(style.wrapped(f"{metric}: its distribution over {noun}s, per policy\n{what}{each}"))
        # Under the axes: a key of long entries beside them would take half of the plot's width.
        style.legend_below(ax, handles, labels, ncol=2 if many else 1)
        if many:
            for text in ax.get_legend().get_texts():
                text.set_fontsize(style.SMALL)
    return fig


def _num(v: float) -> str:
    if math.isinf(v):
        return "inf"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
