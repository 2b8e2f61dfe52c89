"""The grid an outcome fit stands on: need-rate nodes, decay and fidelity values, and the turn bins.

The agent's need intensity varies from run to run: ``lambda_run ~ Gamma(mean need_rate, coefficient of
variation need_cv)`` (:mod:`prunesim.model.agent_needs`). Rather than draw it, each instance is run once at each
of :data:`NODES`, fixed need rates on a log scale, and a Gamma is a set of weights over them
(:func:`gamma_weights`: the Gamma's probability of each node's cell, the cells' edges half-way between nodes
on the log scale, the first from 0 and the last to infinity). So every ``(need_rate, need_cv)`` is a
reweighting of the same runs: a fit searches them, and refits on other data (a bootstrap replicate, a fold of
the cross-validation) without running anything again. The decay ``need_decay`` and the summary's fidelity
``summary_fidelity`` change what a run does, so the runs are made at each value of :data:`DECAYS` and
:data:`FIDELITIES` (fidelity only under a policy that writes summaries).

A run's turn count is judged in :data:`TURN_BINS` (the last, the runs at the cap: docs/outcomes.md).
"""

from __future__ import annotations

import numpy as np

NODES = np.geomspace(0.004, 64.0, 18)  # lambda_run values each instance runs at
DECAYS = np.array([2.0, 4.0, 7.0, 12.0, 20.0, 32.0])  # need_decay values (work turns)
FIDELITIES = np.array([0.0, 0.33, 0.67, 1.0])  # summary_fidelity values (a summary policy only)
RATE_GRID = np.geomspace(0.005, 40.0, 46)  # need_rate values a fit searches
CV_GRID = np.geomspace(0.25, 4.0, 17)  # need_cv values a fit searches
# Turn bins: counted turns from each edge up to the next; the last bin is the runs at the cap.
TURN_EDGES = np.array([0, 5, 8, 11, 15, 20, 26, 33, 42, 54, 70, 90, 115, 150, 200])
N_BINS = len(TURN_EDGES) + 1


def _edges() -> np.ndarray:
    mid = np.sqrt(NODES[:-1] * NODES[1:])
    return np.concatenate([[0.0], mid, [np.inf]])


EDGES = _edges()


def gamma_weights(mean: float, cv: float) -> np.ndarray:
    """The probability a Gamma of this mean and coefficient of variation gives each node's cell (sums to 1)."""
    from scipy.special import gammainc  # late: only a fit or a forecast weighs nodes

    if cv <= 0:
        w = np.zeros(len(NODES))
        w[min(np.searchsorted(EDGES, mean, side="right") - 1, len(NODES) - 1)] = 1.0
        return w
    shape = 1.0 / (cv * cv)
    scale = mean / shape
    cdf = np.where(np.isinf(EDGES), 1.0, gammainc(shape, np.where(np.isinf(EDGES), 0.0, EDGES) / scale))
    return np.diff(cdf)


def weight_table(rates: np.ndarray = RATE_GRID, cvs: np.ndarray = CV_GRID) -> np.ndarray:
    """:func:`gamma_weights` for every (rate, cv) of the search: shape ``(rates, cvs, nodes)``."""
    return np.array([[gamma_weights(r, c) for c in cvs] for r in rates])


def turn_bin(turns: np.ndarray, capped: np.ndarray) -> np.ndarray:
    """Each run's bin: by its counted turns, or the last bin when it is at the cap."""
    b = np.searchsorted(TURN_EDGES, turns, side="right") - 1
    return np.where(capped, N_BINS - 1, np.clip(b, 0, N_BINS - 2)).astype(np.int8)
