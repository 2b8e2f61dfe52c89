"""Both engines on the same scenario and seed: the kernel's summary must be the SimPy engine's, byte for byte.

:func:`random_scenario` draws scenarios across what the kernel claims to cover
(both budget kinds, full and roomy windows, repeats and long keys, scripted
events, an early-output factor, turn units, reentrant and reclaim-target
passes, recency's low-water gap, slack-gated's gate with its recency
fallback, every prompt-cache behaviour with short and long lives, minimum
lengths, granularity, breakpoints, lookback and reuse, a system prompt's
mark, records among the arrivals); the differential test and
``benchmarks/bench_kernel.py`` run both engines on them.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
from prunesim.model.scenario import Decision, InitialSpan, Pricing, Scenario, ScriptedEvent, SizeDist, Workload
from prunesim.model.spans import SUMMARY_TAG, SYSTEM_PROMPT
from prunesim.policies.recency import RecencyParams
from prunesim.policies.slack_gated import Gate


def random_scenario(rng: np.random.Generator, turns: int = 60) -> Scenario:
    """A synthetic scenario the kernel covers, drawn from ``rng``."""
    budget = int(rng.integers(4_000, 30_000))
    window = budget + int(rng.integers(0, 8_000))
    trigger = int(budget * rng.uniform(0.5, 1.0))
    events = [ScriptedEvent(turn=int(rng.integers(1, turns + 1)), tokens=int(rng.integers(1, 3_000)),
                            kind=str(rng.choice(["tool_output", "constraint", "user"])),
                            key=str(rng.choice(["", "cmd-x"])), stale_after=int(rng.integers(1, 30)),
                            tags=[str(rng.choice(["constraint", SUMMARY_TAG]))] if rng.random() < 0.3 else [],
                            pinned=bool(rng.random() < 0.2),
                            replaces_output=bool(rng.random() < 0.5))
              for _ in range(int(rng.integers(0, 4)))]
    initial = [InitialSpan("system", int(rng.integers(50, 2_000)), tags=[SYSTEM_PROMPT] if rng.random() < 0.5 else []),
               InitialSpan("constraint", int(rng.integers(10, 400)), pinned=bool(rng.random() < 0.5),
                           tags=["constraint"])]
    workload = Workload(
        reasoning=SizeDist(float(rng.uniform(20, 400)), float(rng.uniform(0, 1.5)), 1, 3_000),
        tool_call=SizeDist(float(rng.uniform(5, 120)), float(rng.uniform(0, 1.0)), 1, 1_000),
        # outputs sized so that the window fills somewhere in the run (late, early, or not at all)
        tool_output=SizeDist(float(rng.uniform(0.2, 1.5) * budget / turns), float(rng.uniform(0, 1.6)), 1, 12_000),
        reasoning_stale_after=float(rng.uniform(1, 10)),
        output_stale_after=float(rng.uniform(1, 40)),
        repeat_rate=float(rng.choice([0.0, rng.uniform(0, 0.4)])),
        repeat_gap_mean=float(rng.uniform(1, 20)),
        key_chars=int(rng.choice([0, 53])),
        tool_output_early=float(rng.choice([0.0, rng.uniform(0, 3)])),
        tool_output_early_turns=float(rng.uniform(1, 20)),
        turn_unit=bool(rng.random() < 0.3),
        initial=initial,
        events=events,
    )
    select_max = int(rng.integers(1, 8))
    decision = Decision(
        index_base=float(rng.uniform(0, 300)), index_per_candidate=float(rng.uniform(0, 30)),
        rationale_base=float(rng.uniform(0, 100)), rationale_per_span=float(rng.uniform(10, 300)),
        rationale_sigma=float(rng.uniform(0, 0.8)), select_mean=float(rng.uniform(1, select_max)),
        select_max=select_max, reclaim_target=float(rng.choice([0.0, rng.uniform(200, 5_000)])),
        selection_quality=float(rng.uniform(0.5, 1.0)), protect_recent_turns=int(rng.integers(0, 5)),
        reentrant=bool(rng.random() < 0.3),
    )
    gate_rng = rng.spawn(1)[0]  # (spawning draws nothing from rng)
    latency = dataclasses.replace(Scenario().latency, tool_mean_s=float(rng.choice([0.0, rng.uniform(0.1, 3)])))
    sc = Scenario(name="random", turns=turns, window=window, budget=budget,
                  budget_kind=str(rng.choice(["hard", "soft"])), trigger=trigger, workload=workload,
                  decision=decision, latency=latency, pricing=random_pricing(rng),
                  tables={"recency": RecencyParams(low_water_gap=int(rng.integers(0, budget // 2))),
                          "gate": Gate(lead=int(rng.integers(trigger - budget, trigger // 2 + 1)),
                                       margin_factor=float(rng.uniform(0, 3)),
                                       low_water_gap=int(rng.integers(0, budget // 2)),
                                       # (a child stream: the draws above stay those of earlier versions)
                                       knowledge=str(gate_rng.choice(["estimate", "estimate", "oracle"])),
                                       prior_yield=_prior_yield(gate_rng),
                                       prior_rationale=float(gate_rng.uniform(0, 800)),
                                       prior_selections=float(gate_rng.uniform(0.1, 2 * select_max)))})
    sc.check("random scenario")
    return sc


def _prior_yield(rng: np.random.Generator) -> float | None:
    """A fixed prior yield in a third of the scenarios, else unset: the yield is expected from the index."""
    value = float(rng.uniform(0, 4_000))
    return value if rng.random() < 1 / 3 else None


def random_pricing(rng: np.random.Generator) -> Pricing:
    """A prompt cache of each behaviour, with lives short enough to expire within a run now and then."""
    cache = str(rng.choice(["explicit", "explicit", "implicit", "none"]))
    ttl = str(rng.choice(["5m", "1h"])) if cache == "explicit" else f"{int(rng.integers(5, 600))}s"
    return Pricing(cache=cache, ttl=ttl, min_tokens=int(rng.choice([0, 1024, 4096])),
                   granularity=int(rng.choice([1, 1, 64, 128])), breakpoints=int(rng.integers(1, 5)),
                   lookback=int(rng.choice([0, 2, 20])), reuse=float(rng.choice([1.0, rng.uniform(0.3, 1.0)])))


def summary_bytes(summary: dict) -> bytes:
    """A summary as the result files write it, for a byte-for-byte comparison."""
    return json.dumps(summary, sort_keys=False, default=repr).encode()


def differences(simpy: dict, kernel: dict) -> list[str]:
    """The summary keys whose values differ (or that only one engine gave), in order."""
    keys = list(simpy) + [k for k in kernel if k not in simpy]
    return [k for k in keys if repr(simpy.get(k)) != repr(kernel.get(k))]
