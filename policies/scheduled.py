"""clairvoyant: a removal schedule planned offline, replayed through the ordinary policy contract.

:mod:`prunesim.studies.optimum` plans the schedule from a whole transcript; this
module only carries it out, so that its bill is the engine's own, as any policy's
is. A :class:`Schedule` says two things:

* ``batches``: the turns at whose end the policy acts;
* when each span may go (:meth:`Schedule.release_of`): a span of ``(kind, key,
  turn)`` listed in ``release`` may go from the end of that turn on; any other
  offerable span from the end of the turn after it arrived (the next model call
  read it once). Spans that are not offerable (pinned, constraints, the system
  prompt) never go.

At a batch turn it evicts every span in the window that may go by then: one
non-model eviction (``Evict``, reason ``clairvoyant``), nothing written in its
place. Spans are named by what they hold, not by id: a span the agent fetched
again after the schedule removed it is a new span, with a new id, and the same
(kind, key, turn) rule covers it.

Built per transcript by :func:`scheduled_policy` (as :func:`~prunesim.policies.base.preset_variant`
builds a preset), never registered: ``--policies all`` does not list it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from prunesim.policies.base import Action, Evict, Policy, WindowView

NAME = "clairvoyant"
NEVER = 1 << 62


@dataclass(frozen=True)
class Schedule:
    """When the policy acts, and from which turn each span may go (module docstring)."""

    batches: frozenset[int] = frozenset()
    release: Mapping[tuple[str, str, int], int] = field(default_factory=dict)

    def release_of(self, kind: str, key: str, turn: int, offerable: bool = True) -> int:
        """The turn from whose end a span of this kind, key and arrival turn may go (:data:`NEVER`: it stays)."""
        if not offerable:
            return NEVER
        return self.release.get((kind, key, turn), turn + 1)


class ScheduledPolicy(Policy):
    """Carries out :attr:`schedule`; :func:`scheduled_policy` makes one class per schedule."""

    name = NAME
    summary = "a removal schedule planned offline from the whole transcript (prunesim.studies.optimum)"
    schedule: Schedule = Schedule()

    def decide(self, view: WindowView) -> list[Action]:
        turn = view.turn
        schedule = self.schedule
        if turn not in schedule.batches:
            return []
        spans = view.unpinned if view.unpinned is not None else view.spans
        gone = tuple(s.id for s in spans if schedule.release_of(s.kind, s.key, s.turn, s.offerable) <= turn)
        return [Evict(gone, reason=NAME)] if gone else []


def scheduled_policy(schedule: Schedule) -> type[Policy]:
    """A policy class named ``clairvoyant`` that carries out ``schedule``."""
    return type("ClairvoyantPolicy", (ScheduledPolicy,), {"schedule": schedule, "__module__": __name__})
