"""llm-summary:openhands-sdk and :openhands-sdk-class against openhands-sdk's own condenser, call by call.

Every shipped transcript (``../shared/traces`` or ``PRUNESIM_TRACES``) is replayed under the presets,
and the SDK's ``LLMSummarizingCondenser`` is run on the same turns (tests/openhands_sdk_reference.py, in
the SDK's own Python: tests/openhands_sdk_env.py). Before every model call the two must hold the same:
the number of events (prunesim reading its window as the SDK's events), which parts have been
condensed away and before which call, and the summaries in the window, in order. Three settings: the
default agent's (80 events, keep_first 4), the class defaults (240, 2), and a token trigger at half of
each run's peak with keep_first 1 and 120 events, whose cuts fall where the sizes put them and reach
into the task.

Both sides replay the open loop (the recorded turns, no re-fetch) with a summary of fixed size. The
SDK's Python is found or installed on first use; without one the test skips with the reason, unless
``PRUNESIM_REQUIRE_SDK`` is set (``.ci/run`` sets it: CI must run it).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
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
from shared_traces import TRACES

FOLDERS = ("claude-code-dev", "codex", "mini-swe-agent", "mini-swe-agent-dev", "openhands", "swe-agent")
REFERENCE = Path(__file__).with_name("openhands_sdk_reference.py")
# [summary] mean_tokens with sigma 0: every summary this size, at most what it replaces; small enough that a
# condensation on tokens always brings the smallest run back under its trigger (else the SDK condenses again).
SUMMARY_TOKENS = 500
PART = "sdk-reference-part:"  # the tag naming, on each span, the workload part it came from


@dataclass(frozen=True)
class Setting:
    """One condenser configuration, given to both sides."""

    name: str
    preset: str
    max_size: int
    keep_first: int
    tokens: bool = False  # a token trigger halfway from the run's first prompt to its peak (else none in reach)
    minimum_progress: float = 0.1

    def limit(self, data: WorkloadData) -> int | None:
        """The token trigger both sides use (None: the preset's, the window, which no prompt reaches)."""
        if not self.tokens:
            return None
        start = sum(p["tokens"] for p in data.parts if p["turn"] == 0)
        return start + (peak(data) - start) // 2

    def window(self, data: WorkloadData) -> int:
        """The replay's window: above every prompt (nothing is cut), and 4 x the token trigger when there is
        one (prunesim gives it as a quarter of the window, exactly)."""
        limit = self.limit(data)
        return 4 * limit if limit else 2 * peak(data)

    def overrides(self) -> dict:
        if not self.tokens:
            return {}
        return {"llm_summary.threshold": self.max_size, "llm_summary.unit": "events",
                "llm_summary.keep_first": self.keep_first, "llm_summary.minimum_progress": self.minimum_progress,
                "llm_summary.max_tokens_of_window": 0.25}


SETTINGS = [
    Setting("default-agent", "llm-summary:openhands-sdk", 80, 4),
    Setting("class-defaults", "llm-summary:openhands-sdk-class", 240, 2),
    Setting("halfway-keep-1", "llm-summary:openhands-sdk", 120, 1, tokens=True),
]


# -- the runs -------------------------------------------------------------------
@functools.cache
def shipped_runs() -> tuple[tuple[str, WorkloadData], ...]:
    from prunesim.studies.transcript_replay import expand, iter_workloads

    folders = [TRACES / f for f in FOLDERS if (TRACES / f).is_dir()]
    if not folders:
        pytest.skip(f"the shipped transcripts are not here ({TRACES}; set PRUNESIM_TRACES)")
    return tuple((f"{folder.name}/{data.name}", data) for folder in folders for path in expand([folder])
                 for data in iter_workloads(path))


def peak(data: WorkloadData) -> int:
    from prunesim.studies.transcript_replay import peak_tokens

    return max(1, peak_tokens(data))


# -- the SDK's side ---------------------------------------------------------------
def reference_input(runs, settings) -> dict:
    runs_in = []
    for _, data in runs:
        moved = replaced_after_compaction(data)
        # A part of no size without a call never enters prunesim's window (docs/model.md): the SDK, which
        # would hold an empty message, is not given it either (one in the shipped transcripts).
        parts = [[i, p["turn"], p["kind"], p["tokens"], p.get("call", 0), int(bool(p.get("thinking"))),
                  p.get("dropped_at", 0), int(i in moved)] for i, p in enumerate(data.parts)
                 if p["tokens"] or p.get("call")]
        runs_in.append({"turns": data.turns, "parts": parts, "settings": [
            {"max_size": s.max_size, "keep_first": s.keep_first, "minimum_progress": s.minimum_progress,
             "max_tokens": s.limit(data), "summary_tokens": SUMMARY_TOKENS} for s in settings]})
    return {"runs": runs_in}


def start_reference(runs, settings) -> subprocess.Popen:
    """The SDK's side of the whole batch, started at once (it runs while prunesim's side does)."""
    try:
        exe = sdk_python()
    except Unavailable as err:
        if os.environ.get("PRUNESIM_REQUIRE_SDK"):
            pytest.fail(f"openhands-sdk's environment: {err}")
        pytest.skip(f"openhands-sdk's environment: {err}")
    proc = subprocess.Popen([str(exe), str(REFERENCE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdin.write(json.dumps(reference_input(runs, settings)))
    proc.stdin.close()
    return proc


def finish_reference(proc: subprocess.Popen) -> list:
    out = proc.stdout.read()
    err = proc.stderr.read()
    assert proc.wait() == 0, f"the SDK's side failed: {err.strip()[-2000:]}"
    return json.loads(out)["results"]


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
    """Before each agent model call: the window read as the SDK's events, and its summaries, in order; when
    each part was condensed away."""

    def __init__(self):
        super().__init__()
        self.window = None
        self.calls: list[dict] = []
        self.condensed: dict[int, int] = {}  # part -> the call before which a condensation took it
        self.label: dict[int, str] = {}  # summary span id -> "turn.n"
        self.made: dict[int, int] = {}  # turn -> summaries written at it
        self.replies: Replies | None = None  # the policy's own (its judgements are made before the runtime drops)
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
        if decision:
            return
        spans = self.window.spans()
        self.calls.append({"events": len(sdk_events(spans, self.replies)),
                           "summaries": [self.label[s.id] for s in spans if SUMMARY_TAG in s.tags]})


def prunesim_calls(data: WorkloadData, setting: Setting) -> Held:
    """What the preset held before each model call of the workload."""
    window = setting.window(data)
    base = load_scenario("transcript")
    cls = get_policy(setting.preset)
    # Open loop: the SDK is handed the recorded history, so the replayed agent must not re-fetch beside it.
    scenario = scenario_for(replace(base, {"window": window, "budget": window, "turns": data.turns, "trigger": 1,
                                           "reaction.mode": "none", "summary.sigma": 0,
                                           "summary.mean_tokens": SUMMARY_TOKENS, **setting.overrides()}), cls)
    held = Held()
    policy = cls(scenario, streams(0)["policy"])
    engine = Engine(scenario, policy, Labelled(data), [held])
    held.window, held.replies = engine.window, policy.replies
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


@functools.cache
def compared() -> tuple[dict, ...]:
    """Every run at every setting: the SDK's calls, prunesim's, and where they differ."""
    runs = shipped_runs()
    proc = start_reference(runs, SETTINGS)
    ours = [[prunesim_calls(data, s) for s in SETTINGS] for _, data in runs]
    theirs = finish_reference(proc)
    return tuple({"run": name, "setting": s.name, "theirs": t, "ours": o, "bad": disagreements(t, o)}
                 for (name, _), ts, os_ in zip(runs, theirs, ours, strict=True)
                 for s, t, o in zip(SETTINGS, ts, os_, strict=True))


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_every_shipped_transcript_condenses_where_the_sdk_does(setting):
    results = [r for r in compared() if r["setting"] == setting.name]
    bad = [f"{r['run']}: {r['bad'][0]}" for r in results if r["bad"]]
    assert not bad, f"{setting.name}: {len(bad)} of {len(results)} runs differ from the SDK\n" + "\n".join(bad)
