"""The recorder: every change to the window, with its simulated time and turn.

An observer that keeps plain columns. ``mode`` chooses how much it keeps:
``"all"`` (every change), ``"turns"`` (one row at the end of each turn) or
``"none"`` (nothing: the runner does not subscribe it at all, and the metrics
still see everything, so summaries need no trace). Event details are encoded
here, so an unrecorded run never builds them.
"""

from __future__ import annotations

import json

import numpy as np
from prunesim.model.events import Observer, PassRecord
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

__all__ = ["CALL_COLUMNS", "ENGINE_LEDGER_COLUMNS", "EVENT_COLUMNS", "LEDGER_COLUMNS", "MODES", "Recorder",
           "TRACE_COLUMNS"]

MODES = ("all", "turns", "none")

_PER_CHANGE = frozenset({"span_appended", "span_removed"})


class Recorder(Observer):
    def __init__(self, mode: str = "all"):
        if mode not in MODES:
            raise ValueError(f"trace mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self.trace: dict[str, list] = {c: [] for c in TRACE_COLUMNS}
        self.ledger: list[tuple] = []
        self.events: list[tuple] = []
        self._seq = 0
        self.muted = _PER_CHANGE if mode == "turns" else frozenset({"turn_end"})

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
        self.ledger.append(tuple(record))

    # -- events ----------------------------------------------------------------
    def _event(self, time, turn, event: str, **detail) -> None:
        self.events.append((len(self.events) + 1, time, turn, event, json.dumps(detail, sort_keys=True)))

    def on_truncation(self, time, turn, cause, kind, wanted, kept, constraint, selections) -> None:
        if cause == "forced_truncation":
            self._event(time, turn, cause, kind=kind, wanted=wanted, kept=kept)
        elif cause == "forced_drop":
            self._event(time, turn, cause, kind=kind, tokens=wanted)
        else:
            self._event(time, turn, cause, wanted=wanted, written=kept, selections=selections)

    def on_gate_decision(self, time, turn, reason, numbers) -> None:
        self._event(time, turn, "boundary", reason=reason, **numbers)

    def on_fallback(self, time, turn, reason, spans, freed) -> None:
        self._event(time, turn, "fallback", reason=reason, spans=spans, freed=freed)

    def on_context_edit(self, time, turn, record) -> None:
        detail = record._asdict()
        del detail["action"]  # the row's event names it
        self._event(time, turn, record.action, **detail)

    def on_self_edit_refused(self, time, turn, reason, span_ids, action) -> None:
        self._event(time, turn, "self_edit_refused", reason=reason, span_ids=span_ids, action=action)

    def on_prune_planned(self, time, turn, pass_id, selected, keys, rationale_span, rationale, own_rationale):
        self._event(time, turn, "prune_plan", pass_id=pass_id, selected=selected, keys=keys,
                    rationale_span=rationale_span, rationale=rationale, own_rationale=own_rationale)

    def on_need(self, time, turn, outcome, key, tokens, turns_since_prune, record) -> None:
        if outcome == "dismissed":
            self._event(time, turn, "need_dismissed", key=key, record=record, turns_since_prune=turns_since_prune)
        elif outcome == "override":
            self._event(time, turn, "override_retrieval", key=key, tokens=tokens,
                        turns_since_prune=turns_since_prune, record=record)
        else:
            self._event(time, turn, "re_retrieval", key=key, tokens=tokens, turns_since_prune=turns_since_prune)

    def trace_arrays(self) -> dict[str, np.ndarray]:
        """The trace as numpy columns (strings stay object arrays)."""
        out = {}
        for name, values in self.trace.items():
            out[name] = np.array(values, dtype=object if name in ("event", "kind", "key") else None)
        return out
