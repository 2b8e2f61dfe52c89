"""The observer interface: what is bound, in which order, and what a new observer takes."""

from __future__ import annotations

import pytest
from prunesim import observe
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts.workload import TranscriptWorkload, WorkloadData
from prunesim.model import events
from prunesim.model.events import KINDS, Bus, Observer, PassRecord
from prunesim.model.spans import Span
from prunesim.observe.metrics.cost import LEDGER_COLUMNS as COST_LEDGER_COLUMNS
from prunesim.observe.recorder import LEDGER_COLUMNS, Recorder
from prunesim.runner import run_one
from prunesim.studies.transcript_replay import replay


class Counts(Observer):
    """Counts every kind it hears."""

    def __init__(self, run=None):
        self.heard: dict[str, int] = {}


    def summary(self, so_far):
        return {"heard": dict(self.heard)}


for _kind in KINDS:
    def _handler(self, *args, _kind=_kind):
        self.heard[_kind] = self.heard.get(_kind, 0) + 1
    setattr(Counts, "on_" + _kind, _handler)


class OnlyPasses(Observer):
    def __init__(self, run=None):
        self.rows: list[PassRecord] = []

    def on_prune_pass(self, time, record):
        self.rows.append(record)

    def summary(self, so_far):
        return {"my_pass_count": len(self.rows), "seen_passes_metric": so_far.get("passes")}


def test_only_the_kinds_an_observer_overrides_are_bound():
    obs = OnlyPasses()
    bus = Bus([obs])
    assert bus.prune_pass == (obs.on_prune_pass,)
    for kind in KINDS:
        if kind != "prune_pass":
            assert getattr(bus, kind) == (), kind


def test_handlers_run_in_the_order_observers_are_given_and_muted_kinds_are_not_bound():
    a, b = Counts(), Counts()
    b.muted = frozenset({"span_appended"})
    bus = Bus([a, b])
    assert [h.__self__ for h in bus.prune_pass] == [a, b]
    assert [h.__self__ for h in bus.span_appended] == [a]


def test_anything_that_is_not_an_observer_is_refused():
    with pytest.raises(TypeError):
        Bus([object()])


def recording() -> WorkloadData:
    parts = [{"type": "part", "turn": 0, "kind": "system", "tokens": 5000}]
    parts += [{"type": "part", "turn": t, "kind": "tool_output", "tokens": 3000, "key": f"k{t}"} for t in (1, 2, 3)]
    header = {"type": "header", "prunesim_workload": 2, "name": "r", "format": "claude-code", "tokenizer": "pieces",
              "model": "claude-opus-4-5", "turns": 3, "parts": 4, "warm_cache": 5000,
              "call_times": [0.0, 10.0, 20.0], "events": [{"event": "cache_break", "turn": 3, "at_tokens": 5000}]}
    return WorkloadData(header, parts)


def test_every_kind_is_published_in_a_run_that_exercises_it(monkeypatch):
    """Each event kind reaches an observer in some shipped scenario and policy."""
    heard: dict[str, int] = {}
    monkeypatch.setitem(observe.REGISTRY, "counts", Counts)
    for name, policy, overrides in [("oscillation-40", "naive", {}), ("oscillation-40", "slack-gated", {}),
                                    ("oscillation-40", "slack-gated", {"gate.knowledge": "oracle"}),  # it falls back
                                    ("reentrancy-60", "tombstoned", {}), ("reentrancy-60", "naive", {}),
                                    ("oscillation-40", "observation-masking", {}), ("oscillation-40", "noop", {}),
                                    ("reentrancy-60", "tombstoned", {"tombstone.budget": 200}),
                                    # under an agent model, work with no record left is redone
                                    ("reentrancy-60", "naive", {"agent.profile": "swe-agent"})]:
        result = run_one(sc.load(name, overrides), policy, 0, trace="none")
        for kind, n in result.summary.get("heard", {}).items():
            heard[kind] = heard.get(kind, 0) + n
    # A replayed agent re-fetches a read that clear-tool-uses cleared before it edits the file.
    parts = [{"turn": 0, "kind": "system", "tokens": 300},
             {"turn": 1, "kind": "tool_call", "tokens": 20, "key": "cat a", "fetches": ["file:a"]},
             {"turn": 1, "kind": "tool_output", "tokens": 5000, "key": "cat a"}]
    for turn in (2, 3, 4):
        parts += [{"turn": turn, "kind": "tool_call", "tokens": 20, "key": f"ls {turn}"},
                  {"turn": turn, "kind": "tool_output", "tokens": 50, "key": f"ls {turn}"}]
    parts.append({"turn": 5, "kind": "tool_call", "tokens": 20, "key": "edit a", "uses": ["file:a"]})
    workload = TranscriptWorkload(WorkloadData({"name": "edit", "turns": 5}, parts))
    replayed = sc.load("transcript", {"turns": 5, "clear_tool_uses.trigger": 1000, "clear_tool_uses.keep": 1})
    result = run_one(replayed, "clear-tool-uses", 0, trace="none", workload=workload)
    for kind, n in result.summary.get("heard", {}).items():
        heard[kind] = heard.get(kind, 0) + n
    # A replayed recording publishes its runtime's cache events: a warm start and a recorded cache break.
    result, _ = replay(recording(), sc.load("transcript"), "noop")
    for kind, n in result.summary.get("heard", {}).items():
        heard[kind] = heard.get(kind, 0) + n
    # A self-edit refusal needs a misbehaving planner (tests/test_tombstoned.py); everything else happens.
    assert set(KINDS) - set(heard) == {"self_edit_refused"}


def test_a_new_observer_is_one_class_and_one_registry_line(monkeypatch):
    monkeypatch.setitem(observe.REGISTRY, "only-passes", OnlyPasses)
    result = run_one(sc.load("oscillation-40"), "naive", 3, trace="none")
    assert result.summary["my_pass_count"] == result.summary["passes"] > 0
    assert result.summary["seen_passes_metric"] == result.summary["passes"]  # later observers see earlier parts
    # Its own figures follow the registered metrics, in the order it gave them.
    assert list(result.summary)[-2:] == ["my_pass_count", "seen_passes_metric"]


def test_the_ledger_is_the_pass_records_the_engine_published(monkeypatch):
    monkeypatch.setitem(observe.REGISTRY, "only-passes", OnlyPasses)
    captured = []
    original = OnlyPasses.summary

    def keep(self, so_far):
        captured.extend(self.rows)
        return original(self, so_far)

    monkeypatch.setattr(OnlyPasses, "summary", keep)
    result = run_one(sc.load("oscillation-40"), "naive", 3, trace="turns")
    n = len(PassRecord._fields)  # the engine's record first; the cost observer's columns are appended after it
    assert [tuple(r) for r in captured] == [row[:n] for row in result.ledger]
    assert all(len(row) == len(LEDGER_COLUMNS) for row in result.ledger)
    assert LEDGER_COLUMNS[0] == "pass" and LEDGER_COLUMNS[1:n] == PassRecord._fields[1:]
    assert LEDGER_COLUMNS[n:] == COST_LEDGER_COLUMNS


def test_a_recorder_keeping_turns_hears_no_per_change_kind_and_one_keeping_all_no_turn_end():
    turns, every = Bus([Recorder("turns")]), Bus([Recorder("all")])
    assert turns.span_appended == turns.span_removed == () and turns.turn_end
    assert every.span_appended and every.span_removed and every.turn_end == ()


def test_an_unrecorded_run_keeps_nothing_and_has_the_same_summary():
    scenario = sc.load("reentrancy-60")
    quiet, full = run_one(scenario, "tombstoned", 2, trace="none"), run_one(scenario, "tombstoned", 2, trace="all")
    assert quiet.summary == full.summary
    assert quiet.ledger == [] and quiet.events == [] and not quiet.recorder.trace["seq"]
    assert full.ledger and full.events and full.recorder.trace["seq"]


class Removals(Observer):
    """Hears single removals only: the base class hands it each removal of a change."""

    def __init__(self, run=None):
        self.rows: list[tuple] = []
        self.changes = 0

    def on_span_removed(self, time, turn, cause, span, freed, utilization, appended_total, removed_total):
        self.rows.append((time, turn, cause, span.id, -freed, utilization, appended_total, removed_total))

    def summary(self, so_far):
        return {}


class Changes(Removals):
    """Hears whole changes as well, and counts them before the base class hands their removals on."""

    def on_spans_removed(self, time, turn, removals):
        self.changes += 1
        super().on_spans_removed(time, turn, removals)


def test_a_change_of_several_removals_reaches_an_observer_of_single_removals_one_by_one():
    """A pass's evictions are published as one change; an observer that overrides only ``on_span_removed``
    still hears every removal, in order and with the figures the trace records for it."""
    single, changes = Removals(), Changes()
    result = run_one(sc.load("oscillation-40", {"turns": 400}), "naive", 0, trace="all", observers=[single, changes])
    t = result.recorder.trace
    columns = ("time_s", "turn", "event", "span_id", "delta", "utilization", "appended_total", "removed_total")
    traced = [row for row in zip(*(t[c] for c in columns), strict=True) if row[2] in ("evict", "forced_drop")]
    assert len(traced) > 100 and single.rows == traced and changes.rows == traced
    assert changes.changes < len(traced)  # passes evicted several spans in one change


def test_muting_single_removals_mutes_the_changes_made_of_them():
    muted = Removals()
    muted.muted = frozenset({"span_removed"})
    bus = Bus([Removals(), muted, Changes()])
    assert len(bus.spans_removed) == 2 and len(bus.span_removed) == 2


# -- deferred observers ------------------------------------------------------------------------------
class Heard(Observer):
    """Writes down what it hears of the frequent kinds (of a span, only its id), and when the run ends."""

    def __init__(self, deferred: bool):
        self.deferred = deferred
        self.rows: list[tuple] = []

    def on_span_appended(self, time, turn, span, kept, utilization, appended_total, removed_total):
        self.rows.append(("append", time, turn, span.id, kept, utilization))

    def on_span_removed(self, time, turn, cause, span, freed, utilization, appended_total, removed_total):
        self.rows.append((cause, time, turn, span.id, freed, utilization))

    def on_model_call(self, time, turn, prompt_tokens, output_tokens, decision, pass_id=0):
        self.rows.append(("call", time, turn, prompt_tokens, output_tokens, pass_id))

    def on_prune_pass(self, time, record):
        self.rows.append(("pass", time, record.turn, record.pass_id))

    def on_run_end(self, end):
        self.rows.append(("end", end.time_s, end.utilization))


class Watcher(Heard):
    """A live observer that notes, at each turn's end, how much a deferred one has heard so far."""

    def __init__(self, other: Heard):
        super().__init__(deferred=False)
        self.other = other
        self.behind = 0

    def on_turn_end(self, time, turn, utilization, appended_total, removed_total):
        self.behind = max(self.behind, len(self.rows) - len(self.other.rows))


def test_a_deferred_observer_hears_every_event_in_order_before_the_run_ends():
    """Several batches' worth of events: the deferred observer hears them later than a live one (it is behind
    during the run), but all of them, in the same order and with the same arguments, before ``run_end``."""
    deferred = Heard(deferred=True)
    live = Watcher(deferred)
    run_one(sc.load("oscillation-40", {"turns": 600}), "naive", 0, trace="none", observers=[deferred, live])
    assert len(live.rows) > 3 * events.DEFERRED_BATCH
    assert live.behind > 0
    assert deferred.rows == live.rows and deferred.rows[-1][0] == "end"


def test_deferred_handlers_are_kept_in_one_entry_per_kind_and_run_end_flushes_first():
    a, b, c = Heard(deferred=True), Heard(deferred=False), Heard(deferred=True)
    bus = Bus([a, b, c])
    assert len(bus.span_appended) == 2 and bus.span_appended[0] == b.on_span_appended  # live, then the keeper
    assert bus.run_end == (bus.flush, a.on_run_end, b.on_run_end, c.on_run_end)
    for h in bus.model_call:
        h(1.0, 1, 100, 10, False)
    assert b.rows and not a.rows and not c.rows
    bus.flush()
    assert a.rows == b.rows == c.rows


def test_the_cost_observer_is_deferred_only_when_nothing_reads_its_rows_during_the_run():
    sc_ = sc.load("oscillation-40", {"turns": 10})
    window, passes, cost = (observe.REGISTRY[name](observe.RunContext(sc_, "naive", 0, sc_.trigger, "none"))
                            for name in ("window", "passes", "cost"))
    assert window.deferred and passes.deferred and cost.deferred and "prune_pass" in cost.muted
    cost.keep_calls = True  # what a streaming recorder's attach does: it writes the rows as they come
    assert not cost.deferred and not cost.muted


def test_the_pass_metrics_take_the_first_trigger_from_the_window_metrics():
    """Passes before the first trigger, then the trigger, then more: the pass metrics that follow the window
    metrics count the halves as those that hear every append do."""
    scenario = sc.load("oscillation-40", {"turns": 40})
    run = observe.RunContext(scenario, "naive", 0, scenario.trigger)
    window, following = build_observers_named(run, "window", "passes")
    hearing = observe.REGISTRY["passes"](run)
    assert "span_appended" in following.muted and "span_appended" not in hearing.muted

    def record(pass_id, turn):
        return PassRecord(pass_id, turn, float(turn), 0, 0, 0, 0, 3, 1, 1, 100, 50, 400, 250, 0, 1, 0)

    span = Span(1, "tool_output", 100, 1)
    pass_id = 0
    for turn in range(1, 41):
        utilization = scenario.trigger if turn >= 12 else scenario.trigger - 1000
        for obs in (window, hearing):
            obs.on_span_appended(float(turn), turn, span, 100, utilization, 0, 0)
        if turn in (3, 7, 12, 15, 30, 38):
            pass_id += 1
            for obs in (following, hearing):
                obs.on_prune_pass(float(turn), record(pass_id, turn))
    so_far = {"band_width": 500}
    assert following.summary(so_far) == hearing.summary(so_far)
    assert following.summary(so_far)["passes_first_half"] + following.summary(so_far)["passes_second_half"] == 4


def build_observers_named(run, *names):
    built = observe.build_observers(run)
    return [next(o for o in built if type(o) is observe.REGISTRY[name]) for name in names]


@pytest.mark.parametrize(("policy", "overrides", "exercised"), [
    ("slack-gated", {"gate.fallback": "truncate", "gate.truncate_keep": 50}, "fallback_evictions"),  # shrunk in place
    ("clear-tool-uses", {"clear_tool_uses.trigger": 15000}, "clearings"),  # placeholders inserted
    ("llm-summary", {"llm_summary.threshold": 0.5, "llm_summary.unit": "window"}, "compactions"),  # a summary inserted
    ("noop", {"budget_kind": "soft"}, "overflow_turns"),  # turns that end above the budget
])
def test_deferred_observers_summarize_a_run_as_if_they_heard_each_event_as_it_came(monkeypatch, policy, overrides,
                                                                                     exercised):
    """The deferral rule (prunesim.model.events): a deferred observer reads of a span only what never changes once
    it is in the window. Heard at once (a batch of one) or only when the run ends (one batch of everything), the
    run's summary is the same, on runs whose spans are cut in place and whose edits insert spans."""
    scenario = sc.load("oscillation-40", {"turns": 300, **overrides})
    summaries = []
    for batch in (1, 1 << 30):
        monkeypatch.setattr(events, "DEFERRED_BATCH", batch)
        summaries.append(run_one(scenario, policy, 0, trace="none").summary)
    assert summaries[0][exercised] > 0
    assert summaries[0] == summaries[1]
