"""What the engine publishes: a small, fixed vocabulary of typed events.

The engine is the only emitter. Window, needs and policies return outcomes;
the engine turns them into calls of the ``on_<kind>`` methods below on every
observer that defines one. An observer is any object with some of these
methods: it subclasses :class:`Observer` and overrides what it wants to hear,
and a kind it does not override costs it nothing.

Frequent kinds are positional calls with plain values (numbers, strings and
the span concerned; a :class:`~prunesim.model.spans.Span` is passed for
reading, never to be changed). Rare kinds carry one record. Every call
begins with the simulated time ``time`` (seconds) and the ``turn``.

:class:`Bus` binds the handlers once, at the start of a run: one tuple of
bound methods per kind, in the order the observers were given. A call site
loops over its tuple only when the tuple is not empty, so a kind nobody
listens to costs a truth test.

An observer may be *deferred*: it hears every event it handles, in order, but
in batches, a while after they happen (at the latest when the run ends, before
any ``run_end`` handler). A run's metrics are read only when it is over, and
hearing a thousand events in one loop costs them about half what hearing each
in the middle of the engine's own work does (docs/performance.md, "What the
observers cost a turn"). Only an observer that nothing reads during the run,
and that reads of a span only what never changes after it entered the window
(its id, kind, tags, pinned flag, turn, key or stale_at; not its tokens), may
be deferred.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from prunesim.model.agent import Outcome
    from prunesim.model.editlog import Anchor, EditLog
    from prunesim.model.spans import Span


class PassRecord(NamedTuple):
    """One model-driven prune pass, as the ledger records it (columns in this order)."""

    pass_id: int
    turn: int
    time_s: float
    utilization_before: int
    utilization_peak: int
    utilization_after: int
    headroom_before: int
    candidates: int
    selected: int
    evicted_spans: int
    index: int
    rationale: int
    evicted: int
    net: int
    cut: int
    truly_stale: int
    in_band: int


class EditRecord(NamedTuple):
    """One runtime context edit: a clearing, a compaction or a warning (an events.csv row).

    ``inserted`` places what the edit wrote inside the window rather than at its end (each
    placeholder, the summary): (span id, its index in window order once the edit is done). The
    ``span_appended`` events of those spans came first, as for any append.
    """

    action: str  # "clear" (placeholders), "restore" (placeholders undone), "compact" (a summary) or "warning"
    reason: str  # the policy's name for it ("clear_tool_uses", "observation_masking", "auto_compact", ...)
    spans: int  # spans replaced
    freed: int  # tokens of the spans replaced
    written: int  # tokens written in their place: placeholders, the summary or the warning
    prompt: int  # prompt tokens of the model call that wrote a summary (0 otherwise)
    kept: int  # content spans a summary carries
    dropped: int  # content spans a summary lost, those an earlier summary carried included
    utilization_before: int
    utilization_after: int
    inserted: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class RunEnd:
    """The state at the end of a run that only the model can see."""

    time_s: float
    utilization: int
    # Removed content spans with neither a tombstone nor a surviving rationale naming them.
    unrecorded_evictions: int
    tombstone_tokens: int
    keeps_edit_log: bool
    edit_log: EditLog
    anchor: Anchor
    digest_tokens: int = 0  # the tombstone digest's tokens in the window (0: none)
    placeholder_tokens: int = 0  # tokens held by placeholders in the window
    # What the agent model says the agent did (prunesim.model.agent.Outcome); None: no agent model ran.
    outcome: Outcome | None = None
    # The work turns done, where an agent model may stop the run before the workload's last one (None: no such
    # model, every turn was done).
    work_turns: int | None = None


class Observer:
    """Base of every observer. Override the ``on_<kind>`` methods you need; the rest are never called.

    ``muted`` names kinds an instance does not want although its class handles
    them (a recorder that keeps one row per turn mutes the per-change kinds).
    ``deferred``: the instance hears its events in batches (see the module's docstring).
    """

    muted: frozenset[str] = frozenset()
    deferred: bool = False

    def on_span_appended(self, time: float, turn: int, span: Span, kept: int, utilization: int,
                         appended_total: int, removed_total: int) -> None:
        """``span`` entered the window with ``kept`` tokens (fewer than it wanted when a hard ceiling cut it)."""

    def on_span_removed(self, time: float, turn: int, cause: str, span: Span, freed: int, utilization: int,
                        appended_total: int, removed_total: int) -> None:
        """``freed`` tokens of ``span`` left the window because of ``cause``: ``evict`` (a model-driven pass),
        ``forced_drop`` (the runtime, at its ceiling), ``fallback_<reason>`` (a gate's non-model fallback),
        ``nonmodel_<reason>`` (a policy's own non-model eviction), ``cleared`` for a placeholder,
        ``summarized`` when a summary carries its content, ``summary_dropped`` when a summary lost it, or
        ``runtime_drop`` (a replayed transcript's runtime removed it itself). ``freed < span.tokens`` when a
        span was cut down and stays; ``freed`` is 0 for ``summary_dropped`` of content an earlier summary
        carried (the span left the window before; its content is lost now)."""

    def on_spans_removed(self, time: float, turn: int, removals: list) -> None:
        """Several spans left the window at once, as one change of one cause (a pass's evictions, a non-model
        eviction): ``removals`` holds one ``(cause, span, freed, utilization, appended_total, removed_total)``
        per span, in the order they left, each as :meth:`on_span_removed` would hear it.

        This base method hands each to :meth:`on_span_removed`, so an observer that overrides only that one
        hears every removal. One that folds a whole change at once overrides this as well, not instead: a
        removal published on its own (a forced drop, a replayed runtime's drop, a clearing's, and every removal
        of a run that keeps an edit log or leaves tombstones) reaches :meth:`on_span_removed` only."""
        for cause, span, freed, utilization, appended_total, removed_total in removals:
            self.on_span_removed(time, turn, cause, span, freed, utilization, appended_total, removed_total)

    def on_model_call(self, time: float, turn: int, prompt_tokens: int, output_tokens: int,
                      decision: bool, pass_id: int = 0) -> None:
        """A model call was billed: the agent's turn call, or a call that decides what to prune
        (``decision``): a prune pass's (``pass_id``, the ledger's pass number) or a compaction's
        (``pass_id`` 0: it writes a summary, see ``on_context_edit``)."""

    def on_runtime_rewrite(self, time: float, turn: int, offset: int) -> None:
        """A replayed runtime changed its prompt from token ``offset`` on without removing anything the window
        shows (a recorded cache break: the recorded call read only ``offset`` tokens from a live cache)."""

    def on_cache_warmed(self, time: float, turn: int, tokens: int) -> None:
        """A replayed run began with its first ``tokens`` prompt tokens already in the provider's cache (the
        recorded first call read them: an earlier session wrote the same system prompt and tools)."""

    def on_truncation(self, time: float, turn: int, cause: str, kind: str, wanted: int, kept: int,
                      constraint: bool, selections: int) -> None:
        """Content was lost to a ceiling. ``cause``: ``forced_truncation`` (an append cut to ``kept`` of
        ``wanted``), ``forced_drop`` (a whole span dropped to make room: ``kept`` is 0) or ``rationale_cut``
        (a pass's rationale cut after ``selections`` selections). ``constraint``: the lost content was one."""

    def on_prune_planned(self, time: float, turn: int, pass_id: int, selected: list, keys: list,
                         rationale_span: int, rationale: int, own_rationale: bool) -> None:
        """A pass wrote its plan (published in runs that model needs or keep an edit log)."""

    def on_prune_pass(self, time: float, record: PassRecord) -> None:
        """A model-driven pass finished."""

    def on_gate_decision(self, time: float, turn: int, reason: str, numbers: dict) -> None:
        """A gate decided: ``reason`` is ``run`` or the refusal."""

    def on_non_model_eviction(self, time: float, turn: int, action: str, reason: str, spans: int, freed: int,
                              fallback: bool) -> None:
        """A non-model eviction freed ``freed`` tokens net, after the ``span_removed`` calls of its spans.
        ``action``: ``evict``, ``truncate`` (one span cut down; it stays when tokens are left) or ``summarize``.
        ``fallback``: a gate took it in place of a model-driven pass it refused; otherwise it is the policy's
        own choice."""

    def on_context_edit(self, time: float, turn: int, record: EditRecord) -> None:
        """A runtime context edit was applied: placeholders, a model-written summary or a warning."""

    def on_self_edit_refused(self, time: float, turn: int, reason: str, span_ids: list, action: str) -> None:
        """A policy's guard refused one of its own plans."""

    def on_need(self, time: float, turn: int, outcome: str, key: str, tokens: int, turns_since_prune: int,
                record: str) -> None:
        """The agent reached for pruned content: ``outcome`` is ``re_retrieval`` (nothing recorded it),
        ``override`` (a record said stale; it was truly needed) or ``dismissed`` (the record said stale)."""

    def on_refetch(self, time: float, turn: int, resource: str, key: str, call_tokens: int, tokens: int,
                   latency_s: float) -> None:
        """The agent fetched content again that the policy had removed (a replayed transcript's resource before a
        recorded call used it; under an agent model, a needed work item, ``resource`` "item N", or a key a record
        named): the last ``model_call`` was the one that asked for it (``call_tokens`` output tokens), then the
        tool ran and its output entered the window with ``tokens`` (its recorded size) under ``key``;
        ``latency_s``: the simulated time it all took."""

    def on_redo(self, time: float, turn: int, key: str, call_tokens: int, tokens: int, latency_s: float) -> None:
        """The agent did work again that it had no record of having done (:mod:`prunesim.model.agent_reaction`):
        one redo turn, a model call (the last ``model_call``, ``call_tokens`` output tokens), the tool run and its
        output of ``tokens`` under ``key``; ``latency_s``: the simulated time it took. Only under an agent model."""

    def on_tombstone_fold(self, time: float, turn: int, folded: int, keys: int, digest_tokens: int,
                          tombstone_tokens: int) -> None:
        """The oldest ``folded`` tombstones left the window for the digest, which now names ``keys`` keys in
        ``digest_tokens`` tokens; ``tombstone_tokens`` remain in tombstones."""

    def on_turn_reached(self, turn: int, utilization: int) -> None:
        """The turn's arrivals are in, before the policy is consulted."""

    def on_turn_end(self, time: float, turn: int, utilization: int, appended_total: int,
                    removed_total: int) -> None:
        """The turn is over, policy actions included."""

    def on_history(self, turn: int, commands_run: int, commands_traced: int) -> None:
        """At the end of a turn (runs that model needs): of the commands run so far, how many the window
        still holds a trace of."""

    def on_run_end(self, end: RunEnd) -> None:
        """The run is over."""


KINDS = tuple(name[3:] for name in vars(Observer) if name.startswith("on_"))
# Each kind's handler name, one string object for the process: a name built anew for every getattr of every run
# would be a new key each time in CPython's type attribute cache, which holds its names, and a folder of replays
# would see its memory grow run by run until that cache is full.
METHOD = {kind: "on_" + kind for kind in KINDS}


# The events a bus keeps for its deferred observers before they hear them: enough for the batch to run at the
# speed of a loop that does nothing else, few enough that the spans they name are not kept long.
DEFERRED_BATCH = 1024


class Bus:
    """The handlers of each kind, bound once: ``bus.span_appended`` is a tuple of bound methods.

    The deferred observers' handlers of a kind are one entry of its tuple, which keeps the event for them
    (:meth:`flush` hands the kept events on); ``run_end`` flushes before any of its handlers runs.
    """

    def __init__(self, observers):
        self.observers = tuple(observers)
        for obs in self.observers:
            if not isinstance(obs, Observer):
                raise TypeError(f"{obs!r} is not an Observer")
        self._kept: list[tuple] = []  # (the deferred handlers of an event's kind, its arguments), in order
        deferring = any(obs.deferred for obs in self.observers)
        for kind in KINDS:
            hearing = [obs for obs in self.observers
                       if _hears(obs, kind) or (kind in _FANNED_OUT and _hears(obs, _FANNED_OUT[kind]))]
            if kind == "run_end":
                handlers = tuple(getattr(obs, METHOD[kind]) for obs in hearing)
                if deferring:
                    handlers = (self.flush, *handlers)
            else:
                handlers = tuple(getattr(obs, METHOD[kind]) for obs in hearing if not obs.deferred)
                later = tuple(getattr(obs, METHOD[kind]) for obs in hearing if obs.deferred)
                if later:
                    handlers = (*handlers, self._keeper(later))
            setattr(self, kind, handlers)

    def _keeper(self, handlers: tuple):
        """A handler that keeps its event for ``handlers`` (flushing once the batch is full)."""
        kept = self._kept
        keep = kept.append
        flush = self.flush

        def keep_for_later(*args) -> None:
            keep((handlers, args))
            if len(kept) >= DEFERRED_BATCH:
                flush()
        return keep_for_later

    def flush(self, *_) -> None:
        """Hand every kept event to its deferred handlers, in the order the events happened."""
        kept = self._kept
        for handlers, args in kept:
            for h in handlers:
                h(*args)
        kept.clear()


# A kind the base class hands on, change by change, to the kind it is made of: an observer that overrides only
# the per-change method is bound for the whole change too (through the base class's fan-out).
_FANNED_OUT = {"spans_removed": "span_removed"}


def _hears(obs: Observer, kind: str) -> bool:
    """The observer's class overrides ``on_<kind>`` and the instance has not muted it (nor, for a whole change,
    the per-change kind it is made of)."""
    method = METHOD[kind]
    if kind in obs.muted or _FANNED_OUT.get(kind) in obs.muted:
        return False
    return getattr(type(obs), method, None) is not getattr(Observer, method)
