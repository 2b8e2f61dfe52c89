"""Observers: what listens to a run. The metrics, the recorder and the checks.

Each observer implements some of the ``on_<event>`` methods of
:class:`prunesim.model.events.Observer`; the engine calls only those. This
layer may import the model and :mod:`prunesim.errors`, never the studies, the
I/O layer or the command line.
"""

from __future__ import annotations

from dataclasses import dataclass

from prunesim.model.scenario import Scenario

from .metrics.cost import CostMetrics
from .metrics.edits import EditMetrics
from .metrics.eviction import EvictionMetrics
from .metrics.gate import GateMetrics
from .metrics.outcome import OutcomeMetrics
from .metrics.passes import PassMetrics
from .metrics.provenance import EditLogCheck, ProvenanceMetrics
from .metrics.reaction import ReactionMetrics
from .metrics.window import WindowMetrics


@dataclass(frozen=True)
class RunContext:
    """What an observer may know about the run it observes, given to its constructor."""

    scenario: Scenario
    policy: str
    seed: int
    acting_trigger: int
    trace: str = "none"  # how much the run records ("all", "turns", "none"): per-call rows are kept unless "none"


# The observers every run has, by name, in the order their handlers run (and
# their summaries are asked for). A new observer is one module and one line here.
# The recorder is not among them: the runner adds it when a trace is kept.
REGISTRY: dict[str, type] = {
    "window": WindowMetrics,
    "passes": PassMetrics,
    "gate": GateMetrics,
    "eviction": EvictionMetrics,
    "provenance": ProvenanceMetrics,
    "edit-log": EditLogCheck,
    "edits": EditMetrics,
    "reaction": ReactionMetrics,
    "outcome": OutcomeMetrics,
    "cost": CostMetrics,
}


def build_observers(run: RunContext) -> list:
    """One fresh instance of every registered observer, in registry order."""
    built = {name: cls(run) for name, cls in REGISTRY.items()}
    window, passes = built.get("window"), built.get("passes")
    if isinstance(window, WindowMetrics) and isinstance(passes, PassMetrics):
        passes.follow(window)  # the pass metrics' first trigger is the window metrics': no second look at each append
    return list(built.values())


__all__ = ["REGISTRY", "RunContext", "build_observers"]
