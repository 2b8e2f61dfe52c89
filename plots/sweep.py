"""A sweep's metric against one grid parameter: one line per policy, each point with its 95% interval.

What a point is (:mod:`prunesim.plots.stats`): for a yes/no metric or a failure
count, the share of runs where it is true or above zero, with its Wilson 95%
interval as an error bar; otherwise the median over seeds (or, asked for, the
mean) with a bootstrap 95% band. A median comes from aggregate.csv when it has
the metric (its ``median``, ``ci_low``, ``ci_high``), else from runs.csv. When
the sweep has more grid parameters than the one on the x axis, each
combination of the others gets its own line (same colour per policy, one line
style per combination). A policy-qualified axis (``slack-gated:gate.lead``) is
empty in other policies' rows and does not split their lines.

The x axis is, by default, ``acting_trigger`` when runs.csv has that column
and the sweep varies what sets it: the utilization at which each run's policy
started to act, whichever parameter set it (``trigger`` for naive,
``trigger - gate.lead`` for slack-gated), so that every policy sits where it
acts. The axes that move it (``trigger`` and any ``*.lead``, qualified or
not: :data:`ACTING_AXES`) fold into x instead of splitting lines; each point
is computed from runs.csv. ``x="nominal"`` (or the grid parameter's name)
draws against the parameter as set.

Lines' points are set apart along x by a small offset (``DODGE`` of the x
range per line, ``DODGE_TOTAL`` at most in all), and each policy has its own marker and line style, so that
equal values (slack-gated's and recency's zero) stay visible side by side.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import MaxNLocator
from prunesim.errors import UserError
from prunesim.io.labels import policy_labels
from prunesim.observe.metrics import METRICS
from prunesim.plots import style
from prunesim.plots.io import Sweep, as_float
from prunesim.plots.stats import BOOT_RESAMPLES, STATS, bootstrap_median, default_stat, summarize

__all__ = ["bootstrap_median", "choose_x", "curves", "sweep_figure"]

DODGE = 0.012  # of the x range, between neighbouring lines' points
DODGE_TOTAL = 0.05  # of the x range, at most from the first line's points to the last's
UNITS = {m.name: m.unit for m in METRICS}
TOKEN_PARAMS = ("trigger", "budget", "window", "index_base", "index_per_candidate", "rationale_base",
                "rationale_per_span", "low_water_gap", "mean", "min", "max", "tokens", "margin", "lead",
                "acting_trigger")
ACTING_TRIGGER = "acting_trigger"
NOMINAL = "nominal"
ACTING_AXES = ("trigger", "lead")  # last parts of the parameters that set a policy's acting trigger
UNIT_WORDS = {"runs": "tool runs"}  # re_retrievals counts tool runs, not runs of prunesim
# Units that count things a run did: a metric in one of them reads "per run".
COUNT_UNITS = ("passes", "spans", "calls", "decisions", "actions", "runs", "cycles", "appends", "needs", "keys",
               "folds", "plans", "records", "messages")


def folds_into_acting_trigger(axis: str) -> bool:
    param = axis.rpartition(":")[2]
    return param.rsplit(".", 1)[-1] in ACTING_AXES


def metric_label(metric: str, per: str = "run") -> str:
    """``passes (per run)``, ``net_negative_passes (passes per run)``, ``peak_utilization (tokens)``."""
    unit = UNITS.get(metric)
    if unit is None or unit == "bool":
        return metric
    if unit in COUNT_UNITS:
        unit = UNIT_WORDS.get(unit, unit)
        return f"{metric} (per {per})" if metric == unit else f"{metric} ({unit} per {per})"
    return f"{metric} ({unit})"


def stat_label(metric: str, stat: str, values=()) -> str:
    """The y axis of a point that is ``stat`` of ``metric`` over runs."""
    if stat == "share":
        yes_no = UNITS.get(metric) == "bool" or (values and all(isinstance(v, bool) for v in values))
        return f"share of runs {metric}" if yes_no else f"share of runs with any {metric}"
    return f"{stat} {metric_label(metric)}"


def param_label(param: str) -> str:
    if param == ACTING_TRIGGER:
        return "acting_trigger: utilization at which the policy acts (tokens)"
    last = param.rsplit(".", 1)[-1]
    if last in TOKEN_PARAMS or last.endswith("_tokens"):
        unit = "tokens"
    elif last == "turns" or last.endswith("_turns"):
        unit = "turns"
    elif last.endswith("_s"):
        unit = "s"
    else:
        return param
    return f"{param} ({unit})"


def _acting_available(sweep: Sweep) -> bool:
    return bool(sweep.runs) and ACTING_TRIGGER in sweep.runs[0] and any(
        folds_into_acting_trigger(p) for p in sweep.grid)


def choose_x(sweep: Sweep, x: str | None) -> str:
    """The x axis: as given, ``acting_trigger`` by default when the sweep has it, or the nominal parameter."""
    grid = sweep.grid
    if x == ACTING_TRIGGER:
        if not sweep.runs or ACTING_TRIGGER not in sweep.runs[0]:
            raise UserError("--x", x, "runs.csv has no acting_trigger column (a sweep from an older prunesim)")
        return x
    if x is None and _acting_available(sweep):
        return ACTING_TRIGGER
    if x in (None, NOMINAL):
        axes = list(grid) if x is None else [p for p in grid if folds_into_acting_trigger(p)] or list(grid)
        if len(axes) != 1:
            raise UserError("--x", x, f"the sweep has {len(axes)} grid parameters{' that set the trigger' if x else ''}"
                            f"; choose one of: {', '.join(axes) or 'none'}")
        x = axes[0]
    sweep.check_param(x, "--x")
    return x


def _key(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def other_axes(sweep: Sweep, x: str) -> list[str]:
    """The grid axes that get lines of their own when ``x`` is on the x axis."""
    if x == ACTING_TRIGGER:
        return [p for p in sweep.grid if not folds_into_acting_trigger(p)]
    return [p for p in sweep.grid if p != x]


def x_values(sweep: Sweep, x: str) -> list:
    if x == ACTING_TRIGGER:
        return sorted({_key(r[x]) for r in sweep.runs if isinstance(r.get(x), (int, float))})
    return [_key(v) for v in sweep.grid[x]]


def curves(sweep: Sweep, metric: str, x: str, stat: str = "median") -> tuple[dict, str]:
    """{(policy, others): {x value: (value, low, high, n)}} and where the numbers came from.

    ``value`` is ``stat`` of the metric over the runs of that point (see
    :mod:`prunesim.plots.stats`). ``others`` holds the other axes' values in this
    line's rows; an axis that is not this policy's (empty in its rows) is left out.
    """
    if stat not in STATS:
        raise UserError("--stat", stat, f"unknown statistic (known: {', '.join(STATS)})")
    others = other_axes(sweep, x)
    out: dict = {}
    agg = [] if x == ACTING_TRIGGER or stat != "median" else [
        r for r in (sweep.aggregate or []) if r.get("metric") == metric]
    if agg:
        for r in agg:
            if r.get(x) is None:
                continue  # an axis of another policy
            key = (str(r["policy"]), tuple((p, r.get(p)) for p in others if r.get(p) is not None))
            out.setdefault(key, {})[_key(r[x])] = (as_float(r["median"]), as_float(r["ci_low"]),
                                                   as_float(r["ci_high"]), int(r.get("n", 0) or 0))
        return out, "aggregate.csv"
    sweep.check_metric(metric)
    groups: dict = {}
    for r in sweep.runs:
        if r.get(x) is None:
            continue  # an axis of another policy
        key = (str(r["policy"]), tuple((p, r.get(p)) for p in others if r.get(p) is not None))
        groups.setdefault(key, {}).setdefault(_key(r[x]), []).append(as_float(r[metric]))
    for key, by_x in groups.items():
        out[key] = {xv: (*summarize(vals, stat), len(vals)) for xv, vals in by_x.items()}
    return out, "runs.csv" if stat == "share" else f"runs.csv, {BOOT_RESAMPLES} bootstrap resamples"


def _ordered(data: dict, policies: list[str]) -> list:
    combos = list(dict.fromkeys(k[1] for k in data))
    return sorted(data.items(), key=lambda kv: (policies.index(kv[0][0]) if kv[0][0] in policies else 99,
                                                combos.index(kv[0][1])))


def sweep_figure(sweep: Sweep, metric: str, x: str | None = None, stat: str | None = None):
    """The figure of ``metric`` against ``x``; ``stat`` share, median or mean (default: :func:`default_stat`)."""
    x = choose_x(sweep, x)
    if not sweep.aggregate or not any(r.get("metric") == metric for r in sweep.aggregate):
        sweep.check_metric(metric)
    raw = [r.get(metric) for r in sweep.runs]
    stat = stat or default_stat(metric, raw)
    data, source = curves(sweep, metric, x, stat)
    xvals = x_values(sweep, x)
    numeric = all(isinstance(v, float) for v in xvals)
    pos = {v: (v if numeric else float(i)) for i, v in enumerate(xvals)}
    span = (max(pos.values()) - min(pos.values())) if len(pos) > 1 else 1.0
    fig, axes = style.new_figure()
    ax = axes[0][0]
    policies = sweep.policies
    names = policy_labels(policies)
    combos = list(dict.fromkeys(k[1] for k in data))
    drawn = list(dict.fromkeys(k[0] for k in data))
    finite = [b for series in data.values() for t in series.values() for b in t[:3] if math.isfinite(b)]
    top = 1.0 if stat == "share" else (max(finite) if finite else 1.0) * 1.08 or 1.0
    handles = []
    with style.rc():
        ordered = _ordered(data, policies)
        for n_line, ((policy, combo), series) in enumerate(ordered):
            i = policies.index(policy) if policy in policies else len(policies)
            c, mk = style.colour(i), style.marker(i)
            ls = style.linestyle(combos.index(combo) if len(combos) > 1 else drawn.index(policy))
            label = names.get(policy, policy) + "".join(f", {p}={v}" for p, v in combo)
            step = min(DODGE, DODGE_TOTAL / max(1, len(ordered) - 1))
            shift = (n_line - (len(ordered) - 1) / 2) * step * span
            pts = sorted((pos[xv], t) for xv, t in series.items() if xv in pos)
            px = np.array([p for p, _ in pts]) + shift
            val = np.array([t[0] for _, t in pts])
            lo = np.array([t[1] for _, t in pts])
            hi = np.array([t[2] for _, t in pts])
            ok = np.isfinite(val)
            (line,) = ax.plot(px[ok], val[ok], color=c, ls=ls, marker=mk, ms=5, mfc="white", mew=1.2, lw=1.4,
                              label=label, zorder=3)
            line.set_gid(f"{stat}:{label}")
            if stat == "share":
                bars = ax.errorbar(px[ok], val[ok], yerr=[val[ok] - lo[ok], hi[ok] - val[ok]], fmt="none",
                                   ecolor=c, elinewidth=1.0, capsize=2.5, zorder=2)
                for part in bars.lines[2]:  # the bars themselves (LineCollections)
                    part.set_gid(f"interval:{label}")
                handles.append(((line, bars), label))
            else:
                band = ax.fill_between(px, np.nan_to_num(lo, posinf=top, neginf=0.0),
                                       np.nan_to_num(hi, posinf=top, neginf=0.0), color=c, alpha=0.15, lw=0)
                band.set_gid(f"band:{label}")
                handles.append(((band, line), label))
            if (~ok).any():
                inf = ax.plot(px[~ok], [top] * int((~ok).sum()), ls="none", marker="^", ms=7, color=c,
                              clip_on=False, label=f"{label}: {stat} infinite (drawn at the top)")[0]
                inf.set_gid(f"inf:{label}")
                handles.append((inf, inf.get_label()))
        if not numeric:
            ax.set_xticks(range(len(xvals)), [str(v) for v in xvals])
        if stat == "share":
            ax.set_ylim(-0.03, 1.03)
        else:
            low = min(0.0, min(finite, default=0.0))
            ax.set_ylim(low - 0.02 * (top - low), top)  # a zero sits just above the axis, not on it
        ax.set_xlabel(param_label(x))
        ax.set_ylabel(stat_label(metric, stat, raw))
        # A policy-qualified x (slack-gated:gate.lead) has no values in other policies' runs: say so.
        absent = [names.get(p, p) for p in policies if p not in drawn]
        unswept = f"; {', '.join(absent)}: not swept along {x}" if absent else ""
        what = {"share": "share of runs and Wilson 95% interval", "median": "median and 95% band",
                "mean": "mean and 95% band"}[stat]
        against = "the acting trigger" if x == ACTING_TRIGGER else x
        shown = [names.get(p, p) for p in policies if p in drawn]
        # Three lines, each broken where it reads: what is drawn, what a point is, whose runs.
        ax.set_title(style.wrapped(f"{sweep.scenario_name}: {metric} against {against},\n{what}\n"
                                   f"{', '.join(shown)} ({style.seeds_text(sweep.seeds)}; from {source}){unswept}"))
        if numeric and ax.get_xlabel().endswith("(tokens)"):
            style.thousands(ax.xaxis)
            # "16,000" and its neighbours apart, not touching, at round steps
            ax.xaxis.set_major_locator(MaxNLocator(6, steps=[1, 2, 2.5, 5, 10]))
        style.legend_outside(ax, [h for h, _ in handles], [t for _, t in handles])
    return fig
