"""The engine: the agent as a SimPy process, the policy hook, and what it publishes.

The engine decides when the policy is consulted (at the end of every turn),
applies what it answers, and publishes what happens as typed events
(:mod:`prunesim.model.events`) to the observers it was given. It does not know
what any observer computes. It consults the agent model
(:mod:`prunesim.model.agent`) the same way: before each work turn's model call
(what to fetch again or redo first, run as turns of their own) and after every
turn (stop or go on). :func:`prunesim.runner.run_one` builds it.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

import simpy
from prunesim.model.agent import AgentModel, CallCounter
from prunesim.model.agent_reaction import CARRIED, HELD, LOST, RECORDED, REFETCH, Reach
from prunesim.model.editlog import EditLog
from prunesim.model.events import Bus, EditRecord, PassRecord, RunEnd
from prunesim.model.key_index import NAMING_KINDS
from prunesim.model.provenance import Provenance
from prunesim.model.scenario import Scenario
from prunesim.model.spans import NO_TAGS, PLACEHOLDER_OF, RUNTIME_DROP, SUMMARY_TAG, Span
from prunesim.model.window import Window
from prunesim.model.workload import Arrival, TurnPlan
from prunesim.policies.base import (
    BoundaryEvent,
    Clear,
    Compact,
    Evict,
    ModelPass,
    Policy,
    Restore,
    Summarize,
    Truncate,
    Warn,
    WindowView,
    named_spans,
)


class Clock(simpy.Environment):
    """SimPy's environment, with a shortcut for a process whose next timeout is the very next event.

    Most runs have one process, the agent, and nothing else queued: a timeout it
    yields is popped at once and resumes it at ``now + delay``. :meth:`advance`
    moves the clock there directly instead. It does so only when nothing is
    queued at or before that time (an event at the same time would go first, by
    SimPy's order), so events happen in the same order at the same float times
    as with the timeout: results are unchanged, the scheduling is skipped.
    """

    # The shortcut reads SimPy 4's private clock and queue; a SimPy without them gets plain timeouts.
    _SHORTCUT = all(hasattr(simpy.Environment(), name) for name in ("_now", "_queue"))

    def advance(self, delay: float) -> bool:
        """Move the clock ``delay`` on when a timeout of ``delay`` would be the next event; else False
        (the caller yields the timeout as usual)."""
        if not self._SHORTCUT:
            return False
        at = self._now + delay  # the very sum SimPy's schedule() computes
        queue = self._queue
        if delay < 0 or (queue and queue[0][0] <= at):
            return False
        self._now = at
        return True


class PolicyContractError(RuntimeError):
    """A policy broke the contract (for example, it named a span that is not in the window).

    ``policy`` is the offending policy's class, so that the command line can
    tell a user's policy at fault (bad input) from a built-in one (a bug).
    """

    def __init__(self, message: str, policy: type | None = None):
        super().__init__(message)
        self.policy = policy


class Engine(Provenance):
    """Runs one agent against one policy and publishes what happens to ``observers``."""

    def __init__(self, scenario: Scenario, policy: Policy, workload, observers=(), agent: AgentModel | None = None,
                 edit_log: EditLog | None = None):
        self.scenario = scenario
        self.agent_model = agent  # how the agent reacts to what the policy does (prunesim.model.agent); None: never
        self.stop_reason = ""  # set when the agent model says stop (its turn cap)
        self.policy = policy
        self.workload = workload
        self._counting = agent is not None and agent.counts_turns
        if self._counting:  # only then: a run without an agent model pays nothing per call for the count
            counter = CallCounter()
            self.calls = counter.calls
            observers = (*observers, counter)
        self.bus = bus = Bus(observers)
        # The hot kinds' handler tuples, held directly: a call site tests one attribute.
        self._on_appended = bus.span_appended
        self._on_removed = bus.span_removed
        self._on_removed_all = bus.spans_removed
        self._on_truncation = bus.truncation
        self.window = Window(scenario.window, scenario.budget, scenario.hard)
        # A replayed runtime checks its window where it sends a prompt (docs/transcripts.md): content enters whole.
        self.window_at_call = getattr(workload, "window_at_call", False)
        if self.window_at_call:
            self.window.arrival_ceiling = 1 << 62
        self.env = Clock()
        self.turn = 0
        # Under an agent model every model call of the agent is a turn of its own: the engine's turn (spans,
        # events, the policy's view) is the workload's plus the re-fetch and redo turns so far (0 without one).
        self.extra_turns = 0
        self.pass_count = 0
        self.deciding = False
        self.concurrent = scenario.decision.concurrent
        lat = scenario.latency
        self._lat = (lat.model_base_s, lat.model_per_input_token_s, lat.model_per_output_token_s)
        self._init_provenance(agent.needs if agent is not None else None, edit_log)
        self.work_turns = 0 if self._counting else None  # counted where an agent model may stop the run early

    # -- publishing ------------------------------------------------------------
    # Each loops over the handlers bound for its kind. Hot call sites test the
    # tuple first, so a kind nobody listens to costs a truth test, not a call.
    def _appended(self, span: Span, kept: int) -> None:
        w = self.window
        now, turn, util, added, removed = self.env.now, self.turn, w.utilization, w.appended_total, w.removed_total
        for h in self._on_appended:
            h(now, turn, span, kept, util, added, removed)

    def _removed_tokens(self, cause: str, span: Span, freed: int) -> None:
        w = self.window
        now, turn, util, added, removed = self.env.now, self.turn, w.utilization, w.appended_total, w.removed_total
        for h in self._on_removed:
            h(now, turn, cause, span, freed, util, added, removed)

    def _truncated(self, cause: str, kind: str, wanted: int, kept: int, constraint: bool = False,
                   selections: int = -1) -> None:
        for h in self._on_truncation:
            h(self.env.now, self.turn, cause, kind, wanted, kept, constraint, selections)

    def _model_call(self, prompt: int, output: int, decision: bool, pass_id: int = 0) -> None:
        for h in self.bus.model_call:
            h(self.env.now, self.turn, prompt, output, decision, pass_id)

    def agent_says_stop(self, work: bool) -> bool:
        """After a model-call turn: ask the agent model whether to go on; True when it says stop."""
        reason = self.agent_model.after_turn(work, self.calls)
        if reason:
            self.stop_reason = reason
        return bool(reason)

    def _non_model(self, action, spans: int, freed: int) -> None:
        kind = type(action).__name__.lower()
        for h in self.bus.non_model_eviction:
            h(self.env.now, self.turn, kind, action.reason, spans, freed, action.fallback)

    def _context_edit(self, record: EditRecord) -> None:
        for h in self.bus.context_edit:
            h(self.env.now, self.turn, record)

    # -- window changes ----------------------------------------------------------
    def place(self, arrival: Arrival) -> Span:
        """An arrival enters the window as a new span of this turn."""
        turn = self.turn
        return self.append(Span(self.window.new_id(), arrival.kind, arrival.tokens, turn, arrival.key,
                                turn + arrival.stale_after, arrival.pinned, arrival.tags, tool=arrival.tool,
                                call=arrival.call))

    def append(self, span: Span, index: int | None = None) -> Span:
        """Place ``span`` at the end of the window, or at ``index`` in window order."""
        w = self.window
        wanted = span.tokens
        cut = w.add(span) if index is None else w.insert(span, index).cut
        if span.tokens and self._on_appended:
            self._appended(span, span.tokens)
        if cut and self._on_truncation:
            self._truncated("forced_truncation", span.kind, wanted, span.tokens, span.is_constraint)
        return span

    def remove(self, span_id: int, cause: str) -> Span:
        w = self.window
        span = w.remove(span_id)
        if self._on_removed:
            self._removed_tokens(cause, span, span.tokens)
        self._removed(span, cause)
        return span

    def remove_each(self, span_ids, cause: str) -> list[Span]:
        """Take the named spans that are in the window out of it, as one change; the spans removed, in order.

        Observers hear one ``spans_removed`` for the whole change. When taking a span out writes to the
        window or the log itself (a tombstone, an edit-log record: a provenance-keeping run), each span is
        published as it goes instead, so that what observers hear keeps the order it happened in.
        """
        w = self.window
        held = w.by_id()
        if self.keeps_log or self._pass_tombstones:
            return [self.remove(span_id, cause) for span_id in span_ids if span_id in held]
        gone, removals, bookkeep, publish = [], [], self._removed, self._on_removed_all
        for span_id in span_ids:
            if span_id in held:
                span = w.remove(span_id)
                gone.append(span)
                if publish:
                    removals.append((cause, span, span.tokens, w.utilization, w.appended_total, w.removed_total))
                bookkeep(span, cause)
        if removals:
            now, turn = self.env.now, self.turn
            for h in self._on_removed_all:
                h(now, turn, removals)
        return gone

    # -- model calls -----------------------------------------------------------
    def model_latency(self, input_tokens: int, output_tokens: int) -> float:
        base, per_in, per_out = self._lat
        return base + per_in * input_tokens + per_out * output_tokens

    # -- the agent -------------------------------------------------------------
    def agent(self):
        """The agent's process: the initial spans, then turn after turn, the policy consulted at the end of each."""
        for arrival in self.workload.initial():
            self.place(arrival)
        bus, window = self.bus, self.window
        counting = self._counting
        for plan in self.workload:
            # (a run without an agent model reads no more than it did before there were agent models)
            self.turn = turn = plan.turn + self.extra_turns if counting else plan.turn
            yield from self.take_turn(plan)
            if counting and self.stop_reason:  # the agent stopped before the turn's call: its work is not done
                break
            for h in bus.turn_reached:
                h(turn, window.utilization)
            if not self.deciding:  # one model-driven pass at a time
                yield from self.consult()
            if self.needs is not None and bus.history:
                self.note_history()
            for h in bus.turn_end:
                h(self.env.now, turn, window.utilization, window.appended_total, window.removed_total)
            if len(self.evicted) >= self._forget_at and not self.deciding:
                self.forget_unreferenced()
            if counting:
                self.work_turns += 1
                if self.agent_says_stop(True):
                    break

    def consult(self, decide=None):
        """Ask the policy what to do with the window as it is; what doing it takes, to ``yield from``.

        Most turns the policy answers nothing: then nothing is to be done, and no generator is made for it; a
        lone action outside a concurrent runtime is applied at once (:meth:`apply`), without :meth:`act`'s.
        """
        actions = (decide or self.policy.decide)(self.view())
        if actions.__class__ is not list and actions.__class__ is not tuple:  # (a view is a tuple too)
            actions = self.as_actions(actions)
        if len(actions) == 1 and not self.concurrent:  # most answers: one action, applied in the agent's turn
            return self.apply(actions[0])
        return self.act(actions) if actions else ()

    def act(self, actions):
        """Apply the policy's actions in order (a concurrent runtime's model-driven pass runs as its own process)."""
        for action in actions:
            if isinstance(action, ModelPass) and self.concurrent:
                self.check_contract(action)
                self.deciding = True
                self.env.process(self.concurrent_pass(action))
            else:
                yield from self.apply(action)  # most actions take no simulated time: nothing to yield

    def concurrent_pass(self, action: ModelPass):
        if self.authorized(action):
            yield from self.model_pass(action)
        self.deciding = False

    def take_turn(self, plan: TurnPlan):
        """One turn's arrivals (docs/model.md): what the replayed runtime drops and puts back, the model call that
        writes the reasoning and the tool call, the tool's run, and its output."""
        env, bus, model = self.env, self.bus, self.agent_model
        if plan.drop_tags:
            self.runtime_drop(plan.drop_tags)
        for arrival in plan.before_call:
            self.place(arrival)
        if plan.rewrite_at is not None:
            for h in bus.runtime_rewrite:
                h(env.now, self.turn, plan.rewrite_at)
        if plan.warm_cache is not None:
            for h in bus.cache_warmed:
                h(env.now, self.turn, plan.warm_cache)
        if plan.drop_tags and self.policy.edits_every_call and not self.deciding:
            yield from self.consult()  # the runtime's drop moved what the policy's edits stand on
        if plan.call_at_s is not None and plan.call_at_s > env.now:  # a recorded pause
            yield env.timeout(plan.call_at_s - env.now)
        if model is not None:
            due = model.before_call(plan, plan.turn, self)
            if due:
                yield from self.react(due)
                if self.stop_reason:
                    return
        if self.window_at_call:
            self.make_room(0)
        prompt = self.window.utilization
        output = plan.reasoning.tokens + plan.tool_call.tokens if plan.output_tokens is None else plan.output_tokens
        self._model_call(prompt, output, False)
        delay = self.model_latency(prompt, output)
        if not env.advance(delay):  # the clock's shortcut; else a SimPy timeout
            yield env.timeout(delay)
        call_span = None
        if not plan.unit:  # a turn unit's reasoning and call enter with its tool output
            self.place(plan.reasoning)
            call_span = self.place(plan.tool_call)
        if not env.advance(plan.tool_latency_s):
            yield env.timeout(plan.tool_latency_s)
        output_span = self.place(plan.tool_output)
        if model is None:
            for arrival in plan.extra:
                self.place(arrival)
        else:
            work = plan.turn  # the agent knows its work by the workload's turn
            model.saw(plan.tool_call, call_span or output_span, work)  # a turn unit: the call is inside
            model.saw(plan.tool_output, output_span, work)
            for arrival in plan.extra:
                model.saw(arrival, self.place(arrival), work)
        if self.needs is not None:
            self._saw(plan)
            yield from self.meet_needs()

    def runtime_drop(self, tags: frozenset[str]) -> None:
        """Spans the replayed runtime removed on its own (a recorded compaction) leave the window.

        Not the policy's doing: no eviction is recorded for them, no tombstone is left. A placeholder a
        policy left for a dropped span carries its tag and leaves with it. A policy the runtime runs before
        every model call (``Policy.edits_every_call``) is consulted again on the window the drop left.
        """
        for span in [s for s in self.window.spans() if s.tags & tags]:
            self.window.remove(span.id)
            if self._on_removed:
                self._removed_tokens("runtime_drop", span, span.tokens)

    # -- the agent reacts (closed-loop transcript replay) -----------------------------
    def holds_span(self, span_id: int) -> bool:
        """The window holds the span's content: the span itself, or a summary that carries it."""
        w = self.window
        return span_id in w or any(SUMMARY_TAG in s.tags and span_id in s.names for s in w.spans())

    def standing(self, outputs, calls, key: str) -> int:
        """Where a work item stands (:mod:`prunesim.model.agent_reaction`): ``HELD`` (a copy of its output,
        ``outputs``, is in the window), ``CARRIED`` (a summary in the window carries one), ``RECORDED``
        (something says it was removed: a placeholder, a tombstone or a rationale naming it, the digest naming
        its key, the policy's edit log, or its tool call, ``calls``, still in the window) or ``LOST``."""
        w = self.window
        if any(i in w for i in outputs):
            return HELD
        recorded = (self.keeps_log or any(i in w for i in calls) or self.in_digest(key)
                    or any(t.evicted_id in outputs and sid in w for sid, t in self.tombstones.items()))
        for s in w.spans():
            if s.names and any(i in s.names for i in outputs):
                if SUMMARY_TAG in s.tags:
                    return CARRIED
                if s.kind in NAMING_KINDS:
                    recorded = True
        return RECORDED if recorded else LOST

    def react(self, due: tuple[Reach, ...]):
        """Run what the agent model asked for before the call: each reach's turns, the policy consulted after
        each turn of a reach that asks for it, and the agent asked after each whether to go on."""
        counting = self._counting
        for reach in due:
            for _ in range(reach.turns):
                yield from self.fetch_again(reach)
                if reach.consult and not self.deciding:
                    yield from self.consult()
                if counting and self.agent_says_stop(False):
                    return
                if reach.consult:  # a turn of its own (a resource's re-read belongs to the call that uses it)
                    self.next_turn()

    def next_turn(self) -> None:
        """The agent's next model call is a turn of its own (a re-fetch, a redo, seed 004's re-run)."""
        self.extra_turns += 1
        self.turn += 1

    def fetch_again(self, reach: Reach):
        """One turn of a re-fetch or a redo: a model call that writes the tool call, the tool, and the output at
        its recorded size; then it is published (``on_refetch`` or ``on_redo``, with the time it took: the model
        call just billed was its own)."""
        env = self.env
        content = reach.content
        start = env.now
        if self.window_at_call:
            self.make_room(0)
        prompt = self.window.utilization
        self._model_call(prompt, content.call_tokens, False)
        delay = self.model_latency(prompt, content.call_tokens)
        if not env.advance(delay):
            yield env.timeout(delay)
        call_id = -1
        if content.call_tokens:
            call_id = self.place(Arrival("tool_call", content.call_tokens, content.key, content.stale_after,
                                        tags=content.tags, tool=content.tool)).id
        delay = self.scenario.latency.tool_mean_s
        if not env.advance(delay):
            yield env.timeout(delay)
        out = self.place(Arrival("tool_output", content.tokens, content.key, content.stale_after,
                                 tags=content.tags, tool=content.tool))
        self.agent_model.fetched(reach, out.id, out.tokens, call_id)
        if reach.how == REFETCH:
            resource = getattr(content, "resource", "") or f"item {content.index}"
            for h in self.bus.refetch:
                h(env.now, self.turn, resource, content.key, content.call_tokens, out.tokens, env.now - start)
        else:
            for h in self.bus.redo:
                h(env.now, self.turn, content.key, content.call_tokens, out.tokens, env.now - start)

    def view(self) -> WindowView:
        w = self.window
        return WindowView(self.turn, w.utilization, w.budget, w.size, w.hard, w.spans(), w.unpinned(), w.by_id())

    # -- actions ---------------------------------------------------------------
    def apply(self, action):
        """Check and apply one action; what it still takes in simulated time (a model call), to ``yield from``."""
        self.check_contract(action)
        if not self.authorized(action):
            return ()
        if isinstance(action, ModelPass):
            return self.model_pass(action)
        if isinstance(action, Evict):
            self.evict(action)
        elif isinstance(action, Truncate):
            self.truncate(action)
        elif isinstance(action, Summarize):
            self.summarize(action)
        elif isinstance(action, Clear):
            self.clear(action)
        elif isinstance(action, Restore):
            self.restore(action)
        elif isinstance(action, Compact):
            return self.compact(action)
        elif isinstance(action, Warn):
            self.warn(action)
        elif isinstance(action, BoundaryEvent):
            for h in self.bus.gate_decision:
                h(self.env.now, self.turn, action.reason, action.numbers)
        else:
            raise PolicyContractError(f"policy {self.policy.name!r} returned {action!r}, which is not an action",
                                      type(self.policy))
        return ()

    def as_actions(self, answer) -> list:
        """What ``decide`` answered, when it is not a list: any iterable of actions will do, anything else is
        the policy's bug (named as such, not left to fail inside the engine)."""
        if isinstance(answer, (str, bytes, WindowView)) or not hasattr(answer, "__iter__"):
            shown = "the WindowView it was given" if isinstance(answer, WindowView) else repr(answer)
            raise PolicyContractError(f"policy {self.policy.name!r} returned {shown} from decide, "
                                      "not a list of actions", type(self.policy))
        if isinstance(answer, AbstractSet):  # the actions apply in order, and a set's order is its hashes'
            raise PolicyContractError(f"policy {self.policy.name!r} returned a {type(answer).__name__} of actions "
                                      "from decide: a set's order (which the actions apply in) changes from one "
                                      "process to the next with Python's string hashing; return a list",
                                      type(self.policy))
        return list(answer)

    def check_contract(self, action) -> None:
        """A policy may only name spans that are in the window; anything else is a bug in the policy."""
        held = self.window.by_id()
        missing = [i for i in named_spans(action) if i not in held]
        if missing:
            raise PolicyContractError(
                f"policy {self.policy.name!r} named span(s) {missing} that are not in the window (turn {self.turn})",
                type(self.policy))
        if isinstance(action, Clear) and len(action.placeholder_tokens) != len(action.span_ids):
            raise PolicyContractError(f"policy {self.policy.name!r} gave {len(action.placeholder_tokens)} "
                                      f"placeholder sizes for {len(action.span_ids)} spans (turn {self.turn})",
                                      type(self.policy))
        if isinstance(action, ModelPass) and len(action.rationale_per_span) != len(action.selected):
            # one rationale size per selection: with fewer, the selections past them would never be written,
            # and so never evicted, without a word
            raise PolicyContractError(f"policy {self.policy.name!r} gave {len(action.rationale_per_span)} "
                                      f"rationale sizes for {len(action.selected)} selections (turn {self.turn})",
                                      type(self.policy))
        if isinstance(action, Restore):
            stray = [i for i in action.span_ids if self.window.get(i).kind != "placeholder"
                     or not self.window.get(i).names or self.window.get(i).names[0] not in self.evicted]
            if stray:
                raise PolicyContractError(f"policy {self.policy.name!r} asked to restore span(s) {stray}, which are "
                                          f"not placeholders of content the engine keeps (turn {self.turn})",
                                          type(self.policy))
        if isinstance(action, Compact):
            carriable = set(action.span_ids)
            for span_id in action.span_ids:
                carriable.update(self.window.get(span_id).names)
            stray = [i for i in action.carried if i not in carriable]
            if stray:
                raise PolicyContractError(f"policy {self.policy.name!r} has a summary carry span(s) {stray} that "
                                          f"it does not replace (turn {self.turn})", type(self.policy))

    def model_pass(self, p: ModelPass):
        """Read the index, write the rationale (cut at a hard ceiling), evict what was written.

        The model call takes simulated time. In a concurrent runtime the agent's
        turns go on meanwhile, so their arrivals compete with the rationale for
        the room left under the ceiling.
        """
        w, env = self.window, self.env
        self.pass_count = pass_id = self.pass_count + 1
        pass_turn = self.turn
        before = w.utilization
        in_window = p.placement == "window"
        wanted = p.rationale_tokens
        # The pass's prompt must fit under the ceiling: a runtime at its limit drops
        # the oldest prunable content to make room (a forced truncation, lost content).
        if before + p.index_tokens > w.ceiling:
            self.make_room(p.index_tokens, exclude=frozenset(p.selected))
        if in_window:
            # Both of the pass's spans by position (id, kind, tokens, turn, key, stale_at, pinned, tags, pass_id,
            # names): by keyword they cost a pass 0.27 us more (docs/performance.md).
            index = self.append(Span(w.new_id(), "prune_index", p.index_tokens, pass_turn, "", pass_turn,
                                     p.protect_artifacts, NO_TAGS, pass_id))
            index_kept = index.tokens
        else:  # the index is read from the edit log: billed, but it must still fit the call
            index_kept = min(p.index_tokens, max(0, w.ceiling - w.utilization))
        prompt = before + index_kept
        delay = self.model_latency(prompt, wanted)
        if not env.advance(delay):
            yield env.timeout(delay)
        # The rationale is written selection by selection; a hard ceiling cuts it short.
        room = max(0, w.ceiling - w.utilization - (0 if in_window else index_kept))
        written = 0
        rationale = min(p.rationale_base, room)
        for extra in p.rationale_per_span:
            if rationale + extra > room:
                break
            rationale += extra
            written += 1
        cut = rationale < wanted
        chosen = p.selected[:written]
        self._model_call(prompt, rationale, True, pass_id)
        turn = self.turn  # a concurrent runtime's agent went on meanwhile
        if in_window and rationale:
            note = Span(w.new_id(), "prune_rationale", rationale, turn, "", turn + 1, p.protect_artifacts, NO_TAGS,
                        pass_id, tuple(chosen))
            w.add(note)  # it fits: the room was measured for it
            if self._on_appended:
                self._appended(note, rationale)
        if cut and self._on_truncation:
            self._truncated("rationale_cut", "prune_rationale", wanted, rationale, False, written)
        peak = w.utilization
        self._pass_started(p, chosen, index_kept, rationale)
        evicted = stale = 0
        gone = self.remove_each(chosen, "evict")
        for span in gone:
            evicted += span.tokens
            stale += turn >= span.stale_at
        spans = len(gone)
        if p.prune_own_rationale and in_window and rationale and note.id in w:
            # A reentrant plan: its own justification was one of its candidates.
            evicted += self.remove(note.id, "evict").tokens
            spans += 1
            stale += 1
        self._pass_tombstones = 0
        if self.bus.prune_pass:
            net = evicted - index_kept - rationale
            in_band = w.budget - before < p.index_tokens + wanted  # the pass's overhead
            record = PassRecord(pass_id, pass_turn, env.now, before, peak, w.utilization, w.budget - before,
                                p.candidates, len(p.selected), spans, index_kept, rationale, evicted, net, int(cut),
                                stale, int(in_band))
            for h in self.bus.prune_pass:
                h(env.now, record)

    def make_room(self, tokens: int, exclude: frozenset[int] = frozenset()) -> None:
        """Drop the oldest unpinned spans until ``tokens`` fit under the ceiling."""
        w = self.window
        ceiling = w.ceiling
        if w.utilization + tokens <= ceiling:
            return
        for span in w.unpinned():
            if w.utilization + tokens <= ceiling:
                break
            if span.id in exclude:
                continue
            self.remove(span.id, "forced_drop")
            if self._on_truncation:
                self._truncated("forced_drop", span.kind, span.tokens, 0)

    @staticmethod
    def non_model_cause(action) -> str:
        """The trace's cause for a non-model eviction: a gate's fallback, or the policy's own choice."""
        return f"{'fallback' if action.fallback else 'nonmodel'}_{action.reason}"

    def evict(self, action: Evict) -> None:
        freed = sum(s.tokens for s in self.remove_each(action.span_ids, self.non_model_cause(action)))
        self._non_model(action, len(action.span_ids), freed)

    def truncate(self, action: Truncate) -> None:
        if action.span_id not in self.window:
            return
        cause = self.non_model_cause(action)
        span = self.window.get(action.span_id)
        freed = self.window.shrink(action.span_id, action.keep_tokens)
        if self._on_removed and freed:  # a cut to its own size or more changes no token of the prompt
            self._removed_tokens(cause, span, freed)
        if action.span_id not in self.window:  # cut to nothing: it left the window
            self._removed(span, cause)
        self._non_model(action, 1, freed)

    def summarize(self, action: Summarize) -> None:
        freed = sum(s.tokens for s in self.remove_each(action.span_ids, self.non_model_cause(action)))
        summary = Span(self.window.new_id(), "summary", action.summary_tokens, self.turn, stale_at=self.turn + 1)
        self.append(summary)
        self._non_model(action, len(action.span_ids), freed - summary.tokens)

    # -- runtime context edits ---------------------------------------------------
    def clear(self, action: Clear) -> None:
        """Replace each span by a placeholder where it stood; the content is gone."""
        w = self.window
        sizes = dict(zip(action.span_ids, action.placeholder_tokens, strict=True))

        def placeholder(span: Span) -> Span | None:
            # It keeps the span's call (an empty one stays, as the span did) and leaves with the span's
            # content when the replayed runtime drops that.
            marker = Span(w.new_id(), "placeholder", max(0, sizes[span.id]), span.turn, key=span.key,
                          stale_at=span.stale_at, names=(span.id,), tool=span.tool, call=span.call,
                          tags=frozenset({PLACEHOLDER_OF + span.kind, *(t for t in span.tags
                                                                         if t.startswith(RUNTIME_DROP))}))
            return marker if marker.tokens or marker.call else None

        self._replace_each(action.span_ids, "cleared", placeholder, "clear", action.reason)

    def restore(self, action: Restore) -> None:
        """Put each placeholder's span back where the placeholder stands (the content is as it was)."""
        self._replace_each(action.span_ids, "restored", lambda marker: self.evicted.pop(marker.names[0]), "restore",
                           action.reason)

    def _replace_each(self, span_ids, cause: str, replacement, edit: str, reason: str) -> None:
        """Remove each span (``cause``) and put ``replacement(span)`` where it stood (None: nothing); one edit."""
        w = self.window
        before = w.utilization
        spans = freed = written = 0
        placed = []
        for span_id in span_ids:
            if span_id not in w:  # named twice
                continue
            index = w.position(span_id)
            old = self.remove(span_id, cause)
            new = replacement(old)
            if new is not None:
                self.append(new, index)  # cut at a hard ceiling like any append
                if new.id in w:
                    placed.append(new.id)
                written += new.tokens
            spans += 1
            freed += old.tokens
        self._context_edit(EditRecord(edit, reason, spans, freed, written, 0, 0, 0, before, w.utilization,
                                      self._placed(placed)))

    def _placed(self, span_ids: list[int]) -> tuple[tuple[int, int], ...]:
        """(id, index in window order) of spans an edit put inside the window, for observers that keep the order."""
        if not span_ids:
            return ()
        wanted = set(span_ids)
        return tuple((s.id, i) for i, s in enumerate(self.window.spans()) if s.id in wanted)

    def compact(self, action: Compact):
        """A model call reads the window and writes a summary; it replaces the named spans where the first stood.

        Content a replaced span held is carried by the summary (``summarized``) or lost
        (``summary_dropped``); content an earlier summary carried is judged again, and what the
        new summary drops is lost now (published with nothing freed: it left the window before).
        """
        w = self.window
        before = w.utilization
        prompt = before + action.instruction_tokens
        delay = self.model_latency(prompt, action.summary_tokens)
        if not self.env.advance(delay):
            yield self.env.timeout(delay)
        self._model_call(prompt, action.summary_tokens, True)
        named = set(action.span_ids)
        replaced = [s for s in w.spans() if s.id in named]
        if not replaced:
            return
        index = w.position(replaced[0].id)
        carried = set(action.carried)
        names: list[int] = []
        kept = dropped = freed = 0
        for span in replaced:
            if SUMMARY_TAG in span.tags:  # an earlier summary: each piece of content it carries is judged again
                for content_id in span.names:
                    if content_id in carried:
                        names.append(content_id)
                        kept += 1
                    else:
                        self._content_lost(content_id)
                        dropped += 1
                freed += self.remove(span.id, "summarized").tokens
            elif span.id in carried:
                names.append(span.id)
                kept += 1
                freed += self.remove(span.id, "summarized").tokens
            else:
                dropped += 1
                freed += self.remove(span.id, "summary_dropped").tokens
        summary = self.append(Span(w.new_id(), "summary", action.summary_tokens, self.turn, names=tuple(names),
                                   tags=frozenset({SUMMARY_TAG})), index)
        self._context_edit(EditRecord("compact", action.reason, len(replaced), freed, summary.tokens, prompt, kept,
                                      dropped, before, w.utilization,
                                      self._placed([summary.id] if summary.id in w else [])))

    def _content_lost(self, span_id: int) -> None:
        """Content an earlier summary carried is dropped by the next one: it is lost now."""
        span = self.evicted.get(span_id)
        if span is None:
            return
        if self._on_removed:
            self._removed_tokens("summary_dropped", span, 0)
        if span.kind == "tool_output" and span.key and self.needs is not None:
            self.removed_turn[span.key] = self.turn

    def warn(self, action: Warn) -> None:
        w = self.window
        before = w.utilization
        note = self.append(Span(w.new_id(), "warning", action.tokens, self.turn, stale_at=self.turn + 1))
        self._context_edit(EditRecord("warning", action.reason, 0, 0, note.tokens, 0, 0, 0, before, w.utilization))

    # -- running ---------------------------------------------------------------
    def run(self) -> None:
        self.env.process(self.agent())
        self.env.run()
        w = self.window
        end = RunEnd(
            time_s=self.env.now,
            utilization=w.utilization,
            unrecorded_evictions=self.unrecorded_evictions(),
            tombstone_tokens=sum(s.tokens for s in w.spans() if s.kind == "tombstone"),
            keeps_edit_log=self.keeps_log,
            edit_log=self.edit_log,
            anchor=self.anchor,
            digest_tokens=self.digest_tokens(),
            placeholder_tokens=sum(s.tokens for s in w.spans() if s.kind == "placeholder"),
            outcome=self.agent_model.outcome() if self.agent_model is not None else None,
            work_turns=self.work_turns,
        )
        for h in self.bus.run_end:
            h(end)
