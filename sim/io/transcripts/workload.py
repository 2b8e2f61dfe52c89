"""prunesim's own workload format (JSON lines) and the workload that replays it.

A workload file is one header record, then one record per message part::

    {"type": "header", "prunesim_workload": 2, "name": ..., "source": ..., "format": ...,
     "tokenizer": ..., "calibration": ..., "model": ..., "turns": N, "parts": M, "repeats": R,
     "prompt_tokens": [p1, ..., pN],        # API prompt tokens per model call, null when unknown
     "usage": [{...}, ..., null],           # per call: the recorded usage (usage.FIELDS), or null
     "anchored_calls": [1, ...],            # calls whose own count sized hidden content
     "anchored_steps": 27,                  # counted calls whose step the anchored sizes carry (anchor.py)
     "anchor_fallbacks": [16],              # counted calls whose step kept the calibrated sizes
     "outputs": [119, null, ...],           # per call, its recorded output count, null where none or partial
     "context_window": 272000,              # the model's window, where the runtime records it
     "call_times": [0.0, 4.2, ..., null],   # seconds after the first call, per call (clock.py), or null
     "warm_cache": 17996,                   # tokens the first call read from the cache (written before the run)
     "events": [{"event": "compaction", "turn": 75, "trigger": "manual", "pre_tokens": 167766}, ...]}
    {"type": "part", "turn": 0, "kind": "system", "tokens": 312}
    {"type": "part", "turn": 0, "kind": "system", "tokens": 19000, "hidden": true, "sized_by": "usage"}
    {"type": "part", "turn": 1, "kind": "tool_call", "tokens": 9, "key": "cat setup.py", "tool": "bash", "call": 1,
     "fetches": ["cmd:cat setup.py", "file:setup.py"]}   # "uses": [...] for an edit (resources.py)
    {"type": "part", "turn": 1, "kind": "tool_output", "tokens": 420, "calibrated": 401, "key": "cat setup.py",
     "digest": "...", "call": 1, "dropped_at": 40}

Turn 0 holds what the model saw before its first call (system prompt, task):
it becomes the replay's initial spans, pinned. Turn ``k`` holds the ``k``-th
model call's reasoning and tool calls, then what came back. A part with
``dropped_at: k`` was removed by the runtime itself before call ``k`` (a
recorded compaction, reasoning the API drops, content the runtime cleared
unseen); the replay removes it there too. ``hidden`` parts were billed but
never written to the file; ``sized_by`` says where a size that was not
counted from text came from (``usage``: a recorded prompt count, see
:mod:`.assemble`; ``recorded``: recorded output tokens; ``image``: an image's
documented size). ``tokens`` is the part's anchored size where the
transcript records prompt counts (:mod:`.anchor`), and ``calibrated`` its
calibrated size where the two differ (:func:`sized_as` picks one). ``call``
pairs a tool call with its output: the same number on both, numbered in the
order of the calls (the runtime's own ids, such as ``tool_use_id``, are not
written). ``thinking: true`` marks reasoning written as
a thinking block (Claude Code). Events: ``compaction`` (recorded by the runtime; ``turn`` is
the call it came before), ``injected`` and ``removed`` (inferred from the
prompt counts, :mod:`.assemble`; a ``removed`` with ``hidden`` is a cut of the
hidden system part, :mod:`.anchor`), ``cache_break`` (:func:`cache_breaks`: the
call read only ``at_tokens`` from an explicit cache that held more). Records carry no transcript text, only
sizes and keys. Version 1 files (without the new fields) are still read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from prunesim.errors import UserError
from prunesim.io import atomic, inputs
from prunesim.io.transcripts import anchor, clock, identity, resources
from prunesim.io.transcripts import assemble as asm
from prunesim.io.transcripts import calibration as cal
from prunesim.io.transcripts.formats import Transcript
from prunesim.io.transcripts.keys import digest
from prunesim.io.transcripts.usage import FIELDS as USAGE_FIELDS
from prunesim.model.spans import RUNTIME_DROP, SYSTEM_PROMPT, THINKING
from prunesim.model.workload import Arrival, TurnPlan

VERSION = 2
READS = (1, 2)
PART_KINDS = ("system", "user", "reasoning", "tool_call", "tool_output", "summary")
EVENTS = ("compaction", "injected", "removed", "cache_break")
# A recorded cache read this far short of the previous prompt, within the cache's lifetime, is a cache break.
BREAK_MARGIN = 1024
BREAK_WITHIN_S = 300.0  # an explicit cache's 5-minute lifetime: a longer pause is an expiry, which the clock replays
OUTPUT_KINDS = ("reasoning", "tool_call")  # what a model call writes
PARTIAL_OUTPUT = 0.25  # a recorded output count below this share of what the call wrote is a partial one
TOUCH_FIELDS = ("fetches", "uses")  # a tool call's resources (resources.py): what it fetches, what it relies on
MAX_TOUCHES = 64  # resources named by one call


@dataclass
class WorkloadData:
    """A workload in memory: the header and the parts (sizes and keys only)."""

    header: dict
    parts: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # the import's, not written to the file
    path: str = ""  # the file it was read or imported from, as the user named it (for messages; not written)
    content: str = ""  # what the transcript it was imported from holds (identity.of_transcript; not written)

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


def from_transcript(t: Transcript, tokenizer: str, calibration: str = "auto",
                    sized: cal.Sized | None = None) -> WorkloadData:
    """Size a transcript's parts (calibrated for its model, see :mod:`.calibration`) and put back
    what the file does not show (:mod:`.assemble`)."""
    chosen = cal.choose(t.model, t.format, tokenizer, calibration)
    s = sized if sized is not None else cal.sized(t, tokenizer, raw=chosen is None)
    sizes = np.rint(s.sizes(chosen))
    out = asm.assemble(s.layout, sizes)
    return build(t, tokenizer, chosen, s, sizes, out)


def build(t: Transcript, tokenizer: str, chosen: cal.Calibration | None, s: cal.Sized, sizes: np.ndarray,
          out: asm.Assembly) -> WorkloadData:
    """The workload records of a sized and assembled transcript."""
    dropped = s.layout.dropped_at.copy()
    for k, chosen_parts, _ in out.removals:
        for i in chosen_parts:
            dropped[i] = k if not dropped[i] else min(dropped[i], k)
    anchored = anchor.anchor(s.layout, sizes, out, ~np.isnan(s.fixed), dropped, explicit_reads(t))
    recorded_outputs = {i for i in range(len(t.parts)) if not math.isnan(s.fixed[i]) and t.parts[i].tokens is None}
    keyed: list[tuple[tuple[int, int], dict]] = []
    need_state = resources.NeedState()
    calls: dict[str, int] = {}  # the transcript's call id -> the call's number in the workload
    for i, p in enumerate(t.parts):
        rec = {"type": "part", "turn": p.turn, "kind": p.kind}
        if p.hidden:
            rec["tokens"] = int(round(out.hidden_tokens)) - sum(cut for _, cut in anchored.hidden_cuts)
            rec["hidden"] = True
            rec["sized_by"] = "usage"
            for n, (k, cut) in enumerate(anchored.hidden_cuts, 1):  # what the runtime cut from it, unseen
                keyed.append(((p.turn, i + n / (len(anchored.hidden_cuts) + 1)), {
                    "type": "part", "turn": p.turn, "kind": p.kind, "tokens": cut, "calibrated": 0, "hidden": True,
                    "sized_by": "usage", "dropped_at": k}))
            if anchored.hidden_cuts:
                rec["calibrated"] = int(round(out.hidden_tokens))
        else:
            rec["tokens"] = int(anchored.sizes[i])
            if anchored.sizes[i] != sizes[i]:
                rec["calibrated"] = int(sizes[i])
            if i in recorded_outputs:
                rec["sized_by"] = "recorded"
            elif p.tokens is not None:  # encrypted reasoning sized from usage, or an image block
                rec["sized_by"] = "recorded" if p.kind == "reasoning" else "image"
        if p.key:
            rec["key"] = p.key
        if p.tool:
            rec["tool"] = p.tool
        if p.kind == "tool_call":
            touched = resources.touches(t.format, p.tool, p.text, p.key, need_state)
            for name in TOUCH_FIELDS:
                if getattr(touched, name):
                    rec[name] = list(getattr(touched, name))[:MAX_TOUCHES]
        if p.call_id and p.kind in ("tool_call", "tool_output"):
            rec["call"] = calls.setdefault(p.call_id, len(calls) + 1)
        if p.thinking:
            rec["thinking"] = True
        if p.kind == "tool_output":
            rec["digest"] = digest(p.text)
        if dropped[i]:
            rec["dropped_at"] = int(dropped[i])
        keyed.append(((p.turn, i), rec))
    events = [dict(e) for e in t.events]
    for k, tokens, dropped_at in out.injections:
        rec = {"type": "part", "turn": k - 1, "kind": "user", "tokens": int(round(tokens)), "hidden": True,
               "sized_by": "usage"}
        if dropped_at:
            rec["dropped_at"] = int(dropped_at)
        keyed.append(((k - 1, len(t.parts) + k), rec))
        events.append({"event": "injected", "turn": k, "tokens": int(round(tokens))})
    for k, chosen_parts, tokens in out.removals:
        events.append({"event": "removed", "turn": k, "tokens": int(round(tokens)), "parts": len(chosen_parts)})
    for k, cut in anchored.hidden_cuts:  # the runtime changed its hidden system part (anchor.py)
        events.append({"event": "removed", "turn": k, "tokens": cut, "parts": 0, "hidden": True})
    events.extend(cache_breaks(t))
    events.sort(key=lambda e: (e["turn"], EVENTS.index(e["event"])))
    parts = [rec for _, rec in sorted(keyed, key=lambda kr: kr[0])]
    turns = t.turns
    header = {
        "type": "header",
        "prunesim_workload": VERSION,
        "name": t.name,
        "source": t.source,
        "format": t.format,
        "tokenizer": tokenizer,
        "calibration": chosen.name if chosen else "none",
        "model": t.model,
        "turns": turns,
        "parts": len(parts),
        "repeats": repeats_of(parts),
        "prompt_tokens": [t.prompt_tokens.get(k) for k in range(1, turns + 1)] if t.prompt_tokens else None,
        "usage": [t.usage.get(k) for k in range(1, turns + 1)] if t.usage else None,
        "anchored_calls": [k + 1 for k in np.flatnonzero(out.anchored).tolist()],
        "anchored_steps": anchored.steps,
        "anchor_fallbacks": anchored.fallbacks,
        "outputs": recorded_output_counts(t, sizes),
        "context_window": t.context_window,
        "call_times": clock.relative(t.call_times, turns),
        "warm_cache": (t.usage.get(1) or {}).get("cache_read_tokens"),
        "events": events,
    }
    data = WorkloadData(header, parts, content=identity.of_transcript(t))
    for note in (resources.unknown_note(t.source, t.format, need_state),
                 clock.backwards_note(t.call_times, turns, t.source)):
        if note:
            data.warnings.append(note)
    if any(p.hidden for p in t.parts) and not out.hidden_at:
        data.warnings.append(f"{t.source}: no recorded prompt counts, so the system prompt and tool definitions "
                             "(never written to the file) are not counted")
    return data


def explicit_reads(t: Transcript) -> np.ndarray:
    """Per call, the tokens it read from an explicit cache (its usage records cache writes), nan elsewhere."""
    reads = np.full(t.turns, np.nan)
    for k in range(1, t.turns + 1):
        u = t.usage.get(k) or {}
        if "cache_write_tokens" in u and u.get("cache_read_tokens") is not None:
            reads[k - 1] = u["cache_read_tokens"]
    return reads


def recorded_output_counts(t: Transcript, sizes: np.ndarray) -> list[int | None] | None:
    """Per call, the output tokens its usage records, None where it records none or only a partial count.

    Claude Code writes a record per content block as the answer streams in,
    each with the usage known then: where no record came after the final
    count, the file holds the stream's opening count (1 to 10 tokens; 585 of
    the 1,815 calls of the dev sessions, with the shipped calibration). A count below ``PARTIAL_OUTPUT`` of
    what the call's own reasoning and tool calls weigh (calibrated) is such a
    count: no final count is that far below what the call visibly wrote.
    """
    if not t.usage:
        return None
    wrote = np.zeros(t.turns + 1)
    for i, p in enumerate(t.parts):
        if p.kind in OUTPUT_KINDS and not p.hidden:
            wrote[p.turn] += sizes[i]
    out: list[int | None] = []
    for k in range(1, t.turns + 1):
        n = (t.usage.get(k) or {}).get("output_tokens")
        out.append(n if n is not None and n >= PARTIAL_OUTPUT * wrote[k] else None)
    return out


def billed_outputs(data: WorkloadData) -> list[int]:
    """Per call, the output tokens a replay bills for it: its recorded count (header ``outputs``) where the file
    holds one, else what the call's reasoning and tool calls weigh at their calibrated sizes. A policy does not
    change what the agent wrote, so every policy's replay bills the same."""
    recorded = data.header.get("outputs") or []
    wrote = [0] * (data.turns + 1)
    for p in data.parts:
        if p["kind"] in OUTPUT_KINDS and not p.get("hidden") and 1 <= p["turn"] <= data.turns:
            wrote[p["turn"]] += p.get("calibrated", p["tokens"])
    return [recorded[k - 1] if k <= len(recorded) and recorded[k - 1] is not None else wrote[k]
            for k in range(1, data.turns + 1)]


SIZES = ("anchored", "calibrated")


def sized_as(data: WorkloadData, sizes: str) -> WorkloadData:
    """The workload with the sizes a replay uses: ``anchored`` (as stored: sizes that reproduce the recorded
    prompts, recorded output counts billed) or ``calibrated`` (the size model's alone: each part's calibrated
    size, and outputs billed at what the calls' parts weigh), :mod:`.anchor`. A calibrated copy starts with
    the import's warnings in a list of its own: a note on one sizing's replay is not the other's."""
    if sizes == "anchored" or not any("calibrated" in p for p in data.parts) and not data.header.get("outputs"):
        return data
    parts = [({**p, "tokens": p["calibrated"]} if "calibrated" in p else p) for p in data.parts]
    header = {**data.header, "outputs": None}
    return WorkloadData(header, parts, list(data.warnings), data.path, data.content)


def cache_breaks(t: Transcript) -> list[dict]:
    """The transcript's recorded cache breaks as ``cache_break`` events (:func:`break_points`)."""
    turns = range(1, t.turns + 1)
    usage = [t.usage.get(k) or {} for k in turns]
    compacted = {e["turn"] for e in t.events if e.get("event") == "compaction"}
    return [{"event": "cache_break", "turn": k, "at_tokens": at}
            for k, at in break_points(usage, [t.call_times.get(k) for k in turns], compacted).items()]


def break_points(usage: list[dict], times: list[float | None], compacted: set[int]) -> dict[int, int]:
    """Call -> tokens it read, for the calls whose recorded read from an explicit cache fell short of what the
    cache held: the runtime changed its prompt from there on, unseen (Claude Code rewrites an early message now
    and then). ``usage`` and ``times`` hold one entry per call, in order.

    An explicit cache stores the whole prompt at each call, so call ``k`` reads
    at least call ``k-1``'s prompt (or its own, when shorter) unless the prompt
    changed before that point or the entry expired. Judged only where the usage
    records cache writes (an explicit cache) and both calls have a time: a
    pause longer than ``BREAK_WITHIN_S`` is an expiry, which the replay's clock
    reproduces itself, and a call after a compaction starts afresh.
    """
    out = {}
    for k in range(2, len(usage) + 1):
        now, before = usage[k - 1], usage[k - 2]
        if "cache_write_tokens" not in now or k in compacted or "prompt_tokens" not in before:
            continue
        if times[k - 1] is None or times[k - 2] is None or times[k - 1] - times[k - 2] > BREAK_WITHIN_S:
            continue
        read = now.get("cache_read_tokens")
        if read is not None and read + BREAK_MARGIN < min(before["prompt_tokens"], now.get("prompt_tokens", 0)):
            out[k] = int(read)
    return out


def context_before_calls(data: WorkloadData) -> list[int]:
    """Tokens in the prompt of each model call (index k-1), from the parts: what the no-op replay holds."""
    T = data.turns
    arrive = [0] * (T + 2)
    leave = [0] * (T + 2)
    for p in data.parts:
        t = min(p["turn"] + 1, T + 1)
        arrive[t] += p["tokens"]
        d = p.get("dropped_at", 0)
        if d:
            leave[min(max(d, t), T + 1)] += p["tokens"]
    out, x = [], 0
    for k in range(1, T + 1):
        x += arrive[k] - leave[k]
        out.append(x)
    return out


def dumps(w: WorkloadData) -> str:
    lines = [json.dumps(w.header, sort_keys=True, ensure_ascii=False)]
    lines.extend(json.dumps(p, sort_keys=True, ensure_ascii=False) for p in w.parts)
    return "\n".join(lines) + "\n"


def write(path: Path, w: WorkloadData) -> None:
    atomic.write_text(path, dumps(w))


def is_workload_file(path: Path) -> bool:
    """True when the file's first line is a prunesim workload header."""
    try:
        with inputs.open_input(path) as fh:
            first = fh.readline(1 << 20)
    except (OSError, UserError):
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
    fh = inputs.open_input(path, "workload file")  # the one reader: a device or a pipe is refused unread
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
                except (ValueError, RecursionError) as err:  # malformed, thousands of digits, nested too deep
                    raise inputs.malformed_json(where, err, lineno) from None
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
    data = WorkloadData(header, parts)
    keyed = any(p["kind"] == "tool_call" and p.get("key") for p in parts)
    if keyed and not any(name in p for p in parts for name in TOUCH_FIELDS):
        data.warnings.append(f"{where}: its tool calls name no resources (a workload imported before the need "
                             "table?), so the replayed agent cannot react to what a policy removes; import the "
                             "transcript again for the closed loop")
    return data


def _count(value) -> bool:
    return type(value) is int and 0 <= value <= MAX_COUNT


def _usage_value(field: str, value) -> bool:
    """A recorded usage field: token counts are integers; the cost is dollars, a finite number."""
    if field == "cost_usd":
        return type(value) in (int, float) and math.isfinite(value) and value >= 0
    return _count(value)


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
    if type(rec["prunesim_workload"]) is not int or rec["prunesim_workload"] not in READS:
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
    window = rec.get("context_window")
    if window is not None and (not _count(window) or window < 1):
        raise UserError(where, "context_window", f"must be null or an integer from 1 to {MAX_COUNT} "
                                                 f"(got {_show(window)})")
    pt = rec.get("prompt_tokens")
    if pt is not None:
        if not isinstance(pt, list) or len(pt) != rec["turns"]:
            raise UserError(where, "prompt_tokens", "must be a list with one entry per turn, or null")
        for i, p in enumerate(pt):
            if p is not None and not _count(p):
                raise UserError(where, f"prompt_tokens[{i}]",
                                f"must be an integer from 0 to {MAX_COUNT} or null (got {_show(p)})")
    usage = rec.get("usage")
    if usage is not None and (not isinstance(usage, list) or len(usage) != rec["turns"] or not all(
            u is None or (isinstance(u, dict) and set(u) <= set(USAGE_FIELDS)
                          and all(v is None or _usage_value(k, v) for k, v in u.items())) for u in usage)):
        raise UserError(where, "usage", f"must be null or a list of one object (fields {', '.join(USAGE_FIELDS)}, "
                        "each a non-negative integer, cost_usd a non-negative number in USD, or null) "
                        "or null per turn")
    warm = rec.get("warm_cache")
    if warm is not None and not _count(warm):
        raise UserError(where, "warm_cache", f"must be null or a non-negative integer (got {_show(warm)})")
    times = rec.get("call_times")
    if times is not None and (not isinstance(times, list) or len(times) != rec["turns"] or not all(
            x is None or (type(x) in (int, float) and math.isfinite(x) and 0 <= x <= MAX_COUNT) for x in times)
            or _decreasing(times)):
        raise UserError(where, "call_times", "must be null or a list of one time per turn (seconds after the first "
                        "call, never decreasing, or null)")
    for key in ("anchored_calls", "anchor_fallbacks"):
        calls = rec.get(key, [])
        if not isinstance(calls, list) or not all(_count(k) and 1 <= k <= rec["turns"] for k in calls):
            raise UserError(where, key, "must be a list of call numbers")
    if "anchored_steps" in rec and not _count(rec["anchored_steps"]):
        raise UserError(where, "anchored_steps", f"must be a non-negative integer (got {_show(rec['anchored_steps'])})")
    outputs = rec.get("outputs")
    if outputs is not None and (not isinstance(outputs, list) or len(outputs) != rec["turns"]
                                or not all(n is None or _count(n) for n in outputs)):
        raise UserError(where, "outputs", "must be null or a list of one output count (or null) per turn")
    events = rec.get("events", [])
    # An event past the last call (or before the first) would be dropped without a word: the file is wrong.
    if not isinstance(events, list) or not all(isinstance(e, dict) and e.get("event") in EVENTS and _count(
            e.get("turn")) and 1 <= e["turn"] <= rec["turns"]
            and (e["event"] != "cache_break" or _count(e.get("at_tokens"))) for e in events):
        raise UserError(where, "events", f"must be a list of events ({', '.join(EVENTS)}) each with a turn "
                                         f"from 1 to the header's turns ({rec['turns']}), a cache_break with "
                                         "at_tokens")
    return rec


def _decreasing(times: list) -> bool:
    known = [x for x in times if x is not None]
    return any(b < a for a, b in zip(known, known[1:], strict=False))


def _check_part(rec, where: str) -> dict:
    if isinstance(rec, dict) and rec.get("type") == "header":  # `cat a.workload.jsonl b.workload.jsonl`
        raise UserError(where, None, "a second header: two workloads written into one file (a workload file holds "
                                     "one; import or replay them as files of their own)")
    if not isinstance(rec, dict) or rec.get("type") != "part":
        raise UserError(where, None, "expected a part record")
    for key in ("turn", "kind", "tokens"):
        if key not in rec:
            raise UserError(where, key, "missing in a part record")
    if not isinstance(rec["kind"], str) or rec["kind"] not in PART_KINDS:
        raise UserError(where, "kind", f"unknown part kind {_show(rec['kind'])} (known: {', '.join(PART_KINDS)})")
    for key in ("turn", "tokens", "calibrated"):
        if key in rec and not _count(rec[key]):
            raise UserError(where, key, f"must be an integer from 0 to {MAX_COUNT} (got {_show(rec[key])})")
    for key in ("key", "tool", "digest"):
        if key in rec and (not isinstance(rec[key], str) or len(rec[key]) > MAX_TEXT):
            raise UserError(where, key, f"must be a string of at most {MAX_TEXT} characters (got {_show(rec[key])})")
    for key in TOUCH_FIELDS:
        if key in rec and not (isinstance(rec[key], list) and len(rec[key]) <= MAX_TOUCHES and all(
                isinstance(r, str) and 0 < len(r) <= MAX_TEXT for r in rec[key])):
            raise UserError(where, key, f"must be a list of at most {MAX_TOUCHES} resource names, each a "
                                        f"non-empty string of at most {MAX_TEXT} characters")
    if "thinking" in rec and type(rec["thinking"]) is not bool:
        raise UserError(where, "thinking", f"must be true or false (got {_show(rec['thinking'])})")
    if "call" in rec and not (_count(rec["call"]) and rec["call"] > 0):
        raise UserError(where, "call", f"must be a positive integer (got {_show(rec['call'])})")
    if "dropped_at" in rec and not (_count(rec["dropped_at"]) and rec["dropped_at"] > rec["turn"]):
        raise UserError(where, "dropped_at", "must be a call number after the part's turn")
    return rec


# -- the engine's workload ------------------------------------------------------
class TranscriptWorkload:
    """Replays a workload's parts turn by turn (the engine's workload protocol).

    Turn-0 parts are the initial spans, pinned. Each later turn's first
    reasoning, tool call and tool output fill the TurnPlan; every other part
    of the turn (more tool calls, their outputs, user messages) is an extra,
    in transcript order. Tool calls and outputs carry their tool's name (an
    output that names none takes its call's). A part goes stale ``reasoning_stale_after`` (reasoning)
    or ``output_stale_after`` (everything else) turns after it arrives, rounded;
    transcripts do not say when content stops being useful. With ``clock``
    (the header's ``call_times``), call ``k`` waits for its recorded time: the
    replay's clock follows the recording, and runs ahead of it only where the
    simulation took longer (a prune pass, a compaction). Without it, tool runs
    take no simulated time and the clock is the latency model's. A part the
    runtime dropped (``dropped_at: k``) carries the tag ``drop@k``, and turn
    ``k``'s plan asks the engine to drop it before the model call.
    """

    # The window bounds what a model call reads, and the runtime checks it there: between two calls the
    # conversation may hold more, when the runtime removes content before the next call (Claude Code counted
    # 202,309 tokens on a 200,000-token window at a compaction) or no call follows.
    window_at_call = True

    def __init__(self, data: WorkloadData, reasoning_stale_after: float = 3.0, output_stale_after: float = 8.0,
                 clock: bool = True, cache_breaks: bool = True):
        self.data = data
        # The engine lets the agent react (prunesim.model.reaction) only to a workload whose calls name resources.
        self.has_resources = any("uses" in p for p in data.parts)
        # The scaffold that recorded it (its format): a replay's agent model takes that scaffold's profile.
        self.scaffold = str(data.header.get("format") or "")
        self.times = data.header.get("call_times") if clock else None
        self.breaks = {e["turn"]: e["at_tokens"] for e in data.header.get("events") or ()
                       if cache_breaks and e.get("event") == "cache_break"}
        self.warm = data.header.get("warm_cache") or None if cache_breaks else None
        self.outputs = billed_outputs(data)
        self.r_stale = max(1, round(reasoning_stale_after))
        self.o_stale = max(1, round(output_stale_after))

    def _arrival(self, p: dict, pinned: bool = False, tool: str = "", touches: tuple = ((), ())) -> Arrival:
        stale = self.r_stale if p["kind"] == "reasoning" else self.o_stale
        tags = frozenset({drop_tag(p["dropped_at"])}) if p.get("dropped_at") else frozenset()
        fetches, uses = (tuple(p.get("fetches", ())), tuple(p.get("uses", ()))) if p["kind"] == "tool_call" else touches
        if p.get("thinking"):
            tags |= {THINKING}
        if p.get("hidden") and p["turn"] == 0 and p["kind"] == "system":
            tags |= {SYSTEM_PROMPT}
        return Arrival(p["kind"], p["tokens"], p.get("key", ""), 1_000_000_000 if pinned else stale, pinned, tags,
                       tool=p.get("tool") or tool, fetches=fetches, uses=uses, call=p.get("call", 0))

    def initial(self) -> list[Arrival]:
        return [self._arrival(p, pinned=True) for p in self.data.parts if p["turn"] == 0]

    def __iter__(self) -> Iterator[TurnPlan]:
        by_turn: dict[int, list[dict]] = {}
        drops: set[int] = set()
        moved = replaced_after_compaction(self.data)
        ahead: dict[int, list[dict]] = {}  # call -> parts placed before it, after the runtime's removal
        for i, p in enumerate(self.data.parts):
            if i in moved:
                ahead.setdefault(p["turn"] + 1, []).append(p)
            elif p["turn"] > 0:
                by_turn.setdefault(p["turn"], []).append(p)
            if p.get("dropped_at"):
                drops.add(p["dropped_at"])
        times = self.times or ()
        for turn in range(1, self.data.turns + 1):
            slots: dict[str, Arrival] = {}
            extra: list[Arrival] = []
            tool_of: dict[str, str] = {}  # key -> tool of this turn's call: an output that names no tool has its call's
            touched: dict[str, tuple] = {}  # key -> (fetches, uses) of this turn's call: its output's resources
            for p in by_turn.get(turn, ()):
                output = p["kind"] == "tool_output"
                key = p.get("key", "")
                a = self._arrival(p, tool=tool_of.get(key, "") if output else "",
                                  touches=touched.get(key, ((), ())) if output else ((), ()))
                if p["kind"] == "tool_call":
                    if a.tool:
                        tool_of[a.key] = a.tool
                    if a.fetches or a.uses:
                        touched[a.key] = (a.fetches, a.uses)
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
                extra=tuple(extra),
                drop_tags=frozenset({drop_tag(turn)}) if turn in drops else frozenset(),
                call_at_s=times[turn - 1] if turn <= len(times) else None,
                before_call=[self._arrival(p) for p in ahead.get(turn, ())],
                rewrite_at=self.breaks.get(turn),
                warm_cache=self.warm if turn == 1 else None,
                output_tokens=self.outputs[turn - 1],
            )


def replaced_after_compaction(data: WorkloadData) -> set[int]:
    """Indexes of the parts that replaced a recorded compaction's removal: turn ``k-1``'s parts that stay in the
    prompt of call ``k`` when a compaction came before call ``k`` (its summary, the files it re-attached).

    A replay places them after the removal, as the runtime did, not beside the content they replaced.
    """
    compacted = {e["turn"] for e in data.header.get("events") or () if e.get("event") == "compaction"}
    if not compacted:
        return set()
    return {i for i, p in enumerate(data.parts)
            if p["turn"] + 1 in compacted and p["turn"] > 0 and p.get("dropped_at") != p["turn"] + 1}


def drop_tag(call: int) -> str:
    """The tag of a span the runtime removed before model call ``call``."""
    return f"{RUNTIME_DROP}{call}"
