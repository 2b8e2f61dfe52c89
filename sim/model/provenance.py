"""Provenance: the edit log, tombstones, the agent's needs and re-retrieval.

These are the engine's methods for the self-edit reentrancy model (design
seed 004), kept apart from the turn loop in ``sim/engine.py``. The engine owns
an append-only, hash-chained edit log; under a policy that keeps one, every
removal from the window is logged and leaves a pinned tombstone. Each turn the
agent may need content it saw before; when that content left the window and
nothing in the window records it, the agent runs the tool again.

Under a ``[tombstone] budget`` tombstones do not stay forever: past the budget
the oldest fold into one pinned digest span (:mod:`prunesim.model.digest`)
that names their keys; the agent reads a key named there as recorded. What the
engine keeps for needs is let go once a key can no longer come to mind (beyond
``need.horizon``), so a run of any length holds bounded state.
"""

from __future__ import annotations

from prunesim.model.digest import Digest
from prunesim.model.editlog import EditLog, SelfEditRefused, Tombstone, content_hash
from prunesim.model.grouped_digest import GroupedDigest
from prunesim.model.key_index import NAMING_KINDS, KeyIndex
from prunesim.model.needs import NeedModel
from prunesim.model.spans import SUMMARY_TAG, Span
from prunesim.model.workload import Arrival, TurnPlan
from prunesim.policies.base import ModelPass

# Removed spans kept before the engine forgets those nothing names any more: few enough that the walk meets them
# still in the CPU's cache (at 4,096 it cost naive about three times as much a turn).
FORGET_AT = 512
RECORD_KINDS = ("prune_index", "prune_rationale", "tombstone", "tombstone_digest")  # records of edits, not content
MARKER_KINDS = frozenset({*RECORD_KINDS, "placeholder", "warning"})  # and a runtime's own messages
# NAMING_KINDS: spans that record a removal in the window besides a tombstone: a rationale (the edit's own
# record), a placeholder (it stands where the span was) and a model-written summary (it carries the content).


def is_marker(span: Span) -> bool:
    """A record or a runtime's own message rather than content: its removal is no lost work."""
    return span.kind in MARKER_KINDS or SUMMARY_TAG in span.tags


class Provenance:
    """Mixed into :class:`prunesim.model.engine.Engine`; uses its window, clock and event bus."""

    def tombstone(self, span: Span, reason: str, record_seq: int = 0, tokens: int | None = None) -> Span:
        """Leave a pinned marker for ``span``: its content hash, the turn and the reason."""
        size = self.scenario.tombstone.tokens if tokens is None else tokens
        info = Tombstone(span.id, span.key, span.kind, span.tokens, span_hash(span), self.turn, reason, record_seq)
        marker = self.append(Span(self.window.new_id(), "tombstone", size, self.turn, key=span.key, pinned=True,
                                  tags=frozenset({"provenance"})))
        if marker.id in self.window:  # a marker cut to nothing at a full window records nothing
            self.tombstones[marker.id] = info
            self._tombstone_tokens += marker.tokens
            if self._tombstone_budget and self._tombstone_tokens > self._tombstone_budget:
                self.fold_tombstones()
        return marker

    def fold_tombstones(self) -> None:
        """Fold the oldest tombstones into the digest until they hold half the budget; one log record."""
        w = self.window
        target = self._tombstone_budget // 2
        if self.digest is None:
            params = self.scenario.tombstone
            is_command = self.needs.was_seen if self.needs is not None else None
            if params.digest == "groups":
                self.digest = GroupedDigest(params.digest_base, params.digest_root, params.digest_max, is_command)
            else:
                self.digest = Digest(params.digest_base, params.digest_max, is_command)
        digest = self.digest
        folded_records = []
        folded = 0
        for marker_id in list(self.tombstones):  # oldest first
            if self._tombstone_tokens <= target:
                break
            info = self.tombstones.pop(marker_id)
            self._tombstone_tokens -= self.remove(marker_id, "fold").tokens
            digest.add(info.key, info.record_seq)
            gone = self.evicted.pop(info.evicted_id, None)  # recorded by the digest from now on, by key
            if gone is not None and self.key_index is not None:
                self.key_index.forgotten(gone)
            folded_records.append(info.record_seq)
            folded += 1
        old = self._digest_span
        if old is not None and old.id in w:
            self.remove(old.id, "fold")
        self._digest_span = self.append(Span(w.new_id(), "tombstone_digest", digest.tokens, self.turn, pinned=True,
                                             tags=frozenset({"provenance"})))
        if self.key_index is not None:
            self.key_index.digest_changed(digest)
        if self.keeps_log:
            self.log("fold", tombstones=folded, records=folded_records, keys=digest.keys,
                     digest_tokens=self._digest_span.tokens)
        for h in self.bus.tombstone_fold:
            h(self.env.now, self.turn, folded, digest.keys, self.digest_tokens(), self._tombstone_tokens)

    def digest_tokens(self) -> int:
        span = self._digest_span
        return span.tokens if span is not None and span.id in self.window else 0

    def in_digest(self, key: str) -> bool:
        """Whether the digest in the window names ``key``."""
        return self.digest is not None and self.digest_tokens() > 0 and key in self.digest

    def _init_provenance(self, needs: NeedModel | None, edit_log: EditLog | None = None) -> None:
        self.keeps_log = bool(getattr(self.policy, "keeps_edit_log", False))
        self.edit_log = EditLog() if edit_log is None else edit_log
        self.anchor = self.edit_log.anchor()  # kept apart from the records, updated on every append
        self.tombstones: dict[int, Tombstone] = {}  # tombstone span id -> what it records
        # Spans removed from the window, by id, while something in the window may still name them
        # (see forget_unreferenced: a run of any length keeps bounded state).
        self.evicted: dict[int, Span] = {}
        self._forget_at = FORGET_AT
        self._forgotten_unrecorded = 0  # content spans dropped from `evicted`: nothing records them
        self.removed_turn: dict[str, int] = {}  # content key -> turn its content last left the window
        self.content: dict[str, tuple] = {}  # content key -> (call tokens, output tokens, stale_at, tags)
        self.needs = needs
        self._tombstone_budget = self.scenario.tombstone.budget
        self._tombstone_tokens = 0  # tokens of the tombstones in the window
        self.digest: Digest | GroupedDigest | None = None
        self._digest_span: Span | None = None
        # What the window holds and records of each key, for the needs and history_gap.
        self.key_index = KeyIndex(needs, self.evicted) if needs is not None else None
        self.window.watcher = self.key_index
        self._guard = getattr(self.policy, "authorize", None)  # looked up once: a miss costs an exception
        self._pass_tombstones = 0  # tombstone size asked by the pass being applied (0: none)
        self._pass_id = 0

    def log(self, kind: str, **fields):
        record = self.edit_log.append(kind, turn=self.turn, time_s=round(self.env.now, 9), **fields)
        self.anchor = self.edit_log.anchor()
        return record

    def authorized(self, action) -> bool:
        """Ask the policy's guard, if it has one; a refusal is recorded, never swallowed."""
        guard = self._guard
        if guard is None:
            return True
        try:
            guard(action, self.view())
        except SelfEditRefused as err:
            if self.keeps_log:
                self.log("refusal", reason=err.reason, span_ids=list(err.span_ids), action=type(action).__name__)
            for h in self.bus.self_edit_refused:
                h(self.env.now, self.turn, err.reason, list(err.span_ids), type(action).__name__)
            return False
        return True

    def _pass_started(self, p: ModelPass, chosen, index_tokens: int, rationale: int) -> None:
        """The plan and its rationale, written to the log before anything is evicted."""
        self._pass_id = self.pass_count
        self._pass_tombstones = p.tombstone_tokens
        handlers = self.bus.prune_planned
        if handlers and (self.needs is not None or self.keeps_log):  # runs that tell a provenance story
            w = self.window
            note = w.spans()[-1] if p.placement == "window" and rationale else None
            selected = [i for i in chosen if i in w]
            keys = [w.get(i).key for i in selected]
            note_id = note.id if note is not None and note.kind == "prune_rationale" else -1
            own = bool(getattr(p, "prune_own_rationale", False))
            for h in handlers:
                h(self.env.now, self.turn, self.pass_count, selected, keys, note_id, rationale, own)
        if not self.keeps_log:
            return
        w = self.window
        named = [{"span_id": i, "key": w.get(i).key, "kind": w.get(i).kind, "tokens": w.get(i).tokens,
                  "stale": w.get(i).is_stale(self.turn)} for i in chosen if i in w]
        self.log("plan", pass_id=self.pass_count, placement=p.placement, index=index_tokens, rationale=rationale,
                 candidates=p.candidates, selected=named)

    def _removed(self, span: Span, event: str) -> None:
        """Bookkeeping for every span that leaves the window; under provenance, its record and tombstone."""
        self.evicted[span.id] = span
        if self.needs is not None:  # (the key index is kept for the needs)
            self.key_index.removed(span)
            if span.kind == "tool_output" and span.key and span.key in self.content:
                self.removed_turn[span.key] = self.turn  # only needs read it, for keys that may come to mind
        if not (self.keeps_log or self._pass_tombstones) or span.kind in RECORD_KINDS:
            return
        reason = f"pass {self._pass_id}: judged stale" if event == "evict" else event
        seq = 0
        if self.keeps_log:
            seq = self.log("evict", span_id=span.id, key=span.key, span_kind=span.kind, tokens=span.tokens,
                           span_turn=span.turn, content_hash=span_hash(span), reason=reason).seq
        self.tombstone(span, reason, seq, self._pass_tombstones or None)

    def _saw(self, plan: TurnPlan) -> None:
        """Remember what each tool output held, so that the tool can be run again."""
        if self.needs is None:  # nothing will be run again
            return
        for arrival in (plan.tool_output, *plan.extra):
            if arrival.kind != "tool_output" or not arrival.key:
                continue
            call = plan.tool_call.tokens if arrival is plan.tool_output else 0
            stale_at = self.turn + arrival.stale_after
            seen = self.needs.seen
            self.needs.observe(arrival.key, self.turn, stale_at, arrival.tags)
            if self.needs.seen != seen:
                self.key_index.seen(arrival.key)
            if arrival.key in self.needs.first_seen:  # else first seen long ago: never needed again
                self.content[arrival.key] = (call, arrival.tokens, stale_at, arrival.tags)

    def note_history(self) -> None:
        """How much of what the agent did the window still shows (the metric ``history_gap``)."""
        shown = self.key_index.commands_traced(self.digest_tokens() > 0)
        for h in self.bus.history:
            h(self.turn, self.needs.seen, shown)

    def meet_needs(self):
        """The agent reaches for content it saw before; pruned content with no record is fetched again."""
        if self.needs is None:
            return
        for key in self.needs.expire(self.turn):  # never needed again: what was kept to run it again goes
            self.content.pop(key, None)
            self.removed_turn.pop(key, None)
        for need in self.needs.draw(self.turn):
            key = need.key
            if key not in self.removed_turn or self.key_index.holds(key):
                continue  # in the window, or never seen whole (cut on arrival): nothing to fetch again
            record = self.key_index.record_of(key, self.in_digest)
            since = self.turn - self.removed_turn.get(key, self.turn)
            if record and not need.truly:
                self._need("dismissed", key, 0, since, record)
                continue
            call, tokens, stale_at, tags = self.content[key]
            stale_after = max(0, stale_at - self.turn)
            start = self.env.now
            agent = self.agent_model
            if agent.calls_for_needs:  # under an agent model, running the tool again takes a model call, and a turn
                self.next_turn()
                prompt = self.window.utilization
                self._model_call(prompt, call, False)
                delay = self.model_latency(prompt, call)
                if not self.env.advance(delay):
                    yield self.env.timeout(delay)
            if call:
                self.place(Arrival("tool_call", call, key, stale_after))
            delay = self.scenario.latency.tool_mean_s
            if not self.env.advance(delay):
                yield self.env.timeout(delay)
            out = self.place(Arrival("tool_output", tokens, key, stale_after, tags=tags))
            if record:  # the record said stale; the agent overrides it because it truly needs the content
                self._need("override", key, out.tokens, since, record)
                if self.keeps_log:
                    self.log("override", key=key, tokens=out.tokens, turns_since_prune=since, record=record)
            else:
                self._need("re_retrieval", key, out.tokens, since, "")
            if agent.calls_for_needs:  # a re-fetch when a record named it, a redo when nothing did
                agent.rerun(bool(record))
                handlers = self.bus.refetch if record else self.bus.redo
                args = (key, key, call, out.tokens) if record else (key, call, out.tokens)
                for h in handlers:
                    h(self.env.now, self.turn, *args, self.env.now - start)

    def _need(self, outcome: str, key: str, tokens: int, since: int, record: str) -> None:
        for h in self.bus.need:
            h(self.env.now, self.turn, outcome, key, tokens, since, record)

    def _referenced(self) -> set[int]:
        """Ids of removed spans that something in the window records: a tombstone, or a rationale, placeholder
        or summary naming them."""
        w = self.window
        recorded = {t.evicted_id for sid, t in self.tombstones.items() if sid in w}
        for s in w.spans():
            if s.kind in NAMING_KINDS:
                recorded.update(s.names)
        return recorded

    def forget_unreferenced(self) -> None:
        """Drop removed spans that nothing in the window names, counting the unrecorded ones.

        Called between turns with no pass in flight: a later plan names only spans in the
        window, and a tombstone is written when its span leaves, so a removed span that
        nothing names now is never named again. The run's figures do not change.
        """
        keep = self._referenced()
        kept, forgotten = {}, []
        for sid, span in self.evicted.items():
            if sid in keep:
                kept[sid] = span
            else:
                forgotten.append(span)
        self._forgotten_unrecorded += sum(1 for span in forgotten if not is_marker(span))
        if self.key_index is not None:  # named by nothing in the window: they traced nothing
            for span in forgotten:
                self.key_index.forgotten(span)
        self.evicted = kept
        if self.key_index is not None:
            self.key_index.evicted = kept
        self._forget_at = max(FORGET_AT, 2 * len(kept))

    def unrecorded_evictions(self) -> int:
        """Removed content spans that nothing in the window records: no tombstone, and no rationale,
        placeholder or summary naming them."""
        recorded = self._referenced()
        return self._forgotten_unrecorded + sum(
            1 for sid, span in self.evicted.items() if not is_marker(span) and sid not in recorded
        )


def span_hash(span: Span) -> str:
    """The content hash a tombstone carries: what the span held (kind, key, size, turn), not where it sat."""
    return content_hash(span.kind, span.key, span.tokens, span.turn)
