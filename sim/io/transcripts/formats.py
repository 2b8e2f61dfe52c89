"""Transcript formats: detection and parsing into message parts.

A parser turns one agent run into a :class:`Transcript`: an ordered list of
:class:`Part` (kind, text, turn, and for tool calls and outputs a content key)
plus, where the format records them, the API's prompt-token counts per model
call. Turn ``k`` is the ``k``-th model call; everything before the first model
call (system prompt, task statement, demonstrations) is turn 0.

Formats (see docs/transcripts.md):

* ``mini-swe-agent``: ``.traj.json``, ``{"messages": [...]}``; an assistant
  message is ``THOUGHT`` prose plus one fenced bash block; observations are
  user messages starting ``<returncode>``.
* ``swe-agent``: ``.traj``, ``{"trajectory": [...], "history": [...]}``; the
  chat ``history`` is what the model saw.
* ``openhands``: evaluation output JSON lines, one run per line, ``history`` of
  events (actions with ``action``/``args``, observations with
  ``observation``/``content``).
* ``openai``: a plain message list ``[{role, content, tool_calls}, {role: "tool"}]``
  (or ``{"messages": [...]}`` holding such a list).
* ``claude-code`` and ``codex``: session files of one record per line, parsed
  in their own modules (:mod:`.claude_code`, :mod:`.codex`) and detected here
  from their first records.

Every problem is a :class:`sim.errors.UserError` naming the file.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

from prunesim.errors import UserError
from prunesim.io import inputs
from prunesim.io.transcripts import claude_code, clock, codex
from prunesim.io.transcripts import usage as usage_fields
from prunesim.io.transcripts.jsonl import peek_records
from prunesim.io.transcripts.keys import command_key, tool_key
from prunesim.io.transcripts.parts import Part, Transcript  # noqa: F401 - part of this module's interface

SESSION_PARSERS = {"claude-code": claude_code.parse, "codex": lambda path, sidechains: codex.parse(path)}
FORMATS = ("mini-swe-agent", "swe-agent", "openhands", "openai", "claude-code", "codex")
TOO_DEEP = "JSON nested too deeply to read"
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\r?\n(.*?)\r?\n?```", re.S)


# -- reading files ------------------------------------------------------------
def read_text(path: Path) -> str:
    where = str(path)
    raw = inputs.read_bytes(path, "transcript file")
    if b"\x00" in raw[:4096]:
        raise UserError(where, None, "binary file, not a transcript")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(where, None, "not a text file (invalid UTF-8)") from None


def _load_json(text: str, where: str, line: int | None = None):
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:  # malformed, a number of thousands of digits, nested too deep
        raise inputs.malformed_json(where, err, line) from None


def _first_line(path: Path) -> str:
    with inputs.open_input(path, "transcript file") as fh:
        head = fh.read(4096)
    if b"\x00" in head:
        raise UserError(str(path), None, "binary file, not a transcript")
    return head.decode("utf-8", "replace").lstrip("\ufeff").lstrip()


def is_jsonl(path: Path) -> bool:
    """A JSON-lines file: its first record ends before the file does (or the name says so)."""
    if path.suffix == ".jsonl":
        return True
    return False


def session_format(path: Path) -> str:
    """``claude-code`` or ``codex`` when a JSON-lines file is a runtime's session log, else ""."""
    records = peek_records(path)
    if claude_code.looks_like(records):
        return "claude-code"
    if codex.looks_like(records):
        return "codex"
    return ""


def iter_transcripts(path: Path, sidechains: str = "separate") -> Iterator[Transcript]:
    """The runs in one file, one at a time (a JSON-lines file is read line by line).

    ``sidechains`` (Claude Code subagents): ``separate`` imports each as its own
    transcript, ``skip`` leaves them out.
    """
    path = Path(path)
    where = str(path)
    inputs.open_input(path, "transcript file").close()  # a folder, a device or a pipe: refused before a peek
    if is_jsonl(path):
        fmt = session_format(path)
        if fmt in SESSION_PARSERS:
            try:
                yield from SESSION_PARSERS[fmt](path, sidechains)
            except RecursionError:  # a value nested deeper than Python's stack, met while keying or writing it
                raise UserError(where, None, f"{fmt}: {TOO_DEEP}") from None
            return
        yield from _iter_jsonl(path)
        return
    data = _load_json(read_text(path), where)
    yield parse_document(data, path)


def _iter_jsonl(path: Path) -> Iterator[Transcript]:
    where = str(path)
    _first_line(path)  # binary check
    fh = io.TextIOWrapper(inputs.open_input(path, "transcript file"), encoding="utf-8-sig")
    # A file still being written (an evaluation's output, one run a line) can end in a partial line: like a
    # session's, that last line is left out with a warning, on the run before it. So each run is held until
    # the next line shows it was not followed by a partial one; a bad line anywhere else is the file's error.
    with fh:
        held: Transcript | None = None
        cut: tuple[int, UserError] | None = None
        lineno = 0
        while True:
            try:
                line = fh.readline()
            except UnicodeDecodeError:
                raise UserError(f"{where}:{lineno + 1}", None, "not a text file (invalid UTF-8)") from None
            if not line:
                break
            lineno += 1
            if not line.strip():
                continue
            if cut is not None:
                raise cut[1]
            try:
                data = _load_json(line, where, lineno)
            except UserError as err:
                if held is None or err.problem == TOO_DEEP:
                    raise  # no run before it, or a nesting too deep: not a cut-off write
                cut = (lineno, err)
                continue
            if held is not None:
                yield held
            held = parse_document(data, path, lineno)
            del data
        if held is None:
            raise UserError(where, None, "empty file: no runs")
        if cut is not None:
            held.warnings.append(f"{where}:{cut[0]}: truncated last line ignored ({cut[1].problem})")
        yield held


def detect(data) -> str:
    """The format of a parsed document, or a UserError-ready description of why none fits."""
    if isinstance(data, list):
        if data and all(isinstance(m, dict) and "role" in m for m in data):
            return "openai"
        return ""
    if not isinstance(data, dict):
        return ""
    if isinstance(data.get("history"), list) and isinstance(data.get("trajectory"), list):
        return "swe-agent"
    if isinstance(data.get("history"), list) and ("instance_id" in data or "metadata" in data or "instruction" in data):
        return "openhands"
    messages = data.get("messages")
    if isinstance(messages, list):
        if str(data.get("trajectory_format", "")).startswith("mini-swe-agent"):
            return "mini-swe-agent"
        if any(isinstance(m, dict) and (m.get("tool_calls") or m.get("role") == "tool") for m in messages):
            return "openai"
        return "mini-swe-agent"
    return ""


def parse_document(data, path: Path, line: int | None = None) -> Transcript:
    where = f"{path}:{line}" if line else str(path)
    fmt = detect(data)
    if not fmt:
        raise UserError(where, None, "unknown transcript format (expected mini-swe-agent, SWE-agent, "
                                     "OpenHands, an OpenAI-style message list, a Claude Code session "
                                     "or a Codex rollout)")
    file_name = inputs.text_name(path.name)
    stem = _stem(file_name)
    name = stem if line is None else _run_name(data, stem, line)
    source = file_name if line is None else f"{file_name}:{line}"
    t = Transcript(name=name, format=fmt, source=source)
    try:
        {"mini-swe-agent": _mini, "swe-agent": _swe, "openhands": _openhands, "openai": _openai}[fmt](data, t)
    except _Missing as err:
        raise UserError(where, None, f"{fmt}: {err}") from None
    except RecursionError:  # a value nested deeper than Python's stack, met while keying or flattening it
        raise UserError(where, None, f"{fmt}: {TOO_DEEP}") from None
    if t.turns == 0:
        raise UserError(where, None, f"{fmt}: no model calls in the transcript")
    return t


class _Missing(Exception):
    pass


def _stem(name: str) -> str:
    for suffix in (".traj.json", ".traj", ".jsonl", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _run_name(data, stem: str, line: int) -> str:
    iid = data.get("instance_id") if isinstance(data, dict) else None
    # It becomes a file name: no leading dot (a hidden file that folder commands would skip).
    if isinstance(iid, str) and re.fullmatch(r"[\w@+-][\w.@+-]{0,119}", iid):
        return iid
    return f"{stem}-{line}"


def _need(obj, key: str, what: str):
    if not isinstance(obj, dict) or key not in obj:
        raise _Missing(f"missing field {key!r} in {what}")
    return obj[key]


def _role(m, what: str) -> str:
    """A message's ``role``, which must be text: a role of another type would be read as a user's message."""
    role = _need(m, "role", what)
    if not isinstance(role, str):
        raise _Missing(f"'role' in {what} is {type(role).__name__}, expected a string")
    return role


def _text(content) -> str:
    """Message content as text: a string, or the text parts of a content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for item in content:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                out.append(item["text"])
        return "\n".join(out)
    return json.dumps(content, sort_keys=True, ensure_ascii=False)


def _split_action(content: str) -> tuple[str, str]:
    """(reasoning, command) of an assistant message holding one fenced block; the last block is the action."""
    blocks = list(_FENCE.finditer(content))
    if not blocks:
        return content, ""
    last = blocks[-1]
    reasoning = (content[: last.start()] + content[last.end():]).strip()
    return reasoning, last.group(1)


def _usage(raw: dict, what: str) -> dict:
    """A call's recorded usage (usage.FIELDS); an impossible value is a malformed transcript, not a missing one."""
    try:
        return usage_fields.from_openai(raw)
    except usage_fields.BadUsage as err:
        raise _Missing(f"{what}: {err}") from None


def _prompt_tokens(raw: dict, what: str) -> int | None:
    try:
        return usage_fields.recorded_count(raw, "prompt_tokens")
    except usage_fields.BadUsage as err:
        raise _Missing(f"{what}: {err}") from None


def _dict(value) -> dict:
    """``value`` when it is an object, else an empty one: optional fields of the wrong type are ignored."""
    return value if isinstance(value, dict) else {}


def _list(value, what: str) -> list:
    """``value`` when it is a list, nothing when absent; any other type is a malformed transcript."""
    if not value:  # absent, null or empty
        return []
    if not isinstance(value, list):
        raise _Missing(f"{what} is not a list")
    return value


# -- mini-swe-agent -----------------------------------------------------------
def _mini(data: dict, t: Transcript) -> None:
    messages = _need(data, "messages", "the document")
    if not isinstance(messages, list):
        raise _Missing("'messages' is not a list")
    turn = 0
    key = ""
    for i, m in enumerate(messages):
        role = _role(m, f"message {i}")
        text = _text(m.get("content"))
        if role == "system":
            t.parts.append(Part(turn, "system", text))
        elif role == "assistant":
            turn += 1
            reasoning, command = _split_action(text)
            key = command_key(command) if command else ""
            t.parts.append(Part(turn, "reasoning", reasoning))
            t.parts.append(Part(turn, "tool_call", command, key, "bash" if command else "", call_id=f"turn-{turn}"))
            extra = m.get("extra") if isinstance(m.get("extra"), dict) else {}
            response = extra.get("response") if isinstance(extra.get("response"), dict) else {}
            usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
            fields = _usage(usage, f"message {i}")
            if "prompt_tokens" in fields:
                t.prompt_tokens[turn] = fields["prompt_tokens"]
            _record_usage(t, turn, fields)
            created = clock.seconds(response.get("created"))
            if created is not None:
                t.call_times[turn] = created
            model = response.get("model")
            if isinstance(model, str) and not t.model:
                t.model = model
        elif turn > 0 and key and text.lstrip().startswith("<returncode>"):
            t.parts.append(Part(turn, "tool_output", text, key, "bash", call_id=f"turn-{turn}"))
            key = ""
        else:  # the task, a format-error notice, a limit message
            t.parts.append(Part(turn, "user", text))
    if not t.model:
        cfg = _dict(_dict(_dict(data.get("info")).get("config")).get("model"))
        if isinstance(cfg.get("model_name"), str):
            t.model = cfg["model_name"]


def _record_usage(t: Transcript, turn: int, fields: dict) -> None:
    """Keep a call's usage; chat-completions APIs do not send reasoning back, so the kept output excludes it.

    mini-swe-agent's dev runs confirm it: a call's prompt grows by the previous
    call's completion tokens less its reasoning tokens (docs/transcripts.md).
    """
    if not fields:
        return
    t.usage[turn] = fields
    out, reasoning = fields.get("output_tokens"), fields.get("reasoning_tokens", 0)
    if out is not None and reasoning <= out:
        t.kept_output[turn] = out - reasoning


# -- SWE-agent ----------------------------------------------------------------
def _swe(data: dict, t: Transcript) -> None:
    history = _need(data, "history", "the document")
    turn = 0
    key = ""
    for i, m in enumerate(history):
        role = _role(m, f"history[{i}]")
        text = _text(m.get("content"))
        if role == "system":
            t.parts.append(Part(turn, "system", text))
        elif role == "assistant":
            turn += 1
            if isinstance(m.get("action"), str):
                command = m["action"]
                reasoning = m["thought"] if isinstance(m.get("thought"), str) else text.replace(command, "")
            else:
                reasoning, command = _split_action(text)
            key = command_key(command) if command.strip() else ""
            t.parts.append(Part(turn, "reasoning", reasoning))
            t.parts.append(Part(turn, "tool_call", command, key, command.split(None, 1)[0] if key else "",
                                call_id=f"turn-{turn}"))
        elif turn > 0 and key and role in ("user", "tool"):
            t.parts.append(Part(turn, "tool_output", text, key, "", call_id=f"turn-{turn}"))
            key = ""
        else:
            t.parts.append(Part(turn, "user", text))
    stats = (data.get("info") or {}).get("model_stats") if isinstance(data.get("info"), dict) else None
    if isinstance(stats, dict) and isinstance(stats.get("model"), str):
        t.model = stats["model"]


# -- OpenHands ----------------------------------------------------------------
_OH_SKIP_ACTIONS = frozenset({"recall", "change_agent_state", "null"})


def _openhands(data: dict, t: Transcript) -> None:
    history = _need(data, "history", "the run")
    cfg = ((data.get("metadata") or {}).get("llm_config") or {}) if isinstance(data.get("metadata"), dict) else {}
    if isinstance(cfg, dict) and isinstance(cfg.get("model"), str):
        t.model = cfg["model"]
    turn = 0
    response_id = None
    keys: dict[str, str] = {}  # event id -> key of the action that caused it
    for i, ev in enumerate(history):
        if not isinstance(ev, dict):
            raise _Missing(f"history[{i}] is not an object")
        if "action" in ev:
            action = ev["action"]
            if not isinstance(action, str):
                raise _Missing(f"history[{i}].action is not a string")
            args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
            if action == "system":
                t.parts.append(Part(turn, "system", _text(args.get("content", ev.get("message")))))
                continue
            if ev.get("source") == "user" or action in _OH_SKIP_ACTIONS:
                if action == "message":
                    t.parts.append(Part(turn, "user", _text(args.get("content", ev.get("message")))))
                continue
            meta = ev.get("tool_call_metadata") if isinstance(ev.get("tool_call_metadata"), dict) else {}
            resp = meta.get("model_response") if isinstance(meta.get("model_response"), dict) else {}
            rid = resp.get("id") or f"event-{ev.get('id', i)}"
            new_call = rid != response_id
            if new_call:
                turn += 1
                response_id = rid
                usage = resp.get("usage") if isinstance(resp.get("usage"), dict) else {}
                prompt = _prompt_tokens(usage, f"history[{i}]")
                if prompt is not None:
                    t.prompt_tokens[turn] = prompt
                t.parts.append(Part(turn, "reasoning", _text(args.get("thought", ""))))
            name, arguments = _oh_call(ev, meta, resp, args)
            event_id = str(ev.get("id", ""))
            if action in ("message", "finish", "think"):
                key = ""
                body = _text(args.get("content") or args.get("final_thought") or "")
                t.parts.append(Part(turn, "tool_call", body + (arguments if action != "message" else ""), "", name,
                                    call_id=event_id))
            else:
                key = tool_key(name, arguments)
                t.parts.append(Part(turn, "tool_call", arguments, key, name, call_id=event_id))
            keys[event_id] = key
        elif "observation" in ev:
            obs = ev["observation"]
            text = _text(ev.get("content"))
            cause = str(ev.get("cause", ""))
            if obs == "recall" or turn == 0 or cause not in keys:
                if text and obs != "recall":
                    t.parts.append(Part(turn, "user", text))
                elif obs == "recall" and text:
                    t.parts.append(Part(turn, "user", text))
                continue
            key = keys.pop(cause)
            t.parts.append(Part(turn, "tool_output", text, key, str(obs), call_id=cause))
        else:
            raise _Missing(f"history[{i}] has neither 'action' nor 'observation'")


def _oh_call(ev: dict, meta: dict, resp: dict, args: dict) -> tuple[str, str]:
    """(tool name, arguments text) of an OpenHands action: from the model's own tool call when recorded."""
    name = meta.get("function_name") if isinstance(meta.get("function_name"), str) else str(ev.get("action"))
    call_id = meta.get("tool_call_id")
    for choice in _list(resp.get("choices"), "model_response.choices"):
        message = _dict(choice.get("message")) if isinstance(choice, dict) else {}
        for call in _list(message.get("tool_calls"), "model_response message tool_calls"):
            if isinstance(call, dict) and call.get("id") == call_id:
                fn = _dict(call.get("function"))
                if isinstance(fn.get("arguments"), str):
                    return name, fn["arguments"]
    kept = {k: v for k, v in args.items() if k != "thought"}
    return name, json.dumps(kept, sort_keys=True, ensure_ascii=False)


# -- OpenAI-style message lists -----------------------------------------------
def _openai(data, t: Transcript) -> None:
    messages = data if isinstance(data, list) else _need(data, "messages", "the document")
    if isinstance(data, dict) and isinstance(data.get("model"), str):
        t.model = data["model"]
    turn = 0
    keys: dict[str, str] = {}
    pending: list[tuple[str, str]] = []  # (key, id given here) of calls without an id, answered in order
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise _Missing(f"message {i} is not an object")
        role = _role(m, f"message {i}")
        text = _text(m.get("content"))
        if role in ("system", "developer"):
            t.parts.append(Part(turn, "system", text))
        elif role == "assistant":
            turn += 1
            t.parts.append(Part(turn, "reasoning", text))
            usage = m.get("usage") if isinstance(m.get("usage"), dict) else {}
            prompt = _prompt_tokens(usage, f"message {i}")
            if prompt is not None:
                t.prompt_tokens[turn] = prompt
            for j, call in enumerate(_list(m.get("tool_calls"), f"message {i} tool_calls")):
                fn = _need(call, "function", f"message {i} tool_calls[{j}]")
                name = _need(fn, "name", f"message {i} tool_calls[{j}].function")
                arguments = fn.get("arguments", "")
                args_text = arguments if isinstance(arguments, str) else json.dumps(arguments, sort_keys=True)
                key = tool_key(str(name), arguments)
                call_id = call["id"] if isinstance(call.get("id"), str) else f"message-{i}-{j}"
                t.parts.append(Part(turn, "tool_call", args_text, key, str(name), call_id=call_id))
                if isinstance(call.get("id"), str):
                    keys[call_id] = key
                else:
                    pending.append((key, call_id))
        elif role in ("tool", "function") and turn > 0:
            call_id = m.get("tool_call_id")
            if isinstance(call_id, str):
                key = keys.pop(call_id, "")
            else:
                key, call_id = pending.pop(0) if pending else ("", "")
            t.parts.append(Part(turn, "tool_output", text, key, str(m.get("name", "")), call_id=call_id))
        else:
            t.parts.append(Part(turn, "user", text))
