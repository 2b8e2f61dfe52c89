"""llm-summary:openhands-sdk and :openhands-sdk-class against openhands-sdk's own condenser, call by call.

Every shipped transcript (``../shared/traces`` or ``PRUNESIM_TRACES``) is replayed under the presets,
and the SDK's ``LLMSummarizingCondenser`` is run on the same turns (tests/openhands_sdk_reference.py, in
the SDK's own Python: tests/openhands_sdk_env.py). Before every model call the two must hold the same:
the number of events (prunesim reading its window as the SDK's events), which parts have been
condensed away and before which call, and the summaries in the window, in order. Three settings: the
default agent's preset as shipped (80 events, keep_first 4), the class defaults' (240, 2), and a token
trigger halfway from each run's first prompt to its peak with 120 events and keep_first 1, whose cuts
fall where the sizes put them and reach into the task. Hand-made workloads hold the cases the shipped
ones do not reach (a tool loop, the hard reset, a cut freed by the runtime's own drop).

Both sides replay the open loop (the recorded turns, no re-fetch) with a summary of fixed size. The
SDK's environment is made on first use (``.ci/run`` makes it before the suite); without a Python 3.12
the test skips with the reason, except in CI (``CI`` set), where it fails. One SDK process serves the
whole batch, and runs while prunesim's side does.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from openhands_sdk_env import Unavailable
from openhands_sdk_env import python as sdk_python
from prunesim.api import load_scenario
from prunesim.io.scenario_files import replace
from prunesim.io.transcripts.workload import TranscriptWorkload, WorkloadData, replaced_after_compaction
from prunesim.model.engine import Engine
from prunesim.model.events import Observer
from prunesim.model.spans import SUMMARY_TAG
from prunesim.policies import get_policy
from prunesim.policies.sdk_condenser import Replies, sdk_events
from prunesim.runner import scenario_for, streams
from shared_traces import TRACES, needs

FOLDERS = ("claude-code-dev", "codex", "mini-swe-agent", "mini-swe-agent-dev", "openhands", "swe-agent")
REFERENCE = Path(__file__).with_name("openhands_sdk_reference.py")
# [summary] mean_tokens with sigma 0: every summary this size, at most what it replaces; small enough that a
# condensation on tokens always brings the smallest run back under its trigger (else the SDK condenses again).
SUMMARY_TOKENS = 500
PART = "sdk-reference-part:"  # the tag naming, on each span, the workload part it came from


@dataclass(frozen=True)
class Setting:
    """One condenser configuration, given to both sides. ``shipped``: the preset as it is, no overrides."""

    name: str
    max_size: int
    keep_first: int
    minimum_progress: float = 0.1
    tokens: int | None = None  # the token trigger (None: the agent LLM's limit, the window, which no prompt reaches)
    halfway: bool = False  # the token trigger halfway from the run's first prompt to its peak
    preset: str = "llm-summary:openhands-sdk"
    shipped: bool = False

    def limit(self, data: WorkloadData) -> int | None:
        if not self.halfway:
            return self.tokens
        start = sum(p["tokens"] for p in data.parts if p["turn"] == 0)
        return start + (peak(data) - start) // 2

    def window(self, data: WorkloadData) -> tuple[int, float]:
        """The replay's window (above every prompt: nothing is cut) and the token trigger's share of it, a
        power of two so that prunesim's trigger is the limit exactly; a share of 1 is the preset's."""
        limit = self.limit(data)
        if limit is None:
            return 2 * peak(data), 1.0
        scale = 2
        while scale * limit < 2 * peak(data):
            scale *= 2
        return scale * limit, 1 / scale

    def overrides(self, data: WorkloadData) -> dict:
        if self.shipped:
            return {}
        return {"llm_summary.threshold": self.max_size, "llm_summary.unit": "events",
                "llm_summary.keep_first": self.keep_first, "llm_summary.minimum_progress": self.minimum_progress,
                "llm_summary.max_tokens_of_window": self.window(data)[1]}


SETTINGS = [
    Setting("default-agent", 80, 4, preset="llm-summary:openhands-sdk", shipped=True),
    Setting("class-defaults", 240, 2, preset="llm-summary:openhands-sdk-class", shipped=True),
    Setting("halfway-keep-1", 120, 1, halfway=True),
]


# -- the runs -------------------------------------------------------------------
@functools.cache
def shipped_runs() -> tuple[tuple[str, WorkloadData], ...]:
    from prunesim.studies.transcript_replay import expand, iter_workloads

    folders = [TRACES / f for f in FOLDERS if (TRACES / f).is_dir()]  # none: the hand-made cases alone
    return tuple((f"{folder.name}/{data.name}", data) for folder in folders for path in expand([folder])
                 for data in iter_workloads(path))


def peak(data: WorkloadData) -> int:
    from prunesim.studies.transcript_replay import peak_tokens

    return max(1, peak_tokens(data))


def hand_made(name: str, turns: list[list[dict]], task: int = 50, events: list | None = None) -> WorkloadData:
    """A workload from per-turn parts (turn numbers filled in), after a system prompt and a task."""
    parts = [{"type": "part", "turn": 0, "kind": "system", "tokens": 200},
             {"type": "part", "turn": 0, "kind": "user", "tokens": task}]
    for t, turn in enumerate(turns, 1):
        parts.extend({"type": "part", "turn": t, **p} for p in turn)
    header = {"type": "header", "prunesim_workload": 2, "name": name, "format": "test", "tokenizer": "pieces",
              "turns": len(turns), "events": events or []}
    return WorkloadData(header, parts)


def think(tokens: int = 20, **more) -> dict:
    return {"kind": "reasoning", "tokens": tokens, "thinking": True, **more}


def text(tokens: int = 15, **more) -> dict:
    return {"kind": "reasoning", "tokens": tokens, **more}


def call(n: int, tokens: int = 30, **more) -> dict:
    return {"kind": "tool_call", "tokens": tokens, "call": n, "key": f"k{n}", "tool": "bash", **more}


def result(n: int, tokens: int = 400, **more) -> dict:
    return {"kind": "tool_output", "tokens": tokens, "call": n, "key": f"k{n}", "tool": "bash", **more}


def user(tokens: int = 40, **more) -> dict:
    return {"kind": "user", "tokens": tokens, **more}


def tool_turns(first: int, count: int, thinking: bool = False) -> list[list[dict]]:
    """``count`` turns of one call each (numbered from ``first``), a thought before it (thinking or text)."""
    return [[think() if thinking else text(), call(n), result(n)] for n in range(first, first + count)]


# A tool loop: turn 1's action has thinking, turns 2 to 6 act without (the loop goes on), then a user message
# ends it. keep_first 3 falls inside the loop, so the SDK finds no place to start before its end.
LOOP = [[think(), call(1), result(1)], *tool_turns(2, 4), [text(), call(6), result(6), user()],
        *tool_turns(7, 6)]
# The same with the thinking dropped by the runtime before call 6: the loop is gone and a cut is free there.
LOOP_DROPPED = [[think(dropped_at=6), call(1), result(1)], *LOOP[1:]]
# A hard reset: past the token trigger, the events that free enough are too few (under minimum_progress).
RESET = [[text(), call(1), result(1, 9000)], *tool_turns(2, 30)]
# Responses without a call (thinking and text: one message), and user replies a cut may fall before.
MESSAGES = [turn for n in range(1, 9) for turn in ([think(), text(), user()], [think(), text(), call(n), result(n)])]
# mini-swe-agent's format error (a call that never ran, a user notice after it), results the runtime
# cleared before their calls left (with a user message after one), parallel calls answered out of order.
REPLIES = [[text(), call(1), user(60)], [text(), call(2), result(2, dropped_at=3), user(30)],
           [text(), call(3), call(4), call(5), result(5), result(3), result(4, dropped_at=5)],
           *tool_turns(6, 10)]
ISSUE = [[think(20), text(15), call(n, 30), result(n, 400)] for n in range(1, 13)]  # issue 41's example

HAND = {
    "issue-41": (hand_made("issue-41", ISSUE), Setting("events-10-keep-2", 10, 2)),
    "tool-loop": (hand_made("tool-loop", LOOP), Setting("events-10-keep-3", 10, 3)),
    "tool-loop-dropped": (hand_made("tool-loop-dropped", LOOP_DROPPED), Setting("events-10-keep-3", 10, 3)),
    "hard-reset": (hand_made("hard-reset", RESET), Setting("tokens-15000", 240, 2, tokens=15_000)),
    "messages": (hand_made("messages", MESSAGES), Setting("events-12-keep-2", 12, 2)),
    "replies": (hand_made("replies", REPLIES), Setting("events-16-keep-2", 16, 2)),
}


# -- the SDK's side ---------------------------------------------------------------
def reference_run(data: WorkloadData, settings) -> dict:
    moved = replaced_after_compaction(data)
    # A part of no size without a call never enters prunesim's window (docs/model.md): the SDK, which
    # would hold an empty message, is not given it either (one in the shipped transcripts).
    parts = [[i, p["turn"], p["kind"], p["tokens"], p.get("call", 0), int(bool(p.get("thinking"))),
              p.get("dropped_at", 0), int(i in moved)] for i, p in enumerate(data.parts)
             if p["tokens"] or p.get("call")]
    return {"turns": data.turns, "parts": parts, "settings": [
        {"max_size": s.max_size, "keep_first": s.keep_first, "minimum_progress": s.minimum_progress,
         "max_tokens": s.limit(data), "summary_tokens": SUMMARY_TOKENS} for s in settings]}


def start_reference(folder: Path) -> subprocess.Popen:
    """The SDK's side, started first: it imports the SDK (seconds) while the transcripts load. Its output and
    errors go to files; the batch comes on stdin (:func:`send_batch`)."""
    try:
        exe = sdk_python()
    except Unavailable as err:
        if os.environ.get("CI"):  # .ci/run prepared it: in CI the comparison must run
            pytest.fail(f"needs openhands-sdk's environment: {err}")
        pytest.skip(f"needs openhands-sdk's environment: {err}")
    with open(folder / "out.json", "w") as out, open(folder / "err.txt", "w") as err:
        return subprocess.Popen([str(exe), str(REFERENCE)], stdin=subprocess.PIPE, stdout=out, stderr=err, text=True)


def send_batch(proc: subprocess.Popen, jobs) -> None:
    """The batch on the SDK's stdin, from a thread: the SDK reads it once its imports are done."""
    batch = json.dumps({"runs": [reference_run(data, settings) for _, data, settings in jobs]})

    def write():
        with proc.stdin:
            proc.stdin.write(batch)

    threading.Thread(target=write, daemon=True).start()


def finish_reference(proc: subprocess.Popen, folder: Path) -> list:
    assert proc.wait() == 0, f"the SDK's side failed: {(folder / 'err.txt').read_text().strip()[-2000:]}"
    return json.loads((folder / "out.json").read_text())["results"]


# -- prunesim's side -----------------------------------------------------------------
class Labelled(TranscriptWorkload):
    """The workload as replayed, each span tagged with the index of its part (an inert tag: nothing reads it)."""

    def __init__(self, data: WorkloadData):
        super().__init__(data)
        self.index = {id(p): i for i, p in enumerate(data.parts)}

    def _arrival(self, p, *args, **kwargs):
        arrival = super()._arrival(p, *args, **kwargs)
        arrival.tags = arrival.tags | {f"{PART}{self.index[id(p)]}"}
        return arrival


class Held(Observer):
    """Before each agent model call: the window read as the SDK's events (with the policy's own judgements),
    and its summaries, in order; when each part was condensed away."""

    def __init__(self, window, replies: Replies):
        super().__init__()
        self.window = window
        self.replies = replies
        self.calls: list[dict] = []
        self.condensed: dict[int, int] = {}  # part -> the call before which a condensation took it
        self.label: dict[int, str] = {}  # summary span id -> "turn.n"
        self.made: dict[int, int] = {}  # turn -> summaries written at it
        self.peak = 0

    def on_turn_end(self, time, turn, utilization, appended_total, removed_total) -> None:
        self.peak = max(self.peak, utilization)

    def on_span_removed(self, time, turn, cause, span, freed, utilization, appended_total, removed_total) -> None:
        if cause in ("summarized", "summary_dropped"):
            part = next((int(t[len(PART):]) for t in span.tags if t.startswith(PART)), None)
            if part is not None:
                self.condensed.setdefault(part, len(self.calls) + 1)

    def on_context_edit(self, time, turn, record) -> None:
        if record.action == "compact":
            for span_id, _ in record.inserted:
                self.made[turn] = self.made.get(turn, 0) + 1
                self.label[span_id] = f"{turn}.{self.made[turn]}"

    def on_model_call(self, time, turn, prompt, output, decision, pass_id=0) -> None:
        if not decision:
            spans = self.window.spans()
            self.calls.append({"events": len(sdk_events(spans, self.replies)),
                               "summaries": [self.label[s.id] for s in spans if SUMMARY_TAG in s.tags]})


def prunesim_calls(data: WorkloadData, setting: Setting) -> Held:
    """What the preset held before each model call of the workload."""
    window, _ = setting.window(data)
    cls = get_policy(setting.preset)
    # Open loop: the SDK is handed the recorded history, so the replayed agent must not re-fetch beside it.
    scenario = scenario_for(replace(load_scenario("transcript"), {
        "window": window, "budget": window, "turns": data.turns, "trigger": 1, "reaction.mode": "none",
        "summary.sigma": 0, "summary.mean_tokens": SUMMARY_TOKENS, **setting.overrides(data)}), cls)
    policy = cls(scenario, streams(0)["policy"])
    if setting.shipped:  # the preset as shipped holds what the SDK is given
        p = policy.params
        assert (p.threshold, p.keep_first, p.minimum_progress) == (setting.max_size, setting.keep_first,
                                                                    setting.minimum_progress)
    engine = Engine(scenario, policy, Labelled(data), [held := Held(None, policy.replies)])
    held.window = engine.window
    engine.run()
    return held


# -- the comparison -------------------------------------------------------------------
def disagreements(theirs: dict, ours: Held) -> list[str]:
    """The calls where the two differ, each said in a few words (none: they agree)."""
    condensed = {part: c["call"] for c in theirs["condensations"] for part in c["parts"]}
    out = []
    for k, (a, b) in enumerate(zip(theirs["calls"], ours.calls, strict=True), 1):
        parts_a = {p for p, c in condensed.items() if c <= k}
        parts_b = {p for p, c in ours.condensed.items() if c <= k}
        if a != b or parts_a != parts_b:
            out.append(f"call {k}: SDK {a['events']} events, summaries {a['summaries']}, {len(parts_a)} parts "
                       f"condensed; prunesim {b['events']}, {b['summaries']}, {len(parts_b)} "
                       f"(only SDK: {sorted(parts_a - parts_b)[:8]}, only prunesim: {sorted(parts_b - parts_a)[:8]})")
    return out


@dataclass
class Compared:
    run: str
    setting: Setting
    data: WorkloadData
    theirs: dict
    ours: Held
    bad: list[str]


@functools.cache
def compared() -> tuple[Compared, ...]:
    """Every shipped run at every setting and every hand-made case: the two sides and where they differ."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = start_reference(Path(tmp))
        try:
            jobs = [(name, data, SETTINGS) for name, data in shipped_runs()]
            jobs += [(name, data, [setting]) for name, (data, setting) in HAND.items()]
            send_batch(proc, jobs)
            ours = [[prunesim_calls(data, s) for s in settings] for _, data, settings in jobs]
            theirs = finish_reference(proc, Path(tmp))
        finally:
            if proc.poll() is None:  # a skip or a failure on prunesim's side: the SDK's is not waited for
                proc.kill()
                proc.wait()
    return tuple(Compared(name, s, data, t, o, disagreements(t, o))
                 for (name, data, settings), ts, os_ in zip(jobs, theirs, ours, strict=True)
                 for s, t, o in zip(settings, ts, os_, strict=True))


def result_of(run: str) -> Compared:
    return next(c for c in compared() if c.run == run)


def condensed_before(c: Compared) -> list[int]:
    """The calls before which the SDK condensed."""
    return sorted({x["call"] for x in c.theirs["condensations"] if x["call"] <= len(c.theirs["calls"])})


# -- the tests -------------------------------------------------------------------------
@needs(*FOLDERS)
@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_every_shipped_transcript_condenses_where_the_sdk_does(setting):
    results = [c for c in compared() if c.setting == setting and c.run not in HAND]
    bad = [f"{c.run}: {c.bad[0]}" for c in results if c.bad]
    assert not bad, f"{setting.name}: {len(bad)} of {len(results)} runs differ from the SDK\n" + "\n".join(bad)
    condensing = [c for c in results if condensed_before(c)]
    assert condensing, f"{setting.name}: the SDK condensed no run: the comparison would say nothing"
    if setting.tokens is None and not setting.halfway:  # the token trigger, the window, was out of reach
        assert all(c.ours.peak < setting.window(c.data)[0] for c in results)


def test_a_reasoning_span_after_the_result_is_the_thought_of_the_call_as_in_issue_41():
    """12 turns of thinking 20, text 15, call 30, result 400, max_size 10, keep_first 2: the SDK condenses
    before calls 6, 9 and 12 (2 + 2 x 5 = 12 events; then the summary and the last 2 events, + 2 a turn)."""
    c = result_of("issue-41")
    assert not c.bad, c.bad[:3]
    assert condensed_before(c) == [6, 9, 12]


def test_a_cut_never_falls_inside_a_tool_loop_until_the_runtime_drops_the_thinking_that_opened_it():
    loop, dropped = result_of("tool-loop"), result_of("tool-loop-dropped")
    assert not loop.bad and not dropped.bad, (loop.bad[:3], dropped.bad[:3])
    # Past 10 events from turn 5 on, but keep_first 3 falls inside the loop: the first place to start is the user
    # message that ends it (turn 6), and the first range long enough ends after turn 7.
    assert condensed_before(loop)[0] == 8
    # The drop before call 6 frees a cut: the SDK (asked again, as prunesim is) condenses before that call.
    assert condensed_before(dropped)[0] == 6 and dropped.theirs["condensations"][0]["label"] == "6.1"


def test_a_refused_range_under_token_pressure_is_a_hard_reset_of_everything_after_the_system_prompt():
    c = result_of("hard-reset")
    assert not c.bad, c.bad[:3]
    first = c.theirs["condensations"][0]
    assert 1 in first["parts"] and 0 not in first["parts"]  # the task goes (keep_first 2 is not kept), not the system


def test_a_response_without_a_call_is_one_event_and_a_cut_may_fall_before_the_users_reply():
    c = result_of("messages")
    assert not c.bad, c.bad[:3]
    turn_of = [p["turn"] for p in c.data.parts]
    split = [x for x in c.theirs["condensations"]
             if any(turn_of[i] == turn_of[max(x["parts"])] and i not in x["parts"]
                    for i in range(len(turn_of)) if i > max(x["parts"]))]
    assert split  # a range ended inside a turn: after the agent's message, before the user's reply


def test_a_format_error_answers_its_call_and_a_cleared_result_keeps_its_place():
    c = result_of("replies")
    assert not c.bad, c.bad[:3]
    assert condensed_before(c)
