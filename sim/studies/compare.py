"""Policies side by side: the same scenario and seeds under each, metrics reduced over seeds.

Every policy meets the same workload for a given seed (the workload has its own
random stream), so the differences are the policies'. :func:`compare` returns
plain dicts: for each policy and each numeric metric, the median and the 10th
and 90th percentiles over the seeds; for a yes/no metric (``oscillating``) the
share of seeds where it holds, since a median of zeros and ones says only which
side of one half that share is, with its Wilson 95% interval
(:func:`prunesim.observe.metrics.intervals.wilson`) and the number of runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from prunesim.errors import UserError
from prunesim.model.scenario import Scenario
from prunesim.observe.metrics import METRIC_NAMES
from prunesim.observe.metrics.intervals import wilson
from prunesim.policies import get_policy, policy_name
from prunesim.runner import run_one


def _number(value) -> float | None:
    """A metric value as a float (booleans as 0/1, ``"inf"`` as infinity); None when not a number."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if value in ("inf", "Infinity"):
        return math.inf
    return None


def quantile(values: list[float], q: float) -> float:
    """Linear-interpolated quantile that stays defined when some values are infinite."""
    v = sorted(values)
    if not v:
        return math.nan
    pos = q * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    a, b = v[lo], v[hi]
    frac = pos - lo
    if frac == 0 or a == b:
        return a
    return a + (b - a) * frac


def reduce(summaries: list[dict], metrics: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Per metric: median, p10 and p90 over the summaries, or ``share`` for a yes/no metric.

    Metrics come in METRICS order, then any others; ``metrics`` keeps only those named, in that order.
    """
    names = [m for m in METRIC_NAMES if summaries and m in summaries[0]]
    names += sorted(k for k in (summaries[0] if summaries else {}) if k not in names)
    if metrics is not None:
        names = [m for m in metrics if m in names]
    out = {}
    for name in names:
        raw = [s.get(name) for s in summaries]
        if raw and all(isinstance(v, bool) for v in raw):
            out[name] = share_stats(sum(raw), len(raw))
            continue
        values = [_number(v) for v in raw]
        if any(v is None for v in values):
            continue
        out[name] = {"median": quantile(values, 0.5), "p10": quantile(values, 0.1), "p90": quantile(values, 0.9)}
    return out


def share_stats(successes: int, runs: int) -> dict[str, float]:
    """A yes/no figure over runs: the share where it holds, its Wilson 95% interval and the number of runs."""
    low, high = wilson(successes, runs)
    return {"share": successes / runs if runs else math.nan, "share_low": low, "share_high": high, "runs": runs}


def check_metrics(names: list[str], where: str = "--metrics") -> None:
    """Every name is a metric (or a replay's own figure); one UserError naming the first that is not."""
    from prunesim.studies.transcript_replay import REPLAY_METRICS

    known = set(METRIC_NAMES) | set(REPLAY_METRICS)
    for name in names:
        if name not in known:
            raise UserError(where, name, "unknown metric (prunesim metrics lists them)")


def compare(scenario: Scenario, policies: list[str], seeds: list[int], metrics: list[str] | None = None,
            tick: Callable[[int], None] | None = None) -> dict:
    """Run ``scenario`` under each policy for each seed; the reduced metrics as plain dicts. ``tick(1)`` after
    each run (a long comparison's progress)."""
    for name in policies:
        get_policy(name, where="--policies")
    if metrics is not None:
        check_metrics(metrics)
    result = {
        "scenario": scenario.name,
        "seeds": list(seeds),
        "policies": [policy_name(p) for p in policies],
        "metrics": {},
    }
    for name in policies:
        summaries = []
        for seed in seeds:
            summaries.append(run_one(scenario, name, seed, trace="none").summary)
            if tick is not None:
                tick(1)
        result["metrics"][policy_name(name)] = reduce(summaries, metrics)
    return result


STAT_COLUMNS = ("median", "p10", "p90", "share", "share_low", "share_high", "runs")


def rows(result: dict) -> list[dict]:
    """The comparison as tidy rows: one per (policy, metric), with the stats that apply (others empty)."""
    out = []
    for policy in result["policies"]:
        for metric, stats in result["metrics"][policy].items():
            out.append({"policy": policy, "metric": metric, **{c: stats.get(c) for c in STAT_COLUMNS}})
    return out
