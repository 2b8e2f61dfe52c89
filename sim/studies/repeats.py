"""The replay metrics, heard as the run goes: repeats of a content key and the evictions that were needed.

The definitions are :mod:`prunesim.studies.transcript_replay`'s. :class:`RepeatTally` hears the window's
appends and removals, in the order the engine publishes them, so a replay needs no trace for its figures:
it keeps one entry per span in the window and per key, and the policy's evictions of a key's outputs not
yet followed by a call of that key (whether they were needed is known only at a later call).
"""

from __future__ import annotations

from prunesim.model.events import Observer
from prunesim.observe.metrics.eviction import is_policy_cause, precision

KEYED_KINDS = ("tool_call", "tool_output")


class RepeatTally(Observer):
    """The repeat metrics and the transcript variant of the needed evictions, from the window's changes."""

    def __init__(self):
        self.latest: dict[str, int] = {}  # key -> span id of its latest output (of its latest call while it has none)
        self.has_output: set[str] = set()
        self.removed_at: dict[int, int] = {}  # span id -> turn it left the window (latest spans only)
        self.held: dict[int, tuple[str, str, int]] = {}  # span id -> (key, kind, tokens left), spans in the window
        self.called: set[str] = set()
        # key -> (span id, tokens) per policy removal of its outputs since its latest call: needed if it is called
        self.pending: dict[str, list[tuple[int, int]]] = {}
        self.needed_ids: set[int] = set()
        self.needed_tokens = 0
        self.repeats = self.after = self.inside = 0
        self.gaps: list[int] = []

    def on_span_appended(self, time, turn, span, kept, utilization, appended_total, removed_total) -> None:
        self.appended(turn, span.kind, span.id, span.key, kept)

    def on_span_removed(self, time, turn, cause, span, freed, utilization, appended_total, removed_total) -> None:
        self.removed(turn, cause, span.id, -freed)

    def appended(self, turn: int, kind: str, span_id: int, key: str, kept: int) -> None:
        """A span entered the window with ``kept`` tokens."""
        if not key or kind not in KEYED_KINDS:
            return
        if kind == "tool_call":
            for removed_id, tokens in self.pending.pop(key, ()):  # called again after the removal: needed
                self.needed_tokens += tokens
                self.needed_ids.add(removed_id)
            if key in self.called:
                self.repeats += 1
                content = self.latest[key]
                if content in self.held:
                    self.inside += 1
                else:
                    self.after += 1
                    self.gaps.append(turn - self.removed_at[content])
            self.called.add(key)
            if key not in self.has_output:
                self.latest[key] = span_id
        else:
            self.has_output.add(key)
            self.latest[key] = span_id
        self.held[span_id] = (key, kind, kept)

    def removed(self, turn: int, cause: str, span_id: int, delta: int) -> None:
        """``-delta`` tokens of a span left the window because of ``cause`` (the trace's event)."""
        if span_id not in self.held or not (delta < 0 or cause == "summary_dropped"):
            return
        key, kind, left = self.held[span_id]
        if kind == "tool_output" and is_policy_cause(cause):
            self.pending.setdefault(key, []).append((span_id, -delta))
        # Content a summary carries stays held until a summary drops it (a row that frees nothing when an
        # earlier summary carried it); a truncation that leaves part of the span keeps it in the window.
        if cause == "summarized":
            return
        left = 0 if cause == "summary_dropped" else left + delta
        if left > 0:
            self.held[span_id] = (key, kind, left)
            return
        del self.held[span_id]
        if self.latest.get(key) == span_id:
            self.removed_at[span_id] = turn

    def metrics(self, evicted_tokens: int) -> dict:
        """The figures; ``evicted_tokens``: the run's ``policy_evicted_tokens``, the precision's denominator."""
        gaps = self.gaps
        return {
            "repeats": self.repeats,
            "repeats_after_prune": self.after,
            "repeats_in_window": self.inside,
            "repeat_gap_mean": round(sum(gaps) / len(gaps), 3) if gaps else 0.0,
            "repeat_gap_max": max(gaps) if gaps else 0,
            "needed_evicted_spans": len(self.needed_ids),
            "needed_evicted_tokens": self.needed_tokens,
            "eviction_precision": precision(self.needed_tokens, evicted_tokens),
        }
