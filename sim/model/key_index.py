"""What the window holds and records of each content key, kept up to date change by change.

The agent's needs ask, for a key, whether the window holds its output (the
output itself, or a summary that carries it) and what in the window records
that it was pruned (a tombstone, the digest, a rationale naming it). The
metric ``history_gap`` asks which keys the window *traces*: a tool output, a
tombstone or a placeholder of that key is in the window, or a rationale,
placeholder or summary in the window names a removed span of that key. Of the
traced keys, those the agent really ran (the need model has seen their
output) are *shown*; the digest, when it is in the window, shows the commands
it names beside them.

Walking the window for each answer costs as much as the rest of a long
session's turn. This index follows the window's entries and exits, the
engine's removed spans and the need model's first sights instead, so a turn
costs what changed in it. It answers exactly what the walks did
(``tests/test_key_index.py`` compares them on every turn;
``benchmarks/check_identical.py``).
"""

from __future__ import annotations

from prunesim.model.spans import SUMMARY_TAG, Span

DIRECT_KINDS = ("tool_output", "tombstone", "placeholder")  # spans that trace their own key
# Spans that trace the keys of the removed spans they name (a placeholder with a key traces its key only).
NAMING_KINDS = ("prune_rationale", "placeholder", "summary")


def _bump(counts: dict, item, n: int) -> int:
    """Add ``n`` to ``counts[item]`` (an entry at 0 goes); the new count."""
    count = counts.get(item, 0) + n
    if count:
        counts[item] = count
    else:
        del counts[item]
    return count


class KeyIndex:
    """Told of every span entering or leaving the window, of removed spans and of keys first seen.

    ``needs`` answers ``was_seen``; ``evicted`` is the engine's mapping of removed spans by id and
    ``digest`` its tombstone digest: the engine sets them again when it replaces them. (The index keeps
    no reference to the engine: a run's state goes as soon as the run does, with no cycle to collect.)
    """

    def __init__(self, needs, evicted: dict):
        self.needs = needs
        self.evicted = evicted
        self.digest = None
        self.outputs: dict[str, int] = {}  # key -> its tool outputs in the window
        self.tombstones: dict[str, int] = {}  # key -> its tombstones in the window
        self.carried: dict[str, int] = {}  # key -> (summary, removed output of the key it carries) pairs
        self.rationales: dict[str, int] = {}  # key -> (rationale, removed span of the key it names) pairs
        self.traced: dict[str, int] = {}  # key -> reasons the window traces it
        self.shown: set[str] = set()  # traced keys the agent ran
        self._in_digest = -1  # shown keys the digest covers; -1: to be counted again (the digest changed)
        # span id -> spans in the window naming it that trace, carry, or are a rationale
        self._tracing: dict[int, int] = {}
        self._carrying: dict[int, int] = {}
        self._arguing: dict[int, int] = {}

    # -- questions ---------------------------------------------------------------
    def holds(self, key: str) -> bool:
        """The window holds ``key``'s output: the output itself, or a summary that carries it."""
        return key in self.outputs or key in self.carried

    def record_of(self, key: str, in_digest) -> str:
        """What in the window records that ``key``'s content was pruned: "tombstone", "digest", "rationale"
        or "" (``in_digest(key)``: the digest in the window names it)."""
        if key in self.tombstones:
            return "tombstone"
        if in_digest(key):
            return "digest"
        return "rationale" if key in self.rationales else ""

    def commands_traced(self, digest_in_window: bool) -> int:
        """Commands the window shows: shown keys, and the digest's commands beyond them when it is in the window."""
        shown = len(self.shown)
        digest = self.digest
        if digest is not None and digest_in_window:
            if self._in_digest < 0:
                self._in_digest = sum(1 for key in self.shown if key in digest)
            shown += digest.commands_beyond(self._in_digest)
        return shown

    # -- the window ------------------------------------------------------------
    def entered(self, span: Span) -> None:
        self._span(span, 1)

    def left(self, span: Span) -> None:
        self._span(span, -1)

    def _span(self, span: Span, n: int) -> None:
        key, kind = span.key, span.kind
        direct = bool(key) and kind in DIRECT_KINDS
        if direct:
            self._trace(key, n)
            if kind == "tool_output":
                _bump(self.outputs, key, n)
            elif kind == "tombstone":
                _bump(self.tombstones, key, n)
        if not span.names:
            return
        tracing = not direct and kind in NAMING_KINDS
        carrying = SUMMARY_TAG in span.tags
        arguing = kind == "prune_rationale"
        if not (tracing or carrying or arguing):
            return
        evicted = self.evicted
        for i in span.names:
            if tracing:
                _bump(self._tracing, i, n)
            if carrying:
                _bump(self._carrying, i, n)
            if arguing:
                _bump(self._arguing, i, n)
            gone = evicted.get(i)
            if gone is not None:
                self._named(gone, n if tracing else 0, n if carrying else 0, n if arguing else 0)

    # -- the engine's removed spans ----------------------------------------------
    def removed(self, span: Span) -> None:
        """``span`` joined the removed spans: what in the window names it now traces and records its key."""
        i = span.id
        self._named(span, self._tracing.get(i, 0), self._carrying.get(i, 0), self._arguing.get(i, 0))

    def forgotten(self, span: Span) -> None:
        """``span`` left the removed spans."""
        i = span.id
        self._named(span, -self._tracing.get(i, 0), -self._carrying.get(i, 0), -self._arguing.get(i, 0))

    def _named(self, gone: Span, tracing: int, carrying: int, arguing: int) -> None:
        key = gone.key
        if tracing:
            self._trace(key, tracing)
        if carrying and gone.kind == "tool_output":
            _bump(self.carried, key, carrying)
        if arguing:
            _bump(self.rationales, key, arguing)

    # -- keys seen, the digest -------------------------------------------------
    def seen(self, key: str) -> None:
        """The need model saw ``key``'s output for the first time: a traced key is shown from now on."""
        if key in self.traced and key not in self.shown:
            self._show(key, 1)

    def digest_changed(self, digest) -> None:
        self.digest = digest
        self._in_digest = -1

    def _trace(self, key: str, n: int) -> None:
        count = _bump(self.traced, key, n)
        if count == n and n > 0 and self.needs.was_seen(key):  # newly traced
            self._show(key, 1)
        elif not count and key in self.shown:
            self._show(key, -1)

    def _show(self, key: str, n: int) -> None:
        """Add (``n`` 1) or take away (-1) a shown key; the digest's count follows while it is known."""
        if n > 0:
            self.shown.add(key)
        else:
            self.shown.discard(key)
        digest = self.digest
        if self._in_digest >= 0 and digest is not None and key in digest:
            self._in_digest += n
