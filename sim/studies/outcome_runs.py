"""A dev arm's simulated runs at the whole grid, beside what its recorded runs did: what a fit reads.

For a policy arm and its raw arm (:class:`prunesim.studies.outcome_arms.Pair`) every started instance of the raw
arm is run under the arm's policy at every node of :mod:`prunesim.studies.outcome_grid` (need rates, decays,
fidelities). A fit compares them with the policy arm's recorded runs on the instances both arms ran (both
started): their turn bins, whether they reached the cap, and whether they solved the task.

What a simulated run counts as (the same rules as a recorded one, :mod:`prunesim.studies.outcome_arms`): its
turns are the agent's calls plus the summary calls where the scaffold counts those among its turns (OpenHands),
its cap test counts both against the scaffold's ``capped_at``, and its lengthening is
``L = ln(agent calls / work turns)`` (:mod:`prunesim.model.agent_success`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from prunesim.studies import agent_kernel as kernel
from prunesim.studies import outcome_grid as grid
from prunesim.studies.outcome_arms import COUNTING, Pair, counted_calls
from prunesim.studies.outcome_sims import Setup, instance_seed, setup, simulate
from prunesim.studies.outcome_workload import Instances, instances


def counted_turns(rec: np.ndarray, scaffold: str) -> np.ndarray:
    """The turns a scaffold's file would record for simulated runs (``rec``: records, last axis the columns)."""
    turns = rec[..., 0]
    return turns + rec[..., 1] if COUNTING[scaffold].turns_include_summaries else turns


def capped(rec: np.ndarray, scaffold: str) -> np.ndarray:
    """Whether the file's rule counts each simulated run as at the cap (agent and summary calls)."""
    return rec[..., 0] + rec[..., 1] >= COUNTING[scaffold].capped_at


def lengthening(rec: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rec[..., 2] > 0, np.log(np.maximum(rec[..., 0], 1) / np.maximum(rec[..., 2], 1)), 0.0)


def summarizes(s: Setup) -> bool:
    """The policy writes summaries (the fidelity matters): the kernel's summary kind, or any engine-run policy."""
    return s.fast is None or s.fast[0] == kernel.SUMMARY_BATCHES


@dataclass(eq=False)
class PairRuns:
    """One dev pair: its raw arm's instances run at the grid, and what both arms recorded on common instances."""

    pair: Pair
    scaffold: str
    base: int  # the scaffold's base prompt the instances were built with
    setup: Setup
    inst: Instances
    records: np.ndarray  # (raw rows, decays, fidelities, nodes, COLUMNS), float32
    raw_idx: np.ndarray  # common started instances: rows of the raw arm ...
    arm_idx: np.ndarray  # ... and of the policy arm
    bins: np.ndarray  # (common, decays, fidelities, nodes) simulated turn bins
    sim_capped: np.ndarray  # same shape, bool
    length: np.ndarray  # same shape, L
    obs_bin: np.ndarray  # (common,) the policy arm's recorded bin
    obs_capped: np.ndarray  # (common,) bool
    y_raw: np.ndarray  # (common,) bool
    y_pol: np.ndarray  # (common,) bool

    @property
    def fidelities(self) -> int:
        return self.records.shape[2]


def pair_runs(pair: Pair, base: int, engine: bool = False) -> PairRuns:
    """Run ``pair``'s raw instances (``base``: the scaffold's base prompt) under its policy at the whole grid (the
    fidelity axis only for a summary)."""
    from prunesim.studies.outcome_arms import policy_of

    scaffold = pair.kind.scaffold
    policy, sets = policy_of(pair.kind)
    s = setup(policy, sets, scaffold)
    inst = instances(pair.raw, base)
    seeds = np.array([instance_seed(i) for i in pair.raw.instances], dtype=np.uint64)
    fids = grid.FIDELITIES if summarizes(s) else grid.FIDELITIES[:1]
    records = np.zeros((inst.n, len(grid.DECAYS), len(fids), len(grid.NODES), kernel.N_COLUMNS), np.float32)
    for d, decay in enumerate(grid.DECAYS):
        for f, fid in enumerate(fids):
            records[:, d, f] = simulate(inst, seeds, s, grid.NODES, float(decay), float(fid), engine)
    raw_idx, arm_idx = pair.common()
    ok = pair.raw.started[raw_idx] & pair.arm.started[arm_idx] & (inst.work[raw_idx] > 0)
    raw_idx, arm_idx = raw_idx[ok], arm_idx[ok]
    common = records[raw_idx]
    cap_sim = capped(common, scaffold)
    obs_turns = counted_calls(pair.arm, scaffold)[arm_idx]
    obs_capped = obs_turns >= COUNTING[scaffold].capped_at
    return PairRuns(pair, scaffold, base, s, inst, records, raw_idx, arm_idx,
                    grid.turn_bin(counted_turns(common, scaffold), cap_sim), cap_sim, lengthening(common),
                    grid.turn_bin(pair.arm.turns[arm_idx], obs_capped), obs_capped,
                    pair.raw.solved[raw_idx], pair.arm.solved[arm_idx])
