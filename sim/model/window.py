"""The context window: ordered spans, a size, and a hard or soft budget."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from prunesim.model.spans import Span


@dataclass(slots=True)
class AppendOutcome:
    """What an append did: tokens placed, tokens cut by a hard limit."""

    kept: int
    cut: int
    over_budget: int  # tokens above a soft budget after the append (0 when under)


class Window:
    """Ordered spans with running totals.

    ``appended_total - removed_total == utilization`` holds after every change;
    the recorder writes both totals so that a trace can be checked.

    A *hard* budget is a ceiling: an append that would cross it is cut to fit
    (the cut is lost content). A *soft* budget may be exceeded up to the window
    size; beyond the window size every budget is hard. A replayed transcript
    lifts ``arrival_ceiling`` (what an append may fill up to): its runtime
    checks the ceiling where it sends a prompt, at a model call, so the engine
    does so there instead (``Engine.window_at_call``).
    """

    def __init__(self, size: int, budget: int, hard: bool):
        self.size = size
        self.budget = budget
        self.hard = hard
        # What an append may fill up to. Size, budget and kind are fixed for a window's life.
        self.ceiling = budget if hard else size
        self.arrival_ceiling = self.ceiling
        self._spans: dict[int, Span] = {}  # one dict for the window's life (insert rebuilds it in place)
        self._by_id = MappingProxyType(self._spans)
        self._unpinned: dict[int, Span] = {}  # the unpinned spans, in window order (what a runtime may drop)
        # spans() as last built; None once the window changed. Tuples: they are handed to the policy in its
        # view, and a list it sorted or reversed in place would be what the engine drops from next.
        self._list: tuple[Span, ...] | None = None
        self._unpinned_list: tuple[Span, ...] | None = None
        self.utilization = 0
        self.appended_total = 0
        self.removed_total = 0
        self._next_id = 0
        # Told of every span that enters (``entered``) or leaves (``left``) the window, if set: an index
        # kept change by change (prunesim.model.key_index) instead of a walk of the window every turn.
        self.watcher = None

    # -- reading -----------------------------------------------------------
    @property
    def headroom(self) -> int:
        return self.budget - self.utilization

    def spans(self) -> tuple[Span, ...]:
        """Spans in window order (oldest first). A snapshot, and a tuple: it is shared until the window
        changes (reading an unchanged window twice costs nothing), so nobody may change it."""
        if self._list is None:
            self._list = tuple(self._spans.values())
        return self._list

    def unpinned(self) -> tuple[Span, ...]:
        """The unpinned spans in window order (a snapshot, shared like :meth:`spans`)."""
        if self._unpinned_list is None:
            self._unpinned_list = tuple(self._unpinned.values())
        return self._unpinned_list

    def by_id(self):
        """A read-only mapping of the spans by id: the window's own, live (it changes with the window). A test
        of membership on it costs no Python call, where ``span_id in window`` costs one."""
        return self._by_id

    def __contains__(self, span_id: int) -> bool:
        return span_id in self._spans

    def __len__(self) -> int:
        return len(self._spans)

    def get(self, span_id: int) -> Span | None:
        return self._spans.get(span_id)

    # -- changing ----------------------------------------------------------
    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def append(self, span: Span) -> AppendOutcome:
        """Place ``span`` at the end, cut to the ceiling when needed."""
        cut = self.add(span)
        over = self.utilization - self.budget
        return AppendOutcome(span.tokens, cut, over if over > 0 else 0)

    def add(self, span: Span) -> int:
        """:meth:`append` for the engine's hot path: returns the tokens cut (``span.tokens`` is what was kept)."""
        room = self.arrival_ceiling - self.utilization
        cut = span.tokens - room if room > 0 else span.tokens
        if cut > 0:
            span.tokens -= cut
        else:
            cut = 0
        kept = span.tokens
        if kept > 0 or (span.call and not cut):  # an empty tool message stays (see Span.call)
            self._spans[span.id] = span
            if not span.pinned:
                self._unpinned[span.id] = span
            self._list = self._unpinned_list = None
            self.utilization += kept
            self.appended_total += kept
            if self.watcher is not None:
                self.watcher.entered(span)
        return cut

    def position(self, span_id: int) -> int:
        """The index of a span in window order (0 is the oldest)."""
        for i, key in enumerate(self._spans):
            if key == span_id:
                return i
        raise KeyError(span_id)

    def insert(self, span: Span, index: int) -> AppendOutcome:
        """Place ``span`` at ``index`` in window order (the end when ``index >= len``), cut to the ceiling.

        Used to put a placeholder or a summary where the content it replaces stood.
        """
        if index >= len(self._spans):
            return self.append(span)
        room = self.arrival_ceiling - self.utilization
        cut = span.tokens - room if room > 0 else span.tokens
        if cut > 0:
            span.tokens -= cut
        else:
            cut = 0
        kept = span.tokens
        if kept > 0 or (span.call and not cut):
            items = list(self._spans.items())
            items.insert(index, (span.id, span))
            self._spans.clear()
            self._spans.update(items)
            self._unpinned = {i: s for i, s in items if not s.pinned}  # the same order, rebuilt (rare)
            self._list = self._unpinned_list = None
            self.utilization += kept
            self.appended_total += kept
            if self.watcher is not None:
                self.watcher.entered(span)
        over = self.utilization - self.budget
        return AppendOutcome(kept, cut, over if over > 0 else 0)

    def remove(self, span_id: int) -> Span:
        span = self._spans.pop(span_id)
        if not span.pinned:
            del self._unpinned[span_id]
        self._list = self._unpinned_list = None
        self.utilization -= span.tokens
        self.removed_total += span.tokens
        if self.watcher is not None:
            self.watcher.left(span)
        return span

    def shrink(self, span_id: int, keep_tokens: int) -> int:
        """Cut a span down to ``keep_tokens``; returns the tokens removed."""
        span = self._spans[span_id]
        keep = max(0, min(keep_tokens, span.tokens))
        removed = span.tokens - keep
        span.tokens = keep
        self.utilization -= removed
        self.removed_total += removed
        if keep == 0:
            del self._spans[span_id]
            self._unpinned.pop(span_id, None)
            self._list = self._unpinned_list = None
            if self.watcher is not None:
                self.watcher.left(span)
        return removed
