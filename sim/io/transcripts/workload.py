"""prunesim's own workload format (JSON lines) and the workload that replays it.

A workload file is one header record, then one record per message part::

    {"type": "header", "prunesim_workload": 1, "name": ..., "source": ..., "format": ...,
     "tokenizer": ..., "model": ..., "turns": N, "parts": M, "repeats": R,
     "prompt_tokens": [p1, p2, ..., pN]}          # API prompt tokens per model call, null when unknown
    {"type": "part", "turn": 0, "kind": "system", "tokens": 312}
    {"type": "part", "turn": 1, "kind": "tool_call", "tokens": 9, "key": "cat setup.py", "tool": "bash"}
    {"type": "part", "turn": 1, "kind": "tool_output", "tokens": 420, "key": "cat setup.py", "digest": "..."}

Turn 0 holds what the model saw before its first call (system prompt, task):
it becomes the replay's initial spans, pinned. Turn ``k`` holds the ``k``-th
model call's reasoning and tool calls, then what came back. Records carry no
transcript text, only sizes and keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from prunesim.errors import UserError, json_problem
from prunesim.io import atomic
from prunesim.io.transcripts.formats import Transcript
from prunesim.io.transcripts.keys import digest
from prunesim.model.workload import Arrival, TurnPlan

VERSION = 1
PART_KINDS = ("system", "user", "reasoning", "tool_call", "tool_output")


@dataclass
class WorkloadData:
    """A workload in memory: the header and the parts (sizes and keys only)."""

    header: dict
    parts: list[dict] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.header["name"]

    @property
    def turns(self) -> int:
        return self.header["turns"]


def repeats_of(parts: list[dict]) -> int:
    """Tool calls whose content key was already called earlier in the transcript."""
    seen: set[str] = set()
    n = 0
    for p in parts:
        if p["kind"] == "tool_call" and p.get("key"):
            n += p["key"] in seen
            seen.add(p["key"])
    return n


def from_transcript(t: Transcript, count, tokenizer: str) -> WorkloadData:
    parts = []
    for p in t.parts:
        rec = {"type": "part", "turn": p.turn, "kind": p.kind, "tokens": count(p.text)}
        if p.key:
            rec["key"] = p.key
        if p.tool:
            rec["tool"] = p.tool
        if p.kind == "tool_output":
            rec["digest"] = digest(p.text)
        parts.append(rec)
    turns = t.turns
    header = {
        "type": "header",
        "prunesim_workload": VERSION,
        "name": t.name,
        "source": t.source,
        "format": t.format,
        "tokenizer": tokenizer,
        "model": t.model,
        "turns": turns,
        "parts": len(parts),
        "repeats": repeats_of(parts),
        "prompt_tokens": [t.prompt_tokens.get(k) for k in range(1, turns + 1)] if t.prompt_tokens else None,
    }
    return WorkloadData(header, parts)


def dumps(w: WorkloadData) -> str:
    lines = [json.dumps(w.header, sort_keys=True, ensure_ascii=False)]
    lines.extend(json.dumps(p, sort_keys=True, ensure_ascii=False) for p in w.parts)
    return "\n".join(lines) + "\n"


def write(path: Path, w: WorkloadData) -> None:
    atomic.write_text(path, dumps(w))


def is_workload_file(path: Path) -> bool:
    """True when the file's first line is a prunesim workload header."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(1 << 20)
    except OSError:
        return False
    return first.lstrip().startswith(b"{") and b'"prunesim_workload"' in first


MAX_COUNT = 10**12  # larger sizes and counts are typos, as in scenario files
MAX_TEXT = 1000  # characters in a name, key or other text field


def read(path: Path) -> WorkloadData:
    """Read and check a workload file; every problem is a UserError naming the file and line.

    A last line without a line end is what an interrupted write leaves, and is
    ignored, as by every reader of prunesim's files; the header's ``parts``
    count (when given) then tells the file is short.
    """
    path = Path(path)
    where = str(path)
    if path.is_dir():
        raise UserError(where, None, "is a directory, not a workload file")
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise UserError(where, None, "no such workload file") from None
    except OSError as err:
        raise UserError(where, None, f"cannot read: {err.strerror}") from None
    header = None
    parts: list[dict] = []
    partial = False
    with fh:
        try:
            for lineno, raw in enumerate(fh, 1):
                if not raw.endswith(b"\n"):
                    partial = True
                    break
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise UserError(f"{where}:{lineno}", None, "not a text file (invalid UTF-8)") from None
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as err:
                    raise UserError(f"{where}:{lineno}", None, f"malformed JSON: {err.msg}") from None
                except ValueError as err:  # an integer of thousands of digits, say
                    raise UserError(f"{where}:{lineno}", None, f"malformed JSON: {json_problem(err)}") from None
                except RecursionError:
                    raise UserError(f"{where}:{lineno}", None, "JSON nested too deeply to read") from None
                if header is None:
                    header = _check_header(rec, f"{where}:{lineno}")
                else:
                    parts.append(_check_part(rec, f"{where}:{lineno}"))
        except OSError as err:
            raise UserError(where, None, f"cannot read: {err.strerror}") from None
    if header is None:
        raise UserError(where, None, "empty workload file" if not partial else "no complete header line")
    if "parts" in header and header["parts"] != len(parts):
        short = " (its last line is incomplete: a truncated file?)" if partial else ""
        raise UserError(where, "parts", f"header says {header['parts']} but the file holds {len(parts)}{short}")
    turns = max((p["turn"] for p in parts), default=0)
    if turns != header["turns"]:
        raise UserError(where, "turns", f"header says {header['turns']} but the parts reach turn {turns}")
    return WorkloadData(header, parts)


def _count(value) -> bool:
    return type(value) is int and 0 <= value <= MAX_COUNT


def _text_field(rec: dict, key: str, where: str, required: bool) -> None:
    if key not in rec:
        if required:
            raise UserError(where, key, "missing in the header")
        return
    value = rec[key]
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise UserError(where, key, f"must be a string of at most {MAX_TEXT} characters (got {_show(value)})")


def _show(value) -> str:
    text = json.dumps(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _check_header(rec, where: str) -> dict:
    if not isinstance(rec, dict) or rec.get("type") != "header" or "prunesim_workload" not in rec:
        raise UserError(where, None, "not a prunesim workload (the first record must be its header)")
    if type(rec["prunesim_workload"]) is not int or rec["prunesim_workload"] != VERSION:
        raise UserError(where, "prunesim_workload", f"unsupported version {_show(rec['prunesim_workload'])}")
    for key in ("name", "format", "tokenizer"):
        _text_field(rec, key, where, required=True)
    if not rec["name"]:
        raise UserError(where, "name", "must not be empty")
    for key in ("model", "source"):
        _text_field(rec, key, where, required=False)
    if "turns" not in rec:
        raise UserError(where, "turns", "missing in the header")
    if not _count(rec["turns"]) or rec["turns"] < 1:
        raise UserError(where, "turns", f"must be an integer from 1 to {MAX_COUNT} (got {_show(rec['turns'])})")
    for key in ("parts", "repeats"):
        if key in rec and not _count(rec[key]):
            raise UserError(where, key, f"must be a non-negative integer (got {_show(rec[key])})")
    pt = rec.get("prompt_tokens")
    if pt is not None:
        if not isinstance(pt, list) or len(pt) != rec["turns"]:
            raise UserError(where, "prompt_tokens", "must be a list with one entry per turn, or null")
        for i, p in enumerate(pt):
            if p is not None and not _count(p):
                raise UserError(where, f"prompt_tokens[{i}]",
                                f"must be an integer from 0 to {MAX_COUNT} or null (got {_show(p)})")
    return rec


def _check_part(rec, where: str) -> dict:
    if not isinstance(rec, dict) or rec.get("type") != "part":
        raise UserError(where, None, "expected a part record")
    for key in ("turn", "kind", "tokens"):
        if key not in rec:
            raise UserError(where, key, "missing in a part record")
    if not isinstance(rec["kind"], str) or rec["kind"] not in PART_KINDS:
        raise UserError(where, "kind", f"unknown part kind {_show(rec['kind'])} (known: {', '.join(PART_KINDS)})")
    for key in ("turn", "tokens"):
        if not _count(rec[key]):
            raise UserError(where, key, f"must be an integer from 0 to {MAX_COUNT} (got {_show(rec[key])})")
    for key in ("key", "tool", "digest"):
        if key in rec and (not isinstance(rec[key], str) or len(rec[key]) > MAX_TEXT):
            raise UserError(where, key, f"must be a string of at most {MAX_TEXT} characters (got {_show(rec[key])})")
    return rec


# -- the engine's workload ------------------------------------------------------
class TranscriptWorkload:
    """Replays a workload's parts turn by turn (the engine's workload protocol).

    Turn-0 parts are the initial spans, pinned. Each later turn's first
    reasoning, tool call and tool output fill the TurnPlan; every other part
    of the turn (more tool calls, their outputs, user messages) is an extra,
    in transcript order. A part goes stale ``reasoning_stale_after`` (reasoning)
    or ``output_stale_after`` (everything else) turns after it arrives, rounded;
    transcripts do not say when content stops being useful. Tool runs take no
    simulated time: the transcript's own timing is not replayed.
    """

    def __init__(self, data: WorkloadData, reasoning_stale_after: float = 3.0, output_stale_after: float = 8.0):
        self.data = data
        self.r_stale = max(1, round(reasoning_stale_after))
        self.o_stale = max(1, round(output_stale_after))

    def _arrival(self, p: dict, pinned: bool = False) -> Arrival:
        stale = self.r_stale if p["kind"] == "reasoning" else self.o_stale
        return Arrival(p["kind"], p["tokens"], p.get("key", ""), 1_000_000_000 if pinned else stale, pinned)

    def initial(self) -> list[Arrival]:
        return [self._arrival(p, pinned=True) for p in self.data.parts if p["turn"] == 0]

    def __iter__(self) -> Iterator[TurnPlan]:
        by_turn: dict[int, list[dict]] = {}
        for p in self.data.parts:
            if p["turn"] > 0:
                by_turn.setdefault(p["turn"], []).append(p)
        for turn in range(1, self.data.turns + 1):
            slots: dict[str, Arrival] = {}
            extra: list[Arrival] = []
            for p in by_turn.get(turn, ()):
                a = self._arrival(p)
                if p["kind"] in ("reasoning", "tool_call", "tool_output") and p["kind"] not in slots:
                    slots[p["kind"]] = a
                else:
                    extra.append(a)
            empty = Arrival("reasoning", 0)
            yield TurnPlan(
                turn=turn,
                reasoning=slots.get("reasoning", empty),
                tool_call=slots.get("tool_call", Arrival("tool_call", 0)),
                tool_output=slots.get("tool_output", Arrival("tool_output", 0)),
                tool_latency_s=0.0,
                extra=extra,
            )
