"""What a transcript parser produces: a run's message parts and the counts the runtime recorded.

Kept apart from the parsers (:mod:`.formats`, :mod:`.claude_code`, :mod:`.codex`) so that
each of them imports these types and :mod:`.formats` imports the session parsers, with no
import circle between them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Part:
    turn: int
    kind: str  # system, user, reasoning, tool_call, tool_output, summary
    text: str
    key: str = ""
    tool: str = ""
    tokens: int | None = None  # a size the source records or documents: the text is not counted
    extra_tokens: int = 0  # documented tokens beside the text (an image in a tool result)
    dropped_at: int = 0  # the runtime removed it before model call ``dropped_at`` (0: never)
    hidden: bool = False  # billed but never written to the file (system prompt, tools): sized from usage
    call_id: str = ""  # a tool call and its output share it (the runtime's own id, or one the reader gives)
    thinking: bool = False  # reasoning the model wrote as a thinking block (Anthropic's extended thinking)


@dataclass
class Transcript:
    name: str
    format: str
    source: str
    model: str = ""
    parts: list[Part] = field(default_factory=list)
    prompt_tokens: dict[int, int] = field(default_factory=dict)
    usage: dict[int, dict] = field(default_factory=dict)  # call -> recorded usage (workload.USAGE_FIELDS)
    kept_output: dict[int, int] = field(default_factory=dict)  # call -> output tokens that stay in the prompt
    call_times: dict[int, float] = field(default_factory=dict)  # call -> Unix seconds, where recorded (clock.py)
    events: list[dict] = field(default_factory=list)  # runtime events (compactions), see workload.py
    context_window: int | None = None  # the model's window, where the runtime records it
    warnings: list[str] = field(default_factory=list)

    @property
    def turns(self) -> int:
        return max((p.turn for p in self.parts), default=0)
