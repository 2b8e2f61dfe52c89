"""The context window: ordered spans, a size, and a hard or soft budget."""

from __future__ import annotations

from dataclasses import dataclass

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
    size; beyond the window size every budget is hard.
    """

    def __init__(self, size: int, budget: int, hard: bool):
        self.size = size
        self.budget = budget
        self.hard = hard
        self._spans: dict[int, Span] = {}
        self.utilization = 0
        self.appended_total = 0
        self.removed_total = 0
        self._next_id = 0

    # -- reading -----------------------------------------------------------
    @property
    def ceiling(self) -> int:
        return self.budget if self.hard else self.size

    @property
    def headroom(self) -> int:
        return self.budget - self.utilization

    def spans(self) -> list[Span]:
        """Spans in window order (oldest first)."""
        return list(self._spans.values())

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
        room = (self.budget if self.hard else self.size) - self.utilization  # the ceiling's room
        cut = span.tokens - room if room > 0 else span.tokens
        if cut > 0:
            span.tokens -= cut
        else:
            cut = 0
        kept = span.tokens
        if kept > 0:
            self._spans[span.id] = span
            self.utilization += kept
            self.appended_total += kept
        over = self.utilization - self.budget
        return AppendOutcome(kept, cut, over if over > 0 else 0)

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
        room = (self.budget if self.hard else self.size) - self.utilization
        cut = span.tokens - room if room > 0 else span.tokens
        if cut > 0:
            span.tokens -= cut
        else:
            cut = 0
        kept = span.tokens
        if kept > 0:
            items = list(self._spans.items())
            items.insert(index, (span.id, span))
            self._spans = dict(items)
            self.utilization += kept
            self.appended_total += kept
        over = self.utilization - self.budget
        return AppendOutcome(kept, cut, over if over > 0 else 0)

    def remove(self, span_id: int) -> Span:
        span = self._spans.pop(span_id)
        self.utilization -= span.tokens
        self.removed_total += span.tokens
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
        return removed
