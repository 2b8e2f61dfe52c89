"""The recorder: every change to the window, with its simulated time and turn.

An observer that keeps plain columns. ``mode`` chooses how much it keeps:
``"all"`` (every change), ``"turns"`` (one row at the end of each turn) or
``"none"`` (no trace rows: the runner does not subscribe an in-memory recorder
at all, and the metrics still see everything, so summaries need no trace; a
streaming recorder still writes the ledger, events and calls). Event details are encoded
here, so an unrecorded run never builds them.

:class:`Recorder` keeps the rows in memory (for studies that read a run back);
:class:`StreamingRecorder` hears the same events and writes the same rows, as
they happen, to open files it is handed, in small batches, so that a run of any
length holds a bounded number of rows.
"""

from __future__ import annotations

import csv
import io
import json
from typing import NamedTuple

import numpy as np
from prunesim.model.events import Observer, PassRecord
from prunesim.observe.cells import neutral
from prunesim.observe.metrics.cost import CALL_COLUMNS
from prunesim.observe.metrics.cost import LEDGER_COLUMNS as COST_LEDGER_COLUMNS

TRACE_COLUMNS = (
    "seq",
    "time_s",
    "turn",
    "event",
    "kind",
    "span_id",
    "key",
    "delta",
    "utilization",
    "appended_total",
    "removed_total",
)

# The ledger names its first column "pass"; the cost observer's columns follow the engine's record,
# appended at the end so that readers of older ledgers find every column where it was.
ENGINE_LEDGER_COLUMNS = ("pass",) + PassRecord._fields[1:]
LEDGER_COLUMNS = ENGINE_LEDGER_COLUMNS + COST_LEDGER_COLUMNS

EVENT_COLUMNS = ("seq", "time_s", "turn", "event", "detail")

__all__ = ["CALL_COLUMNS", "ENGINE_LEDGER_COLUMNS", "EVENT_COLUMNS", "EventRecord", "LEDGER_COLUMNS", "LedgerRow",
           "MODES", "Recorder", "Records", "TRACE_COLUMNS"]

MODES = ("all", "turns", "none")


class EventRecord(NamedTuple):
    """One row of events.csv, with its detail parsed: ``detail["reason"]``, not a JSON string."""

    seq: int
    time_s: float
    turn: int
    event: str
    detail: dict


# One ledger row by name: the engine's PassRecord fields, then what the pass cost (None when not recorded).
LedgerRow = NamedTuple("LedgerRow", [(f, object) for f in PassRecord._fields + COST_LEDGER_COLUMNS])
LedgerRow.__doc__ = "One ledger row: a model-driven pass's PassRecord fields, then what the pass cost."


class Records(list):
    """Named records (ledger rows, events) in a plain list, which :meth:`to_pandas` makes a DataFrame."""

    def __init__(self, rows, columns: tuple[str, ...]):
        super().__init__(rows)
        self.columns = columns

    def to_pandas(self):
        """A ``pandas.DataFrame`` with one column per field (pandas is optional: installed by the user)."""
        return to_pandas({c: [getattr(r, c) for r in self] for c in self.columns})


def to_pandas(columns: dict):
    try:
        import pandas
    except ImportError:
        raise ModuleNotFoundError("to_pandas() needs pandas, which prunesim does not require: "
                                  "pip install pandas") from None
    return pandas.DataFrame(columns)

_PER_CHANGE = frozenset({"span_appended", "span_removed"})

_KIND_JSON: dict[str, str] = {}
_SORTED_JSON = json.JSONEncoder(sort_keys=True).encode  # json.dumps(sort_keys=True), its encoder made once


def _json_kind(kind: str) -> str:
    """A short name (a span kind, an action, a reason) as JSON text, cached: the same few recur all run long."""
    text = _KIND_JSON.get(kind)
    if text is None:
        if len(_KIND_JSON) >= 4096:  # a policy that makes up its reasons as it goes: stay bounded
            _KIND_JSON.clear()
        text = _KIND_JSON[kind] = json.dumps(kind)
    return text


_CSV_SPECIAL = (",", '"', "\n", "\r")


def cell(value) -> str:
    """A value as a CSV cell, as :func:`prunesim.io.atomic.format_cell` writes it (floats to 6 decimals), and
    text a spreadsheet never runs as a formula (:mod:`prunesim.observe.cells`)."""
    if isinstance(value, float):
        return repr(round(value, 6))
    if isinstance(value, bool):
        return "true" if value else "false"
    return neutral(str(value))


_NUMBER_ROW_FORMATS: dict[tuple, tuple[str, tuple[int, ...], tuple[int, ...]] | None] = {}
_BOOL_TEXT = ("false", "true")


def _number_row_format(types: tuple) -> tuple[str, tuple[int, ...], tuple[int, ...]] | None:
    """A %-format for rows of exactly these types (int, float and bool only), where the floats and the bools are."""
    if not all(t is int or t is float or t is bool for t in types):
        return None  # None, strings, numpy scalars: cell() by cell()
    fmt = ",".join("%r" if t is float else "%s" if t is bool else "%d" for t in types) + "\n"
    return (fmt, tuple(i for i, t in enumerate(types) if t is float),
            tuple(i for i, t in enumerate(types) if t is bool))


def number_row(row) -> str | None:
    """``row`` as a CSV line, equal to ``csv.writer`` writing ``[cell(v) for v in row]``, or None.

    The ledger's and calls.csv's rows, and a sweep's figures, are plain ints, floats and bools: one %-format per
    row (floats rounded as :func:`cell` rounds them, bools written as it writes them) instead of a call per
    cell. Any other row is None, for the caller to write cell by cell.
    """
    types = tuple(map(type, row))
    try:
        found = _NUMBER_ROW_FORMATS[types]
    except KeyError:
        if len(_NUMBER_ROW_FORMATS) >= 4096:  # rows of ever new shapes: stay bounded
            _NUMBER_ROW_FORMATS.clear()
        found = _NUMBER_ROW_FORMATS[types] = _number_row_format(types)
    if found is None:
        return None
    fmt, floats, bools = found
    if not floats and not bools:
        return fmt % tuple(row)
    values = list(row)
    for i in floats:
        values[i] = round(values[i], 6)
    for i in bools:
        values[i] = _BOOL_TEXT[values[i]]
    return fmt % tuple(values)


def _gather_rows(rows, lines: list[str], file, writer) -> None:
    """Each row's CSV line appended to ``lines``; a row :func:`number_row` cannot format is written cell by cell
    through ``writer``, after what ``lines`` gathered so far (so that the file keeps the rows' order)."""
    for row in rows:
        line = number_row(row)
        if line is None:
            file.write("".join(lines))
            lines.clear()
            writer.writerow([cell(v) for v in row])
        else:
            lines.append(line)


def csv_line(cells) -> str:
    """``cells`` (text, as :func:`cell` formats values) as one CSV line ending in "\\n", each made a cell a
    spreadsheet never runs as a formula (:func:`prunesim.observe.cells.neutral`), as
    ``csv.writer(lineterminator="\\n")`` writes them, except that a field holding a carriage return is quoted
    too: the csv module of Python 3.11 leaves a lone "\\r" bare, and readers such as pandas take it for the end
    of a line. Every other line is byte for byte the same.
    """
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerow([neutral(c) for c in cells])  # quotes "\r" or "\n" in a field
    return buf.getvalue()[:-2] + "\n"


def csv_field(text: str) -> str:
    """``text`` as one CSV field, as :func:`csv_line` writes it."""
    text = neutral(text)
    if not any(c in text for c in _CSV_SPECIAL):
        return text
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerow([text, ""])  # a second field: a lone "" would be quoted
    return buf.getvalue()[:-3]


class Recorder(Observer):
    def __init__(self, mode: str = "all"):
        if mode not in MODES:
            raise ValueError(f"trace mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self.trace: dict[str, list] = {c: [] for c in TRACE_COLUMNS}
        self.ledger: list[PassRecord] = []
        self.events: list[tuple] = []
        self._seq = 0
        # "none" keeps no trace rows; a streaming recorder still writes the ledger, events and calls.
        self.muted = {"all": frozenset({"turn_end"}), "turns": _PER_CHANGE,
                      "none": _PER_CHANGE | {"turn_end"}}[mode]

    # -- the trace -------------------------------------------------------------
    def on_span_appended(self, time, turn, span, kept, utilization, appended_total, removed_total) -> None:
        self._row(time, turn, "append", span.kind, span.id, span.key, kept, utilization, appended_total,
                  removed_total)

    def on_span_removed(self, time, turn, cause, span, freed, utilization, appended_total, removed_total) -> None:
        self._row(time, turn, cause, span.kind, span.id, span.key, -freed, utilization, appended_total,
                  removed_total)

    def on_turn_end(self, time, turn, utilization, appended_total, removed_total) -> None:
        self._row(time, turn, "turn_end", "", -1, "", 0, utilization, appended_total, removed_total)

    def _row(self, *values) -> None:
        self._seq += 1
        t = self.trace
        t["seq"].append(self._seq)
        for name, value in zip(TRACE_COLUMNS[1:], values, strict=True):
            t[name].append(value)

    # -- the ledger ------------------------------------------------------------
    def on_prune_pass(self, time, record: PassRecord) -> None:
        self.ledger.append(record)

    # -- events ----------------------------------------------------------------
    def _event(self, time, turn, event: str, **detail) -> None:
        # Kept as JSON text, as events.csv writes it; RunResult.events parses it into EventRecords.
        self._add_event(time, turn, event, _SORTED_JSON(detail))

    def _add_event(self, time, turn, event: str, detail: str) -> None:
        self.events.append((len(self.events) + 1, time, turn, event, detail))

    def on_truncation(self, time, turn, cause, kind, wanted, kept, constraint, selections) -> None:
        # The most frequent events at a full window: their JSON written directly, as json.dumps(sort_keys=True)
        # writes it (integers, and a span kind from a fixed list).
        k = _json_kind(kind)
        if cause == "forced_truncation":
            self._add_event(time, turn, cause, f'{{"kept": {kept}, "kind": {k}, "wanted": {wanted}}}')
        elif cause == "forced_drop":
            self._add_event(time, turn, cause, f'{{"kind": {k}, "tokens": {wanted}}}')
        else:
            self._add_event(time, turn, cause,
                            f'{{"selections": {selections}, "wanted": {wanted}, "written": {kept}}}')

    def on_gate_decision(self, time, turn, reason, numbers) -> None:
        self._event(time, turn, "boundary", reason=reason, **numbers)

    def on_non_model_eviction(self, time, turn, action, reason, spans, freed, fallback) -> None:
        # A gate's fallback and a policy's own non-model eviction are different stories: named apart.
        event = "fallback" if fallback else "non_model_eviction"
        if type(action) is str and type(reason) is str and type(spans) is int and type(freed) is int:
            # Frequent under a runtime policy: its JSON written directly, as json.dumps(sort_keys=True) writes it.
            self._add_event(time, turn, event, f'{{"action": {_json_kind(action)}, "freed": {freed}, '
                                                f'"reason": {_json_kind(reason)}, "spans": {spans}}}')
        else:
            self._event(time, turn, event, action=action, reason=reason, spans=spans, freed=freed)

    def on_context_edit(self, time, turn, record) -> None:
        detail = record._asdict()
        del detail["action"]  # the row's event names it
        self._event(time, turn, record.action, **detail)

    def on_self_edit_refused(self, time, turn, reason, span_ids, action) -> None:
        self._event(time, turn, "self_edit_refused", reason=reason, span_ids=span_ids, action=action)

    def on_prune_planned(self, time, turn, pass_id, selected, keys, rationale_span, rationale, own_rationale):
        self._event(time, turn, "prune_plan", pass_id=pass_id, selected=selected, keys=keys,
                    rationale_span=rationale_span, rationale=rationale, own_rationale=own_rationale)

    def on_tombstone_fold(self, time, turn, folded, keys, digest_tokens, tombstone_tokens) -> None:
        self._event(time, turn, "tombstone_fold", folded=folded, keys=keys, digest_tokens=digest_tokens,
                    tombstone_tokens=tombstone_tokens)

    def on_need(self, time, turn, outcome, key, tokens, turns_since_prune, record) -> None:
        if outcome == "dismissed":
            self._event(time, turn, "need_dismissed", key=key, record=record, turns_since_prune=turns_since_prune)
        elif outcome == "override":
            self._event(time, turn, "override_retrieval", key=key, tokens=tokens,
                        turns_since_prune=turns_since_prune, record=record)
        else:
            self._event(time, turn, "re_retrieval", key=key, tokens=tokens, turns_since_prune=turns_since_prune)

    def on_refetch(self, time, turn, resource, key, call_tokens, tokens, latency_s) -> None:
        self._event(time, turn, "refetch", resource=resource, key=key, call_tokens=call_tokens, tokens=tokens,
                    latency_s=round(latency_s, 6))

    def on_redo(self, time, turn, key, call_tokens, tokens, latency_s) -> None:
        self._event(time, turn, "redo", key=key, call_tokens=call_tokens, tokens=tokens, latency_s=round(latency_s, 6))

    def event_records(self) -> Records:
        return Records((EventRecord(seq, t, turn, ev, json.loads(detail)) for seq, t, turn, ev, detail in self.events),
                       EventRecord._fields)

    def trace_arrays(self) -> dict[str, np.ndarray]:
        """The trace as numpy columns (strings stay object arrays)."""
        out = {}
        for name, values in self.trace.items():
            out[name] = np.array(values, dtype=object if name in ("event", "kind", "key") else None)
        return out


# Rows buffered before they are written: large enough to amortise the writer, small enough to stay flat.
BATCH = 4096
# events.csv lines carry a JSON detail, a few hundred bytes for a gate's decision: a quarter of the trace's batch
# keeps their buffer under half a megabyte whatever the policy (a gate deciding at every turn filled 4,096 of them)
EVENT_BATCH = 1024
CALL_BATCH = 256  # calls.csv rows the cost observer holds before they are written (in one writerows)


class StreamingRecorder(Recorder):
    """The recorder's rows written to ``trace``, ``ledger`` and ``events`` (open text files) as they happen.

    The files receive exactly what :func:`prunesim.io.results.write_run` writes
    from an in-memory :class:`Recorder` (header and rows, times rounded to
    microseconds alike), so a streamed run and a recorded one are byte-equal.
    Rows are formatted here as CSV lines (a field that needs quoting goes through
    the csv module) and written in batches. Call :meth:`flush` at the end of the
    run; the files' owner closes them.
    """

    def __init__(self, mode: str, trace, ledger, events, calls=None):
        super().__init__(mode)
        self.trace = None  # nothing is kept: rows go to the files
        self.ledger = self.events = None
        self._files = (trace, events)
        self._batch: list[str] = []
        self._event_batch: list[str] = []
        self._events_written = 0
        self._keys: dict[str, str] = {}  # key or cause -> its CSV field (cached: a span's key is written twice)
        self._kind_fields: dict[str, str] = {}  # span kind -> its JSON text inside a quoted CSV field
        self._time = -1.0  # the last time written, and its text: many rows share a time
        self._time_text = ""
        self._ledger = ledger
        self._ledger_lines: list[str] = []  # ledger rows formatted and not yet written
        self._calls = calls
        self._ledger_w = csv.writer(ledger, lineterminator="\n")
        self._calls_w = csv.writer(calls, lineterminator="\n") if calls is not None else None
        self._cost = None  # the cost observer, whose columns each ledger row ends with (see attach)
        self._pending: list[PassRecord] = []  # passes whose cost is not final yet
        trace.write(",".join(TRACE_COLUMNS) + "\n")
        self._ledger_w.writerow(LEDGER_COLUMNS)
        events.write(",".join(EVENT_COLUMNS) + "\n")
        if self._calls_w is not None:
            self._calls_w.writerow(CALL_COLUMNS)

    def attach(self, observers) -> None:
        """Find the cost observer among the run's: it supplies the ledger's cost columns and calls.csv."""
        self._cost = next((o for o in observers if hasattr(o, "ledger_columns")), None)
        if self._cost is not None:  # whatever the trace mode: the rows are written out as they come
            self._cost.keep_calls = True

    def _t(self, time) -> str:
        # The same object, not an equal number: the clock starts at int 0, and a run without latency then
        # reaches float 0.0, which write_run writes as "0.0".
        if time is not self._time:
            self._time = time
            self._time_text = repr(round(time, 6))
        return self._time_text

    def _key(self, key: str) -> str:
        field = self._keys.get(key)
        if field is None:
            if len(self._keys) >= 1 << 16:
                self._keys.clear()
            field = self._keys[key] = csv_field(key)
        return field

    def on_span_appended(self, time, turn, span, kept, utilization, appended_total, removed_total) -> None:
        self._seq += 1
        batch = self._batch
        batch.append(f"{self._seq},{self._t(time)},{turn},append,{span.kind},{span.id},{self._key(span.key)},"
                     f"{kept},{utilization},{appended_total},{removed_total}\n")
        if len(batch) >= BATCH:
            self._flush_trace()

    def on_span_removed(self, time, turn, cause, span, freed, utilization, appended_total, removed_total) -> None:
        self._seq += 1
        batch = self._batch
        # The cause of a non-model eviction carries the policy's reason, which may need quoting: a cached field.
        batch.append(f"{self._seq},{self._t(time)},{turn},{self._key(cause)},{span.kind},{span.id},"
                     f"{self._key(span.key)},{-freed},{utilization},{appended_total},{removed_total}\n")
        if len(batch) >= BATCH:
            self._flush_trace()

    def on_turn_end(self, time, turn, utilization, appended_total, removed_total) -> None:
        self._seq += 1
        batch = self._batch
        batch.append(f"{self._seq},{self._t(time)},{turn},turn_end,,-1,,0,{utilization},{appended_total},"
                     f"{removed_total}\n")
        if len(batch) >= BATCH:
            self._flush_trace()

    # -- the ledger and calls.csv, from the cost observer ---------------------------
    # A pass's cost is final at the next model call (its edits' cache rewrite is charged there), so
    # its row waits until then; the cost observer's rows are written and let go as they come.
    def on_prune_pass(self, time, record: PassRecord) -> None:
        self._pending.append(record)

    def on_model_call(self, time, turn, prompt_tokens, output_tokens, decision, pass_id=0) -> None:
        if self._pending:
            self._write_passes()
        if self._cost is not None and len(self._cost.calls) >= CALL_BATCH:
            self._write_calls()

    def on_run_end(self, end) -> None:
        self._write_passes()
        self._write_ledger_lines()
        if self._cost is not None:
            self._write_calls()

    def _write_passes(self) -> None:
        _gather_rows((self._ledger_row(record) for record in self._pending), self._ledger_lines, self._ledger,
                     self._ledger_w)
        self._pending.clear()
        if len(self._ledger_lines) >= CALL_BATCH:
            self._write_ledger_lines()

    def _ledger_row(self, record: PassRecord) -> tuple:
        cost = self._cost
        if cost is None:
            return tuple(record)
        extra = cost.ledger_columns(record.pass_id)
        cost.pass_costs.pop(record.pass_id, None)
        cost.pass_rows.pop(record.pass_id, None)
        return (*record, *extra)

    def _write_ledger_lines(self) -> None:
        self._ledger.write("".join(self._ledger_lines))
        self._ledger_lines.clear()

    def _write_calls(self) -> None:
        rows = self._cost.calls
        if self._calls_w is not None:
            lines: list[str] = []
            _gather_rows(rows, lines, self._calls, self._calls_w)
            self._calls.write("".join(lines))
        rows.clear()

    def _add_event(self, time, turn, event: str, detail: str) -> None:
        self._events_written += 1
        batch = self._event_batch
        # JSON text holds no raw line break (json.dumps escapes them): quoting it is the csv module's rule
        # for a field with a quote or a comma, written out.
        if '"' in detail or "," in detail:
            detail = '"' + detail.replace('"', '""') + '"'
        batch.append(f"{self._events_written},{self._t(time)},{turn},{event},{detail}\n")
        if len(batch) >= EVENT_BATCH:
            self._files[1].write("".join(batch))
            batch.clear()

    def on_truncation(self, time, turn, cause, kind, wanted, kept, constraint, selections) -> None:
        # The commonest events at a full window, each written in one step: the same text as Recorder's
        # JSON, quoted as a CSV field (its quotes doubled).
        k = self._kind_fields.get(kind)
        if k is None:
            k = self._kind_fields[kind] = _json_kind(kind).replace('"', '""')
        if cause == "forced_truncation":
            detail = f'"{{""kept"": {kept}, ""kind"": {k}, ""wanted"": {wanted}}}"'
        elif cause == "forced_drop":
            detail = f'"{{""kind"": {k}, ""tokens"": {wanted}}}"'
        else:
            detail = f'"{{""selections"": {selections}, ""wanted"": {wanted}, ""written"": {kept}}}"'
        self._events_written += 1
        batch = self._event_batch
        batch.append(f"{self._events_written},{self._t(time)},{turn},{cause},{detail}\n")
        if len(batch) >= EVENT_BATCH:
            self._files[1].write("".join(batch))
            batch.clear()

    def _flush_trace(self) -> None:
        self._files[0].write("".join(self._batch))
        self._batch.clear()

    def flush(self) -> None:
        """Write what is buffered (the files' own buffers are flushed by their owner)."""
        self._flush_trace()
        self._write_ledger_lines()
        self._files[1].write("".join(self._event_batch))
        self._event_batch.clear()

    def trace_arrays(self) -> dict[str, np.ndarray]:
        raise RuntimeError("a streaming recorder keeps no trace in memory: read trace.csv")
