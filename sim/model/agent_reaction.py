"""The reaction to a need: what the agent does when it needs an item, given what the policy left of it.

The engine says where the item stands (:func:`prunesim.model.engine.Engine.standing`):

* ``HELD``: a copy of its output is in the window: nothing to do;
* ``CARRIED``: a model-written summary in the window carries it: the summary
  meets the need with probability ``summary_fidelity`` (a counter-based draw,
  ``CARRY, w, i``), else the agent treats it as removed with a record (the
  summary says the work was done, not what it found);
* ``RECORDED``: it was removed and something still says so: a placeholder, a
  tombstone, the tombstone digest, a rationale naming it, the policy's edit
  log, or its own tool call still in the window. The agent knows what it ran
  and runs it again: one *re-fetch* turn;
* ``LOST``: removed with no record at all. The agent does not know it did the
  work and does it again: ``redo_turns`` *redo* turns.

Each re-fetch or redo turn is a model call (billed and cached like any), the
tool call and its output at the item's recorded size, and then the policy is
consulted as after any turn, so a policy that keeps few outputs may remove
what was just fetched: across work turns that is how a run thrashes.

The evidence. Re-fetching is fitted (``[reaction] probability``, Claude Code's
recorded compactions, :mod:`prunesim.model.reaction`; the lookback needs on
real outcomes). Redo is seed 004's story: the agent ran the same ``kubectl
describe`` again because no record of its first run remained; that story gives
one turn. The masking arms of the outcome data leave placeholders; where a
summary arm lost an output, a one-turn redo costs what a re-fetch does: no
arm tells how long a redo is, so ``redo_turns`` stays at the seed's 1 unless
a user sets it, and docs/agent.md says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from prunesim.model.agent_draws import CARRY, draw

HELD, CARRIED, RECORDED, LOST = range(4)
REFETCH, REDO = "refetch", "redo"


@dataclass(frozen=True, slots=True)
class Reach:
    """One thing the agent does before a model call: fetch ``content`` again (``how``) over ``turns`` turns.

    ``content`` is a work item (:class:`prunesim.model.agent_needs.Item`) or a transcript's resource
    (:class:`prunesim.model.reaction.Content`); both name the call's key, tool and sizes. ``consult``: the
    policy is consulted after each of its turns (the resource re-fetch, placed just before the recorded call
    that uses it, is not: it was fitted so).
    """

    content: object
    how: str
    turns: int = 1
    consult: bool = True


def react(item, standing: int, w: int, seed: int, fidelity: float, redo_turns: int) -> Reach | None:
    """The agent's reaction to needing ``item`` before work turn ``w``, given where it ``standing``s."""
    if standing == HELD:
        return None
    if standing == CARRIED:
        if draw(seed, CARRY, w, item.index) < fidelity:
            return None
        standing = RECORDED
    if standing == RECORDED:
        return Reach(item, REFETCH, 1)
    return Reach(item, REDO, redo_turns)
