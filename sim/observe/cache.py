"""The provider's prompt cache: which prompt tokens a call reads from it, writes to it, or pays in full.

The prompt of a model call is the window's spans in order (plus, for a prune
pass that reads its index from an external log, that index at the end). The
cache holds *entries*: prefixes of earlier prompts, each with an expiry in
simulated time. A change to the prompt at token offset ``p`` (a span removed,
cut or replaced) ends every entry's reusable prefix at ``p``; appends at the
end change nothing. At a call:

* ``cache_read``: the longest live entry the call can find, rounded down to the
  provider's ``granularity``, times ``reuse`` (the share a call is billed as
  read in expectation: implicit caches do not always hit). Reading an entry
  refreshes its expiry.
* ``cache_write``: the prompt up to its last cacheable position, minus what was
  read; ``uncached``: the rest. So ``read + write + uncached == prompt``.

Two behaviours (``Pricing.cache``):

* ``explicit`` (Anthropic): the runtime marks breakpoints; an entry is stored at
  each mark and must match *whole*: an edit before it kills it. The simulated
  runtime marks the end of the prompt, the end of the system prompt when
  ``breakpoints >= 2`` (:meth:`mark_system`: where a workload says where it
  ends, as a transcript's hidden system prompt and tools do, else the end of
  what was in the window before the first call: the system prompt and task), and,
  when a pass reads an index from outside the window, the end of the window part
  when ``breakpoints >= 3``. A mark finds an entry at most ``lookback`` spans
  before it (0: no limit). Prompts or entries shorter than ``min_tokens`` are
  not cached.
* ``implicit`` (OpenAI, Gemini): the provider caches every prompt's blocks of
  ``granularity`` tokens; after an edit at ``p`` the blocks before ``p`` still
  match. Writes carry no premium.

A replayed explicit cache may also hold a *kept* prefix (:meth:`keep_warm`):
one that other sessions of the same runtime keep warm, so it does not expire
with this conversation's TTL (Claude Code's tools and system prompt, set from
the recorded first call's read: docs/cost.md). Nothing sets one in a synthetic
scenario.

Invalidation: when an edit cuts the prefix cached at the previous call and that
entry would still have been live, the next call reads less than it would have
read had the surviving content stayed cached; the difference is the
``invalidated`` tokens of that call, attributed to the edit nearest the start of
the prompt (see docs/cost.md).
"""

from __future__ import annotations

from typing import NamedTuple

_NO_LIMIT = 0


class Split(NamedTuple):
    """One call's prompt tokens, split; ``invalidated`` of them were rewritten because of ``source``'s edit."""

    read: int
    write: int
    uncached: int
    invalidated: int
    source: object


class _Entry:
    __slots__ = ("length", "spans", "expiry")

    def __init__(self, length: int, spans: int, expiry: float):
        self.length = length
        self.spans = spans
        self.expiry = expiry


class PromptCache:
    """The cache of one agent's prompts (one conversation), in simulated time."""

    def __init__(self, behaviour: str, ttl_s: float, min_tokens: int, granularity: int, breakpoints: int,
                 lookback: int, reuse: float):
        if behaviour not in ("explicit", "implicit", "none"):
            raise ValueError(f"unknown cache behaviour {behaviour!r}")
        self.behaviour = behaviour
        self.ttl = ttl_s
        self.min_tokens = min_tokens
        self.g = max(1, granularity)
        self.breakpoints = breakpoints
        self.lookback = lookback
        self.reuse = reuse
        # Entries sorted by length (each is a prefix of the current prompt, so also by span count).
        self.entries: list[_Entry] = []
        self._cleanup_at = 64
        self.system: tuple[int, int] | None = None  # (tokens, spans) of the system prompt's mark
        self._system_end: int | None = None  # where the workload said the system prompt ends (mark_system)
        # (tokens, spans) of an entry the recorded runtime read at the next call (:meth:`warm`): its mark stood there.
        self._warmed: tuple[int, int] | None = None
        # (tokens, spans) of a prefix that stays warm whatever this conversation does (:meth:`keep_warm`).
        self._kept: tuple[int, int] | None = None
        self._calls = 0
        # What the previous call left cached, and what edits have removed from it since.
        self._extent = 0
        self._extent_expiry = -1.0
        self._removed = 0
        self._first_edit: int | None = None
        self._first_source: object = None

    @classmethod
    def from_pricing(cls, p) -> PromptCache:
        return cls(p.cache, p.ttl_s, p.min_tokens, p.granularity, p.breakpoints, p.lookback, p.reuse)

    def _floor(self, tokens: int) -> int:
        return tokens - tokens % self.g

    # -- the prompt changes --------------------------------------------------------
    def edit(self, offset: int, span_index: int, freed: int, source: object = None) -> None:
        """The prompt changed at token ``offset`` (the start of span number ``span_index``); ``freed`` tokens left."""
        self.edits(((offset, span_index, freed, source),))

    def edits(self, changes) -> None:
        """Several edits in the order they happened: ``(offset, span_index, freed, source)`` each, as :meth:`edit`.

        The same as one :meth:`edit` after another, with one cut at the end:
        cutting at each offset in turn leaves every entry cut at the smallest
        of them (by the first edit to reach it), so only that cut is made.
        """
        removed = self._removed
        cached = self._extent - removed  # where what the previous call cached now ends
        first = self._first_edit
        lowest = lowest_index = None
        for offset, span_index, freed, source in changes:
            if offset < cached:
                taken = cached - offset if freed > cached - offset else freed
                removed += taken
                cached -= taken
                if first is None or offset < first:
                    first = offset
                    self._first_source = source
            if lowest is None or offset < lowest:
                lowest, lowest_index = offset, span_index
        self._removed = removed
        self._first_edit = first
        if lowest is not None:
            self._cut(lowest, lowest_index)

    def _cut(self, offset: int, span_index: int) -> None:
        entries = self.entries
        if self.behaviour == "explicit":
            while entries and entries[-1].length > offset:
                entries.pop()  # an explicit entry must match whole
        else:
            for e in entries:
                if e.length > offset:
                    e.length, e.spans = offset, span_index  # the blocks before the edit still match
        if self.system is not None and self.system[0] > offset:
            self.system = None
        if self._warmed is not None and self._warmed[0] > offset:
            self._warmed = None
        if self._kept is not None and self._kept[0] > offset:
            self._kept = None  # this prompt no longer starts with the prefix the others keep warm

    def mark_system(self, tokens: int, spans: int) -> None:
        """The system prompt ends after the prompt's first ``tokens`` tokens (``spans`` spans): the mark stands there.

        Claude Code keeps its system prompt and tools cached across a
        compaction (the first call after one reads them), so a mark at the end
        of the whole first prompt, which the compaction cuts, would lose them.
        A recorded read that ends inside the system prompt (:meth:`warm`) shows
        where the runtime's mark really stands, and moves it there.
        """
        self.system = (tokens, spans)
        self._system_end = tokens

    def warm(self, length: int, spans: int, time: float) -> None:
        """An entry of the prompt's first ``length`` tokens (``spans`` spans), written before ``time``, live now.

        The recorded call read it, so the runtime had a mark there: the next
        call finds it however many spans lie beyond (``lookback`` limits how
        far back a mark searches, and this entry is one a mark stood at).
        """
        self._store(self._floor(length), spans, time + self.ttl)
        self._warmed = (self._floor(length), spans)
        if self._calls and self._system_end is not None and self.min_tokens <= length <= self._system_end:
            self.system = (self._floor(length), spans)  # the recorded call read up to the system prompt's mark

    def keep_warm(self, length: int, spans: int) -> None:
        """The prompt's first ``length`` tokens (``spans`` spans) stay in the cache however long this conversation
        pauses: other sessions of the same runtime, which send the same tools and system prompt, refresh that
        entry. An explicit cache's call reads it when nothing longer of its own is live, found as a warmed entry
        is (the runtime's mark stands there); an edit before its end drops it; a length below the minimum (0)
        keeps nothing. The others share no more than the system prompt: where the workload says where that ends
        (:meth:`mark_system`), the kept prefix ends there at the latest (a resumed session's first call reads
        its own earlier conversation too). Implicit caches ignore it (their bills were not studied for it)."""
        if self._system_end is not None and length > self._system_end:
            length = self._system_end
        length = self._floor(length)
        self._kept = (length, spans) if length > 0 and length >= self.min_tokens else None

    # -- a model call --------------------------------------------------------------
    def call(self, time: float, prompt: int, spans: int, stable: int | None = None,
             stable_spans: int = 0) -> Split:
        """Bill one call of ``prompt`` tokens over ``spans`` spans at simulated ``time``.

        ``stable``: the prompt ends with ``prompt - stable`` tokens that the next
        call will not hold (an index read from outside the window).
        """
        return Split(*self.bill(time, prompt, spans, stable, stable_spans))

    def bill(self, time: float, prompt: int, spans: int, stable: int | None = None,
             stable_spans: int = 0) -> tuple:
        """:meth:`call` as a plain tuple, for the cost observer's every call (a named tuple costs more to build)."""
        self._calls += 1
        if self._calls == 1 and self._system_end is None:
            self.system = (stable, stable_spans) if stable is not None else (prompt, spans)
        behaviour = self.behaviour
        if behaviour == "explicit":
            readable = self._explicit(time, prompt, spans, stable, stable_spans)
        elif behaviour == "none":
            self._forget_edits()
            return 0, 0, prompt, 0, None
        else:
            readable = self._implicit(time, prompt, spans)
        read = readable if self.reuse == 1.0 else round(self.reuse * readable)
        cacheable = prompt - prompt % self.g
        if cacheable < self.min_tokens:
            cacheable = 0
        invalidated, source = (0, None) if self._first_edit is None else self._invalidated(time, read)
        if stable is not None and stable < prompt:
            self._cut(stable, stable_spans)  # the transient tail is gone after this call
        entries = self.entries
        if entries:
            last = entries[-1]
            self._extent, self._extent_expiry = last.length, last.expiry
        else:
            self._extent, self._extent_expiry = 0, -1.0
        if len(entries) > self._cleanup_at:
            self.entries = [e for e in entries if e.expiry >= time]
            self._cleanup_at = max(64, 2 * len(self.entries))
        return read, cacheable - read, prompt - cacheable, invalidated, source

    def _explicit(self, time: float, prompt: int, spans: int, stable: int | None, stable_spans: int) -> int:
        lookback = self.lookback
        system = self.system
        if system is not None and (system[0] >= prompt or self.breakpoints < 2):
            system = None
        held = (stable, stable_spans) if stable is not None and stable < prompt and self.breakpoints >= 3 else None
        warmed = self._warmed
        if warmed is not None:
            self._warmed = None  # read once, by this call
        entries = self.entries
        found = None
        for e in reversed(entries):  # longest first; every entry is a prefix of the window
            if e.expiry < time or e.length > prompt:  # (a pass decided concurrently sent an older, shorter prompt)
                continue
            if lookback == _NO_LIMIT or spans - e.spans <= lookback:  # found from the end-of-prompt mark
                found = e
                break
            if (system is not None and system[0] >= e.length and system[1] - e.spans <= lookback) or (
                    held is not None and held[0] >= e.length and held[1] - e.spans <= lookback) or (
                    warmed is not None and warmed[0] == e.length):
                found = e
                break
        expiry = time + self.ttl
        if found is not None:
            found.expiry = expiry
        kept = self._kept
        if kept is not None and kept[0] <= prompt and (found is None or found.length < kept[0]):
            found = _Entry(kept[0], kept[1], expiry)  # read from the entry the others keep warm
        g = self.g
        if system is not None:
            length = system[0] - system[0] % g
            first = entries[0] if entries else None
            if first is not None and first.length == length:  # the usual case: refresh the system prompt's entry
                first.expiry = expiry
            else:
                self._store(length, system[1], expiry)
        if held is not None:
            self._store(held[0] - held[0] % g, held[1], expiry)
        length = prompt - prompt % g
        last = entries[-1] if entries else None
        if last is not None and last.length < length and length >= self.min_tokens:  # the usual case
            entries.append(_Entry(length, spans, expiry))
        else:
            self._store(length, spans, expiry)
        return found.length if found is not None else 0

    def _store(self, length: int, spans: int, expiry: float) -> None:
        """Write or refresh the entry at ``length``, keeping the list sorted."""
        if length < self.min_tokens:
            return
        entries = self.entries
        if not entries or entries[-1].length < length:  # the usual case: the end of a longer prompt
            entries.append(_Entry(length, spans, expiry))
            return
        if entries[0].length >= length:  # the system prompt's entry, at the front
            i = 1 if entries[0].length == length else 0
        else:
            i = len(entries)
            while i and entries[i - 1].length > length:
                i -= 1
        if i and entries[i - 1].length == length:
            entries[i - 1].expiry = max(entries[i - 1].expiry, expiry)
            entries[i - 1].spans = spans
        else:
            entries.insert(i, _Entry(length, spans, expiry))

    def _implicit(self, time: float, prompt: int, spans: int) -> int:
        live = [e for e in self.entries if e.expiry >= time]
        best = max(live, key=lambda e: e.length) if live else None
        readable = self._floor(min(best.length, prompt)) if best is not None else 0
        if readable < self.min_tokens:
            readable = 0
        # Every live entry is a prefix of the window, so the longest one and this prompt cover them all.
        if best is not None and best.length > prompt:
            best.expiry = time + self.ttl if readable else best.expiry
            self.entries = [best]
        else:
            self.entries = [_Entry(prompt, spans, time + self.ttl)]
        return readable

    # -- invalidation accounting -----------------------------------------------------
    def _invalidated(self, time: float, read: int) -> tuple[int, object]:
        """What the call that read ``read`` tokens lost to the edits since the previous call (``_first_edit`` set)."""
        source = self._first_source
        alive = self._extent_expiry >= time  # an entry that had expired anyway was not lost to the edit
        survived = self._floor(self._extent - self._removed)
        if survived < self.min_tokens:
            survived = 0
        self._forget_edits()
        if not alive:
            return 0, None
        lost = (survived if self.reuse == 1.0 else round(self.reuse * survived)) - read
        return (lost, source) if lost > 0 else (0, None)

    def _forget_edits(self) -> None:
        self._removed = 0
        self._first_edit = None
        self._first_source = None

