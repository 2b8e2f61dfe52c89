"""Policies side by side: the same scenario and seeds under each, metrics reduced over seeds.

Every policy meets the same workload for a given seed (the workload has its own
random stream), so the differences are the policies'. :func:`compare` returns
plain dicts: for each policy and each numeric metric, the median and the 10th
and 90th percentiles over the seeds.
"""

from __future__ import annotations

import math

from prunesim.model.scenario import Scenario
from prunesim.observe.metrics import METRIC_NAMES
from prunesim.policies import get_policy
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


def reduce(summaries: list[dict]) -> dict[str, dict[str, float]]:
    """Per metric: median, p10 and p90 over the summaries (metrics in METRICS order, then any others)."""
    names = [m for m in METRIC_NAMES if summaries and m in summaries[0]]
    names += sorted(k for k in (summaries[0] if summaries else {}) if k not in names)
    out = {}
    for name in names:
        values = [_number(s.get(name)) for s in summaries]
        if any(v is None for v in values):
            continue
        out[name] = {"median": quantile(values, 0.5), "p10": quantile(values, 0.1), "p90": quantile(values, 0.9)}
    return out


def compare(scenario: Scenario, policies: list[str], seeds: list[int]) -> dict:
    """Run ``scenario`` under each policy for each seed; the reduced metrics as plain dicts."""
    for name in policies:
        get_policy(name, where="--policies")
    result = {
        "scenario": scenario.name,
        "seeds": list(seeds),
        "policies": list(policies),
        "metrics": {},
    }
    for name in policies:
        summaries = [run_one(scenario, name, seed, trace="none").summary for seed in seeds]
        result["metrics"][name] = reduce(summaries)
    return result
