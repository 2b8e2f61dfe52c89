"""The runs behind an outcome forecast: every instance of a raw arm, under a policy, at given agent parameters.

:func:`setup` resolves what the runs share: the forecast's scenario (``outcome-instance`` with the user's
``--set`` values), the policy, and the agent profile (its cap, how the cap counts, its horizon and redo
length). :func:`simulate` runs each instance at each of several need rates (the nodes a fit weighs, see
:mod:`prunesim.studies.outcome_grid`) and returns one record per run (:data:`agent_kernel.COLUMNS`).

Two paths give the same records. The fast path (:mod:`prunesim.studies.agent_kernel`) covers the policies an
outcome study runs: no-op, observation masking (counted in observations, polling 1, or in OpenHands' events)
and llm-summary in turn batches with a fixed-size summary. Every other policy, and compositions, run through
the engine itself (:func:`prunesim.runner.run_one`), one run at a time: slower, the same mechanism.
``tests/test_agent_kernel.py`` holds the two equal run by run on the policies the fast path covers.

Each instance's runs share its seed (a hash of its instance id), so the need draws are common to every rate,
decay, fidelity and policy: differences between them are the parameters', not the noise's.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

import numpy as np
from prunesim.errors import UserError
from prunesim.model.agent_profiles import AgentParams, Profile, resolve
from prunesim.model.scenario import Scenario
from prunesim.policies import get_policy
from prunesim.policies.llm_summary import LlmSummaryPolicy
from prunesim.policies.noop import NoopPolicy
from prunesim.policies.observation_masking import ObservationMaskingPolicy
from prunesim.studies import agent_kernel as kernel
from prunesim.studies.outcome_workload import Instances, InstanceWorkload

BASE_SCENARIO = "outcome-instance"


@dataclass(frozen=True)
class Setup:
    """What every run of one forecast shares."""

    policy: str
    scenario: Scenario
    profile: Profile
    fast: np.ndarray | None  # the kernel's description of the policy; None: the engine runs it
    summary: np.ndarray  # the kernel's [summary] values

    @property
    def cap(self) -> int:
        return int(self.profile.cap or 0)

    @property
    def with_decisions(self) -> bool:
        return self.profile.cap_counts == "agent+decisions"


def setup(policy: str, sets: dict | None = None, profile: str = "swe-agent", scenario: Scenario | None = None) -> Setup:
    """The forecast's scenario (``outcome-instance`` and ``sets``), ``policy`` resolved, and the agent ``profile``."""
    from prunesim.io.scenario_files import load  # late: the loader reads every policy's tables

    cls = get_policy(policy)
    if scenario is None:
        scenario = load(BASE_SCENARIO, sets or None, [policy], given_as="--set")
    resolved = resolve(AgentParams(profile=profile))
    if resolved is None:
        raise UserError("--agent", profile, "names no agent model")
    return Setup(policy, scenario, resolved, fast_policy(cls, scenario), summary_values(scenario))


def summary_values(scenario: Scenario) -> np.ndarray:
    s = scenario.tables["summary"] if "summary" in scenario.tables else None
    if s is None:
        from prunesim.policies.summary import SummaryParams

        s = SummaryParams()
    return np.array([s.keep_tool_output, s.keep_tool_call, s.keep_other, s.size_half, s.age_half_life,
                     s.mean_tokens, s.max_tokens, s.instruction_tokens], dtype=float)


def fast_policy(cls, scenario: Scenario) -> np.ndarray | None:
    """The kernel's description of ``cls`` as ``scenario`` configures it, or None when only the engine runs it."""
    if getattr(cls, "parts", None):  # a composition: the engine runs it
        return None
    if issubclass(cls, NoopPolicy):
        return np.array([kernel.NOOP, 0, 0, 0], dtype=np.int64)
    if issubclass(cls, ObservationMaskingPolicy):
        p = cls(scenario, None).params
        unit = getattr(p, "unit", None) or "observations"
        if unit == "events":
            return np.array([kernel.MASK_EVENTS, p.n, p.placeholder_tokens, 0], dtype=np.int64)
        if unit == "observations" and p.polling == 1:
            return np.array([kernel.MASK_OBSERVATIONS, p.n, p.placeholder_tokens, 0], dtype=np.int64)
        return None
    if issubclass(cls, LlmSummaryPolicy):
        p = cls(scenario, None).params
        summary = scenario.tables.get("summary")
        if p.unit == "turn_batches" and summary is not None and summary.sigma == 0:
            return np.array([kernel.SUMMARY_BATCHES, int(p.threshold), 0, int(p.keep_turns)], dtype=np.int64)
    return None


def instance_seed(instance: str) -> int:
    """An instance's seed: the first 8 bytes of the SHA-256 of its id (the same in every arm and process)."""
    return int.from_bytes(hashlib.sha256(instance.encode("utf-8")).digest()[:8], "little")


def simulate(inst: Instances, seeds: np.ndarray, setup: Setup, rates: np.ndarray, decay: float,
             fidelity: float, engine: bool = False) -> np.ndarray:
    """Records of every started instance at every rate: shape ``(instances, rates, COLUMNS)`` (zeros for an
    instance that failed to start). ``engine``: run through the engine even where the fast path could."""
    p = setup.profile
    horizon, redo = int(p.need_horizon), int(p.redo_turns)
    out = np.zeros((inst.n, len(rates), kernel.N_COLUMNS))
    ok = np.flatnonzero(inst.started & (inst.work > 0))
    if not len(ok):
        return out
    if setup.fast is not None and not engine:
        reps = len(rates)
        idx = np.repeat(ok, reps)
        # A run stops at its cap before its cap + 1st work turn: longer work changes nothing but the arrays' size.
        work = np.minimum(inst.work[idx], setup.cap + 1) if setup.cap > 0 else inst.work[idx]
        rec = kernel.run_batch(work, inst.base[idx], inst.call[idx], inst.output[idx],
                               inst.billed_output[idx], np.tile(np.asarray(rates, dtype=float), len(ok)),
                               np.asarray(seeds, dtype=np.uint64)[idx], setup.fast, setup.summary, decay, horizon,
                               fidelity, redo, setup.cap, setup.with_decisions)
        out[ok] = rec.reshape(len(ok), reps, kernel.N_COLUMNS)
        return out
    for i in ok:
        for j, rate in enumerate(rates):
            out[i, j] = engine_record(inst, int(i), int(seeds[i]), setup, float(rate), decay, fidelity)
    return out


def engine_record(inst: Instances, i: int, seed: int, setup: Setup, rate: float, decay: float,
                  fidelity: float) -> np.ndarray:
    """One run through the engine, as the kernel's record."""
    from prunesim.runner import run_one  # late: the SimPy engine, for the policies the fast path lacks

    p = setup.profile
    params = AgentParams(profile=p.name, need_rate=rate, need_cv=0.0, need_decay=decay,
                         need_horizon=int(p.need_horizon), summary_fidelity=fidelity, redo_turns=int(p.redo_turns),
                         cap=setup.cap, cap_counts=p.cap_counts)
    scenario = dataclasses.replace(setup.scenario, turns=int(inst.work[i]))
    workload = InstanceWorkload(int(inst.work[i]), int(inst.base[i]), int(inst.call[i]), int(inst.output[i]),
                                int(inst.billed_output[i]))
    result = run_one(scenario, setup.policy, seed, trace="all", workload=workload, agent=params)
    o = result.outcome
    rec = np.zeros(kernel.N_COLUMNS)
    rec[0], rec[2], rec[3], rec[4], rec[5] = o.agent_calls, o.work_turns, o.refetch_turns, o.redo_turns, o.capped
    for row in result.calls:
        call = dict(zip(("call", "time_s", "turn", "decision", "pass", "prompt_tokens", "cache_read", "cache_write",
                         "uncached", "output_tokens", "invalidated_tokens", "cost_usd"), row, strict=False))
        at = 9 if call["decision"] else 6
        rec[at] += call["prompt_tokens"]
        rec[at + 1] += call["output_tokens"]
        rec[at + 2] += call["cache_read"]
        rec[1] += bool(call["decision"])
    return rec
