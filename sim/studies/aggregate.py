"""Aggregate a sweep: per (policy, grid point) and metric, n, median, mean and a bootstrap CI of the median.

The interval is a percentile bootstrap: ``resamples`` resamples (with
replacement) of the group's values, the median of each, and the 2.5th and
97.5th percentiles of those medians, taken as order statistics: with B
resamples, the ceil(0.025 B)-th and ceil(0.975 B)-th smallest medians (the 50th
and 1950th of 2000). A bound is a median that really occurred, never an
interpolation between two, which is what keeps infinities well behaved.

Each group draws from its own generator, seeded from ``seed`` and a hash of the
group's key (policy and grid values), so the output is deterministic and one
group's interval does not change when grid points are added or removed.

Infinite values (``overhead_ratio`` is ``inf`` when the passes freed nothing
net) count as larger than every finite value:

* ``median`` is ``inf`` when more than half of the values are (with an even
  count, when the upper middle one is: the mean of a finite value and inf is inf);
* ``mean`` is ``inf`` whenever any value is;
* ``ci_low`` / ``ci_high`` are ``inf`` when at least 97.5% / 2.5% of the
  resampled medians are; they are never NaN.

They are written as the string ``inf`` (``pandas.read_csv`` reads it as a float).
Booleans (``oscillating``) count as 0/1, so their mean is a fraction of runs; a
yes/no metric's row also carries that share of runs with its Wilson 95% interval
(``share``, ``share_low``, ``share_high``; empty for numeric metrics), the
interval every yes/no figure of prunesim gets.
Empty (or ``nan``) cells, a metric a run did not report, are left out of that metric's n;
a metric no run of a group reported gets no row for that group.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from prunesim.errors import UserError
from prunesim.io import atomic, output
from prunesim.io.sweep_files import (  # noqa: F401 - AGGREGATE_FILE is part of this module's API
    AGGREGATE_FILE,
    ID_COLUMNS,
    RUNS_FILE,
    STAT_COLUMNS,
    SWEEP_FILE,
    read_description,
    read_runs,
)
from prunesim.observe.metrics import METRICS
from prunesim.observe.metrics.intervals import wilson

RESAMPLES = 2000
MAX_RESAMPLES = 1_000_000  # far past where the interval's order statistics stop moving
SEED = 0
CONFIDENCE = 0.95
# Resampled indices are drawn this many at a time: memory stays bounded whatever --resamples and the
# number of seeds (the generator's stream is the same whether drawn in one call or in blocks).
BLOCK = 1 << 21
YES_NO = frozenset(m.name for m in METRICS if m.unit == "bool")


def median_ci(
    values: Sequence[float], rng: np.random.Generator, resamples: int = RESAMPLES, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the median of ``values`` (see the module docstring)."""
    x = np.sort(np.asarray(values, dtype=float))
    return _ci_from_middles(x, _middle_ranks(rng, len(x), resamples), confidence)


def _sorted_resamples(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    """Resample indices, each row sorted: for sorted data, row order statistics are the resample's."""
    return np.sort(rng.integers(0, n, size=(resamples, n)), axis=1)


def _middle_ranks(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    """For each resample of ``n`` indices, its lower and upper middle order statistics: shape (resamples, 2).

    The same numbers as the middle columns of :func:`_sorted_resamples`, drawn in blocks.
    """
    out = np.empty((resamples, 2), dtype=np.int64)
    rows = max(1, BLOCK // max(1, n))
    for start in range(0, resamples, rows):
        block = _sorted_resamples(rng, n, min(rows, resamples - start))
        out[start : start + len(block), 0] = block[:, (n - 1) // 2]
        out[start : start + len(block), 1] = block[:, n // 2]
    return out


def _ci_sorted(x: np.ndarray, idx: np.ndarray, confidence: float) -> tuple[float, float]:
    n = len(x)
    return _ci_from_middles(x, np.stack([idx[:, (n - 1) // 2], idx[:, n // 2]], axis=1), confidence)


def _ci_from_middles(x: np.ndarray, middles: np.ndarray, confidence: float) -> tuple[float, float]:
    lo, hi = x[middles[:, 0]], x[middles[:, 1]]
    medians = np.where(lo == hi, lo, (lo + hi) / 2)  # equal infinities stay inf, never NaN
    medians.sort()
    return float(medians[_rank(tail_share(confidence), len(medians))]), float(
        medians[_rank(1 - tail_share(confidence), len(medians))]
    )


def tail_share(confidence: float) -> float:
    return (1 - confidence) / 2


def _rank(q: float, count: int) -> int:
    """0-based index of the ceil(q * count)-th smallest of ``count`` values (float noise rounded away)."""
    return min(count - 1, max(0, math.ceil(round(q * count, 9)) - 1))


def _median(x: np.ndarray) -> float:
    """Median of sorted ``x`` (inf-safe: the mean of two equal infinities is that infinity)."""
    n = len(x)
    lo, hi = x[(n - 1) // 2], x[n // 2]
    return float(lo) if lo == hi else float((lo + hi) / 2)


def _group_rng(seed: int, key: tuple) -> np.random.Generator:
    digest = hashlib.sha256(repr(key).encode("utf-8")).digest()
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, int.from_bytes(digest[:8], "big")])))


def describe(values: Sequence[float], key: tuple, seed: int = SEED, resamples: int = RESAMPLES,
             confidence: float = CONFIDENCE) -> dict | None:
    """n, median, mean and the bootstrap interval of the median of ``values`` (None and NaN left out).

    The same statistics as :func:`aggregate` gives one group's metric, drawn from the generator
    of ``key``; None when no value is left.
    """
    x = np.sort(np.array([float(v) for v in values if v is not None], dtype=float))
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return None
    rng = _group_rng(seed, tuple(atomic.format_cell(k) for k in key))
    low, high = _ci_sorted(x, _sorted_resamples(rng, len(x), resamples), confidence)
    mean = math.inf if np.isposinf(x).any() else float(np.mean(x))
    return {"n": len(x), "median": _median(x), "mean": mean, "ci_low": low, "ci_high": high}


# -- paired and clustered intervals -------------------------------------------------------------------
# Units (transcripts, seeds) are clusters: every policy ran on each of them. Resampling whole units, the same
# draw for every policy, keeps each unit's runs together, so a difference between two policies is resampled
# as a pair and the unit-to-unit spread that both share cancels out of it.
def resample_units(rng: np.random.Generator, units: int, resamples: int) -> np.ndarray:
    """Indices of ``resamples`` resamples (with replacement) of ``units`` units: shape (resamples, units)."""
    return rng.integers(0, units, size=(resamples, units))


def percentile_interval(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles (at 95%) of ``values``, as order statistics (module docstring)."""
    x = np.sort(np.asarray(values, dtype=float))
    tail = tail_share(confidence)
    return float(x[_rank(tail, len(x))]), float(x[_rank(1 - tail, len(x))])


def paired_total_interval(diffs, key: tuple, seed: int = SEED, resamples: int = RESAMPLES,
                          confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Bootstrap interval of the sum of per-unit paired differences, from the generator of ``key``: the units
    resampled with replacement (each unit's difference drawn whole), the resampled sums' percentiles taken
    after their spread about the observed sum is widened by :func:`expansion` (Hesterberg's expanded percentile
    interval: over a few units the plain percentile interval is too narrow, docs/recommend.md)."""
    d = np.asarray(diffs, dtype=float)
    if len(d) == 0:
        return math.nan, math.nan
    rng = _group_rng(seed, tuple(atomic.format_cell(k) for k in key))
    total = float(d.sum())
    sums = d[resample_units(rng, len(d), resamples)].sum(axis=1)
    return percentile_interval(total + expansion(len(d), confidence) * (sums - total), confidence)


def expansion(n: int, confidence: float = CONFIDENCE) -> float:
    """How much wider than the resamples' spread a bootstrap interval over ``n`` units is drawn: sqrt(n / (n - 1))
    (the resamples' variance is the plug-in one) times Student's t over the normal quantile; 1 for one unit."""
    if n < 2:
        return 1.0
    from scipy.stats import norm, t

    q = 1 - tail_share(confidence)
    return math.sqrt(n / (n - 1)) * float(t.ppf(q, n - 1)) / float(norm.ppf(q))


TIE_SHARE = 0.001  # a paired difference of at most this share of the reference's bill on a unit is a tie


def paired_comparison(a, b, acted, reference, key: tuple, tie_share: float = TIE_SHARE) -> dict:
    """``a`` against ``b`` on the same units (each unit's values of both, in the same order): the totals, the
    difference of the totals with its paired interval (:func:`paired_total_interval`), the median and mean
    per-unit difference, and wins, losses and ties on the units where ``acted`` (a tie: a difference of at most
    ``tie_share`` of ``reference`` on that unit)."""
    a, b, reference = (np.asarray(x, dtype=float) for x in (a, b, reference))
    on = np.asarray(acted, dtype=bool)
    diff = a - b
    low, high = paired_total_interval(diff, key)
    tol = tie_share * reference
    usd = lambda x: round(float(x), 9)  # noqa: E731 - dollars as the bills report them
    return {"units": len(diff), "total_usd": usd(a.sum()), "against_usd": usd(b.sum()), "diff_usd": usd(diff.sum()),
            "interval": [usd(low), usd(high)], "median_diff": usd(np.median(diff)) if len(diff) else None,
            "mean_diff": usd(diff.mean()) if len(diff) else None, "acted": int(on.sum()),
            "wins": int((diff[on] < -tol[on]).sum()), "losses": int((diff[on] > tol[on]).sum()),
            "ties": int((np.abs(diff[on]) <= tol[on]).sum())}


def paired_difference(a: Sequence[float], b: Sequence[float], key: tuple, seed: int = SEED,
                      resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> dict:
    """The mean of ``b - a`` over paired units (the same seed or transcript under two policies) and its interval:
    :func:`paired_total_interval` of the differences over their number."""
    x = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if len(x) == 0:
        raise ValueError("no pairs")
    low, high = paired_total_interval(x, key, seed, resamples, confidence)
    n = len(x)
    return {"n": n, "mean": float(x.mean()), "ci_low": low / n, "ci_high": high / n}


def _numeric(values: list) -> bool:
    return all(v is None or isinstance(v, (int, float)) for v in values)


def aggregate(
    out: str | Path, resamples: int = RESAMPLES, seed: int = SEED, confidence: float = CONFIDENCE
) -> list[dict]:
    """The aggregate table of a sweep directory: one dict per (policy, grid point, numeric metric)."""
    check_resamples(resamples)
    desc = read_description(out)
    return aggregate_rows(desc, read_runs(out, desc), resamples, seed, confidence)


def check_resamples(resamples: int) -> None:
    if not 1 <= resamples <= MAX_RESAMPLES:
        raise UserError("--resamples", str(resamples), f"must be from 1 to {MAX_RESAMPLES:,}")


def aggregate_rows(
    desc: dict, rows: list[dict], resamples: int = RESAMPLES, seed: int = SEED, confidence: float = CONFIDENCE
) -> list[dict]:
    """The aggregate table of a sweep's rows (as :func:`prunesim.io.sweep_files.read_runs` gives them)."""
    axes = list(desc["grid"])
    fixed = set(ID_COLUMNS) | set(axes)
    columns = [c for c in desc.get("columns", []) if c not in fixed]
    groups: dict[tuple, list[dict]] = {}
    for row in rows:  # already in (policy, grid point, seed) order
        groups.setdefault((row["policy"], *(row[a] for a in axes)), []).append(row)
    table = []
    for key, members in groups.items():
        rng = _group_rng(seed, tuple(atomic.format_cell(k) for k in key))
        resampled: dict[int, np.ndarray] = {}
        for metric in columns:
            raw = [r.get(metric) for r in members]
            if not _numeric(raw):
                continue
            x = np.sort(np.array([float(v) for v in raw if v is not None], dtype=float))
            x = x[~np.isnan(x)]
            n = len(x)
            if n == 0:  # no run of this group reported the metric
                continue
            if n not in resampled:
                resampled[n] = _middle_ranks(rng, n, resamples)
            low, high = _ci_from_middles(x, resampled[n], confidence)
            mean = math.inf if np.isposinf(x).any() else float(np.mean(x))
            record = {"policy": key[0], **dict(zip(axes, key[1:], strict=True)), "metric": metric, "n": n}
            record.update(median=_median(x), mean=mean, ci_low=low, ci_high=high, share=None, share_low=None,
                          share_high=None)
            if metric in YES_NO:
                yes = int(np.count_nonzero(x))
                record["share"] = yes / n
                record["share_low"], record["share_high"] = wilson(yes, n)
            table.append(record)
    return table


def write_aggregate(out: str | Path, table: list[dict]) -> Path:
    """``out/aggregate.csv``, written atomically (tidy long form)."""
    desc = read_description(out)
    columns = ["policy", *desc["grid"], *STAT_COLUMNS]
    path = Path(out) / AGGREGATE_FILE
    output.check_not_input(path, [Path(out) / RUNS_FILE, Path(out) / SWEEP_FILE])  # a link to the sweep's own file
    atomic.write_csv(path, columns, ([("" if r[c] is None else r[c]) for c in columns] for r in table))
    return path
