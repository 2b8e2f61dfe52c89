"""The runs a recommendation reads: every policy on every unit, at each level its re-simulated assumptions take.

Each run is replayed once with ``pricing.reuse = 1`` and a per-turn trace, so that
its per-call stream is kept (:mod:`prunesim.studies.reprice`) and every re-priced
draw prices it again without replaying. A policy is replayed at the level pairs
of :func:`level_pairs` (summary size, re-fetch probability) that can change what it
does: only policies that write a model summary read the summary's size, and only
transcripts whose calls use what earlier calls fetched react (:func:`level_runs`
shares one replay between the pairs that cannot differ). On transcripts the
clairvoyant optimum is planned and replayed too (:mod:`prunesim.studies.optimum`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from prunesim.model.agent_profiles import resolve
from prunesim.model.scenario import Scenario
from prunesim.policies import get_policy
from prunesim.runner import run_one, tables_read
from prunesim.studies import optimum, reprice
from prunesim.studies.assumptions import CENTRE, REACTION, STRATA, SUMMARY, Assumption, Billing
from prunesim.studies.leaderboard import ACTIONS
from prunesim.studies.pool import ordered
from prunesim.studies.transcript_replay import recorded_model, replay, replay_scenario

SOLVED = "task_success"  # a run's predicted solved share, once the agent model reports one


def level_pairs(drawn) -> tuple[tuple[str, str], ...]:
    """The level pairs (summary size, re-fetch probability) a recommendation reads when the assumptions named in
    ``drawn`` are drawn: the values, the draws' strata, and each end of each range with the other at its value."""
    sizes = STRATA if SUMMARY in drawn else (CENTRE,)
    probs = STRATA if REACTION in drawn else (CENTRE,)
    ends = [(end, CENTRE) for end in ("lo", "hi") if SUMMARY in drawn]
    ends += [(CENTRE, end) for end in ("lo", "hi") if REACTION in drawn]
    return ((CENTRE, CENTRE), *((s, r) for s in sizes for r in probs), *ends)


@dataclass(frozen=True)
class Measured:
    """One run: its per-call stream and what it observably did."""

    stream: reprice.Stream
    acted: bool
    refetches: int
    compactions: int
    turns: int
    solved: float | None
    profile: str = ""  # the agent profile the run took ('' without an agent model)


@dataclass
class UnitRuns:
    """One unit: how it is billed, and each policy's runs by level pair (several pairs may share a run)."""

    name: str
    billing: object  # assumptions.Billing
    runs: dict[str, dict[tuple[str, str], Measured]]
    clairvoyant: Measured | None = None
    predicted: float | None = None  # the clairvoyant's bill as its planner predicted it
    agent: object = None  # the agent profile its runs took (model.agent_profiles.Profile; None: no agent model)
    reacts: bool = False  # the closed loop's re-fetch of a resource runs on it (its probability is read)


def measured(result) -> Measured:
    s = result.summary
    return Measured(reprice.stream_of(result), any(s[a] for a in ACTIONS), s.get("refetches", 0),
                    s.get("compactions", 0), s["turns"], s.get(SOLVED), s.get("agent_profile") or "")


def level_runs(run, values: dict[str, dict], pairs) -> dict[tuple[str, str], Measured]:
    """Each of the level ``pairs`` (:func:`level_pairs`), with as few replays as give the same runs.

    ``run(summary_tokens, probability)`` replays at those values (None: the scenario's); ``values`` holds the
    value of each level of :data:`SUMMARY` and :data:`REACTION` that this run reads (absent: it reads none).
    A run with no compaction is the same at every summary size; a run with no re-fetch at the highest
    probability asked is the same at every lower one (a need that did not fire there fires nowhere below it).
    """
    sizes, probs = values.get(SUMMARY), values.get(REACTION)
    done: dict[tuple, Measured] = {}

    def raw(s: str, r: str) -> Measured:
        key = (sizes[s] if sizes else None, probs[r] if probs else None)
        if key not in done:
            done[key] = run(*key)
        return done[key]

    top = max(probs, key=probs.get) if probs else CENTRE

    def at(s: str, r: str) -> Measured:
        if sizes is None:
            s = CENTRE
        if sizes is not None and s != CENTRE:
            base = at(CENTRE, r)
            if not base.compactions:
                return base
        if probs is None:
            return raw(s, CENTRE)
        highest = raw(s, top)
        return highest if not highest.refetches else raw(s, r)

    if probs is None:  # a run that reads no re-fetch probability is the same at its value, drawn or not (a
        pairs = [*pairs, *((size, CENTRE) for size, _ in pairs)]  # profile may turn the re-fetch off everywhere)
    return {pair: at(*pair) for pair in dict.fromkeys(pairs)}


def levelled(scenario: Scenario, summary_tokens: float | None, probability: float | None) -> Scenario:
    """``scenario`` at these values (None: its own), billing every readable token as read (a stream's run)."""
    s = reprice.at_full_reuse(scenario)
    if summary_tokens is not None and summary_tokens != s.summary.mean_tokens:
        s = dataclasses.replace(s, tables={**s.tables, "summary": dataclasses.replace(s.summary,
                                                                                      mean_tokens=summary_tokens)})
    if probability is not None and probability != s.reaction.probability:
        s = dataclasses.replace(s, reaction=dataclasses.replace(s.reaction, probability=probability))
    return s


def reads_summary(policy) -> bool:
    return "summary" in tables_read(get_policy(policy))


def values_for(policy, scenario: Scenario, resimulated: dict[str, Assumption], reacts: bool) -> dict[str, dict]:
    """The levels of each re-simulated assumption this policy's runs read on this unit (see :func:`level_runs`)."""
    out = {}
    if SUMMARY in resimulated and reads_summary(policy):
        out[SUMMARY] = {CENTRE: scenario.summary.mean_tokens, **resimulated[SUMMARY].levels}
    if REACTION in resimulated and reacts:
        out[REACTION] = {CENTRE: scenario.reaction.probability, **resimulated[REACTION].levels}
    return out


def transcript_measure(policies: list[str], resimulated: dict[str, Assumption], clairvoyant: bool = True):
    """The ``measure`` a leaderboard's transcript_units takes: a unit's :class:`UnitRuns` and its warnings."""

    pairs = level_pairs(resimulated)

    def measure(data, entries, seed):
        base = entries[0].scenario
        scenario = replay_scenario(base, data)
        warnings = dict.fromkeys(data.warnings)
        agent = resolve(scenario.agent, str(data.header.get("format") or ""))
        # The re-fetch probability is read only where the resource re-fetch runs: a profile may turn it off
        reacts = (scenario.reaction.mode == "closed" and any("uses" in p for p in data.parts)
                  and (agent is None or bool(agent.resource_reaction)))
        runs = {}
        for policy in policies:
            def run(size, prob, policy=policy):
                result, _ = replay(data, base, policy, seed, trace="turns", scenario=levelled(scenario, size, prob))
                warnings.update(dict.fromkeys(result.warnings))
                return measured(result)

            runs[policy] = level_runs(run, values_for(policy, scenario, resimulated, reacts), pairs)
        name, named = recorded_model(data)
        billed = scenario.pricing.model
        unit = UnitRuns(data.name, Billing(billed, named and name == billed, scenario.pricing, name if named else ""),
                        runs, agent=agent, reacts=reacts)
        if clairvoyant:
            plan = optimum.plan(data, base, seed, scenario)
            unit.clairvoyant, unit.predicted = measured(plan.result), plan.predicted_usd
        return unit, list(warnings), {}

    return measure


def synthetic_units(base: Scenario, policies: list[str], seeds: list[int],
                    resimulated: dict[str, Assumption], jobs: int = 1) -> Iterator[UnitRuns]:
    """One unit per seed: every policy on the scenario's workload for that seed (no closed loop: nothing reacts),
    the seeds on ``jobs`` processes (:func:`prunesim.studies.pool.ordered`: the same units in the same order)."""
    pairs = level_pairs(resimulated)

    def unit(seed: int) -> UnitRuns:
        runs = {}
        for policy in policies:
            def run(size, prob, policy=policy):
                return measured(run_one(levelled(base, size, prob), policy, seed, trace="turns"))

            runs[policy] = level_runs(run, values_for(policy, base, resimulated, False), pairs)
        return UnitRuns(f"seed {seed}", Billing(base.pricing.model, True, base.pricing), runs,
                        agent=resolve(base.agent))

    yield from ordered(unit, seeds, jobs)
