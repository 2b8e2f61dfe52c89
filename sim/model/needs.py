"""The agent's need for content it saw before.

Every turn, each content key the agent has seen (a tool output's key, first
seen on an earlier turn within ``need.horizon`` turns) may come to mind:

* a key whose content is still relevant comes to mind with probability
  ``need.relevant`` (``need.focus`` for a key whose output is tagged
  ``need.focus_tag``: the object of the investigation), and is then truly
  needed;
* a key whose content is stale is truly needed with probability ``need.stale``
  (rarely); otherwise, when it comes to mind (as above),
  the agent takes it for relevant with probability ``need.misjudge``: a
  *spurious* need, which a record of the earlier judgement would dispel.

Two uniforms are drawn per key and turn from a child of the workload's random
stream, whether or not the need turns out to matter, so that every policy
meets the same needs for a given seed and the arrivals are not shifted. Which
keys exist, and when they go stale, depends on the workload only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from prunesim.model.scenario import NeedParams


@dataclass(frozen=True, slots=True)
class Need:
    """A key the agent reaches for this turn. ``truly``: the content really is needed."""

    key: str
    truly: bool
    stale: bool


class NeedModel:
    def __init__(self, params: NeedParams, rng: np.random.Generator):
        self.params = params
        self.rng = rng
        self.first_seen: dict[str, int] = {}  # key -> turn first seen, in order of first sight
        self.stale_at: dict[str, int] = {}
        self.focus: set[str] = set()

    def observe(self, key: str, turn: int, stale_at: int, tags=frozenset()) -> None:
        """A tool output of ``key`` arrived from the workload at ``turn``."""
        if not key:
            return
        self.first_seen.setdefault(key, turn)
        self.stale_at[key] = stale_at
        if self.params.focus_tag in tags:
            self.focus.add(key)

    def draw(self, turn: int) -> list[Need]:
        """The needs of ``turn``, in order of first sight of their keys."""
        p = self.params
        if not p.enabled:
            return []
        keys = [k for k, t in self.first_seen.items() if turn - p.horizon <= t < turn]
        if not keys:
            return []
        u = self.rng.random((len(keys), 2))
        out = []
        for key, (u_mind, u_judge) in zip(keys, u, strict=True):
            stale = turn >= self.stale_at[key]
            mind = p.focus if key in self.focus else p.relevant
            if not stale:
                if u_mind < mind:
                    out.append(Need(key, True, False))
            elif u_mind < p.stale:
                out.append(Need(key, True, True))
            elif u_mind < mind and u_judge < p.misjudge:
                out.append(Need(key, False, True))
        return out
