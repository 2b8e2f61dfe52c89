"""An arm forecast from simulated runs: the four figures, their 95% intervals, and the two bills.

Each started instance of the raw arm has been run at every need-rate node (:mod:`prunesim.studies.outcome_grid`)
under the policy. A fit's parameters weigh the nodes (the Gamma of the run's need rate), say which decay and
fidelity apply, and give each run its chance of solving (:func:`prunesim.studies.outcome_fit.solve_probability`).

* **The forecast** is the expectation under the point fit: the solve rate and the share at the cap are the
  node-weighted means over instances, the total cost the node-weighted sum, the median turns the median of the
  node-weighted mixture of the instances' turn counts. A run that failed to start stays as recorded: no cost,
  its turns, unsolved.
* **The interval** (95%) is the 2.5th to 97.5th percentile of replicates. Each replicate takes one bootstrap
  refit of the parameters (the fit's own uncertainty), resamples the raw arm's instances (the arm's sampling
  noise), draws each instance's need rate from its replicate's Gamma and its outcome from its chance of solving
  (the run's own noise), and computes the four figures of the arm it made.
* **The bills** (docs/outcomes.md, "The cache decides the sign"). The price per token is the raw arm's
  (:func:`prunesim.studies.outcome_workload.fit_prices`), and every bill is scaled so that the raw arm's own
  runs, simulated with no policy, cost what the file records. *Uncached*: every prompt token at that price (the
  raw arm's price is a list price: no cache, or the policy keeps the same discount). *Cached*: the raw arm's
  price came from a prompt cache that read each call's unchanged prefix at ``cache_read`` times the list price;
  a policy that rewrites the prefix pays the list price on what it rewrote. Under no policy the two are equal.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from prunesim.io.outcomes import Arm
from prunesim.studies import outcome_grid as grid
from prunesim.studies.outcome_arms import FIGURES, weighted_median
from prunesim.studies.outcome_fit import Params, solve_probability
from prunesim.studies.outcome_runs import capped, counted_turns, lengthening
from prunesim.studies.outcome_workload import Instances, Prices, prompt_by_mean

CACHE_READ = 0.25  # a cached prompt token's price over an uncached one's (Gemini 2.5's implicit cache: 75% off)
LEVEL = 0.95


@dataclass(frozen=True)
class Bills:
    """How simulated tokens become cost in the file's units (the module docstring)."""

    prices: Prices
    scale: float  # recorded raw cost over the raw arm's simulated cost with no policy
    list_price: float  # the cached bill's price of an uncached prompt token
    cache_read: float

    def growth(self, rec: np.ndarray) -> np.ndarray:
        """What the price's growth with the prompt adds: the agent's calls and the policy's, each at its own mean
        prompt (0 where the raw arm's price does not grow)."""
        g = self.prices.growth
        if not g:
            return np.zeros(rec.shape[:-1])
        return g * (prompt_by_mean(rec[..., 6], rec[..., 0]) + prompt_by_mean(rec[..., 9], rec[..., 1]))

    def uncached(self, rec: np.ndarray) -> np.ndarray:
        p = self.prices
        return self.scale * (p.input * (rec[..., 6] + rec[..., 9]) + self.growth(rec)
                             + p.output * (rec[..., 7] + rec[..., 10]))

    def cached(self, rec: np.ndarray) -> np.ndarray:
        p, r = self.prices, self.cache_read
        prompt = rec[..., 6] + rec[..., 9] - (1 - r) * (rec[..., 8] + rec[..., 11])
        return self.scale * (self.list_price * prompt + self.growth(rec) + p.output * (rec[..., 7] + rec[..., 10]))

    def as_dict(self) -> dict:
        return {**self.prices.as_dict(), "scale_to_recorded": self.scale, "cache_read": self.cache_read,
                "cached_list_price_per_million": self.list_price * 1e6}


def bills(raw: Arm, noop: np.ndarray, prices: Prices, cache_read: float = CACHE_READ) -> Bills:
    """Bills calibrated on the raw arm's runs simulated with no policy (``noop``: one record per row)."""
    ok = raw.started
    prompt, cached = noop[ok, 6].sum(), noop[ok, 8].sum()
    modelled = prices.prompt_cost(noop[ok, 6], noop[ok, 0]).sum() + prices.output * noop[ok, 7].sum()
    scale = float(raw.cost[ok].sum() / modelled) if modelled > 0 else 1.0
    reread = prompt - (1 - cache_read) * cached
    list_price = prices.input * prompt / reread if reread > 0 else prices.input
    return Bills(prices, scale, float(list_price), cache_read)


@dataclass(frozen=True)
class RunTable:
    """Per started instance and node, at one decay and fidelity: what a forecast reads of the runs."""

    turns: np.ndarray
    capped: np.ndarray
    length: np.ndarray
    cost: np.ndarray
    cost_cached: np.ndarray


def run_table(records: np.ndarray, scaffold: str, bill: Bills) -> RunTable:
    """``records``: (instances, nodes, COLUMNS) at one decay and fidelity."""
    return RunTable(counted_turns(records, scaffold), capped(records, scaffold), lengthening(records),
                    bill.uncached(records), bill.cached(records))


def point(raw: Arm, inst: Instances, table: RunTable, params: Params) -> dict[str, float]:
    """The forecast: each figure's expectation under ``params`` (the module docstring)."""
    w = params.weights()
    ok = inst.started & (inst.work > 0)
    y = inst.solved[ok]
    base = float(y.mean()) if ok.any() else 0.0
    p = solve_probability(y[:, None], base, params.discordance, params.lengthening_slope, table.capped[ok],
                          table.length[ok], params.cap_success_solved, params.cap_success_unsolved)
    n = inst.n
    turns = np.concatenate([table.turns[ok].ravel(), raw.turns[~ok].astype(float)])
    weights = np.concatenate([np.tile(w, ok.sum()), np.ones((~ok).sum())])
    return {"solve_rate": float((p @ w).sum() / n), "median_turns": _mixture_median(turns, weights),
            "total_cost": float((table.cost[ok] @ w).sum()), "capped_share": float((table.capped[ok] @ w).sum() / n),
            "total_cost_cached": float((table.cost_cached[ok] @ w).sum())}


def _mixture_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The median of a weighted mixture: the first value whose cumulative weight reaches half, averaged with the
    next when it reaches half exactly (numpy's median when every weight is one)."""
    order = np.argsort(values, kind="stable")
    v, c = values[order], np.cumsum(weights[order])
    half = c[-1] / 2
    k = int(np.searchsorted(c, half * (1 - 1e-12), side="left"))
    if abs(c[k] - half) <= 1e-9 * c[-1] and k + 1 < len(v):
        return float((v[k] + v[k + 1]) / 2)
    return float(v[k])


def replicate(raw: Arm, inst: Instances, table: RunTable, params: Params, rng: np.random.Generator) -> dict:
    """One arm as the forecast's noise makes it (the module docstring): its four figures and its cached bill."""
    n = inst.n
    counts = np.bincount(rng.integers(0, n, n), minlength=n)
    ok = inst.started & (inst.work > 0)
    rows = np.flatnonzero(ok)
    w = params.weights()
    node = np.searchsorted(np.cumsum(w), rng.random(len(rows)) * w.sum(), side="right").clip(0, len(w) - 1)
    c_ok = counts[rows]
    y = inst.solved[rows]
    base = float((c_ok * y).sum() / c_ok.sum()) if c_ok.sum() else 0.0
    pick = (rows, node)
    p = solve_probability(y, base, params.discordance, params.lengthening_slope, table.capped[pick],
                          table.length[pick], params.cap_success_solved, params.cap_success_unsolved)
    solved = rng.random(len(rows)) < p
    turns = raw.turns.astype(float).copy()
    turns[rows] = table.turns[pick]
    cap = np.zeros(n, dtype=bool)
    cap[rows] = table.capped[pick]
    return {"solve_rate": float((c_ok * solved).sum() / n), "median_turns": weighted_median(turns, counts),
            "total_cost": float((c_ok * table.cost[pick]).sum()), "capped_share": float((counts * cap).sum() / n),
            "total_cost_cached": float((c_ok * table.cost_cached[pick]).sum())}


def interval(values: list[float]) -> list[float]:
    lo, hi = np.percentile(np.asarray(values, dtype=float), [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return [float(lo), float(hi)]


def replicate_rng(seed: int, name: str) -> np.random.Generator:
    """The replicates' stream: the seed and the raw arm's experiment name (the same forecast, the same draws)."""
    key = int.from_bytes(hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()[:8], "little")
    return np.random.default_rng([seed, key])


def summarize(raw: Arm, inst: Instances, tables: dict, fitted: Params, replicates: list[Params],
              seed: int) -> dict:
    """The forecast and its intervals. ``tables``: a :class:`RunTable` per (decay index, fidelity index)."""
    at = tables[(fitted.decay_index(), fitted.fidelity_index())]
    arm = point(raw, inst, at, fitted)
    rng = replicate_rng(seed, raw.experiment)
    draws = [replicate(raw, inst, tables[(r.decay_index(), r.fidelity_index())], r, rng) for r in replicates]
    keys = (*FIGURES, "total_cost_cached")
    return {"arm": {k: arm[k] for k in keys}, "interval": {k: interval([d[k] for d in draws]) for k in keys}}


def needed(fitted: Params, replicates: list[Params]) -> list[tuple[int, int]]:
    """The (decay, fidelity) grid points a forecast's runs must cover, in grid order."""
    pts = {(fitted.decay_index(), fitted.fidelity_index())}
    pts.update((r.decay_index(), r.fidelity_index()) for r in replicates)
    return sorted(pts)


def grid_values(point_index: tuple[int, int]) -> tuple[float, float]:
    return float(grid.DECAYS[point_index[0]]), float(grid.FIDELITIES[point_index[1]])
