"""What a point of a sweep figure is: a share of runs, a median or a mean, each with its 95% interval.

``share``: the share of runs where the metric is true (a yes/no metric) or
above zero (a count), with its Wilson score interval
(:func:`prunesim.observe.metrics.intervals.wilson`). ``median``: the median over
the runs and a percentile bootstrap of it. ``mean``: the mean and a percentile
bootstrap of the mean. The bootstraps draw ``BOOT_RESAMPLES`` resamples from a
numpy Generator seeded with ``BOOT_SEED``, so an interval is the same on every
run. Yes/no metrics and failure counts default to ``share``; the rest to
``median``.
"""

from __future__ import annotations

import math

import numpy as np
from prunesim.observe.metrics.intervals import wilson

BOOT_SEED = 20240601
BOOT_RESAMPLES = 2000
LEVEL = 0.95
STATS = ("share", "median", "mean")
# Counts of failures: a run has some or none, and most runs have none, so their median is 0 with a band of
# [0, 0]; the share of runs with any is the figure that moves.
SHARE_METRICS = (
    "oscillating", "net_negative_passes", "zero_yield_passes", "cut_passes", "in_band_passes",
    "forced_truncations", "re_retrievals", "lost_constraints", "overflow_turns",
)


def default_stat(metric: str, values) -> str:
    """``share`` for a yes/no metric or a failure count, else ``median``."""
    values = list(values)
    if metric in SHARE_METRICS or (values and all(isinstance(v, bool) for v in values)):
        return "share"
    return "median"


def _bootstrap(v: np.ndarray, statistic, resamples: int, level: float) -> tuple[float, float, float]:
    if v.size == 0:
        return math.nan, math.nan, math.nan
    centre = float(statistic(v))
    if v.size == 1:
        return centre, centre, centre
    rng = np.random.Generator(np.random.PCG64(BOOT_SEED))
    idx = rng.integers(0, v.size, size=(resamples, v.size))
    values = statistic(v[idx], axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(values, [alpha, 1 - alpha], method="inverted_cdf")
    return centre, float(lo), float(hi)


def bootstrap_median(values, resamples: int = BOOT_RESAMPLES, level: float = LEVEL) -> tuple[float, float, float]:
    """Median of ``values`` and a percentile-bootstrap ``level`` interval for it (deterministic)."""
    return _bootstrap(np.asarray(values, dtype=float), np.median, resamples, level)


def bootstrap_mean(values, resamples: int = BOOT_RESAMPLES, level: float = LEVEL) -> tuple[float, float, float]:
    """Mean of ``values`` and a percentile-bootstrap ``level`` interval for it (deterministic; inf stays inf)."""
    v = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        return _bootstrap(v, np.mean, resamples, level)


def share(values) -> tuple[float, float, float]:
    """The share of ``values`` that are true or above zero, and its Wilson 95% interval (NaNs left out)."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    k = int((v > 0).sum())
    low, high = wilson(k, int(v.size))
    return k / v.size, low, high


def summarize(values, stat: str) -> tuple[float, float, float]:
    """(value, low, high) of ``values`` under ``stat`` (one of :data:`STATS`)."""
    return {"share": share, "median": bootstrap_median, "mean": bootstrap_mean}[stat](values)
