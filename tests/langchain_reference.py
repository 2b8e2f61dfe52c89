"""LangChain's own ``ClearToolUsesEdit`` run beside ``clear-tool-uses:langchain`` on the same workload.

The workload (the parts of an imported transcript, or hand-made ones) is turned into the
message list a LangChain agent would hold before each model call: one ``AIMessage`` per call
(its reasoning and its tool calls, ``tool_call_id`` from the part's ``call`` number), one
``ToolMessage`` per tool result, a ``HumanMessage`` for anything else, the system prompt kept
aside as LangChain keeps it (``request.system_message``). Parts the runtime dropped before a
call (``dropped_at``) are not in that call's list. LangChain's middleware edits a copy of the
full list before every call; so does this harness, with LangChain's own edit.

One token counter serves both sides: every part's content is a unique reference whose size is
the part's token count in the workload, LangChain's placeholder counts as ``placeholder_tokens``
and a cleared call's empty arguments as ``input_placeholder_tokens``; like LangChain's
``token_count_method = "model"``, the system prompt is counted with the messages.

prunesim's side replays the same workload under the policy and notes, at every model call,
which tool results (and inputs) a placeholder stands for. The two are compared call by call.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from langchain.agents.middleware.context_editing import DEFAULT_TOOL_PLACEHOLDER, ClearToolUsesEdit
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from prunesim.api import load_scenario
from prunesim.io.scenario_files import replace
from prunesim.io.transcripts.workload import TranscriptWorkload, WorkloadData
from prunesim.model.events import Observer
from prunesim.model.spans import PLACEHOLDER_OF
from prunesim.runner import run_one

PLACEHOLDER_TOKENS = 4  # the preset's sizes of "[cleared]" and of a cleared call's input
INPUT_PLACEHOLDER_TOKENS = 4


@dataclass(frozen=True)
class Setting:
    """One configuration, given to both sides: LangChain's keyword arguments, prunesim's table keys."""

    name: str
    trigger: int | None = None  # None: the preset's (100,000)
    keep: int = 3
    clear_at_least: int = 0
    clear_tool_inputs: bool = False
    exclude_tools: tuple[str, ...] = ()

    def langchain(self, trigger: int) -> ClearToolUsesEdit:
        return ClearToolUsesEdit(trigger=trigger, keep=self.keep, clear_at_least=self.clear_at_least,
                                 clear_tool_inputs=self.clear_tool_inputs, exclude_tools=self.exclude_tools,
                                 placeholder=DEFAULT_TOOL_PLACEHOLDER)

    def overrides(self, trigger: int) -> dict:
        return {"clear_tool_uses.trigger": trigger, "clear_tool_uses.keep": self.keep,
                "clear_tool_uses.clear_at_least": self.clear_at_least,
                "clear_tool_uses.clear_tool_inputs": self.clear_tool_inputs,
                "clear_tool_uses.exclude_tools": list(self.exclude_tools),
                "clear_tool_uses.placeholder_tokens": PLACEHOLDER_TOKENS,
                "clear_tool_uses.input_placeholder_tokens": INPUT_PLACEHOLDER_TOKENS}


@dataclass
class Call:
    """What one side held at one model call: the calls whose result (input) a placeholder replaced, and the
    prompt's size."""

    outputs: frozenset[int]
    inputs: frozenset[int]
    tokens: int
    full: int = 0  # LangChain's side: the full history before its edit


# -- LangChain's side -----------------------------------------------------------
class Messages:
    """The message lists of a workload, call by call, and the one token counter."""

    def __init__(self, data: WorkloadData):
        self.data = data
        self.size: dict[str, int] = {DEFAULT_TOOL_PLACEHOLDER: PLACEHOLDER_TOKENS}
        self.made: dict[tuple, list] = {}  # (turn, its parts) -> its messages

    def ref(self, i: int, part: dict) -> str:
        text = f"part-{i}"
        self.size[text] = part["tokens"]
        return text

    def before(self, k: int) -> tuple[int, list]:
        """(system tokens, messages) of the history the runtime holds before model call ``k``."""
        system = 0
        turns: dict[int, list[tuple[int, dict]]] = defaultdict(list)
        for i, p in enumerate(self.data.parts):
            if p["turn"] >= k or (p.get("dropped_at") and p["dropped_at"] <= k):
                continue
            if p["kind"] == "system":
                system += p["tokens"]
            else:
                turns[p["turn"]].append((i, p))
        messages: list = []
        for turn in sorted(turns):
            messages.extend(self.turn_messages(turn, tuple(turns[turn])))
        return system, messages

    def turn_messages(self, turn: int, parts: tuple[tuple[int, dict], ...]) -> list:
        """The messages of one turn's parts (made once for each set of parts: LangChain edits copies)."""
        key = (turn, tuple(i for i, _ in parts))
        if key not in self.made:
            out = []
            ai = [(i, p) for i, p in parts if p["kind"] in ("reasoning", "tool_call")]
            if ai and turn > 0:
                content = [{"type": "text", "text": self.ref(i, p)} for i, p in ai if p["kind"] == "reasoning"]
                calls = [{"name": p.get("tool", ""), "args": {"ref": self.ref(i, p)}, "id": f"call-{p['call']}",
                          "type": "tool_call"} for i, p in ai if p["kind"] == "tool_call"]
                out.append(AIMessage(content=content, tool_calls=calls))
            for i, p in parts:
                if p["kind"] == "tool_output":
                    out.append(ToolMessage(content=self.ref(i, p), tool_call_id=f"call-{p['call']}",
                                           name=p.get("tool") or None))
                elif p["kind"] not in ("reasoning", "tool_call") or turn == 0:
                    out.append(HumanMessage(content=self.ref(i, p)))
            self.made[key] = out
        return self.made[key]

    def count(self, system: int, messages) -> int:
        total = system
        for m in messages:
            content = m.content if isinstance(m.content, list) else [m.content]
            for block in content:
                total += self.size[block["text"] if isinstance(block, dict) else block]
            for call in getattr(m, "tool_calls", ()) or ():
                total += self.size[call["args"]["ref"]] if call["args"] else INPUT_PLACEHOLDER_TOKENS
        return total


def langchain_calls(data: WorkloadData, setting: Setting, trigger: int) -> list[Call]:
    """What LangChain's ``ClearToolUsesEdit`` leaves before each model call of the workload."""
    edit = setting.langchain(trigger)
    history = Messages(data)
    out = []
    for k in range(1, data.turns + 1):
        system, messages = history.before(k)
        full = history.count(system, messages)
        edit.apply(messages, count_tokens=lambda ms, system=system: history.count(system, ms))
        outputs = frozenset(int(m.tool_call_id.removeprefix("call-")) for m in messages
                            if isinstance(m, ToolMessage) and m.response_metadata.get("context_editing"))
        inputs = frozenset(int(c.removeprefix("call-")) for m in messages if isinstance(m, AIMessage)
                           for c in m.response_metadata.get("context_editing", {}).get("cleared_tool_inputs", ()))
        out.append(Call(outputs, inputs, history.count(system, messages), full))
    return out


# -- prunesim's side ------------------------------------------------------------
class Cleared(Observer):
    """An observer: at each agent model call, the calls whose output (input) a placeholder stands for."""

    def __init__(self):
        super().__init__()
        self.outputs: set[int] = set()
        self.inputs: set[int] = set()
        self.calls: dict[int, Call] = {}

    def on_span_removed(self, time, turn, cause, span, freed, utilization, appended_total, removed_total) -> None:
        if cause == "cleared":
            (self.outputs if span.kind == "tool_output" else self.inputs).add(span.call)
        elif span.kind == "placeholder":
            which = self.outputs if PLACEHOLDER_OF + "tool_output" in span.tags else self.inputs
            which.discard(span.call)

    def on_model_call(self, time, turn, prompt, output, decision, pass_id=0) -> None:
        if not decision:
            self.calls[turn] = Call(frozenset(self.outputs), frozenset(self.inputs), prompt)


def prunesim_calls(data: WorkloadData, setting: Setting, trigger: int) -> list[Call]:
    """What ``clear-tool-uses:langchain`` leaves in the window before each model call of the workload."""
    base = load_scenario("transcript")
    window = max(base.window, trigger, peak(data))
    # Open loop: LangChain is handed the recorded history, so the replayed agent must not re-fetch beside it.
    scenario = replace(base, {"window": window, "budget": window, "turns": data.turns, "trigger": 1,
                              "reaction.mode": "none", **setting.overrides(trigger)})
    observer = Cleared()
    run_one(scenario, "clear-tool-uses:langchain", workload=TranscriptWorkload(data), trace="none",
            observers=[observer])
    return [observer.calls[k] for k in range(1, data.turns + 1)]


def peak(data: WorkloadData) -> int:
    from prunesim.studies.transcript_replay import peak_tokens

    return peak_tokens(data)


def compare(data: WorkloadData, setting: Setting) -> tuple[list[int], list[Call], list[Call]]:
    """(the calls where the two disagree, LangChain's calls, prunesim's), over the run."""
    trigger = setting.trigger if setting.trigger is not None else 100_000
    if setting.trigger == -1:  # half of the run's own peak
        trigger = max(1, peak(data) // 2)
    ours = prunesim_calls(data, setting, trigger)
    theirs = langchain_calls(data, setting, trigger)
    bad = [k for k, (a, b) in enumerate(zip(theirs, ours, strict=True), 1)
           if a.outputs != b.outputs or a.inputs != b.inputs or a.tokens != b.tokens]
    return bad, theirs, ours
