"""What the model calls bill: tokens, the prompt cache, and dollars.

Every call's prompt is split by the provider's prompt cache
(:mod:`prunesim.observe.cache`) into tokens read from the cache, written to it
and billed in full, and priced with the scenario's ``[pricing]`` (USD per
million tokens, from the shipped ``prices.toml``). A prune pass's ledger row
gets the cost it caused: its own call, and the rewrite its edits forced on the
next call (priced as the write premium over reading those tokens). A pass
*breaks even* at the turn where the tokens it freed, saved on every later call
at the rate they would have been billed, pay for that cost.

Edits by the runtime itself (forced drops at a hard ceiling, and in a replayed
transcript the removals its own runtime recorded) rewrite the cache too; their
writes are in ``cost_usd`` but not in the invalidation metrics, which count what
the policy's own edits (passes, fallbacks, clearings and compactions) cost. A
placeholder or a summary takes the place of what it replaced
(``on_context_edit`` says where), so the cache sees the edit there.
"""

from __future__ import annotations

import math

from prunesim.model.events import Observer
from prunesim.model.spans import SYSTEM_PROMPT
from prunesim.observe.cache import PromptCache
from prunesim.observe.removals import apply_burst

from .definition import Metric

DEFINITIONS = (
    Metric("input_tokens_billed", "tokens", "Prompt tokens over all model calls (turn calls, prune passes and "
           "compactions)."),
    Metric("output_tokens_billed", "tokens", "Output tokens over all model calls (the agent's turns, rationales and "
           "summaries)."),
    Metric("decision_tokens_billed", "tokens", "Prompt and output tokens of the calls that decide what to prune or "
           "write a summary (prune passes and compactions)."),
    Metric(
        "decision_share",
        "fraction",
        "decision_tokens_billed / (input_tokens_billed + output tokens of prune passes and compactions).",
    ),
    Metric("cache_read_tokens", "tokens", "Prompt tokens read from the provider's prompt cache, over all calls."),
    Metric("cache_write_tokens", "tokens",
           "Prompt tokens written to the cache (billed at the write price: a premium under explicit caching, the "
           "input price under implicit caching)."),
    Metric("uncached_input_tokens", "tokens",
           "Prompt tokens neither read nor written (below the minimum cacheable length, past the last breakpoint, or "
           "not caching); cache_read + cache_write + uncached = input_tokens_billed."),
    Metric("cache_invalidations", "calls",
           "Model calls that had to rewrite cached prefix because a policy edit (eviction, truncation, summary, "
           "placeholder) cut it since the previous call, while the cached entry would still have been live."),
    Metric("invalidated_tokens", "tokens",
           "Prefix tokens that had to be written again because of a policy's edit: what the call would have read "
           "had the content that survived the edit stayed cached, minus what it read."),
    Metric("cost_usd", "USD", "What every model call cost at the scenario's [pricing]: reads, writes, uncached "
                              "prompt and output tokens."),
    Metric("decision_cost_usd", "USD", "What the prune passes' and compactions' own model calls cost."),
    Metric("refetch_cost_usd", "USD",
           "What the model calls of the refetches cost (the call that asks for removed content again); the content "
           "they bring back is billed on every later call, in cost_usd, which includes this."),
    Metric("invalidation_cost_usd", "USD",
           "invalidated_tokens priced at the write price minus the read price: what rewriting them cost beyond "
           "reading them."),
    Metric("cost_per_net_token", "USD/token",
           "(decision_cost_usd + invalidation_cost_usd) / (sum_net_tokens + non_model_tokens): dollars spent on "
           "context management per token of net reclamation; \"inf\" when that reclamation is <= 0 and something "
           "was spent, 0 when nothing was spent."),
)

# Columns a pass's ledger row gets from this observer, after the engine's own (see recorder.LEDGER_COLUMNS).
LEDGER_COLUMNS = ("decision_cost_usd", "invalidated_tokens", "invalidation_cost_usd", "pass_cost_usd",
                  "breakeven_turn")
# One row per model call (calls.csv).
CALL_COLUMNS = ("call", "time_s", "turn", "decision", "pass", "prompt_tokens", "cache_read", "cache_write",
                "uncached", "output_tokens", "invalidated_tokens", "cost_usd")

_PER_TOKEN = 1e-6  # prices are per million tokens
_RUNTIME = "runtime"
_FALLBACK = "fallback"
_EDIT = "edit"  # a runtime policy's clearing or compaction (placeholders, summaries): the policy's own edit
_EDIT_CAUSES = frozenset({"cleared", "restored", "summarized", "summary_dropped"})
_UNRECORDED = frozenset({"prune_pass"})  # what an unrecorded run's cost observer does not hear
_PASS = "pass"  # an eviction of a model-driven pass: charged to the pass whose decision call came last


def _source_of(cause: str) -> str:
    """Whose edit a removal with this cause is: a pass's, a fallback's, the policy's own, or the runtime's."""
    if cause == "evict":
        return _PASS
    if cause.startswith(("fallback_", "nonmodel_")):  # a non-model eviction, a gate's or the policy's own
        return _FALLBACK
    if cause in _EDIT_CAUSES:
        return _EDIT
    return _RUNTIME  # forced_drop at a hard ceiling, or a replayed runtime's own recorded removal (runtime_drop)


def usd(value: float) -> float:
    """Dollars as reported: to the nano-dollar, so sums read cleanly and stay deterministic."""
    return round(value, 9)


class CostMetrics(Observer):
    def __init__(self, run):
        p = run.scenario.pricing
        self.pricing = p
        self.cache = PromptCache.from_pricing(p)
        self._rates = (p.cache_read * _PER_TOKEN, p.cache_write * _PER_TOKEN, p.input * _PER_TOKEN,
                       p.output * _PER_TOKEN)
        self._rewrite_rate = (p.cache_write - p.cache_read) * _PER_TOKEN
        # Per-call rows and per-pass costs only when the run is recorded: they grow with the run.
        self.keep_calls = getattr(run, "trace", "none") != "none"
        # The window as the cache sees it: span ids and their tokens, in order.
        self._ids: list[int] = []
        self._tokens: list[int] = []
        self._total = 0
        self._pending: list[tuple] = []  # (span id, tokens freed, whose edit: see _source) not yet applied
        self._sources: dict[str, object] = {}  # cause -> whose edit it is (_source_of), looked up once
        self.calls: list[tuple] = []  # a streaming recorder writes these out and empties the list as it goes
        self.call_count = 0
        self.input_billed = self.output_billed = self.decision_billed = self.decision_output = 0
        self.read = self.write = self.uncached = 0
        self.invalidations = self.invalidated = 0
        self.cost = self.decision_cost = self.invalidation_cost = 0.0
        self._pass = 0  # the pass whose decision call came last (its evictions follow it)
        self._last_cost = 0.0  # the latest model call's cost: a refetch's own, when on_refetch follows it
        self.refetch_cost = 0.0
        self.pass_costs: dict[int, list] = {}  # pass id -> [decision cost, invalidated tokens, invalidation cost]
        self.pass_rows: dict[int, tuple[int, int]] = {}  # pass id -> (turn, net)

    @property
    def keep_calls(self) -> bool:
        """Keep a row per call and each pass's costs (a recorded run). Setting it sets how the observer is heard:
        a run that keeps neither has nothing to take from a pass's record, and nothing reads the observer before
        the run ends, so it is deferred (prunesim.model.events; of a span it reads only the id and tags)."""
        return self._keep_calls

    @keep_calls.setter
    def keep_calls(self, keep: bool) -> None:
        self._keep_calls = keep
        self.muted = frozenset() if keep else _UNRECORDED
        self.deferred = not keep

    # -- the window ----------------------------------------------------------------
    def on_span_appended(self, time, turn, span, kept, utilization, appended_total, removed_total) -> None:
        self._ids.append(span.id)
        self._tokens.append(kept)
        self._total += kept
        if span.tags and SYSTEM_PROMPT in span.tags and not self.call_count:
            self.cache.mark_system(self._total, len(self._ids))  # the runtime's breakpoint after its system prompt

    def on_span_removed(self, time, turn, cause, span, freed, utilization, appended_total, removed_total) -> None:
        # Removals come in bursts (a pass's evictions, a hard ceiling's drops) and matter only to the next
        # call: kept here, applied in order by _apply_removals (one loop, one cut of the cache).
        self._pending.append((span.id, freed, self._source(cause)))
        self._total -= freed

    def on_spans_removed(self, time, turn, removals) -> None:
        """The removals of one change (one cause), kept for the next call like any other (see on_span_removed)."""
        source = self._source(removals[0][0])
        pending = self._pending
        freed_all = 0
        for _, span, freed, _, _, _ in removals:
            pending.append((span.id, freed, source))
            freed_all += freed
        self._total -= freed_all

    def _source(self, cause: str) -> object:
        """Whose edit a removal with this cause is, as the cache is told: the latest pass's id for a pass's
        eviction, else :func:`_source_of`'s name (looked up once per cause)."""
        source = self._sources.get(cause)
        if source is None:
            source = self._sources[cause] = _source_of(cause)
        return self._pass if source is _PASS else source

    def _apply_removals(self) -> None:
        """Take the removals since the last call out of the window, in order, and tell the cache where they were."""
        changes, unheld = apply_burst(self._ids, self._tokens, self._pending)
        self._total += unheld  # spans the window never held took nothing out
        self._pending.clear()
        if changes:
            self.cache.edits(changes)

    def on_runtime_rewrite(self, time, turn, offset) -> None:
        """The runtime changed the prompt from ``offset`` on: the cache keeps what lies before the span holding it."""
        offset, i = self._within(offset)
        self.cache.edit(offset, i, 0, _RUNTIME)
        self.cache.warm(offset, i, time)  # what the recorded call still read: a breakpoint's entry there

    def on_cache_warmed(self, time, turn, tokens) -> None:
        """The prompt's first ``tokens`` are in the cache already (written before the run began), and the
        sessions that wrote them keep them warm after this one's pauses (docs/cost.md)."""
        tokens, i = self._within(tokens)
        self.cache.warm(tokens, i, time)
        self.cache.keep_warm(tokens, i)

    def keep_warm(self, tokens: int) -> None:
        """The prompt's first ``tokens`` stay warm from now on, as other sessions keep them (0: nothing does)."""
        tokens, i = self._within(tokens)
        self.cache.keep_warm(tokens, i)

    def _within(self, offset: int) -> tuple[int, int]:
        """A recorded offset into the prompt, at most the window's tokens, and the index of the span holding it.
        A replayed policy's prompt can be shorter than the recorded one the offset was read from: the cache
        then holds no entry longer than the prompt (an entry past its end would be read once the prompt grew
        back, for content appended after it was written)."""
        _, i = self._span_at(offset)
        return min(offset, self._total), i

    def _span_at(self, offset: int) -> tuple[int, int]:
        """The start (tokens) and index of the span that holds token ``offset``."""
        if self._pending:
            self._apply_removals()
        start = i = 0
        for tokens in self._tokens:
            if start + tokens > offset:
                break
            start += tokens
            i += 1
        return start, i

    # -- calls ---------------------------------------------------------------------
    def on_context_edit(self, time, turn, record) -> None:
        """A placeholder or summary stands where what it replaced stood, not at the end: move it there."""
        if self._pending:
            self._apply_removals()
        ids, tokens = self._ids, self._tokens
        for span_id, index in sorted(record.inserted, key=lambda p: p[1]):
            try:
                i = ids.index(span_id)
            except ValueError:
                continue
            ids.insert(index, ids.pop(i))
            tokens.insert(index, tokens.pop(i))

    def on_model_call(self, time, turn, prompt_tokens, output_tokens, decision, pass_id=0) -> None:
        if self._pending:
            self._apply_removals()
        window = self._total
        spans = len(self._ids)
        # A pass that reads its index from an external log sends it after the window: a tail the next call drops.
        read, write, uncached, invalidated, source = self.cache.bill(
            time, prompt_tokens, spans, window if prompt_tokens > window else None, spans)
        r_read, r_write, r_input, r_output = self._rates
        cost = read * r_read + write * r_write + uncached * r_input + output_tokens * r_output
        self.call_count += 1
        self.input_billed += prompt_tokens
        self.output_billed += output_tokens
        self.read += read
        self.write += write
        self.uncached += uncached
        self.cost += cost
        self._last_cost = cost
        if decision:
            self.decision_billed += prompt_tokens + output_tokens
            self.decision_output += output_tokens
            self.decision_cost += cost
            if pass_id:  # a prune pass (a compaction has none: its edits are charged as the policy's, not a pass's)
                self._pass = pass_id
                if self._keep_calls:
                    self.pass_costs[pass_id] = [cost, 0, 0.0]
        if invalidated:
            invalidated = self._blame(invalidated, source)
        if self._keep_calls:
            self.calls.append((self.call_count, time, turn, int(decision), pass_id,
                               prompt_tokens, read, write, uncached, output_tokens, invalidated, usd(cost)))

    def on_refetch(self, time, turn, resource, key, call_tokens, tokens, latency_s) -> None:
        self.refetch_cost += self._last_cost

    def _blame(self, invalidated: int, source) -> int:
        """Count a rewrite caused by a policy's edit, and charge it to the pass that made it; 0 for the runtime's."""
        if source == _RUNTIME:
            return 0
        rewrite = invalidated * self._rewrite_rate
        self.invalidations += 1
        self.invalidated += invalidated
        self.invalidation_cost += rewrite
        row = self.pass_costs.get(source) if isinstance(source, int) else None
        if row is not None:
            row[1] += invalidated
            row[2] += rewrite
        return invalidated

    def on_prune_pass(self, time, record) -> None:
        if self.keep_calls:
            self.pass_rows[record.pass_id] = (record.turn, record.net)

    # -- the ledger's cost columns ---------------------------------------------------
    def saving_rate(self) -> float:
        """USD per token a freed token saves on each later call: the rate it would have been billed at."""
        p = self.pricing
        if p.cache == "none":
            return p.input * _PER_TOKEN
        return (p.reuse * p.cache_read + (1 - p.reuse) * p.input) * _PER_TOKEN

    def ledger_columns(self, pass_id: int) -> tuple:
        """(decision cost, invalidated tokens, invalidation cost, pass cost, break-even turn) of one pass.

        The break-even turn is the pass's turn plus the calls it takes for
        ``net * saving_rate`` per call to reach the pass's cost; -1 when the pass
        freed nothing net, so it never pays back.
        """
        decision, invalidated, rewrite = self.pass_costs.get(pass_id, (0.0, 0, 0.0))
        total = decision + rewrite
        turn, net = self.pass_rows.get(pass_id, (0, 0))
        per_call = net * self.saving_rate()
        if total <= 0:
            breakeven = turn
        elif per_call <= 0:
            breakeven = -1
        else:
            breakeven = turn + math.ceil(total / per_call - 1e-12)
        return usd(decision), invalidated, usd(rewrite), usd(total), breakeven

    def summary(self, so_far: dict) -> dict:
        billed_all = self.input_billed + self.decision_output
        spent = self.decision_cost + self.invalidation_cost
        freed = so_far.get("sum_net_tokens", 0) + so_far.get("non_model_tokens", 0)
        if spent <= 0:
            per_net: float | str = 0.0
        elif freed <= 0:
            per_net = "inf"
        else:
            per_net = round(spent / freed, 12)
        return {
            "input_tokens_billed": self.input_billed,
            "output_tokens_billed": self.output_billed,
            "decision_tokens_billed": self.decision_billed,
            "decision_share": round(self.decision_billed / billed_all, 6) if billed_all else 0.0,
            "cache_read_tokens": self.read,
            "cache_write_tokens": self.write,
            "uncached_input_tokens": self.uncached,
            "cache_invalidations": self.invalidations,
            "invalidated_tokens": self.invalidated,
            "cost_usd": usd(self.cost),
            "decision_cost_usd": usd(self.decision_cost),
            "invalidation_cost_usd": usd(self.invalidation_cost),
            "refetch_cost_usd": usd(self.refetch_cost),
            "cost_per_net_token": per_net,
        }
