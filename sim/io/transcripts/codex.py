"""Codex CLI rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

One JSON record per line, ``{"timestamp", "type", "payload"}``:

* ``session_meta``: the session (id, working folder, CLI version; newer
  versions add the model, as ``turn_context`` records do).
* ``response_item``: what the Responses API saw or wrote: ``message`` (role
  ``user``/``developer``/``assistant``, blocks ``input_text``/``output_text``/
  ``input_image``), ``reasoning`` (its content encrypted: billed, never
  readable), ``function_call`` / ``custom_tool_call`` / ``local_shell_call``
  and their ``*_output``.
* ``event_msg``: interface events; ``token_count`` carries the call's usage in
  ``info.last_token_usage`` (``input_tokens``, which includes
  ``cached_input_tokens``, ``output_tokens``, ``reasoning_output_tokens``) and
  the ``model_context_window``. The other events repeat response items for
  the interface and are skipped.
* ``compacted``: a compaction; its ``message`` is the summary that replaces
  the conversation.

A model call is one ``token_count``. Version 0.34 writes a call's usage just
before its output items; other versions write it after. The order is read from
the file: whichever side of the ``token_count`` events the calls' output items
mostly sit on.

Reasoning is sized from the usage (``reasoning_output_tokens``), the call's
other output from ``output_tokens`` less that. The Responses API keeps a turn's
reasoning in the prompt until the next user message and drops it then; the
two dev rollouts show it (the prompt shrinks right after a user message), so
reasoning parts are dropped before the first call after a user message. The
base instructions and tool definitions are not in the file: a hidden turn-0
``system`` part, sized from the first call's prompt tokens.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path

from prunesim.errors import UserError
from prunesim.io import inputs
from prunesim.io.transcripts import clock, images
from prunesim.io.transcripts import fields as f
from prunesim.io.transcripts import usage as usage_fields
from prunesim.io.transcripts.jsonl import read_records
from prunesim.io.transcripts.keys import command_key, tool_key
from prunesim.io.transcripts.parts import Part, Transcript

FORMAT = "codex"
RECORD_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
OUTPUT_ITEMS = frozenset({"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
RESULT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})


def looks_like(records: list) -> bool:
    """A Codex rollout: typed records, each with a payload object."""
    if not records or not all(isinstance(r, dict) for r in records):
        return False
    return all(f.text(r, "type") in RECORD_TYPES and isinstance(f.raw(r, "payload"), dict)
               for r in records)


def _is_output(item: dict) -> bool:
    kind = f.text(item, "type")
    return kind in OUTPUT_ITEMS or (kind == "message" and f.text(item, "role") == "assistant")


def parse(path: Path) -> Iterator[Transcript]:
    """The rollout's session; a file holding several (a ``session_meta`` with another id) gives one each.

    A session met again whole (the file appended to itself) is read once, with a warning; a ``session_meta``
    of the same id that goes on differently (a resumed session) continues the session it names.
    """
    path = Path(path)
    where = str(path)
    warnings: list[str] = []
    sessions: list[_Session] = []
    for line, rec in read_records(path, warnings):
        at = f"{where}:{line}"
        kind = f.required(rec, "type", str, at, "a Codex record")
        if kind not in RECORD_TYPES:
            raise UserError(at, "type", f"unknown Codex record type {kind!r}")
        payload = f.required(rec, "payload", dict, at, f"a Codex {kind} record")
        if kind == "session_meta" or not sessions:
            sessions.append(_Session(line, f.ident(payload, "id") if kind == "session_meta" else None))
        session = sessions[-1]
        session.raw.append(rec)
        if kind in ("session_meta", "turn_context"):
            if f.text(payload, "model"):
                session.model = f.text(payload, "model")
        elif kind == "event_msg" and f.text(payload, "type") == "token_count":
            info = f.obj(payload, "info")
            if f.obj(info, "last_token_usage"):
                session.records.append((line, "usage", {**info, "_time": clock.seconds(f.raw(rec, "timestamp"))}))
        elif kind == "response_item":
            f.required(payload, "type", str, at, "a response item", "payload.type")
            session.records.append((line, "item", payload))
        elif kind == "compacted":
            session.records.append((line, "compacted", payload))
    sessions = _distinct(sessions, where, warnings)
    file_name = inputs.text_name(path.name)
    name = file_name[: -len(".jsonl")] if file_name.endswith(".jsonl") else file_name
    if len(sessions) > 1:
        warnings.append(f"{where}: holds {len(sessions)} sessions (session_meta at lines "
                        f"{', '.join(str(s.line) for s in sessions)}: rollouts written into one file?); imported "
                        f"apart as {name}.session-1 to {name}.session-{len(sessions)}")
    for n, session in enumerate(sessions, 1):
        several = len(sessions) > 1
        t = Transcript(name=f"{name}.session-{n}" if several else name, format=FORMAT,
                       source=f"{file_name}#session-{n}" if several else file_name,
                       model=session.model)
        t.warnings.extend(warnings if n == 1 else [])
        _build(t, session.records, where)
        if t.turns == 0:
            raise UserError(where, None, f"{FORMAT}: no model calls in the rollout" if not several else
                            f"{FORMAT}: no model calls in its session {n} (from line {session.line})")
        yield t


class _Session:
    """The records of one session of a rollout file, from its ``session_meta`` on."""

    def __init__(self, line: int, ident):
        self.line = line
        self.id = ident
        self.raw: list[dict] = []  # every record as read: what tells a repeated session from a resumed one
        self.records: list = []  # (line, kind, payload): response items and token counts only
        self.model = ""


def _distinct(sessions: list[_Session], where: str, warnings: list[str]) -> list[_Session]:
    """One session per id: a session repeated record for record is read once, one resumed is joined to it."""
    out: list[_Session] = []
    repeats = []
    for s in sessions:
        earlier = next((o for o in out if s.id is not None and o.id == s.id), None)
        if earlier is None:
            out.append(s)
        elif s.raw == earlier.raw[: len(s.raw)]:
            repeats.append((s.line, earlier.line))  # the file appended to itself: what is already read
        else:
            earlier.raw += s.raw
            earlier.records += s.records
            earlier.model = s.model or earlier.model
    for line, first in repeats:
        warnings.append(f"{where}: the session of line {first} is written again from line {line} (same id, same "
                        "records): read once")
    return out


def _usage_first(records: list) -> bool:
    """Does each call's token_count come before its output items (0.34) or after them?"""
    before = after = 0
    for i, (_, kind, _) in enumerate(records):
        if kind != "usage":
            continue
        if i + 1 < len(records) and records[i + 1][1] == "item" and _is_output(records[i + 1][2]):
            before += 1
        if i > 0 and records[i - 1][1] == "item" and _is_output(records[i - 1][2]):
            after += 1
    return before >= after


def _build(t: Transcript, records: list, where: str) -> None:
    t.parts.append(Part(0, "system", "", hidden=True))
    usage_first = _usage_first(records)
    turn = 0
    open_call = False  # usage-after order: output items seen since the last token_count
    calls: dict[str, tuple[str, str]] = {}  # call_id -> (key, tool)
    encrypted: list[Part] = []  # reasoning parts, sized from their call's usage at the end
    for line, kind, payload in records:
        at = f"{where}:{line}"
        if kind == "usage":
            if usage_first or not open_call:
                turn += 1  # usage-after order and no output items before it: a call that wrote nothing
            _call_usage(t, turn, payload, at)
            open_call = False
        elif kind == "compacted":
            _compaction(t, payload, turn)
        elif _is_output(payload):
            if (not usage_first and not open_call) or turn == 0:
                turn += 1  # (usage-first order: output before any token_count is a call without usage)
                open_call = True
            _output(t, payload, turn, calls, encrypted)
        else:
            _input(t, payload, turn, calls, encrypted, at)
    _size_reasoning(t, encrypted, where)


def _size_reasoning(t: Transcript, encrypted: list[Part], where: str) -> None:
    by_call: dict[int, list[Part]] = {}
    for p in encrypted:
        by_call.setdefault(p.turn, []).append(p)
    missing = 0
    for k, parts in by_call.items():
        total = t.usage.get(k, {}).get("reasoning_tokens")
        if total is None:
            missing += 1
            total = 0
        for i, p in enumerate(parts):  # several items of one call share its count
            p.tokens = total // len(parts) + (1 if i < total % len(parts) else 0)
    if missing:
        t.warnings.append(f"{where}: {missing} call(s) with encrypted reasoning but no recorded reasoning tokens; "
                          "counted as 0")


def _call_usage(t: Transcript, k: int, info: dict, at: str) -> None:
    try:
        fields = usage_fields.from_codex(f.obj(info, "last_token_usage"))
    except usage_fields.BadUsage as err:
        raise UserError(at, None, f"{FORMAT}: {err}") from None
    if info["_time"] is None:
        raise UserError(at, "timestamp", f"{FORMAT}: a token_count record without a valid timestamp "
                                         "(this format times every call; the replay's clock needs it)")
    t.call_times.setdefault(k, info["_time"])
    window = usage_fields.count(f.raw(info, "model_context_window"))
    if window:
        t.context_window = window
    if not fields:
        return
    t.usage[k] = fields
    if "prompt_tokens" in fields:
        t.prompt_tokens[k] = fields["prompt_tokens"]
    out, reasoning = fields.get("output_tokens"), fields.get("reasoning_tokens", 0)
    if out is not None and reasoning <= out:
        t.kept_output[k] = out - reasoning


def _output(t: Transcript, item: dict, k: int, calls: dict, encrypted: list[Part]) -> None:
    kind = f.text(item, "type")
    if kind == "reasoning":  # encrypted: sized from the call's usage (_size_reasoning)
        part = Part(k, "reasoning", "", tokens=0)
        t.parts.append(part)
        encrypted.append(part)
    elif kind == "message":
        t.parts.append(Part(k, "reasoning", _text(f.raw(item, "content"))))
    elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
        name, arguments, key = _call(item)
        call_id = f.ident(item, "call_id")
        call_id = f.ident(item, "id") if call_id is None else call_id
        t.parts.append(Part(k, "tool_call", arguments, key, name, call_id=call_id or ""))
        if call_id is not None:
            calls[call_id] = (key, name)
    elif kind == "web_search_call":
        action = f.raw(item, "action")
        text = json.dumps(action, sort_keys=True, ensure_ascii=False) if action is not None else ""
        t.parts.append(Part(k, "tool_call", text, tool_key("web_search", action or {}), "web_search"))


def _call(item: dict) -> tuple[str, str, str]:
    """(tool name, arguments as written, content key) of a tool call item."""
    if f.text(item, "type") == "local_shell_call":
        action = f.obj(item, "action")
        text = json.dumps(action, ensure_ascii=False)
        return "local_shell", text, _shell_key(f.items(action, "command")) or tool_key("local_shell", action)
    name = f.text(item, "name")
    raw = f.raw(item, "arguments", f.raw(item, "input", ""))
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    try:
        args = json.loads(text) if isinstance(raw, str) else raw
    except ValueError:
        args = None
    if f.items(args, "command"):
        key = _shell_key(f.items(args, "command"))
        if key:
            return name, text, key
    return name, text, tool_key(name, args if isinstance(args, dict) else text)


def _shell_key(argv) -> str:
    """The key of a shell command given as argv: ``["bash", "-lc", SCRIPT]`` keys on SCRIPT."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return ""
    if len(argv) == 3 and argv[1] in ("-lc", "-c") and argv[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh"):
        return command_key(argv[2])
    return command_key(shlex.join(argv))


def _input(t: Transcript, item: dict, k: int, calls: dict, encrypted: list[Part], at: str) -> None:
    kind = f.text(item, "type")
    if kind in RESULT_ITEMS:
        call_id = f.ident(item, "call_id")
        key, name = calls.pop(call_id, ("", ""))
        output = f.raw(item, "output")
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        t.parts.append(Part(k, "tool_output" if key or name else "user", text, key, name,
                            call_id=call_id if (key or name) and isinstance(call_id, str) else ""))
    elif kind == "message":
        role = f.text(item, "role")
        text, extra = _content(f.raw(item, "content"), t.warnings, at)
        t.parts.append(Part(k, "system" if role in ("system", "developer") and k == 0 else "user", text,
                            extra_tokens=extra))
        if role == "user" and k > 0:
            for p in encrypted:  # a new user turn: the Responses API drops the reasoning so far
                if not p.dropped_at:
                    p.dropped_at = k + 1
    else:
        t.warnings.append(f"{at}: response item {f.raw(item, 'type')!r} not imported")


def _compaction(t: Transcript, payload: dict, turn: int) -> None:
    t.events.append({"event": "compaction", "turn": turn + 1, "trigger": "unknown"})
    for p in t.parts:
        if not p.hidden and not p.dropped_at:
            p.dropped_at = turn + 1
    if f.ident(payload, "message") is not None:
        t.parts.append(Part(turn, "summary", f.text(payload, "message")))


def _content(content, warnings: list[str], at: str) -> tuple[str, int]:
    """A message's text, and the documented tokens of its images (an unreadable one is a warning)."""
    if isinstance(content, str):
        return content, 0
    texts, extra = [], 0
    for b in content if isinstance(content, list) else []:
        if not isinstance(b, dict):
            continue
        if f.ident(b, "text") is not None:
            texts.append(f.text(b, "text"))
        elif f.text(b, "type") == "input_image":
            url = f.text(b, "image_url")
            data = url.split(",", 1)[1] if url.startswith("data:") and "," in url else None
            size = images.size_of(data) if data else None
            if size is None:
                warnings.append(f"{at}: an image whose size cannot be read; skipped (not counted)")
            else:
                extra += images.openai_tokens(*size)
    return "\n".join(texts), extra


def _text(content) -> str:
    """The text of an assistant message (its output blocks hold no images)."""
    return _content(content, [], "")[0]
