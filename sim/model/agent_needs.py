"""Lookback needs: before each model call the agent needs some of the tool outputs it saw earlier.

The mechanism. A run's *work items* are its tool outputs, in order of the work
turn that produced them (a copy fetched again later is the same item). Before
the model call of work turn ``w``, each earlier item ``i`` of age
``d = w - t_i`` (``1 <= d <= need_horizon``) is needed with probability
``min(1, lambda_run * exp(-(d - 1) / need_decay))``: the output of the last
turn is needed most, older ones less and less. ``lambda_run`` is the run's own
intensity, drawn once per run from a Gamma with mean ``need_rate`` and
coefficient of variation ``need_cv``: some tasks make the agent look back much
more than others, which is what lets a third of an arm's runs thrash while its
median barely moves (docs/agent.md).

What a need costs depends on what the policy left, and is decided by
:mod:`prunesim.model.agent_reaction`; this module only says which items are
needed. Every draw is counter-based (:mod:`prunesim.model.agent_draws`:
``NEED, w, i``), so every policy meets the same needs on the same seed.

The evidence. Real agents read back what earlier tool calls returned (a file
they opened, a test's failure, a search's hits); when a policy has removed it
they run the call again. On the outcomes of the Complexity Trap study
(``../shared/outcomes``) OpenHands' masking at ``attention_window`` 10 (about 5
observations kept) lengthened median runs from 58 to 246 turns and put 52% of
runs at the 250-turn cap, while keeping about 29 observations changed little:
a working set of recent outputs larger than what the policy keeps, with needs
falling off with age, reproduces that curve (the design's prototype, docs/agent.md).
The values are fitted on those outcomes where the data supports them
(:mod:`prunesim.model.agent_profiles`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from prunesim.model.agent_draws import NEED, RUN, draw, draws
from prunesim.model.agent_profiles import Profile, run_rate
from prunesim.model.reaction import recorded_drop

VECTOR_AT = 32  # items within the horizon from which one numpy call draws them faster than a loop


@dataclass(slots=True)
class Item:
    """One work item: the tool output of a work turn, what running its call again takes, and where its copies are.

    ``outputs`` and ``calls`` are the span ids of its output and its tool call, the first placed by the work turn
    and any later one by a re-fetch or a redo (the window may hold any of them). ``recorded_drop``: the model call
    before which a replayed runtime dropped it itself (0: never).
    """

    index: int
    turn: int
    key: str
    tool: str
    call_tokens: int
    tokens: int
    stale_after: int
    tags: frozenset
    recorded_drop: int
    outputs: list = field(default_factory=list)
    calls: list = field(default_factory=list)


class LookbackNeeds:
    """The work items within the horizon and the needs drawn for them; the engine tells it what it placed."""

    def __init__(self, profile: Profile, seed: int):
        self.seed = seed
        self.rate = run_rate(profile, draw(seed, RUN, 0, 0))
        self.decay = float(profile.need_decay)
        self.horizon = int(profile.need_horizon)
        self.items: deque[Item] = deque()  # items within the horizon, oldest first
        self.count = 0  # items seen
        self._call: dict[str, tuple[int, int]] = {}  # key -> (tokens, span id) of this turn's call of it

    def saw(self, arrival, span, turn: int) -> None:
        """``arrival`` entered the window as ``span`` in work turn ``turn``: a tool output is a new item."""
        if arrival.kind == "tool_call":
            self._call[arrival.key] = (arrival.tokens, span.id)
            return
        if arrival.kind != "tool_output":
            return
        call_tokens, call_id = self._call.pop(arrival.key, (0, -1))
        if not arrival.tokens or span.tokens < arrival.tokens:  # empty (nothing to need), or cut on arrival at a
            return  # full window: never seen whole, not work to go back to
        item = Item(self.count, turn, arrival.key, arrival.tool, call_tokens, arrival.tokens,
                    arrival.stale_after, arrival.tags, recorded_drop(arrival.tags), [span.id],
                    [call_id] if call_id >= 0 and call_id != span.id else [])
        self.count += 1
        self.items.append(item)

    def needed(self, w: int) -> list[Item]:
        """The items needed before the model call of work turn ``w``, oldest first (items past the horizon go)."""
        self._call.clear()
        items = self.items
        while items and w - items[0].turn > self.horizon:
            items.popleft()
        if not items or not self.rate:
            return []
        candidates = [it for it in items if it.turn < w]
        if len(candidates) >= VECTOR_AT:
            return self._needed_vector(w, candidates)
        rate, decay, seed = self.rate, self.decay, self.seed
        return [it for it in candidates
                if draw(seed, NEED, w, it.index) < min(1.0, rate * math.exp(-(w - it.turn - 1) / decay))]

    def _needed_vector(self, w: int, candidates: list[Item]) -> list[Item]:
        import numpy as np

        # The chances as the loop computes them (math.exp, not numpy's: the same bits on every platform); the
        # uniforms from numpy, which are draw()'s to the bit.
        rate, decay = self.rate, self.decay
        chance = np.array([min(1.0, rate * math.exp(-(w - it.turn - 1) / decay)) for it in candidates])
        index = np.fromiter((it.index for it in candidates), dtype=np.uint64, count=len(candidates))
        hit = draws(self.seed, NEED, w, index) < chance
        return [it for it, h in zip(candidates, hit.tolist(), strict=True) if h]
