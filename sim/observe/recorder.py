"""The recorder: every change to the window, with its simulated time and turn.

It is an observer: the engine tells it what happened and it keeps plain
columns. ``mode`` chooses how much it keeps: ``"all"`` (every change),
``"turns"`` (one row at the end of each turn) or ``"none"`` (nothing; the
metrics observer still sees everything, so summaries need no trace).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

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

LEDGER_COLUMNS = (
    "pass",
    "turn",
    "time_s",
    "utilization_before",
    "utilization_peak",
    "utilization_after",
    "headroom_before",
    "candidates",
    "selected",
    "evicted_spans",
    "index",
    "rationale",
    "evicted",
    "net",
    "cut",
    "truly_stale",
    "in_band",
)

EVENT_COLUMNS = ("seq", "time_s", "turn", "event", "detail")

MODES = ("all", "turns", "none")


@dataclass
class Recorder:
    mode: str = "all"
    trace: dict[str, list] = field(default_factory=lambda: {c: [] for c in TRACE_COLUMNS})
    ledger: list[tuple] = field(default_factory=list)
    events: list[tuple] = field(default_factory=list)
    _seq: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"trace mode must be one of {', '.join(MODES)}, not {self.mode!r}")

    def change(self, time_s, turn, event, kind, span_id, key, delta, utilization, appended, removed) -> None:
        if self.mode != "all":
            return
        self._row(time_s, turn, event, kind, span_id, key, delta, utilization, appended, removed)

    def turn_end(self, time_s, turn, utilization, appended, removed) -> None:
        if self.mode != "turns":
            return
        self._row(time_s, turn, "turn_end", "", -1, "", 0, utilization, appended, removed)

    def _row(self, *values) -> None:
        self._seq += 1
        t = self.trace
        t["seq"].append(self._seq)
        for name, value in zip(TRACE_COLUMNS[1:], values, strict=True):
            t[name].append(value)

    def prune_pass(self, row: tuple) -> None:
        if self.mode != "none":
            self.ledger.append(row)

    def event(self, time_s, turn, event, detail: str) -> None:
        if self.mode != "none":
            self.events.append((len(self.events) + 1, time_s, turn, event, detail))

    def trace_arrays(self) -> dict[str, np.ndarray]:
        """The trace as numpy columns (strings stay object arrays)."""
        out = {}
        for name, values in self.trace.items():
            out[name] = np.array(values, dtype=object if name in ("event", "kind", "key") else None)
        return out
