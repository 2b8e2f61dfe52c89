"""The commands the window still traces, kept up to date change by change (for the metric ``history_gap``).

A key is *traced* while the window shows that its command ran: a tool output,
a tombstone or a placeholder of that key is in the window, or a rationale,
placeholder or summary in the window names a removed span of that key. Of
the traced keys, those the agent really ran (the need model has seen their
output) are *shown*; the digest, when it is in the window, shows the commands
it names beside them.

Walking the window every turn to find them costs as much as the rest of a
long session's turn; this index follows the window's entries and exits and
the engine's removed spans instead, so a turn costs what changed in it. It
answers exactly what the walk did (``benchmarks/check_identical.py``).
"""

from __future__ import annotations

from prunesim.model.spans import Span

DIRECT_KINDS = ("tool_output", "tombstone", "placeholder")  # spans that trace their own key
# Spans that trace the keys of the removed spans they name (a placeholder with a key traces its key only).
NAMING_KINDS = ("prune_rationale", "placeholder", "summary")


class HistoryTrace:
    """Traced and shown keys, told of every span entering or leaving the window and of removed spans.

    ``owner`` holds ``evicted`` (removed spans by id), ``needs`` (its ``was_seen``) and ``digest``.
    """

    def __init__(self, owner):
        self.owner = owner
        self.traced: dict[str, int] = {}  # key -> reasons the window traces it (spans, or names of removed spans)
        self.named: dict[int, int] = {}  # removed-or-not span id -> naming spans in the window that name it
        self.shown: set[str] = set()  # traced keys the agent ran
        self._in_digest = -1  # shown keys the digest covers; -1: to be counted again (the digest changed)

    # -- the window ------------------------------------------------------------
    def entered(self, span: Span) -> None:
        if span.key and span.kind in DIRECT_KINDS:
            self._trace(span.key, 1)
        elif span.kind in NAMING_KINDS:
            named, evicted = self.named, self.owner.evicted
            for i in span.names:
                named[i] = named.get(i, 0) + 1
                gone = evicted.get(i)
                if gone is not None:
                    self._trace(gone.key, 1)

    def left(self, span: Span) -> None:
        if span.key and span.kind in DIRECT_KINDS:
            self._trace(span.key, -1)
        elif span.kind in NAMING_KINDS:
            named, evicted = self.named, self.owner.evicted
            for i in span.names:
                n = named[i] - 1
                if n:
                    named[i] = n
                else:
                    del named[i]
                gone = evicted.get(i)
                if gone is not None:
                    self._trace(gone.key, -1)

    # -- the engine's removed spans ----------------------------------------------
    def removed(self, span: Span) -> None:
        """``span`` joined the removed spans: what in the window names it now traces its key."""
        n = self.named.get(span.id)
        if n:
            self._trace(span.key, n)

    def forgotten(self, span: Span) -> None:
        """``span`` left the removed spans."""
        n = self.named.get(span.id)
        if n:
            self._trace(span.key, -n)

    def seen(self, key: str) -> None:
        """The need model saw ``key``'s output for the first time: a traced key is shown from now on."""
        if key in self.traced and key not in self.shown:
            self._show(key, 1)

    def digest_changed(self) -> None:
        self._in_digest = -1

    # -- reading ---------------------------------------------------------------
    def commands_traced(self) -> int:
        """Commands the window shows: shown keys, and the digest's commands beyond them when it is in the window."""
        owner = self.owner
        shown = len(self.shown)
        digest = owner.digest
        if digest is not None and owner.digest_tokens():
            if self._in_digest < 0:
                self._in_digest = sum(1 for key in self.shown if key in digest)
            shown += digest.commands_beyond(self._in_digest)
        return shown

    def _trace(self, key: str, n: int) -> None:
        traced = self.traced
        count = traced.get(key, 0) + n
        if count:
            traced[key] = count
            if count == n and self.owner.needs.was_seen(key):  # newly traced
                self._show(key, 1)
        else:
            del traced[key]
            if key in self.shown:
                self._show(key, -1)

    def _show(self, key: str, n: int) -> None:
        """Add (``n`` 1) or take away (-1) a shown key; the digest's count follows while it is known."""
        if n > 0:
            self.shown.add(key)
        else:
            self.shown.discard(key)
        digest = self.owner.digest
        if self._in_digest >= 0 and digest is not None and key in digest:
            self._in_digest += n
