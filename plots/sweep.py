"""A sweep's metric against one grid parameter: one line per policy, median and 95% band.

The median and its band come from aggregate.csv when it has the metric
(its ``median``, ``ci_low``, ``ci_high``); otherwise they are computed here from
runs.csv: the median over seeds and a percentile bootstrap of the median
(``BOOT_RESAMPLES`` resamples, a numpy Generator seeded with ``BOOT_SEED``, so
the band is the same on every run). When the sweep has more grid parameters
than the one on the x axis, each combination of the others gets its own line
(same colour per policy, one line style per combination). A policy-qualified
axis (``slack-gated:gate.lead``) is empty in other policies' rows and
does not split their lines.

``x="acting_trigger"`` puts every policy on one axis: the utilization at which
each run's policy started to act (the ``acting_trigger`` column of runs.csv),
whichever parameter set it: ``trigger`` for naive, ``trigger - gate.lead``
for slack-gated. The axes that move it (``trigger`` and any ``*.lead``,
qualified or not: :data:`ACTING_AXES`) fold into x instead of splitting lines;
each point is computed from runs.csv.
"""

from __future__ import annotations

import math

import numpy as np
from prunesim.errors import UserError
from prunesim.observe.metrics import METRICS
from prunesim.plots import style
from prunesim.plots.io import Sweep, as_float

BOOT_SEED = 20240601
BOOT_RESAMPLES = 2000
LEVEL = 0.95
LINESTYLES = ("-", "--", ":", "-.")
UNITS = {m.name: m.unit for m in METRICS}
TOKEN_PARAMS = ("trigger", "budget", "window", "index_base", "index_per_candidate", "rationale_base",
                "rationale_per_span", "low_water_gap", "mean", "min", "max", "tokens", "margin", "lead",
                "acting_trigger")
ACTING_TRIGGER = "acting_trigger"
ACTING_AXES = ("trigger", "lead")  # last parts of the parameters that set a policy's acting trigger


def folds_into_acting_trigger(axis: str) -> bool:
    param = axis.rpartition(":")[2]
    return param.rsplit(".", 1)[-1] in ACTING_AXES


def metric_label(metric: str) -> str:
    return f"{metric} ({UNITS.get(metric, 'value')})"


def param_label(param: str) -> str:
    last = param.rsplit(".", 1)[-1]
    if last in TOKEN_PARAMS or last.endswith("_tokens"):
        unit = "tokens"
    elif last == "turns" or last.endswith("_turns"):
        unit = "turns"
    elif last.endswith("_s"):
        unit = "s"
    else:
        unit = "as set in the scenario"
    return f"{param} ({unit})"


def bootstrap_median(values, resamples: int = BOOT_RESAMPLES, level: float = LEVEL) -> tuple[float, float, float]:
    """Median of ``values`` and a percentile-bootstrap ``level`` interval for it (deterministic)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return math.nan, math.nan, math.nan
    median = float(np.median(v))
    if v.size == 1:
        return median, median, median
    rng = np.random.Generator(np.random.PCG64(BOOT_SEED))
    idx = rng.integers(0, v.size, size=(resamples, v.size))
    medians = np.median(v[idx], axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(medians, [alpha, 1 - alpha], method="inverted_cdf")
    return median, float(lo), float(hi)


def choose_x(sweep: Sweep, x: str | None) -> str:
    grid = sweep.grid
    if x == ACTING_TRIGGER:
        if not sweep.runs or ACTING_TRIGGER not in sweep.runs[0]:
            raise UserError("--x", x, "runs.csv has no acting_trigger column (a sweep from an older prunesim)")
        return x
    if x is None:
        if len(grid) != 1:
            raise UserError("--x", None, f"the sweep has {len(grid)} grid parameters; choose one of: "
                            f"{', '.join(grid) or 'none'}")
        x = next(iter(grid))
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


def curves(sweep: Sweep, metric: str, x: str) -> tuple[dict, str]:
    """{(policy, others): {x value: (median, low, high, n)}} and where the numbers came from.

    ``others`` holds the other axes' values in this line's rows; an axis that is
    not this policy's (empty in its rows) is left out.
    """
    others = other_axes(sweep, x)
    out: dict = {}
    agg = [] if x == ACTING_TRIGGER else [r for r in (sweep.aggregate or []) if r.get("metric") == metric]
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
        out[key] = {xv: (*bootstrap_median(vals), len(vals)) for xv, vals in by_x.items()}
    return out, f"runs.csv, bootstrap of the median ({BOOT_RESAMPLES} resamples)"


def sweep_figure(sweep: Sweep, metric: str, x: str | None = None):
    x = choose_x(sweep, x)
    if not sweep.aggregate or not any(r.get("metric") == metric for r in sweep.aggregate):
        sweep.check_metric(metric)
    data, source = curves(sweep, metric, x)
    xvals = x_values(sweep, x)
    numeric = all(isinstance(v, float) for v in xvals)
    pos = {v: (v if numeric else float(i)) for i, v in enumerate(xvals)}
    fig, axes = style.new_figure()
    ax = axes[0][0]
    policies = sweep.policies
    combos = list(dict.fromkeys(k[1] for k in data))
    finite = [b for series in data.values() for t in series.values() for b in t[:3] if math.isfinite(b)]
    top = (max(finite) if finite else 1.0) * 1.08 or 1.0
    handles = []
    with style.rc():
        for (policy, combo), series in sorted(data.items(), key=lambda kv: (policies.index(kv[0][0])
                                                                           if kv[0][0] in policies else 99,
                                                                           combos.index(kv[0][1]))):
            c = style.colour(policies.index(policy) if policy in policies else len(policies))
            ls = LINESTYLES[combos.index(combo) % len(LINESTYLES)]
            label = policy + "".join(f", {p}={v}" for p, v in combo)
            pts = sorted((pos[xv], t) for xv, t in series.items() if xv in pos)
            px = np.array([p for p, _ in pts])
            med = np.array([t[0] for _, t in pts])
            lo = np.array([t[1] for _, t in pts])
            hi = np.array([t[2] for _, t in pts])
            ok = np.isfinite(med)
            (line,) = ax.plot(px[ok], med[ok], color=c, ls=ls, marker="o", ms=4, label=f"{label}: median")
            line.set_gid(f"median:{label}")
            band = ax.fill_between(px, np.nan_to_num(lo, posinf=top, neginf=0.0),
                                   np.nan_to_num(hi, posinf=top, neginf=0.0), color=c, alpha=0.18, lw=0,
                                   label=f"{label}: 95% band")
            band.set_gid(f"band:{label}")
            handles.append(((band, line), f"{label}: median, 95% band"))
            if (~ok).any():
                inf = ax.plot(px[~ok], [top] * int((~ok).sum()), ls="none", marker="^", ms=7, color=c,
                              clip_on=False, label=f"{label}: median infinite (drawn at the top)")[0]
                inf.set_gid(f"inf:{label}")
                handles.append((inf, inf.get_label()))
        if not numeric:
            ax.set_xticks(range(len(xvals)), [str(v) for v in xvals])
        ax.set_ylim(min(0.0, min(finite, default=0.0)), top)
        ax.set_xlabel(param_label(x))
        ax.set_ylabel(metric_label(metric))
        shown = [p for p in policies if any(k[0] == p for k in data)]
        # A policy-qualified x (slack-gated:gate.lead) has no values in other policies' runs: say so.
        absent = [p for p in policies if p not in shown]
        unswept = f"; {', '.join(absent)}: not swept along {x}" if absent else ""
        ax.set_title(f"{sweep.scenario_name}: {metric} against {x}, median and 95% band, "
                     f"{', '.join(shown)} ({style.seeds_text(sweep.seeds)}; from {source}){unswept}", wrap=True)
        style.legend_outside(ax, [h for h, _ in handles], [t for _, t in handles])
    return fig
