"""Fitting the reacting agent to recorded arms: maximum likelihood on the grid, and its bootstrap.

Per scaffold, on its dev pairs (:class:`prunesim.studies.outcome_runs.PairRuns`):

1. **The mechanism** (``need_rate``, ``need_cv``, ``need_decay``, ``summary_fidelity``): each policy arm's
   recorded turn counts, binned (:data:`outcome_grid.TURN_EDGES`, the last bin the runs at the cap), are a
   multinomial draw from the distribution the simulated runs of the same instances give. The log-likelihood is
   averaged per run within each arm, summed over the scaffold's arms (each arm weighs the same: the forecast is
   judged arm by arm, and the study's curve in M stands on its 50-instance arms) and maximized over the grid
   (every ``(need_rate, need_cv)`` a reweighting of the same runs). The distribution is the arm's, not the
   pairs': a recorded run and its raw run are two runs of a noisy agent (two raw runs of the same 50 instances
   differ by a log turn ratio of sd 0.66), so a run's own ratio says little, while the arm's shape (how many runs
   reach the cap) is what the policy moves. A share ``ROBUST`` of every predicted distribution is spread evenly
   over the bins, so one recorded run the mechanism cannot make (a policy arm's run shorter than any its raw
   instances give) costs a bounded penalty.
2. **Success** (``cap_success_solved``/``_unsolved``, ``discordance``, ``lengthening_slope``): the share of
   capped recorded runs that still solved, by the raw run's outcome, is read off the rows. The other two are
   fitted by maximum likelihood on each recorded run's outcome given its raw run's outcome and the *simulated*
   runs of its instance (their weights, cap and lengthening), as :mod:`prunesim.model.agent_success` computes
   it. Not on the recorded turn ratio: on the paired rows, P(solved | raw solved, not capped) is highest where
   the recorded ratio is near 1 and falls with it in both directions (re-run divergence, not the policy), so a
   fit on the recorded ratio would credit the policy with the noise of re-running.

The bootstrap resamples instances (the same resample for every arm of one raw arm) and refits both steps:
each replicate is a reweighting of runs already made. Everything is deterministic for a seed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from prunesim.studies import outcome_grid as grid
from prunesim.studies.outcome_runs import PairRuns

ROBUST = 0.02
KAPPAS = np.linspace(0.05, 1.0, 20)  # discordance values searched
SLOPES = np.array([0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0])  # lengthening_slope values searched
# The slope must gain this much twice-log-likelihood over none to enter a fit: the chi-squared 95th percentile
# with one degree of freedom (its bootstrap interval spans 0 on both scaffolds of the study's files).
SLOPE_TEST = 3.841
MECHANISM = ("need_rate", "need_cv", "need_decay", "summary_fidelity")
SUCCESS = ("cap_success_solved", "cap_success_unsolved", "discordance", "lengthening_slope")


@dataclass
class Params:
    """One fit of one scaffold: the mechanism and success parameters, and the log-likelihood of the turns."""

    need_rate: float
    need_cv: float
    need_decay: float
    summary_fidelity: float | None  # None: no arm of the scaffold summarizes
    cap_success_solved: float
    cap_success_unsolved: float
    discordance: float
    lengthening_slope: float
    loglik: float = 0.0

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in (*MECHANISM, *SUCCESS, "loglik")}

    @classmethod
    def from_dict(cls, d: dict) -> Params:
        return cls(**{k: d[k] for k in (*MECHANISM, *SUCCESS)}, loglik=d.get("loglik", 0.0))

    def weights(self) -> np.ndarray:
        return grid.gamma_weights(self.need_rate, self.need_cv)

    def decay_index(self) -> int:
        return int(np.argmin(np.abs(grid.DECAYS - self.need_decay)))

    def fidelity_index(self) -> int:
        if self.summary_fidelity is None:
            return 0
        return int(np.argmin(np.abs(grid.FIDELITIES - self.summary_fidelity)))


_WEIGHTS: dict[str, np.ndarray] = {}


def weight_table() -> np.ndarray:
    if "w" not in _WEIGHTS:
        _WEIGHTS["w"] = grid.weight_table()
    return _WEIGHTS["w"]


def turn_loglik(runs: list[PairRuns], counts: list[np.ndarray]) -> np.ndarray:
    """The turns' log-likelihood over (rate, cv, decay, fidelity) of the search grid, summed over the pairs."""
    w = weight_table()  # (R, C, nodes)
    n_dec, n_fid, n_nodes = len(grid.DECAYS), len(grid.FIDELITIES), len(grid.NODES)
    total = np.zeros((w.shape[0], w.shape[1], n_dec, n_fid))
    for pr, c in zip(runs, counts, strict=True):
        fids = pr.fidelities
        nodes = np.arange(n_nodes)
        idx = ((np.arange(n_dec)[:, None, None] * fids + np.arange(fids)[None, :, None]) * n_nodes
               + nodes[None, None, :]) * grid.N_BINS
        flat = (idx[None] + pr.bins.astype(np.int64)).reshape(len(c), -1)
        hist = np.bincount(flat.ravel(), weights=np.repeat(c.astype(float), flat.shape[1]),
                           minlength=n_dec * fids * n_nodes * grid.N_BINS).reshape(n_dec, fids, n_nodes, grid.N_BINS)
        n = c.sum()
        obs = np.bincount(pr.obs_bin.astype(np.int64), weights=c.astype(float), minlength=grid.N_BINS)
        p = np.einsum("rcj,dfjb->rcdfb", w, hist) / n
        p = (1 - ROBUST) * p + ROBUST / grid.N_BINS
        ll = np.log(p) @ obs / n  # (R, C, D, F): per run, so that each arm weighs the same
        total += ll if fids == n_fid else np.broadcast_to(ll, total.shape)
    return total


def fit_mechanism(runs: list[PairRuns], counts: list[np.ndarray]) -> tuple[float, float, float, float | None, float]:
    """The maximum-likelihood (need_rate, need_cv, need_decay, summary_fidelity) and its log-likelihood."""
    ll = turn_loglik(runs, counts)
    summarized = any(pr.fidelities > 1 for pr in runs)
    if not summarized:
        ll = ll[..., :1]
    r, c, d, f = np.unravel_index(int(np.argmax(ll)), ll.shape)
    fid = float(grid.FIDELITIES[f]) if summarized else None
    return float(grid.RATE_GRID[r]), float(grid.CV_GRID[c]), float(grid.DECAYS[d]), fid, float(ll[r, c, d, f])


def cap_success(runs: list[PairRuns], counts: list[np.ndarray]) -> tuple[float, float]:
    """The share of capped recorded runs that solved, for raw-solved and raw-unsolved instances (add-one smoothed
    toward the shares of all recorded runs, so that a base with few capped runs is not 0 or 1 by chance)."""
    out = []
    for base in (True, False):
        solved = capped_n = 0.0
        all_solved = all_n = 0.0
        for pr, c in zip(runs, counts, strict=True):
            sel = pr.y_raw == base
            solved += (c * (pr.obs_capped & sel & pr.y_pol)).sum()
            capped_n += (c * (pr.obs_capped & sel)).sum()
            all_solved += (c * (sel & pr.y_pol)).sum()
            all_n += (c * sel).sum()
        prior = all_solved / all_n if all_n else 0.5
        out.append(float((solved + prior) / (capped_n + 1)))
    return out[0], out[1]


def solve_probability(y_raw, base_rate: float, kappa, slope, cap_hit, length, cap_solved: float,
                      cap_unsolved: float) -> np.ndarray:
    """P(solved) of simulated runs, as :func:`prunesim.model.agent_success.probability` computes it, with a capped
    run's chance by its raw outcome; every argument broadcasts (runs on the last axes, parameters before them)."""
    grow = np.exp(slope * length)
    free = np.where(y_raw, 1.0 - (1.0 - base_rate) * kappa * grow, base_rate * kappa / grow)
    return np.where(cap_hit, np.where(y_raw, cap_solved, cap_unsolved), np.clip(free, 0.0, 1.0))


def instance_chances(pr: PairRuns, c: np.ndarray, mech: Params, kappas: np.ndarray,
                     slopes: np.ndarray) -> np.ndarray:
    """Each common instance's chance of solving under ``mech`` for every (discordance, slope): ``(K, S, n)``.

    Each instance's chance is a node-weighted sum: its capped nodes (a fixed chance), its nodes not lengthened
    (``L = 0``: the discordance alone) and the few nodes it lengthened, the only ones the slope reaches. The raw
    arm's solve rate is that of the instances ``c`` weighs.
    """
    w = mech.weights()
    d, f = mech.decay_index(), min(mech.fidelity_index(), pr.fidelities - 1)
    kappa, slope = np.asarray(kappas)[:, None, None], np.asarray(slopes)[None, :, None]
    hit, length = pr.sim_capped[:, d, f], pr.length[:, d, f]
    base = float((c * pr.y_raw).sum() / c.sum())
    y = pr.y_raw
    fixed = (hit * w).sum(axis=1) * np.where(y, mech.cap_success_solved, mech.cap_success_unsolved)
    w_flat = (((~hit) & (length <= 0)) * w).sum(axis=1)
    p = fixed + w_flat * solve_probability(y, base, kappa, 0.0, False, 0.0, 0.0, 0.0)  # (K, 1, n)
    rows, nodes = np.nonzero((~hit) & (length > 0))
    k_n, s_n = kappa.shape[0], slope.shape[1]
    if len(rows):
        part = w[nodes] * solve_probability(y[rows], base, kappa, slope, False, length[rows, nodes], 0.0, 0.0)
        from scipy.sparse import csr_matrix  # late: only a fit sums runs by instance

        owner = csr_matrix((np.ones(len(rows)), (np.arange(len(rows)), rows)), shape=(len(rows), len(y)))
        p = p + (owner.T @ part.reshape(-1, len(rows)).T).T.reshape(k_n, s_n, len(y))
    return np.clip(np.broadcast_to(p, (k_n, s_n, len(y))), 1e-9, 1 - 1e-9)


def outcome_loglik(pr: PairRuns, params: Params) -> float:
    """The log-likelihood per run of the recorded outcomes of ``pr``'s common instances under ``params``: how well
    a fit that never saw the arm predicts which of its runs solved (a proper score of the success model)."""
    c = np.ones(len(pr.raw_idx))
    p = instance_chances(pr, c, params, np.array([params.discordance]), np.array([params.lengthening_slope]))[0, 0]
    return float(np.log(np.where(pr.y_pol, p, 1 - p)).mean())


def fit_success(runs: list[PairRuns], counts: list[np.ndarray], mech: Params) -> tuple[float, float]:
    """Maximum-likelihood (discordance, lengthening_slope) on the recorded outcomes, given the mechanism.

    The slope enters only when the outcomes identify it: unless twice the log-likelihood it gains over the best
    fit with no slope exceeds :data:`SLOPE_TEST` (a likelihood-ratio test at 5%), the slope is 0 and the
    discordance is the one fitted without it.
    """
    ll = np.zeros((len(KAPPAS), len(SLOPES)))
    for pr, c in zip(runs, counts, strict=True):
        p = instance_chances(pr, c, mech, KAPPAS, SLOPES)
        ll += (np.log(np.where(pr.y_pol, p, 1 - p)) * c).sum(axis=-1)
    k, s_ = np.unravel_index(int(np.argmax(ll)), ll.shape)
    flat = int(np.argmax(ll[:, 0]))  # SLOPES[0] is 0: no dependence on the lengthening
    if 2 * (ll[k, s_] - ll[flat, 0]) <= SLOPE_TEST:
        return float(KAPPAS[flat]), float(SLOPES[0])
    return float(KAPPAS[k]), float(SLOPES[s_])


def fit_scaffold(runs: list[PairRuns], counts: list[np.ndarray] | None = None) -> Params:
    """Both steps on one scaffold's pairs (``counts``: each common instance's weight, ones by default)."""
    counts = counts or [np.ones(len(pr.raw_idx)) for pr in runs]
    rate, cv, decay, fid, ll = fit_mechanism(runs, counts)
    solved, unsolved = cap_success(runs, counts)
    params = Params(rate, cv, decay, fid, solved, unsolved, 0.0, 0.0, ll)
    params.discordance, params.lengthening_slope = fit_success(runs, counts, params)
    return params


def resample(runs: list[PairRuns], rng: np.random.Generator) -> list[np.ndarray]:
    """Bootstrap counts: one resample of each raw arm's instances, shared by every pair of that raw arm."""
    by_raw: dict[tuple[str, str], dict[str, int]] = {}
    out = []
    for pr in runs:
        key = (pr.pair.raw.file, pr.pair.raw.experiment)  # (not the object: runs made in other processes are copies)
        if key not in by_raw:
            names = pr.pair.raw.instances
            draw = rng.integers(0, len(names), len(names))
            tally: dict[str, int] = {}
            for i in draw.tolist():
                tally[names[i]] = tally.get(names[i], 0) + 1
            by_raw[key] = tally
        tally = by_raw[key]
        out.append(np.array([tally.get(pr.pair.raw.instances[i], 0) for i in pr.raw_idx], dtype=float))
    return out


def bootstrap(runs: list[PairRuns], replicates: int, seed: int, scaffold: str) -> list[Params]:
    """``replicates`` refits on resampled instances; the stream is the seed and the scaffold's name."""
    key = int.from_bytes(hashlib.sha256(scaffold.encode()).digest()[:4], "little")
    rng = np.random.default_rng([seed, key])
    out = []
    for _ in range(replicates):
        counts = resample(runs, rng)
        if any(c.sum() == 0 for c in counts):
            counts = [np.where(c.sum() == 0, 1.0, c) for c in counts]
        out.append(fit_scaffold(runs, counts))
    return out
