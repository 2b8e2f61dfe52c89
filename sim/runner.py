"""One scenario, one policy, one seed: the pure function every study calls.

``run_one`` composes the layers below it: it builds the policy from the
registry, the workload and the need model (each with its own random stream),
the observers that record the run, and the engine that drives them, runs it and
returns a :class:`RunResult`. Same scenario, policy and seed: same result.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from prunesim import __version__
from prunesim.errors import UserError
from prunesim.model.agent import AgentModel, Outcome, build_agent
from prunesim.model.agent_profiles import AgentParams
from prunesim.model.editlog import EditLog
from prunesim.model.engine import Engine
from prunesim.model.events import PassRecord
from prunesim.model.scenario import Scenario
from prunesim.model.workload import SyntheticToolLoop
from prunesim.observe import RunContext, build_observers
from prunesim.observe.metrics import summarize
from prunesim.observe.metrics.cost import CostMetrics
from prunesim.observe.recorder import LedgerRow, Recorder, Records, to_pandas
from prunesim.policies import Policy, get_policy, policy_name
from prunesim.policies.contract import checked_authorize, checked_decide

# Random streams are children of the run's seed; each component gets its own,
# so that a policy's draws never shift the workload's.
STREAM_WORKLOAD = 0
STREAM_POLICY = 1

EDIT_LOG_TAIL = 1024  # records an unrecorded run keeps of its edit log (the chain still verifies from them)


def streams(seed: int) -> dict[str, np.random.Generator]:
    children = np.random.SeedSequence(seed).spawn(2)
    return {
        "workload": np.random.Generator(np.random.PCG64(children[STREAM_WORKLOAD])),
        "policy": np.random.Generator(np.random.PCG64(children[STREAM_POLICY])),
    }


@dataclass
class RunResult:
    """A finished run: its identity, its summary and (if recorded) its trace.

    ``ledger`` is one :class:`~prunesim.observe.recorder.LedgerRow` per
    model-driven pass (the engine's :class:`~prunesim.model.events.PassRecord`
    fields, then what the pass cost), ``events`` one
    :class:`~prunesim.observe.recorder.EventRecord` per event (its ``detail`` a
    dict); both are lists with a ``to_pandas()``, and :meth:`to_pandas` gives
    the trace as a DataFrame (pandas is optional). ``transcript`` names the
    transcript a replay ran (empty for synthetic runs).
    """

    scenario: Scenario
    policy: str
    seed: int
    summary: dict
    recorder: Recorder
    version: str = __version__
    params: dict = field(default_factory=dict)
    # The external edit log of a policy that keeps one (records in order), and its tombstones.
    edit_log: tuple = ()
    tombstones: dict = field(default_factory=dict)
    transcript: str = ""
    warnings: list = field(default_factory=list)  # a replay's notes about its transcript (transcript_replay)
    # One row per model call (cost.CALL_COLUMNS), kept when the trace is; and each pass's cost columns.
    calls: list = field(default_factory=list)
    pass_costs: dict = field(default_factory=dict)
    # What the agent model says the agent did (turns, stop reason, success); None without an agent model.
    outcome: Outcome | None = None
    # Every value the run ran on with where it came from (prunesim.io.settings.Settings): set by the callers
    # that resolved the scenario (replays, the run command, the API); written as settings.json.
    settings: object = None

    @cached_property
    def ledger(self) -> Records:
        """One :class:`~prunesim.observe.recorder.LedgerRow` per pass: the engine's record, then what it cost."""
        missing = (None,) * (len(LedgerRow._fields) - len(PassRecord._fields))
        rows = self.recorder.ledger or ()
        return Records((LedgerRow(*row, *self.pass_costs.get(row[0], missing)) for row in rows), LedgerRow._fields)

    @cached_property
    def events(self) -> Records:
        return self.recorder.event_records()

    def trace(self) -> dict[str, np.ndarray]:
        return self.recorder.trace_arrays()

    def to_pandas(self):
        """The trace as a ``pandas.DataFrame``, one row per change of the window (pandas is optional)."""
        return to_pandas(dict(self.recorder.trace))


def tables_read(cls: type[Policy]) -> tuple[str, ...]:
    """The scenario tables a policy reads: those it declares, and those its parameters name (a wrapper's reads
    its planner's, :meth:`~prunesim.policies.Policy.parameters`). Only these are checked for its runs."""
    names = dict.fromkeys(cls.tables)
    names.update(dict.fromkeys(p.partition(".")[0] for p in cls.parameters()))
    return tuple(names)


def check_tables(scenario: Scenario, cls: type[Policy], where: str) -> None:
    """Check the tables ``cls`` reads against ``scenario`` (:class:`UserError` naming ``where``): a table only
    another policy reads is not this run's concern, so a value that would be wrong for that policy never
    refuses this one (a ``[gate]`` lead above the budget, for a naive run)."""
    for name in tables_read(cls):
        table = scenario.tables.get(name)
        if table is None and name in cls.tables:  # its own table, not in the scenario: the default it runs with
            table = cls.tables[name]()
        if table is None:
            continue
        if not callable(getattr(table, "check", None)):  # a user's table (docs/policies.md): one line, not a crash
            raise UserError(f"policy {cls.name!r}", f"[{name}]", "declares a table with no check(key, where, "
                            "scenario) method")
        table.check(name, where, scenario)
    cls.check_settings(scenario, where)


def scenario_for(scenario: Scenario, cls: type[Policy]) -> Scenario:
    """``scenario`` as ``cls`` runs it: tables of its own the scenario lacks take their defaults (a policy the
    scenario was loaded without), and the tables it reads are checked (:func:`check_tables`)."""
    missing = {t: table() for t, table in cls.tables.items() if t not in scenario.tables}
    if missing:
        scenario = dataclasses.replace(scenario, tables={**scenario.tables, **missing})
    check_tables(scenario, cls, f"{scenario.name} under {cls.name}")
    return scenario


def run_one(
    scenario: Scenario, policy: str | type[Policy] | None = None, seed: int | None = None, trace: str = "all",
    workload=None, recorder: Recorder | None = None, edit_log: EditLog | None = None, observers=(),
    agent: str | AgentParams | AgentModel | None = None,
) -> RunResult:
    """Run ``scenario`` under ``policy`` with ``seed``; nothing outside the result changes.

    ``policy`` is a name (see :func:`prunesim.policies.get_policy`) or a
    :class:`~prunesim.policies.Policy` subclass. ``workload`` replaces the
    synthetic tool loop: a ready workload object, or a factory called with the
    workload's random generator. ``recorder`` replaces
    the in-memory recorder (a :class:`~prunesim.observe.recorder.StreamingRecorder`
    writes as it goes) and ``edit_log`` the engine's log (one that streams to a
    file). Without them, a run recorded in memory keeps its whole edit log
    there too (studies read it back) and an unrecorded one keeps the last
    ``EDIT_LOG_TAIL`` records, so that its state stays bounded. ``observers``
    are heard after the registered ones (a study's own figures). ``agent``
    sets the agent model (:mod:`prunesim.model.agent`): a profile's name or
    an :class:`~prunesim.model.agent_profiles.AgentParams` replaces the
    scenario's ``[agent]`` table (and is recorded in the result's scenario), a
    ready :class:`~prunesim.model.agent.AgentModel` is used as it is; None
    reads ``[agent]``.
    """
    cls = get_policy(policy or scenario.policy)
    name = policy_name(policy or scenario.policy)
    scenario = scenario_for(scenario, cls)
    if isinstance(agent, str | AgentParams):
        scenario = with_agent(scenario, agent)
        agent = None
    seed = scenario.seed if seed is None else seed
    rngs = streams(seed)
    policy_obj = cls(scenario, rngs["policy"])
    if not cls.__module__.startswith("prunesim."):  # a user's policy: its answers' integers are checked
        policy_obj.decide = checked_decide(policy_obj)
        if callable(getattr(policy_obj, "authorize", None)):  # and its guard leaves a pass as it was checked
            policy_obj.authorize = checked_authorize(policy_obj)
    lat = scenario.latency
    if workload is None:
        workload = SyntheticToolLoop(
            scenario.workload, scenario.turns, lat.tool_mean_s, lat.tool_sigma, rngs["workload"]
        )
    elif callable(workload) and not hasattr(workload, "initial"):
        workload = workload(rngs["workload"])
    if recorder is None:
        recorder = Recorder(mode=trace)
    trace = recorder.mode
    if edit_log is None:
        in_memory = trace != "none" and type(recorder) is Recorder  # a recorded run keeps everything
        edit_log = EditLog() if in_memory else EditLog(tail=EDIT_LOG_TAIL)
    extra = list(observers)
    observers = build_observers(RunContext(scenario, name, seed, policy_obj.acting_trigger(), trace))
    # An unrecorded in-memory run does not subscribe its recorder at all; a streaming one writes
    # the ledger, events and calls.csv whatever the trace mode.
    if trace != "none" or type(recorder) is not Recorder:
        observers.append(recorder)
    observers.extend(extra)
    if hasattr(recorder, "attach"):
        recorder.attach(observers)
    if agent is None:
        # Seed 004's needs come from a child of the workload's stream: the same for every policy, arrivals
        # unshifted; the agent model's own draws are counter-based (prunesim.model.agent_draws).
        need_rng = rngs["workload"].spawn(1)[0] if scenario.need.enabled else None
        agent = build_agent(scenario, seed, workload, need_rng)
    engine = Engine(scenario, policy_obj, workload, observers, agent, edit_log)
    engine.run()
    cost = next(obs for obs in observers if isinstance(obs, CostMetrics))
    # A streaming recorder wrote its ledger rows, with their cost columns, as the run went.
    pass_costs = {row[0]: cost.ledger_columns(row[0]) for row in recorder.ledger or ()}
    return RunResult(scenario, name, seed, summarize(observers), recorder, edit_log=engine.edit_log.records,
                     tombstones=dict(engine.tombstones), calls=cost.calls, pass_costs=pass_costs,
                     outcome=agent.outcome() if agent is not None else None)


def with_agent(scenario: Scenario, agent: str | AgentParams) -> Scenario:
    """``scenario`` with its ``[agent]`` table replaced: a profile's name (the table's other keys kept) or a table;
    checked (an unknown profile is a :class:`UserError` naming it)."""
    params = dataclasses.replace(scenario.agent, profile=agent) if isinstance(agent, str) else agent
    params.check("agent", f"{scenario.name} (agent)")
    return dataclasses.replace(scenario, agent=params)
