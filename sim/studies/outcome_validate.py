"""Judging a forecast as a forecast: errors on held-out arms beside two baselines, directions, coverage.

For every held-out arm, on each figure (:data:`prunesim.studies.outcome_arms.FIGURES`):

* **error**: solve rate and capped share in points (|forecast - recorded| x 100); median turns and total cost
  as ratios to the raw arm (|forecast / raw - recorded / raw|);
* **baselines** any forecast must beat: the *null* (the arm is its raw arm: no effect) and the *simple* fit (the
  mean effect of the same strategy on the scaffold's other settings, additive for the two shares and
  multiplicative for turns and cost; for masking, interpolated in its window M, linearly between the nearest
  settings on either side and the nearest one beyond them; with no other setting of the scaffold, the same
  strategy's other scaffold);
* **direction**: on each recorded effect whose 95% interval excludes no effect (a paired percentile bootstrap of
  the arm against its raw arm over their common instances), whether the forecast's effect has its sign;
* **coverage**: whether the recorded figure lies in the forecast's 95% interval.

:func:`error_table` lays the errors out arm by arm, and :func:`excess` splits the forecast's mean error minus the
better baseline's into each arm's share: the arms that decide whether the forecast beats its baselines.
"""

from __future__ import annotations

import numpy as np
from prunesim.studies.outcome_arms import FIGURES, Pair, figures

SHARES = ("solve_rate", "capped_share")  # judged in points; the others as ratios to the raw arm
RESAMPLES = 2000


def error(figure: str, forecast: float, recorded: float, raw: float) -> float:
    if figure in SHARES:
        return abs(forecast - recorded) * 100
    return abs(forecast / raw - recorded / raw) if raw else float("nan")


def effect(figure: str, value: float, raw: float) -> float:
    """An arm's effect on a figure: a difference for the shares, a ratio minus one for turns and cost."""
    if figure in SHARES:
        return value - raw
    return value / raw - 1 if raw else float("nan")


def apply_effect(figure: str, raw: float, eff: float) -> float:
    if figure in SHARES:
        return float(min(1.0, max(0.0, raw + eff)))
    return float(raw * (1 + eff))


def recorded_effect_intervals(pair: Pair, seed: int) -> dict[str, tuple[float, float]]:
    """Each figure's effect, paired percentile bootstrap over the instances both arms ran (95%)."""
    ri, ai = pair.common()
    raw, arm = pair.raw.subset(ri), pair.arm.subset(ai)
    rng = np.random.default_rng([seed, RESAMPLES])
    n = len(ri)
    values: dict[str, list[float]] = {f: [] for f in FIGURES}
    for _ in range(RESAMPLES):
        counts = np.bincount(rng.integers(0, n, n), minlength=n)
        r, a = figures(raw, pair.kind.scaffold, counts), figures(arm, pair.kind.scaffold, counts)
        for f in FIGURES:
            values[f].append(effect(f, a[f], r[f]))
    return {f: tuple(float(x) for x in np.percentile(values[f], [2.5, 97.5])) for f in FIGURES}


def simple_effect(held: Pair, others: list[Pair], figure: str) -> float:
    """The simple baseline's effect for ``held`` from the arms of other settings (module docstring)."""
    def eff(p: Pair) -> float:
        return effect(figure, figures(p.arm, p.kind.scaffold)[figure], figures(p.raw, p.kind.scaffold)[figure])

    same = [p for p in others if p.kind.strategy == held.kind.strategy and p.kind.scaffold == held.kind.scaffold]
    if not same:
        same = [p for p in others if p.kind.strategy == held.kind.strategy]
    if not same:
        return 0.0
    if held.kind.strategy == "masking" and held.kind.scaffold == "openhands" and held.kind.m is not None:
        by_m: dict[int, list[float]] = {}
        for p in same:
            by_m.setdefault(p.kind.m, []).append(eff(p))
        ms = np.array(sorted(by_m))
        ys = np.array([np.mean(by_m[m]) for m in ms])
        return float(np.interp(held.kind.m, ms, ys))  # flat beyond the ends
    return float(np.mean([eff(p) for p in same]))


def score(rows: list[dict]) -> dict:
    """Mean errors per figure for the forecast and both baselines, directions and coverage (module docstring)."""
    out: dict = {"arms": len(rows)}
    for who in ("forecast", "null", "simple"):
        out[who] = {f: float(np.mean([r["error"][who][f] for r in rows])) for f in FIGURES}
    sig = [(r, f) for r in rows for f in FIGURES if r["significant"][f]]
    for who in ("forecast", "simple"):
        right = sum(1 for r, f in sig if r["direction"][who][f])
        out[f"{who}_direction"] = {"right": right, "significant": len(sig),
                                   "share": right / len(sig) if sig else float("nan")}
    covered = sum(1 for r in rows for f in FIGURES if r["covered"][f])
    out["coverage"] = {"covered": covered, "figures": len(rows) * len(FIGURES),
                       "share": covered / (len(rows) * len(FIGURES)) if rows else float("nan")}
    cached = [abs(r["forecast"]["total_cost_cached"] / r["raw"]["total_cost"]
                  - r["recorded"]["total_cost"] / r["raw"]["total_cost"]) for r in rows]
    out["forecast_cached_bill_total_cost"] = float(np.mean(cached)) if cached else float("nan")
    if rows and all("outcome_loglik" in r for r in rows):
        out["outcome_loglik"] = float(sum(r["outcome_loglik"] for r in rows))
    return out


def judge(held: Pair, forecast: dict, others: list[Pair], seed: int) -> dict:
    """One held-out arm: its recorded figures, the forecast's and both baselines', errors, directions, coverage."""
    sc = held.kind.scaffold
    raw, rec = figures(held.raw, sc), figures(held.arm, sc)
    simple = {f: apply_effect(f, raw[f], simple_effect(held, others, f)) for f in FIGURES}
    row = {"experiment": held.arm.experiment, "raw_experiment": held.raw.experiment, "scaffold": sc,
           "model": held.kind.model,
           "strategy": held.kind.strategy, "m": held.kind.m, "n": held.arm.n, "raw": raw, "recorded": rec,
           "forecast": forecast["arm"], "interval": forecast["interval"], "simple": simple,
           "error": {"forecast": {}, "null": {}, "simple": {}}, "significant": {}, "recorded_interval": {},
           "direction": {"forecast": {}, "simple": {}}, "covered": {}}
    intervals = recorded_effect_intervals(held, seed)
    for f in FIGURES:
        row["error"]["forecast"][f] = error(f, forecast["arm"][f], rec[f], raw[f])
        row["error"]["null"][f] = error(f, raw[f], rec[f], raw[f])
        row["error"]["simple"][f] = error(f, simple[f], rec[f], raw[f])
        lo, hi = intervals[f]
        row["recorded_interval"][f] = [lo, hi]
        row["significant"][f] = bool(lo > 0 or hi < 0)
        sign = np.sign(effect(f, rec[f], raw[f]))
        row["direction"]["forecast"][f] = bool(np.sign(effect(f, forecast["arm"][f], raw[f])) == sign != 0)
        row["direction"]["simple"][f] = bool(np.sign(effect(f, simple[f], raw[f])) == sign != 0)
        lo_f, hi_f = forecast["interval"][f]
        row["covered"][f] = bool(lo_f <= rec[f] <= hi_f)
    return row


WHO = ("forecast", "null", "simple")


def error_table(rows: list[dict]) -> list[tuple[dict, dict]]:
    """Each held-out row with its errors (``{who: {figure: error}}``), then ``({"label": "mean"}, the means)``: the
    last entry is the mean absolute error :func:`score` reports."""
    table = [(r, {who: dict(r["error"][who]) for who in WHO}) for r in rows]
    means = {who: {f: float(np.mean([e[who][f] for _, e in table])) for f in FIGURES} for who in WHO}
    return [*table, ({"label": "mean"}, means)]


def better_baseline(rows: list[dict], figure: str) -> str:
    """The baseline with the lower mean error on ``figure`` (the one a forecast must not lose to)."""
    means = {who: float(np.mean([r["error"][who][figure] for r in rows])) for who in ("null", "simple")}
    return min(means, key=lambda who: (means[who], who))


def excess(rows: list[dict], figure: str) -> tuple[str, list[tuple[dict, float]]]:
    """The better baseline on ``figure`` and each arm's share of the forecast's mean error minus that baseline's
    (its error minus the baseline's, over the number of arms): the shares sum to the difference of the means,
    and the largest say which arms make the forecast lose or win."""
    best = better_baseline(rows, figure)
    n = len(rows)
    return best, [(r, (r["error"]["forecast"][figure] - r["error"][best][figure]) / n) for r in rows]
