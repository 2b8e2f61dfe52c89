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

A key first seen more than ``need.horizon`` turns ago can never come to mind
again, so the model lets it go (:meth:`NeedModel.draw` returns the keys it
let go, for the engine to forget what it kept for them). It only remembers
that the key was seen, in a :class:`KeySet` of 8-byte hashes, so that a
command run again much later is still known as seen before.
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_left
from dataclasses import dataclass

import numpy as np
from prunesim.model.scenario import NeedParams


class KeySet:
    """A set of strings held as sorted 8-byte hashes: membership for long runs at 8 bytes a key.

    Two different keys share a hash with probability about n^2 / 2^65 over n keys
    (below 1e-7 for a million keys); the hash is a fixed function, so a run is
    the same in every process. The sorted hashes are an ``array`` of unsigned
    64-bit integers, searched with :mod:`bisect` (a third of the time numpy's
    search of one value takes) and merged with numpy.
    """

    MERGE_AT = 4096

    def __init__(self):
        self._sorted = array("Q")
        self._recent: set[int] = set()

    @staticmethod
    def _hash(key: str) -> int:
        return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little")

    def add(self, key: str) -> None:
        self._recent.add(self._hash(key))
        if len(self._recent) >= self.MERGE_AT:
            merged = np.fromiter(self._recent, dtype=np.uint64, count=len(self._recent))
            old = np.frombuffer(self._sorted, dtype=np.uint64) if len(self._sorted) else np.empty(0, np.uint64)
            self._sorted = array("Q", np.union1d(old, merged).astype(np.uint64).tobytes())
            self._recent.clear()

    def __contains__(self, key: str) -> bool:
        h = self._hash(key)
        if h in self._recent:
            return True
        hashes = self._sorted
        i = bisect_left(hashes, h)
        return i < len(hashes) and hashes[i] == h

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent)


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
        # key -> turn first seen, in order of first sight, for keys within the horizon
        self.first_seen: dict[str, int] = {}
        self.stale_at: dict[str, int] = {}
        self.focus: set[str] = set()
        self.expired = KeySet()  # keys first seen before the horizon: seen, never to come to mind again
        self.seen = 0  # distinct keys seen
        self._last_turn = None  # the turn of the latest first sight, while first sights come in turn order
        self._in_order = True  # first_seen is in order of its turns: draw finds its keys at both ends

    def observe(self, key: str, turn: int, stale_at: int, tags=frozenset()) -> None:
        """A tool output of ``key`` arrived from the workload at ``turn``."""
        if not key:
            return
        if key not in self.first_seen:
            if len(self.expired) and key in self.expired:
                return  # first seen long ago: it no longer comes to mind
            self.first_seen[key] = turn
            self.seen += 1
            if self._last_turn is not None and turn < self._last_turn:
                self._in_order = False
            self._last_turn = turn
        self.stale_at[key] = stale_at
        if self.params.focus_tag in tags:
            self.focus.add(key)

    def was_seen(self, key: str) -> bool:
        return key in self.first_seen or (len(self.expired) > 0 and key in self.expired)

    def expire(self, turn: int) -> list[str]:
        """Let go of the keys first seen before ``turn - horizon``; returns them."""
        oldest = turn - self.params.horizon
        gone = []
        for key, t in self.first_seen.items():  # in order of first sight: stop at the first one kept
            if t >= oldest:
                break
            gone.append(key)
        for key in gone:
            del self.first_seen[key]
            self.stale_at.pop(key, None)
            self.focus.discard(key)
            self.expired.add(key)
        return gone

    def draw(self, turn: int) -> list[Need]:
        """The needs of ``turn``, in order of first sight of their keys (call :meth:`expire` first).

        Two uniforms are drawn for every key within the horizon; only a key whose first uniform is
        below the largest chance can be a need, so only those are looked at one by one.
        """
        p = self.params
        if not p.enabled:
            return []
        keys = self._within_horizon(turn)
        if not keys:
            return []
        u = self.rng.random(2 * len(keys)).tolist()  # (mind, judge) for each key: random((n, 2)) in C order
        top = max(p.relevant, p.focus, p.stale)
        out = []
        for i, u_mind in enumerate(u[::2]):
            if u_mind >= top:  # no need can come of this key
                continue
            key, u_judge = keys[i], u[2 * i + 1]
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

    def _within_horizon(self, turn: int) -> list[str]:
        """Keys first seen from ``turn - horizon`` up to the turn before ``turn``, in order of first sight."""
        seen, oldest = self.first_seen, turn - self.params.horizon
        if not self._in_order:
            return [k for k, t in seen.items() if oldest <= t < turn]
        end = len(seen)
        for t in reversed(seen.values()):  # the keys first seen this turn are the last ones
            if t < turn:
                break
            end -= 1
        start = 0
        for t in seen.values():  # none before the horizon once expire ran
            if t >= oldest:
                break
            start += 1
        keys = list(seen)
        return keys[start:end] if start or end < len(keys) else keys
