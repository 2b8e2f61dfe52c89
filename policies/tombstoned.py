"""tombstoned: a self-editor with provenance separation, tombstones and pinned constraints.

The policy is a wrapper around a *planner*, another registered policy, that it
looks up in the registry when it is built: ``tombstoned`` wraps ``naive``;
``slack-gated+tombstoned`` wraps whatever class is registered as
``slack-gated``. The planner decides when to prune and what; the wrapper
changes where the decision lives and what may be edited:

* every model-driven pass is placed in the edit log (``placement="log"``): the
  index and the rationale never enter the window, so the editor cannot prune
  its own justification; the engine, which owns the log, writes the plan and
  one hash-chained record per eviction there;
* every evicted span leaves a pinned tombstone (``tombstone.tokens``) that
  carries the content's hash, the turn and the reason, so the agent can see
  that the work was done and judged stale;
* tombstones, log records (rationale and index spans) and spans tagged
  ``constraint`` are never evicted: :meth:`authorize` refuses any action that
  names one, or a plan that would evict its own rationale, by raising
  :class:`~sim.editlog.SelfEditRefused`. The engine calls it just before it
  applies each action, catches the error and records the refusal.

Like every policy, it never touches the SimPy environment, the window or the log.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from prunesim.errors import UserError
from prunesim.model.editlog import SelfEditRefused
from prunesim.model.spans import Span
from prunesim.policies.base import Action, ModelPass, Policy, WindowView, named_spans

# Kinds that are records of edits: never evicted under provenance separation.
RECORD_KINDS = frozenset({"prune_index", "prune_rationale"})


def protection(span: Span) -> str:
    """Why ``span`` must not be edited ("" when it may be)."""
    if span.kind == "tombstone":
        return "tombstone"
    if span.kind in RECORD_KINDS or "edit_log" in span.tags:
        return "log_record"
    if span.is_constraint:
        return "constraint"
    return ""


class TombstonedPolicy(Policy):
    name = "tombstoned"
    model_driven = True
    summary = "naive's planner; plan and rationale in an edit log, a tombstone per eviction, constraints pinned"
    keeps_edit_log: ClassVar[bool] = True  # the engine keeps a hash-chained edit log for this policy
    planner: ClassVar[str] = "naive"  # registered name of the policy that plans the passes

    @classmethod
    def parameters(cls) -> tuple[str, ...]:
        from prunesim.policies import REGISTRY  # late: the registry imports this module

        planner = REGISTRY.get(cls.planner)
        return (planner.parameters() if planner else ()) + ("tombstone",)

    @classmethod
    def parameter_roles(cls) -> dict[str, str]:
        from prunesim.policies import REGISTRY

        planner = REGISTRY.get(cls.planner)
        return planner.parameter_roles() if planner else {}

    def __init__(self, scenario, rng):
        super().__init__(scenario, rng)
        from prunesim.policies import REGISTRY  # late: the registry imports this module

        cls = REGISTRY.get(self.planner)
        if cls is None:
            raise UserError("policy", self.name, f"needs the policy {self.planner!r}, which is not registered")
        self.inner = cls(scenario, rng)
        if hasattr(self.inner, "rationale_in_window"):
            self.inner.rationale_in_window = False  # its rationale goes to the log: not a candidate

    def decide(self, view: WindowView) -> list[Action]:
        return [self.wrap(action) for action in self.inner.decide(view)]

    def wrap(self, action: Action) -> Action:
        if isinstance(action, ModelPass):
            return dataclasses.replace(
                action, placement="log", protect_artifacts=True, tombstone_tokens=self.scenario.tombstone.tokens
            )
        return action

    def authorize(self, action: Action, view: WindowView) -> None:
        """Raise :class:`SelfEditRefused` unless ``action`` edits only what may be edited."""
        if isinstance(action, ModelPass) and action.prune_own_rationale:
            raise SelfEditRefused("overlaps_rationale", action.selected)
        targets = named_spans(action)
        if not targets:
            return
        spans = {s.id: s for s in view.spans}
        for reason in ("tombstone", "log_record", "constraint"):
            hit = [i for i in targets if i in spans and protection(spans[i]) == reason]
            if hit:
                raise SelfEditRefused(reason, hit)


class GatedTombstonedPolicy(TombstonedPolicy):
    name = "slack-gated+tombstoned"
    summary = "the slack-gated policy's gate and fallbacks, with tombstoned's log, tombstones and guard"
    planner = "slack-gated"
