"""Which figures an input can move: a figure that cannot be nonzero for what was replayed is not a result.

Decided from the input itself, not from a list of labels: a constraint can be
lost only where some span is a constraint (kind ``constraint`` or tagged so:
an imported transcript has none, a scenario or workload file may); a replayed
agent re-fetches only where its recorded calls use a resource an earlier call
fetched and the reaction is on (``[reaction] mode = "closed"``); the agent of a
synthetic scenario needs content again only where its need model is on
(``[need]``), and an agent model with lookback needs may fetch any earlier
output again (``[agent]``, :mod:`prunesim.model.agent_needs`). A figure no unit
can move is left out of the tables and written as unobservable, with the
reason, never as a 0.
"""

from __future__ import annotations

from prunesim.model.agent_profiles import resolve
from prunesim.model.scenario import Scenario

CONSTRAINT = "constraint"


def _is_constraint(kind: str, tags) -> bool:
    return kind == CONSTRAINT or CONSTRAINT in (tags or ())


def _needs_back(scenario: Scenario, scaffold: str) -> bool:
    """The run's agent model needs earlier outputs back (lookback needs, prunesim.model.agent_needs), so it may
    re-fetch whatever the workload records."""
    profile = resolve(scenario.agent, scaffold)
    return scenario.reaction.mode == "closed" and profile is not None and profile.needs_on


def of_transcript(data, scenario: Scenario) -> dict[str, str]:
    """Figure -> why it cannot move on this replayed workload (absent: it can)."""
    out = {}
    if not any(_is_constraint(p.get("kind"), p.get("tags")) for p in data.parts):
        out["lost_constraints"] = "no span of the transcript is a constraint (kind or tag), so none can be lost"
    if scenario.reaction.mode != "closed":
        out["refetches"] = "the reaction is off ([reaction] mode = none): the agent never re-fetches"
    elif not any(p.get("uses") for p in data.parts) and not _needs_back(scenario, data.header.get("format", "")):
        out["refetches"] = "no recorded call uses a resource an earlier call fetched: nothing to re-fetch"
    return out


def of_synthetic(scenario: Scenario) -> dict[str, str]:
    """Figure -> why it cannot move on the synthetic scenario's runs (absent: it can)."""
    w = scenario.workload
    out = {} if _needs_back(scenario, "") else {
        "refetches": "a synthetic workload records no resources: its agent never re-fetches"}
    if not any(_is_constraint(s.kind, s.tags) for s in (*w.initial, *w.events)):
        out["lost_constraints"] = "the scenario has no constraint span (kind or tag), so none can be lost"
    if not scenario.need.enabled:
        out["re_retrievals"] = "the need model is off ([need] all zero): the agent never reaches for old content"
    return out


def common(per_unit: list[dict[str, str]]) -> dict[str, str]:
    """The figures no unit can move (with the first unit's reason): those are unobservable for the whole input."""
    if not per_unit:
        return {}
    shared = set(per_unit[0]).intersection(*per_unit[1:])
    return {k: per_unit[0][k] for k in sorted(shared)}
