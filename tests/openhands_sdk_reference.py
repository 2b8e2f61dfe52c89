"""openhands-sdk's own ``LLMSummarizingCondenser`` run on a workload's turns (the reference of the SDK presets).

Run by the SDK's Python (3.12 or later: openhands-sdk needs it, prunesim's floor is 3.11), never imported
by prunesim or the suite: tests/test_openhands_sdk_differential.py starts it once for a whole batch, hands
it the runs (each part's turn, kind, size, call number, thinking flag, ``dropped_at``, and whether the
replay places it before the next call) on stdin as JSON, and reads what the SDK's view held before every
model call on stdout.

The parts become the events an SDK agent records for the same conversation, built with the SDK's public
classes: one ``SystemPromptEvent`` for the system parts; per model call either one ``ActionEvent`` per tool
call (the call's reasoning is the first action's thought, its thinking parts that action's thinking
blocks, one ``llm_response_id`` for the batch) or, without a call, one agent ``MessageEvent``; an
``ObservationEvent`` per tool result; a user ``MessageEvent`` per user message or runtime summary. A call
its turn never answers, followed by a user message (mini-swe-agent's format-error notice), is a call the
runtime could not run: the SDK records it as the action and an ``AgentErrorEvent`` holding the notice.

Around every model call the harness does what the replay does: the parts the recorded runtime dropped
before the call leave the view (the SDK never drops content itself; a result the runtime emptied while
its call stays keeps its place as an empty observation, since the SDK pairs every action with one);
then the condenser is asked, through ``condense``, exactly as the agent asks it before each step, and a
``Condensation`` it returns is appended to the view (``View.append_event`` applies it) and asked again.
The condenser is asked after each turn's events and, when the runtime dropped something, again after
the drop: the two points where prunesim's engine consults a policy that edits before every call.

The summary is written by a fake LLM (only where the SDK cuts and what it keeps are compared); its size,
for token counting, is what prunesim's ``[summary]`` with ``sigma = 0`` gives: ``mean_tokens``, at most
the tokens it replaces. Tokens are counted by an LLM whose ``get_token_count`` adds up each part's size:
every part's text is a unique reference (``ref<N>``) standing for its size.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network for the model price list
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

from litellm import ModelResponse  # noqa: E402
from openhands.sdk.context.condenser import LLMSummarizingCondenser  # noqa: E402
from openhands.sdk.context.view import View  # noqa: E402
from openhands.sdk.event import (  # noqa: E402
    ActionEvent,
    AgentErrorEvent,
    Condensation,
    MessageEvent,
    ObservationEvent,
    SystemPromptEvent,
)
from openhands.sdk.llm import LLM, LLMResponse, Message, MessageToolCall, TextContent, ThinkingBlock  # noqa: E402
from openhands.sdk.llm.utils.metrics import MetricsSnapshot  # noqa: E402
from openhands.sdk.tool.schema import Observation  # noqa: E402

# The fields of one part on stdin, after its index in the workload (the parts prunesim's window never holds,
# empty ones without a call, are not sent).
TURN, KIND, TOKENS, CALL, THINKING, DROPPED_AT, MOVED = range(7)
REF = re.compile(r"\b(?:ref|summary)\d+\b")
MAX_CONDENSATIONS = 20  # in a row before one call: the SDK would loop; a harness bug, reported


class ToolResult(Observation):
    """A tool's result: the SDK's ``Observation`` with nothing added."""


class Sizes:
    """What each reference stands for, in tokens, and the counter that reads them in the SDK's messages."""

    def __init__(self):
        self.size: dict[str, int] = {}

    def of_messages(self, messages) -> int:
        total = 0
        for m in messages:
            texts = [c.text for c in m.content if isinstance(c, TextContent)]
            texts += [b.thinking for b in m.thinking_blocks if isinstance(b, ThinkingBlock)]
            texts += [c.arguments for c in m.tool_calls or ()]
            total += sum(self.size.get(ref, 0) for text in texts for ref in REF.findall(text))
        return total


class CountingLLM(LLM):
    """The agent's LLM as the condenser sees it: only its token count is used."""

    def get_token_count(self, messages, tools=None, add_security_risk_prediction=False) -> int:  # noqa: ARG002
        return SIZES.of_messages(messages)


class SummaryLLM(LLM):
    """The condenser's LLM: each summary is a new reference, sized by the harness once it is applied."""

    def generate(self, messages, *args, **kwargs) -> LLMResponse:  # noqa: ARG002
        SUMMARIES[0] += 1
        text = f"summary{SUMMARIES[0]}"
        return LLMResponse(message=Message(role="assistant", content=[TextContent(text=text)]),
                           metrics=MetricsSnapshot(), raw_response=ModelResponse(id=f"response-{text}"))


SIZES = Sizes()
SUMMARIES = [0]


class Conversation:
    """One run's events and the SDK's view of them under one condenser."""

    def __init__(self, parts: dict[int, list], condenser: LLMSummarizingCondenser, agent_llm: LLM | None,
                 summary_tokens: int):
        self.parts = parts
        self.condenser = condenser
        self.agent_llm = agent_llm
        self.summary_tokens = summary_tokens
        self.view = View()
        self.held: dict[str, list[int]] = {}  # event id -> the parts it holds (a summary: none)
        self.action_of: dict[int, ActionEvent] = {}  # call number -> its action
        self.label: dict[str, str] = {}  # a summary event's id -> "turn.n": the n-th written at that turn
        self.made: dict[int, int] = {}  # turn -> summaries written at it
        self.calls = 0  # model calls made so far
        self.condensations: list[dict] = []
        for i, p in parts.items():
            SIZES.size[f"ref{i}"] = p[TOKENS]

    # -- events, as the SDK's agent records them ---------------------------------------
    def add(self, event, parts: list[int]) -> None:
        self.view.append_event(event)
        self.held[event.id] = parts

    def system(self, parts: list[int]) -> None:
        text = " ".join(f"ref{i}" for i in parts)
        self.add(SystemPromptEvent(id="system", system_prompt=TextContent(text=text), tools=[]), parts)

    def response(self, turn: int | str, parts: list[int]) -> None:
        """One model call's output: its actions (or a message), its thought and thinking on the first."""
        thinking = [ThinkingBlock(thinking=f"ref{i}", signature="-") for i in parts
                    if self.parts[i][KIND] == "reasoning" and self.parts[i][THINKING]]
        thought = [TextContent(text=f"ref{i}") for i in parts
                   if self.parts[i][KIND] == "reasoning" and not self.parts[i][THINKING]]
        calls = [i for i in parts if self.parts[i][KIND] == "tool_call"]
        if not calls:
            message = Message(role="assistant", content=thought, thinking_blocks=thinking)
            self.add(MessageEvent(id=f"message-{turn}", source="agent", llm_message=message), parts)
            return
        for n, i in enumerate(calls):
            call = self.parts[i][CALL]
            tool_call = MessageToolCall(id=f"call-{call}", name="tool", arguments=f"ref{i}", origin="completion")
            event = ActionEvent(id=f"action-{call}", thought=thought if n == 0 else [],
                                thinking_blocks=thinking if n == 0 else [], tool_call=tool_call, tool_name="tool",
                                tool_call_id=tool_call.id, llm_response_id=f"response-{turn}", action=None)
            self.action_of[call] = event
            reasoning = [j for j in parts if self.parts[j][KIND] == "reasoning"] if n == 0 else []
            self.add(event, [*reasoning, i])

    def result(self, i: int) -> None:
        call = self.parts[i][CALL]
        action = self.action_of[call]
        event = ObservationEvent(id=f"result-{call}", observation=ToolResult(content=[TextContent(text=f"ref{i}")]),
                                 action_id=action.id, tool_name="tool", tool_call_id=action.tool_call_id)
        self.add(event, [i])

    def message(self, i: int, unanswered: list[int]) -> None:
        """A user message; the first after a call its turn leaves unanswered is that call's error."""
        if unanswered:
            call = unanswered.pop(0)
            event = AgentErrorEvent(id=f"error-{call}", error=f"ref{i}", tool_name="tool", tool_call_id=f"call-{call}")
            self.add(event, [i])
            return
        message = Message(role="user", content=[TextContent(text=f"ref{i}")])
        self.add(MessageEvent(id=f"user-{i}", source="user", llm_message=message), [i])

    def turn(self, turn: int | str, parts: list[int]) -> None:
        """A turn's parts, in the order the SDK records them: the model's output, then what came back (``turn``
        names the response's events)."""
        output = [i for i in parts if self.parts[i][KIND] in ("reasoning", "tool_call")]
        if output:
            self.response(turn, output)
        results = {self.parts[i][CALL] for i in parts if self.parts[i][KIND] == "tool_output"}
        unanswered = [self.parts[i][CALL] for i in output
                      if self.parts[i][KIND] == "tool_call" and self.parts[i][CALL] not in results]
        for i in parts:
            kind = self.parts[i][KIND]
            if kind == "tool_output":
                self.result(i)
            elif kind in ("user", "summary"):
                self.message(i, unanswered)
            elif kind not in ("reasoning", "tool_call"):
                raise ValueError(f"part {i}: a {kind} part after turn 0 has no SDK event")

    # -- what the recorded runtime removes -----------------------------------------------
    def drop(self, dropped: set[int]) -> None:
        """Parts the runtime removed: an event goes when nothing of it is left, else it loses those parts; an
        emptied result stays while its call does, and goes with it."""
        keep = []
        for event in self.view.events:
            parts = self.held.get(event.id)
            if parts is None or not dropped & set(parts):  # a summary, or untouched
                keep.append(event)
                continue
            left = [i for i in parts if i not in dropped]
            if left or isinstance(event, ObservationEvent | AgentErrorEvent):  # an emptied result: see below
                keep.append(self.rebuilt(event, left))
        actions = {e.tool_call_id for e in keep if isinstance(e, ActionEvent)}
        emptied = {e.id for e in keep if isinstance(e, ObservationEvent | AgentErrorEvent) and not self.held[e.id]}
        self.view = View(events=[e for e in keep if e.id not in emptied or e.tool_call_id in actions])

    def rebuilt(self, event, parts: list[int]):
        """The event with only ``parts`` left (the same id: the SDK sees the same event, emptied)."""
        self.held[event.id] = parts
        refs = [f"ref{i}" for i in parts]
        if isinstance(event, SystemPromptEvent):
            return event.model_copy(update={"system_prompt": TextContent(text=" ".join(refs))})
        if isinstance(event, ObservationEvent):
            return event.model_copy(update={"observation": ToolResult(content=[TextContent(text=r) for r in refs])})
        if isinstance(event, AgentErrorEvent):
            return event.model_copy(update={"error": " ".join(refs)})
        thinking = [ThinkingBlock(thinking=f"ref{i}", signature="-") for i in parts
                    if self.parts[i][KIND] == "reasoning" and self.parts[i][THINKING]]
        text = [TextContent(text=f"ref{i}") for i in parts
                if self.parts[i][KIND] == "reasoning" and not self.parts[i][THINKING]]
        if isinstance(event, ActionEvent):
            call = [i for i in parts if self.parts[i][KIND] == "tool_call"]
            return event.model_copy(update={"thought": text, "thinking_blocks": thinking,
                                            "tool_call": event.tool_call.model_copy(
                                                update={"arguments": " ".join(f"ref{i}" for i in call)})})
        if isinstance(event, MessageEvent) and event.source == "agent":
            message = event.llm_message.model_copy(update={"content": text, "thinking_blocks": thinking})
            return event.model_copy(update={"llm_message": message})
        return event.model_copy(update={"llm_message": Message(role="user", content=[TextContent(text=r)
                                                                                     for r in refs])})

    # -- the condenser -------------------------------------------------------------------
    def condense(self, turn: int) -> None:
        """Ask the condenser as the agent does before a step, until it answers with the view."""
        for _ in range(MAX_CONDENSATIONS):
            answer = self.condenser.condense(self.view, agent_llm=self.agent_llm)
            if not isinstance(answer, Condensation):
                return
            self.made[turn] = self.made.get(turn, 0) + 1
            self.apply(answer, f"{turn}.{self.made[turn]}")
        raise RuntimeError(f"more than {MAX_CONDENSATIONS} condensations in a row at turn {turn}")

    def apply(self, condensation: Condensation, label: str) -> None:
        forgotten = [e for e in self.view.events if e.id in condensation.forgotten_event_ids]
        replaced = SIZES.of_messages(e.to_llm_message() for e in forgotten)
        SIZES.size[condensation.summary] = max(1, min(self.summary_tokens, replaced))
        self.condensations.append({
            "label": label,
            "call": self.calls + 1,  # the model call it comes before
            "parts": sorted(i for e in forgotten for i in self.held.get(e.id, ())),
            "summaries": [self.label[e.id] for e in forgotten if e.id in self.label],
        })
        self.view.append_event(condensation)
        summary = condensation.summary_event
        self.label[summary.id] = label
        self.held[summary.id] = []

    def state(self) -> dict:
        """What the view holds before a model call: its events and, in order, the summaries among them."""
        self.calls += 1
        return {"events": len(self.view), "summaries": [self.label[e.id] for e in self.view.events
                                                          if e.id in self.label]}


def replay(run: dict, setting: dict) -> dict:
    """The view before each model call of ``run`` under the condenser ``setting`` describes."""
    SUMMARIES[0] = 0
    parts = {p[0]: p[1:] for p in run["parts"]}
    limit = setting["max_tokens"]
    condenser = LLMSummarizingCondenser(llm=SummaryLLM(model="reference/summary", usage_id="condenser"),
                                        max_size=setting["max_size"], keep_first=setting["keep_first"],
                                        minimum_progress=setting["minimum_progress"], max_tokens=limit)
    agent_llm = CountingLLM(model="reference/agent", usage_id="agent") if limit else None
    conv = Conversation(parts, condenser, agent_llm, setting["summary_tokens"])
    turns: dict[int, list[int]] = {}
    moved: dict[int, list[int]] = {}  # call -> parts the replay places before it
    drops: dict[int, set[int]] = {}
    for i, p in parts.items():
        (moved.setdefault(p[TURN] + 1, []) if p[MOVED] else turns.setdefault(p[TURN], [])).append(i)
        if p[DROPPED_AT]:
            drops.setdefault(p[DROPPED_AT], set()).add(i)
    initial = turns.pop(0, [])
    conv.system([i for i in initial if parts[i][KIND] == "system"])
    conv.turn(0, [i for i in initial if parts[i][KIND] != "system"])
    calls = []
    for k in range(1, run["turns"] + 1):
        if k in drops:
            conv.drop(drops[k])
        conv.turn(f"before-{k}", moved.get(k, []))
        if k in drops:
            conv.condense(k)
        calls.append(conv.state())
        conv.turn(k, turns.get(k, []))
        conv.condense(k)
    return {"calls": calls, "condensations": conv.condensations}


def main() -> None:
    logging.disable(logging.WARNING)  # the SDK's own notices (a refused condensation) are not results
    batch = json.load(sys.stdin)
    out = [[replay(run, setting) for setting in run["settings"]] for run in batch["runs"]]
    json.dump({"results": out}, sys.stdout)


if __name__ == "__main__":
    main()
