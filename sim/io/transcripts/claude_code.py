"""Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``).

One JSON record per line. The records that matter:

* ``user`` and ``assistant`` records hold a Messages-API ``message``; they are
  linked into a DAG by ``uuid`` and ``parentUuid``. Claude Code writes one
  assistant record per content block, all sharing ``message.id``: one API call.
  Parallel tool calls chain their ``tool_use`` records one after another, and
  each result hangs off its own call, so the conversation is the path from the
  last leaf back to the root *plus* the results answering the calls on it
  (paired through ``tool_use_id``). An edited or retried message leaves an
  abandoned branch, which is not on that path and is dropped.
* ``system`` records with ``subtype: compact_boundary`` mark a compaction:
  ``compactMetadata.trigger`` (``auto``/``manual``) and ``preTokens``. The
  boundary starts a new root; ``logicalParentUuid`` links it to what came
  before. The next user record (``isCompactSummary``) holds the summary that
  replaces the conversation.
* ``isSidechain`` records are a subagent's own conversation (a Task); each
  sidechain root is imported as its own transcript, or skipped.
* A record met again with the same ``uuid`` and the same content (a file
  appended to itself) is read once, with a warning; the same ``uuid`` with
  other content is a garbled file, refused naming both lines. Main records
  that trace back to more than one root (two sessions written into one file)
  are as many conversations, each imported as ``<session>.session-N``, with a
  warning: none is dropped.

Content blocks: ``text`` and ``thinking`` are reasoning, ``tool_use`` a tool
call (its key from the command or the arguments), ``tool_result`` the output
(a string or a list of ``text``/``image`` blocks). Images count by Anthropic's
documented size (:mod:`.images`); an image whose size cannot be read is
skipped with a warning. ``redacted_thinking`` cannot be counted and is skipped
with a warning.

Prompt tokens of a call are ``input_tokens + cache_read_input_tokens +
cache_creation_input_tokens``. The system prompt and the tool definitions are
billed but never written to the file: they become a hidden turn-0 ``system``
part, sized at import from the first call's prompt tokens less what the file
shows before that call.

Records Claude Code keeps for its own interface (``file-history-snapshot``,
``queue-operation``, ``summary`` titles, hook and timing ``system`` records,
``isVisibleInTranscriptOnly`` messages and synthetic API-error messages) are
not part of any prompt and are skipped.
"""

from __future__ import annotations

import json
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

FORMAT = "claude-code"
RECORD_TYPES = frozenset({"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation"})
MESSAGE_TYPES = frozenset({"user", "assistant"})
SIDECHAINS = ("separate", "skip")


def looks_like(records: list) -> bool:
    """A Claude Code session: its first records are typed Claude Code records (a uuid on messages)."""
    if not records or not all(isinstance(r, dict) for r in records):
        return False
    if f.text(records[0], "type") not in RECORD_TYPES:
        return False
    return any(f.text(r, "type") in RECORD_TYPES and any(f.has(r, k) for k in ("sessionId", "leafUuid", "messageId"))
               for r in records)


class _Record:
    """What the importer keeps of one message record (the big UI-only fields are dropped at once)."""

    __slots__ = ("line", "type", "uuid", "parent", "logical_parent", "sidechain", "message", "subtype", "meta",
                 "time")

    def __init__(self, line: int, rec: dict, kind: str, uuid: str):
        self.line = line
        self.type = kind
        self.uuid = uuid
        self.parent = f.ident(rec, "parentUuid")
        self.logical_parent = f.ident(rec, "logicalParentUuid")
        self.sidechain = f.flag(rec, "isSidechain")
        self.message = f.obj(rec, "message")
        self.subtype = f.text(rec, "subtype")
        self.time = clock.seconds(f.raw(rec, "timestamp"))
        self.meta = {k: rec[k] for k in ("isCompactSummary", "isVisibleInTranscriptOnly", "isApiErrorMessage",
                                         "compactMetadata", "agentId") if k in rec}


def parse(path: Path, sidechains: str = "separate") -> Iterator[Transcript]:
    """The session's main conversation, then each subagent's (unless ``sidechains == "skip"``)."""
    if sidechains not in SIDECHAINS:
        raise UserError("--sidechains", sidechains, f"must be one of {', '.join(SIDECHAINS)}")
    path = Path(path)
    warnings: list[str] = []
    records = _load(path, warnings)
    file_name = inputs.text_name(path.name)
    stem = file_name[: -len(".jsonl")] if file_name.endswith(".jsonl") else file_name
    main = [r for r in records if not r.sidechain]
    side = [r for r in records if r.sidechain]
    groups = _sidechain_groups(side) if sidechains == "separate" else []
    sessions = [s for s in _sessions(main) if any(r.type in MESSAGE_TYPES for r in s)]
    if len(sessions) > 1:
        warnings.append(f"{path}: holds {len(sessions)} conversations, each with its own first record (lines "
                        f"{', '.join(str(s[0].line) for s in sessions)}: sessions written into one file?); imported "
                        f"apart as {stem}.session-1 to {stem}.session-{len(sessions)}")
    conversations = [(_conversation(s), f"{stem}.session-{n}" if len(sessions) > 1 else stem,
                      f"{file_name}#session-{n}" if len(sessions) > 1 else file_name)
                     for n, s in enumerate(sessions, 1)]
    for n, (agent, group) in enumerate(groups, 1):
        conversations.append((_conversation(group), f"{stem}.agent-{agent or n}", f"{file_name}#agent-{agent or n}"))
    # A conversation cut short before its first reply (a subagent interrupted at once) holds no model call:
    # it is left out with a warning, and the rest of the session is imported.
    called = []
    for conversation in conversations:
        if _has_call(conversation[0]):
            called.append(conversation)
        else:
            warnings.append(f"{path}: {conversation[2]}: no model call (interrupted before the first reply?); "
                            "skipped")
    for n, (conversation, name, source) in enumerate(called):
        yield _transcript(conversation, path, name, source, warnings if n == 0 else [])
    if called:
        return
    if side and sidechains == "skip":
        raise UserError(str(path), None, "holds only subagent (sidechain) records, skipped by --sidechains skip")
    raise UserError(str(path), None, f"{FORMAT}: no " + ("model calls" if conversations else
                                                        "user or assistant messages") + " in the session")


def _has_call(conversation: list[_Record]) -> bool:
    """Whether a conversation holds a model call: an assistant record that is not an error Claude Code wrote."""
    return any(r.type == "assistant" and not f.flag(r.meta, "isApiErrorMessage") and
               f.text(r.message, "model") != "<synthetic>" for r in conversation)


def _load(path: Path, warnings: list[str]) -> list[_Record]:
    out: list[_Record] = []
    by_uuid: dict[str, _Record] = {}  # uuid -> the record that first held it
    repeats: list[int] = []  # lines of records read a second time
    for line, rec in read_records(path, warnings):
        at = f"{path}:{line}"
        kind = f.required(rec, "type", str, at, "a Claude Code record")
        if kind not in ("user", "assistant", "system"):
            continue  # snapshots, queue operations, titles: never part of a prompt
        uuid = f.required(rec, "uuid", str, at, f"a {kind} record")
        if kind in MESSAGE_TYPES:
            message = f.required(rec, "message", dict, at, f"a {kind} record")
            f.required(message, "content", (str, list), at, f"a {kind} record's message", "message.content")
        record = _Record(line, rec, kind, uuid)
        earlier = by_uuid.get(uuid)
        if earlier is None:
            by_uuid[uuid] = record
            out.append(record)
        elif _same(earlier, record):
            repeats.append(line)  # the file appended to itself (or a copy pasted in): one record, read once
        else:
            raise UserError(at, "uuid", f"{FORMAT}: repeats the uuid of line {earlier.line} with other content (a "
                                        "garbled or merged file): keep one of the two records")
    if repeats:
        warnings.append(f"{path}: {len(repeats)} record(s) repeat an earlier one (same uuid, same content; the "
                        f"first repeat at line {repeats[0]}): each read once")
    return out


def _same(a: _Record, b: _Record) -> bool:
    """Whether two records of one uuid say the same thing (the fields the import reads)."""
    return all(getattr(a, k) == getattr(b, k) for k in _Record.__slots__ if k != "line")


def _sessions(main: list[_Record]) -> list[list[_Record]]:
    """The main records grouped by the root they trace back to, in file order of their roots.

    A record's parent is ``parentUuid``, else (a compaction boundary) ``logicalParentUuid``; a parent the
    file does not hold is the message written just before (as :func:`_conversation` reads it). A record
    with neither is a root: one per session (a session's compactions link back through their logical parent).
    """
    by_uuid = {r.uuid: r for r in main}
    position = {id(r): i for i, r in enumerate(main)}
    root_of: dict[str, str] = {}
    groups: dict[str, list[_Record]] = {}
    for r in main:
        chain = []
        node = r
        while node.uuid not in root_of and node.uuid not in chain:
            chain.append(node.uuid)
            parent = node.parent or node.logical_parent
            ahead = None if parent is None else by_uuid.get(parent) or _previous(main, position[id(node)])
            if ahead is None:
                break
            node = ahead
        root = root_of.get(node.uuid, node.uuid)
        for u in chain:
            root_of[u] = root
        groups.setdefault(root, []).append(r)
    return list(groups.values())


def _sidechain_groups(side: list[_Record]) -> list[tuple[str, list[_Record]]]:
    """Sidechain records grouped by their root (one subagent conversation each), in file order."""
    by_uuid = {r.uuid: r for r in side}
    root_of: dict[str, str] = {}
    groups: dict[str, list[_Record]] = {}
    for r in side:
        seen = []
        node = r
        while node.parent in by_uuid and node.uuid not in root_of and node.uuid not in seen:
            seen.append(node.uuid)
            node = by_uuid[node.parent]
        root = root_of.get(node.uuid, node.uuid)
        for u in seen:
            root_of[u] = root
        root_of[r.uuid] = root
        groups.setdefault(root, []).append(r)
    out = []
    for group in groups.values():
        agent = next((f.text(r.meta, "agentId") for r in group if f.text(r.meta, "agentId")), "")
        if any(r.type in MESSAGE_TYPES for r in group):
            out.append((agent if agent.replace("-", "").isalnum() else "", group))
    return out


def _conversation(records: list[_Record]) -> list[_Record]:
    """The records on the path to the last leaf, plus the tool results answering calls on it, in file order."""
    by_uuid = {r.uuid: r for r in records}
    position = {id(r): i for i, r in enumerate(records)}
    leaf = next((r for r in reversed(records) if r.type in MESSAGE_TYPES), None)
    if leaf is None:
        return []
    on_path: set[str] = set()
    node = leaf
    while node is not None and node.uuid not in on_path:
        on_path.add(node.uuid)
        parent = node.parent or node.logical_parent
        if parent is None:
            break
        # A parent the file does not hold (Claude Code sometimes links to an unwritten record):
        # the conversation went on from the record written just before.
        node = by_uuid.get(parent) or _previous(records, position[id(node)])
    called = set()
    for r in records:
        if r.uuid in on_path and r.type == "assistant":
            called.update(f.ident(b, "id") for b in _blocks(r) if f.text(b, "type") == "tool_use")
    answered: set[str] = set()
    kept = []
    for r in records:
        if r.uuid in on_path:
            kept.append(r)
            answered.update(_result_ids(r))
        elif r.type == "user":
            ids = _result_ids(r)
            if ids and ids <= called and not ids & answered:
                kept.append(r)
                answered.update(ids)
    return kept


def _previous(records: list[_Record], at: int) -> _Record | None:
    """The message (or compaction boundary) written before ``records[at]``: in this conversation's records,
    whatever the other conversations (subagents) wrote in between."""
    for i in range(at - 1, -1, -1):
        if records[i].type in MESSAGE_TYPES or records[i].subtype == "compact_boundary":
            return records[i]
    return None


def _blocks(r: _Record) -> list[dict]:
    return f.objects(r.message, "content")


def _result_ids(r: _Record) -> set[str]:
    return {f.ident(b, "tool_use_id") for b in _blocks(r) if f.text(b, "type") == "tool_result"} - {None}


def _transcript(conversation: list[_Record], path: Path, name: str, source: str, warnings: list[str]) -> Transcript:
    """One conversation (:func:`_conversation`) as a transcript."""
    t = Transcript(name=name, format=FORMAT, source=source)
    t.warnings.extend(warnings)
    t.parts.append(Part(0, "system", "", hidden=True))
    turn = 0
    call_of: dict[str, int] = {}  # message.id -> call number
    calls: dict[str, tuple[str, str]] = {}  # tool_use id -> (key, tool name)
    where = str(path)
    for r in conversation:
        at = f"{where}:{r.line}"
        if r.type == "system":
            if r.subtype == "compact_boundary":
                _compaction(t, r, turn)
            continue
        if r.type == "assistant":
            if f.flag(r.meta, "isApiErrorMessage") or f.text(r.message, "model") == "<synthetic>":
                continue  # an error Claude Code shows the user; no API call behind it
            mid = f.ident(r.message, "id") or r.uuid
            if mid not in call_of:
                turn += 1
                call_of[mid] = turn
                if r.time is None:
                    raise UserError(at, "timestamp", f"{FORMAT}: an assistant record without a valid timestamp "
                                                     "(this format times every call; the replay's clock needs it)")
                t.call_times[turn] = r.time
                if not t.model:
                    t.model = f.text(r.message, "model")
            k = call_of[mid]
            _call_usage(t, k, f.raw(r.message, "usage"), at)
            _assistant_blocks(t, r, k, calls, at)
            continue
        _user_message(t, r, turn, calls, at)
    if turn == 0:
        raise UserError(where, None, f"{FORMAT}: no model calls in {name}")
    return t


def _compaction(t: Transcript, r: _Record, turn: int) -> None:
    meta = f.obj(r.meta, "compactMetadata")
    trigger = f.text(meta, "trigger") if f.text(meta, "trigger") in ("auto", "manual") else "unknown"
    event = {"event": "compaction", "turn": turn + 1, "trigger": trigger}
    pre = usage_fields.count(f.raw(meta, "preTokens"))
    if pre is not None:
        event["pre_tokens"] = pre
    t.events.append(event)
    for p in t.parts:  # everything written so far leaves the prompt; the hidden system part stays
        if not p.hidden and not p.dropped_at:
            p.dropped_at = turn + 1


def _call_usage(t: Transcript, k: int, raw, at: str) -> None:
    try:
        fields = usage_fields.from_anthropic(raw)
    except usage_fields.BadUsage as err:
        raise UserError(at, None, f"{FORMAT}: {err}") from None
    if not fields:
        return
    have = t.usage.get(k)
    if have is None:
        t.usage[k] = fields
        if "prompt_tokens" in fields:
            t.prompt_tokens[k] = fields["prompt_tokens"]
    elif fields.get("output_tokens", 0) > have.get("output_tokens", 0):
        # Records of one call repeat its usage; output_tokens grows as blocks stream in.
        have["output_tokens"] = fields["output_tokens"]


def _assistant_blocks(t: Transcript, r: _Record, k: int, calls: dict, at: str) -> None:
    content = f.raw(r.message, "content")
    if isinstance(content, str):
        t.parts.append(Part(k, "reasoning", content))
        return
    for b in _blocks(r):
        kind = f.text(b, "type")
        if kind == "text":
            t.parts.append(Part(k, "reasoning", f.text(b, "text")))
        elif kind == "thinking":
            t.parts.append(Part(k, "reasoning", f.text(b, "thinking"), thinking=True))
        elif kind == "redacted_thinking":
            t.warnings.append(f"{at}: redacted thinking cannot be counted; skipped")
        elif kind == "tool_use":
            name = f.text(b, "name")
            args = f.obj(b, "input")
            text = json.dumps(args, ensure_ascii=False)
            command = f.ident(args, "command")
            key = command_key(command) if name == "Bash" and command is not None else tool_key(name, args)
            call_id = f.ident(b, "id")
            t.parts.append(Part(k, "tool_call", text, key, name, call_id=call_id or ""))
            if call_id is not None:
                calls[call_id] = (key, name)


def _user_message(t: Transcript, r: _Record, turn: int, calls: dict, at: str) -> None:
    summary = f.flag(r.meta, "isCompactSummary")
    if f.flag(r.meta, "isVisibleInTranscriptOnly") and not summary:
        return
    content = f.raw(r.message, "content")
    kind = "summary" if summary else "user"
    if isinstance(content, str):
        t.parts.append(Part(turn, kind, content))
        return
    for b in _blocks(r):
        btype = f.text(b, "type")
        if btype == "tool_result":
            use_id = f.ident(b, "tool_use_id")
            key, name = calls.pop(use_id, ("", ""))
            text, extra = _result_content(t, f.raw(b, "content"), at)
            t.parts.append(Part(turn, "tool_output" if key or name else "user", text, key, name, extra_tokens=extra,
                                call_id=(use_id or "") if key or name else ""))
        elif btype == "text":
            t.parts.append(Part(turn, kind, f.text(b, "text")))
        elif btype == "image":
            extra = _image(t, b, at)
            if extra:
                t.parts.append(Part(turn, kind, "", tokens=extra))
        elif btype == "document":
            t.warnings.append(f"{at}: a document block cannot be counted; skipped")


def _result_content(t: Transcript, content, at: str) -> tuple[str, int]:
    """A tool result's text and the documented tokens of the images in it."""
    if isinstance(content, str):
        return content, 0
    if not isinstance(content, list):
        return "", 0
    texts, extra = [], 0
    for b in content:
        if isinstance(b, str):
            texts.append(b)
        elif f.text(b, "type") == "text":
            texts.append(f.text(b, "text"))
        elif f.text(b, "type") == "image":
            extra += _image(t, b, at)
    return "\n".join(texts), extra


def _image(t: Transcript, block: dict, at: str) -> int:
    source = f.obj(block, "source")
    size = images.size_of(f.text(source, "data")) if f.text(source, "type") == "base64" else None
    if size is None:
        t.warnings.append(f"{at}: an image whose size cannot be read; skipped (not counted)")
        return 0
    return images.anthropic_tokens(*size)

