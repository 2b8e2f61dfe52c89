"""Eviction quality, for every policy: what it removed, and how much of that was still needed.

A *policy removal* is tokens leaving the window because the policy chose so:
a model-driven pass's eviction (cause ``evict``), a non-model eviction, the
policy's own (``nonmodel_<reason>``) or a gate's fallback (``fallback_<reason>``),
or a runtime context edit: a clearing that leaves a placeholder (``cleared``) or
a compaction whose summary replaced the span (``summarized``; see :mod:`.edits`).
The runtime's forced drops at a hard ceiling and a replayed transcript's own
recorded drops are not the policy's choice.

Content is *needed* when the agent would still use it:

* in synthetic runs, a span removed before its ``stale_at`` turn (the
  workload's ground truth of when content stops being useful; a pass's own
  rationale removed in the same pass counts as needed, it is the record of
  that pass);
* in replays of real transcripts (:mod:`prunesim.studies.transcript_replay`
  replaces these figures), a tool output whose content key the agent calls
  again later in the transcript. Reasoning, calls and user messages cannot be
  judged there and count as not needed, so the precision of a replay is an
  upper bound.

Model-driven and non-model policies are measured alike, so a cheap heuristic
cannot look free merely because it pays no decision tokens.
"""

from __future__ import annotations

from prunesim.model.events import Observer

from .definition import Metric

DEFINITIONS = (
    Metric(
        "non_model_evictions",
        "actions",
        "Non-model evictions (recency drop, truncation, template summary, a policy's own Evict), whoever took "
        "them: a policy's own choice or a gate's fallback (those are also fallback_evictions).",
    ),
    Metric("non_model_tokens", "tokens", "Tokens freed by non_model_evictions, net of any summary written."),
    Metric(
        "policy_evicted_spans",
        "spans",
        "Spans the policy evicted or cut down (model-driven passes, non-model evictions, clearings and "
        "compactions; not the runtime's forced drops), each counted once.",
    ),
    Metric("policy_evicted_tokens", "tokens", "Tokens the policy removed from the window (as policy_evicted_spans)."),
    Metric(
        "needed_evicted_spans",
        "spans",
        "Of policy_evicted_spans, those still needed when removed: in synthetic runs removed before their stale_at "
        "turn; in transcript replays tool outputs whose content key is called again later in the transcript.",
    ),
    Metric("needed_evicted_tokens", "tokens", "Tokens of needed content the policy removed (as needed_evicted_spans)."),
    Metric(
        "eviction_precision",
        "fraction",
        "1 - needed_evicted_tokens / policy_evicted_tokens: the share of evicted tokens not needed again "
        "(1 when the policy removed nothing; in transcript replays an upper bound, as only outputs are judged).",
    ),
)


POLICY_EDITS = frozenset({"evict", "cleared", "summarized"})


def is_policy_cause(cause: str) -> bool:
    """True when a removal was the policy's choice: a pass's eviction, a non-model eviction, a clearing or a
    compaction. (``summary_dropped``, content a later summary lost, left the window when it was summarized.)"""
    return cause in POLICY_EDITS or cause.startswith(("nonmodel_", "fallback_"))


def precision(needed_tokens: int, evicted_tokens: int) -> float:
    """The share of evicted tokens not needed again; 1 when nothing was evicted."""
    return round(1 - needed_tokens / evicted_tokens, 6) if evicted_tokens else 1.0


class EvictionMetrics(Observer):
    def __init__(self, run):
        self.non_model = self.non_model_tokens = 0
        # Spans the policy has cut down that are still in the window, with the tokens they have left: a span cut
        # and later evicted counts once. Only cut spans are held, so memory stays bounded by the window.
        self.cut: dict[int, int] = {}
        self.last_removed = None  # the span of the latest removal: a truncation's, when one follows
        self.evicted_spans = self.needed_spans = 0
        self.evicted_tokens = self.needed_tokens = 0
        self._policy_cause: dict[str, bool] = {}  # is_policy_cause, once per cause (a handful per run)

    def on_spans_removed(self, time, turn, removals) -> None:
        """The removals of one change (one cause), folded into the counters."""
        if self.cut or not self._is_policy(removals[0][0]):  # a span cut down earlier: span by span
            for cause, span, freed, utilization, appended_total, removed_total in removals:
                self.on_span_removed(time, turn, cause, span, freed, utilization, appended_total, removed_total)
            return
        needed_spans = needed_tokens = evicted = 0
        for _, span, freed, _, _, _ in removals:
            evicted += freed
            if turn < span.stale_at:
                needed_tokens += freed
                needed_spans += 1
        self.evicted_tokens += evicted
        self.needed_tokens += needed_tokens
        self.evicted_spans += len(removals)
        self.needed_spans += needed_spans
        self.last_removed = removals[-1][1]

    def _is_policy(self, cause: str) -> bool:
        policy = self._policy_cause.get(cause)
        if policy is None:
            policy = self._policy_cause[cause] = is_policy_cause(cause)
        return policy

    def on_span_removed(self, time, turn, cause, span, freed, utilization, appended_total, removed_total) -> None:
        policy = self._policy_cause.get(cause)
        if policy is None:
            policy = self._policy_cause[cause] = is_policy_cause(cause)
        cut = self.cut
        if policy:
            self.evicted_tokens += freed
            needed = turn < span.stale_at  # not span.is_stale(turn)
            if needed:
                self.needed_tokens += freed
            if not cut or span.id not in cut:
                self.evicted_spans += 1
                self.needed_spans += needed
            self.last_removed = span
        if cut and span.id in cut:
            sid = span.id
            left = cut[sid] - freed
            if left > 0:
                cut[sid] = left
            else:
                del cut[sid]

    def on_non_model_eviction(self, time, turn, action, reason, spans, freed, fallback) -> None:
        self.non_model += 1
        self.non_model_tokens += freed
        span = self.last_removed
        # A truncation leaves its span in the window with span.tokens left (0: it went whole).
        if action == "truncate" and span is not None and span.tokens > 0 and span.id not in self.cut:
            self.cut[span.id] = span.tokens
        self.last_removed = None

    def summary(self, so_far: dict) -> dict:
        return {
            "non_model_evictions": self.non_model,
            "non_model_tokens": self.non_model_tokens,
            "policy_evicted_spans": self.evicted_spans,
            "policy_evicted_tokens": self.evicted_tokens,
            "needed_evicted_spans": self.needed_spans,
            "needed_evicted_tokens": self.needed_tokens,
            "eviction_precision": precision(self.needed_tokens, self.evicted_tokens),
        }
