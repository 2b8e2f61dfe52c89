"""The agent model: how the simulated agent reacts to what a policy does to its window.

The engine consults the agent model at fixed points, as it consults a policy,
and applies what it answers; the model answers with plain values and never
touches the window:

* :meth:`AgentModel.saw`: a tool call or output of the turn entered the window (where it now is);
* :meth:`AgentModel.before_call`: before each work turn's model call, what the
  agent must fetch again or redo first (a tuple of
  :class:`~prunesim.model.agent_reaction.Reach`); the engine runs each as its
  own turns, consulting the policy after each;
* :meth:`AgentModel.after_turn`: after every model-call turn, stop or go on
  (a stop reason, or None);
* :meth:`AgentModel.outcome`: at the end, the run's :class:`Outcome`, published on ``RunEnd``.

:class:`ReactingAgent` is built from the mechanisms, one module each: lookback
needs (:mod:`.agent_needs`), the reaction to a need (:mod:`.agent_reaction`),
the turn cap (:mod:`.agent_cap`) and success (:mod:`.agent_success`), with a
profile's parameters (:mod:`.agent_profiles`). Two older parts are parts of it
too: a replayed transcript's re-fetch of a resource before a recorded use
(:mod:`.reaction`) and seed 004's needs of a key, met inside the turn
(:mod:`.needs`, the ``[need]`` table). With no profile (``[agent] profile =
"none"``, or ``auto`` on a synthetic run) only those two run, exactly as they
did before agent models existed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from prunesim.model.agent_cap import DONE, TurnCap
from prunesim.model.agent_needs import LookbackNeeds
from prunesim.model.agent_profiles import AgentParams, Profile, resolve
from prunesim.model.agent_reaction import REFETCH, Reach, react
from prunesim.model.agent_success import lengthening, probability
from prunesim.model.events import Observer
from prunesim.model.needs import NeedModel
from prunesim.model.reaction import Reaction


@dataclass(slots=True)
class Calls:
    """The model calls of a run so far, as the engine counts them for the agent model: the agent's own, and the
    policy's (prune passes and summaries) with their prompt and output tokens."""

    agent: int = 0
    decisions: int = 0
    decision_input: int = 0
    decision_output: int = 0


class CallCounter(Observer):
    """Hears every model call of a run under an agent model and counts it into :class:`Calls` (an observer the
    engine adds for such runs only: a run without an agent model pays nothing for the count)."""

    def __init__(self):
        self.calls = Calls()

    def on_model_call(self, time, turn, prompt_tokens, output_tokens, decision, pass_id=0) -> None:
        calls = self.calls
        if decision:
            calls.decisions += 1
            calls.decision_input += prompt_tokens
            calls.decision_output += output_tokens
        else:
            calls.agent += 1


@dataclass(frozen=True)
class Outcome:
    """What the agent did in a run (the metrics of :mod:`prunesim.observe.metrics.outcome`).

    ``agent_calls``: the agent's model calls (work turns, re-fetch and redo turns, seed 004's re-runs);
    ``work_turns``: work turns done; ``cap_calls``: the calls its cap counts; ``task_success``: P(solved), None
    where the profile has no success model; ``recorded_turns``: the work turns the workload planned (a replay:
    the recorded model calls); ``decision_calls``, ``decision_input_tokens``, ``decision_output_tokens``: the
    policy's model calls (summaries, prune passes) and their prompt and output tokens, billed apart by some
    scaffolds.
    """

    profile: str
    stop_reason: str
    agent_calls: int
    work_turns: int
    refetch_turns: int
    redo_turns: int
    cap_calls: int
    capped: bool
    lengthening: float
    task_success: float | None
    recorded_turns: int
    cap: int = 0  # the profile's cap (0: none: the run cannot be capped)
    redo: bool = False  # the agent can redo work (lookback needs, or seed 004's needs as model calls)
    decision_calls: int = 0
    decision_input_tokens: int = 0
    decision_output_tokens: int = 0

    @property
    def turns_over_recorded(self) -> float:
        return self.agent_calls / self.recorded_turns if self.recorded_turns else 0.0


class AgentModel:
    """The engine's contract with an agent model (a subclass overrides what it uses).

    ``needs``: a :class:`~prunesim.model.needs.NeedModel` whose needs the engine meets inside the turn (seed
    004's re-runs); ``calls_for_needs``: each of those re-runs is a model call of the agent (else, as before
    agent models, a tool run only); ``counts_turns``: the engine counts the model calls and asks
    :meth:`after_turn` after every turn (a model that may stop, or reports an outcome).
    """

    name: ClassVar[str] = "agent"
    summary: ClassVar[str] = ""
    tables: ClassVar[dict[str, type]] = {"agent": AgentParams}
    needs: NeedModel | None = None
    calls_for_needs: bool = False
    counts_turns: bool = False  # the engine counts the model calls and asks after_turn after every turn

    def saw(self, arrival, span, turn: int) -> None:
        """``arrival`` (a tool call or output of work turn ``turn``) entered the window as ``span``."""

    def before_call(self, plan, turn: int, window) -> tuple[Reach, ...]:
        """What to fetch again or redo before ``plan``'s model call. ``window`` answers ``holds_span(id)`` and
        ``standing(outputs, calls, key)`` (:class:`~prunesim.model.engine.Engine`), and nothing else."""
        return ()

    def fetched(self, reach: Reach, output_id: int, tokens: int, call_id: int) -> None:
        """One turn of ``reach`` put its output in the window as ``output_id`` (``tokens`` kept)."""

    def after_turn(self, work: bool, calls: Calls) -> str | None:
        """After a model-call turn (``work``: a work turn; else a re-fetch or redo turn): a stop reason or None.
        ``calls``: the run's model calls so far (the engine's own count: read it, do not keep changing it)."""
        return None

    def outcome(self) -> Outcome | None:
        return None


class ReactingAgent(AgentModel):
    """The agent model built from a profile's mechanisms (the module docstring); any part may be absent."""

    name = "reacting"
    summary = "lookback needs, re-fetch or redo, a turn cap and success, with a scaffold's profile"

    def __init__(self, profile: Profile | None, seed: int, recorded_turns: int, needs: NeedModel | None = None,
                 resources: Reaction | None = None, lookback: LookbackNeeds | None = None):
        self.profile = profile
        self.seed = seed
        self.recorded_turns = recorded_turns
        self.needs = needs
        self.resources = resources
        self.lookback = lookback
        self.calls_for_needs = profile is not None
        self.cap = TurnCap(profile.cap or 0, profile.cap_counts or "agent") if profile is not None else None
        self.counts_turns = profile is not None
        self.refetch_turns = self.redo_turns = self.work_turns = 0
        self.calls = Calls()
        self.stop_reason = DONE

    def saw(self, arrival, span, turn: int) -> None:
        if self.resources is not None:
            self.resources.saw(arrival, span)
        if self.lookback is not None:
            self.lookback.saw(arrival, span, turn)

    def before_call(self, plan, turn: int, window) -> tuple[Reach, ...]:
        due: list[Reach] = []
        if self.resources is not None:
            due.extend(Reach(c, REFETCH, 1, consult=False) for c in self.resources.due(plan, turn, window.holds_span))
        if self.lookback is not None:
            p = self.profile
            for item in self.lookback.needed(turn):
                if item.recorded_drop and item.recorded_drop <= turn:
                    continue  # the replayed runtime dropped it itself: what the real agent did next is on record
                reach = react(item, window.standing(item.outputs, item.calls, item.key), turn, self.seed,
                              p.summary_fidelity, p.redo_turns)
                if reach is not None:
                    due.append(reach)
        return tuple(due)

    def fetched(self, reach: Reach, output_id: int, tokens: int, call_id: int) -> None:
        if reach.how == REFETCH:
            self.refetch_turns += 1
        else:
            self.redo_turns += 1
        content = reach.content
        if self.resources is not None and not reach.consult:
            self.resources.refetched(content, output_id, tokens)
        elif hasattr(content, "outputs") and tokens >= content.tokens:  # a copy cut on arrival is no copy
            content.outputs.append(output_id)
            if call_id >= 0:
                content.calls.append(call_id)

    def rerun(self, recorded: bool) -> None:
        """One of seed 004's re-runs was a model call: a re-fetch when a record said stale, else a redo."""
        if recorded:
            self.refetch_turns += 1
        else:
            self.redo_turns += 1

    def after_turn(self, work: bool, calls: Calls) -> str | None:
        self.calls = calls
        if work:
            self.work_turns += 1
            if self.work_turns >= self.recorded_turns:  # the work is done: the run ends, whatever the count
                return None
        if self.cap.reached(calls.agent, calls.decisions):
            self.stop_reason = "turn_cap"
            return self.stop_reason
        return None

    def outcome(self) -> Outcome | None:
        p = self.profile
        if p is None:
            return None
        c = self.calls
        capped = self.stop_reason != DONE
        stretch = lengthening(c.agent, self.work_turns)
        cap_success = p.cap_success_solved if p.base == "solved" else p.cap_success_unsolved
        success = (probability(p.base_rate, p.discordance, cap_success, p.lengthening_slope, capped, stretch,
                               p.base) if p.success_on else None)
        return Outcome(p.name, self.stop_reason, c.agent, self.work_turns, self.refetch_turns, self.redo_turns,
                       self.cap.counted(c.agent, c.decisions), capped, stretch, success, self.recorded_turns,
                       self.cap.cap, self.lookback is not None or self.needs is not None, c.decisions,
                       c.decision_input, c.decision_output)


def build_agent(scenario, seed: int, workload, need_rng=None, params: AgentParams | None = None) -> AgentModel | None:
    """The agent model of one run: ``params`` (else the scenario's ``[agent]``) resolved against the workload's
    scaffold (``workload.scaffold``: a transcript's format; '' for a synthetic loop). None when nothing reacts.

    ``need_rng``: the stream of seed 004's needs (``[need]``), when the scenario has them.
    """
    profile = resolve(params if params is not None else scenario.agent, getattr(workload, "scaffold", ""))
    if profile is not None and hasattr(workload, "scaffold") and 0 < (profile.cap or 0) < scenario.turns:
        # A recording longer than the profile's cap shows its scaffold let it run that long: the cap is its length.
        profile = dataclasses.replace(profile, values={**profile.values, "cap": scenario.turns},
                                      sources={**profile.sources, "cap": "the recording's own length"})
    closed = scenario.reaction.mode == "closed"
    needs = NeedModel(scenario.need, need_rng) if need_rng is not None and scenario.need.enabled else None
    uses_resources = closed and getattr(workload, "has_resources", False)
    if profile is not None and not profile.resource_reaction:
        uses_resources = False
    resources = Reaction(scenario.reaction, seed) if uses_resources else None
    lookback = LookbackNeeds(profile, seed) if profile is not None and closed and profile.needs_on else None
    if profile is None and needs is None and resources is None:
        return None
    return ReactingAgent(profile, seed, scenario.turns, needs, resources, lookback)
