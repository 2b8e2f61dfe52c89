"""One scenario, one policy, one seed: the pure function every study calls.

``run_one`` composes the layers below it: it builds the policy from the
registry, the workload and the need model (each with its own random stream),
the observers that record the run, and the engine that drives them, runs it and
returns a :class:`RunResult`. Same scenario, policy and seed: same result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from prunesim import __version__
from prunesim.model.engine import Engine
from prunesim.model.needs import NeedModel
from prunesim.model.scenario import Scenario
from prunesim.model.workload import SyntheticToolLoop
from prunesim.observe import RunContext, build_observers
from prunesim.observe.metrics import summarize
from prunesim.observe.metrics.cost import CostMetrics
from prunesim.observe.recorder import Recorder
from prunesim.policies import get_policy

# Random streams are children of the run's seed; each component gets its own,
# so that a policy's draws never shift the workload's.
STREAM_WORKLOAD = 0
STREAM_POLICY = 1


def streams(seed: int) -> dict[str, np.random.Generator]:
    children = np.random.SeedSequence(seed).spawn(2)
    return {
        "workload": np.random.Generator(np.random.PCG64(children[STREAM_WORKLOAD])),
        "policy": np.random.Generator(np.random.PCG64(children[STREAM_POLICY])),
    }


@dataclass
class RunResult:
    """A finished run: its identity, its summary and (if recorded) its trace."""

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
    # One row per model call (cost.CALL_COLUMNS), kept when the trace is; and each pass's cost columns.
    calls: list = field(default_factory=list)
    pass_costs: dict = field(default_factory=dict)

    @property
    def ledger(self) -> list[tuple]:
        """The engine's pass records, each followed by what the pass cost (recorder.LEDGER_COLUMNS)."""
        return [row + self.pass_costs.get(row[0], ()) for row in self.recorder.ledger]

    @property
    def events(self) -> list[tuple]:
        return self.recorder.events

    def trace(self) -> dict[str, np.ndarray]:
        return self.recorder.trace_arrays()


def run_one(
    scenario: Scenario, policy: str | None = None, seed: int | None = None, trace: str = "all", workload=None
) -> RunResult:
    """Run ``scenario`` under ``policy`` with ``seed``; nothing outside the result changes.

    ``workload`` replaces the synthetic tool loop: a ready workload object, or a
    factory called with the workload's random generator.
    """
    name = policy or scenario.policy
    seed = scenario.seed if seed is None else seed
    rngs = streams(seed)
    policy_obj = get_policy(name)(scenario, rngs["policy"])
    lat = scenario.latency
    if workload is None:
        workload = SyntheticToolLoop(
            scenario.workload, scenario.turns, lat.tool_mean_s, lat.tool_sigma, rngs["workload"]
        )
    elif callable(workload) and not hasattr(workload, "initial"):
        workload = workload(rngs["workload"])
    recorder = Recorder(mode=trace)
    observers = build_observers(RunContext(scenario, name, seed, policy_obj.acting_trigger(), trace))
    if trace != "none":  # an unrecorded run does not subscribe the recorder at all
        observers.append(recorder)
    # Needs come from a child of the workload's stream: the same for every policy, arrivals unshifted.
    needs = NeedModel(scenario.need, rngs["workload"].spawn(1)[0]) if scenario.need.enabled else None
    engine = Engine(scenario, policy_obj, workload, observers, needs)
    engine.run()
    cost = next(obs for obs in observers if isinstance(obs, CostMetrics))
    pass_costs = {row[0]: cost.ledger_columns(row[0]) for row in recorder.ledger}
    return RunResult(scenario, name, seed, summarize(observers), recorder, edit_log=engine.edit_log.records,
                     tombstones=dict(engine.tombstones), calls=cost.calls, pass_costs=pass_costs)
