"""Run results on disk: trace.csv, ledger.csv, events.csv, calls.csv, summary.json, scenario.json.

Every file is written atomically. Plots and aggregation read these files; they
never run simulations.
"""

from __future__ import annotations

import json
from pathlib import Path

from prunesim.io import atomic
from prunesim.observe.recorder import CALL_COLUMNS, EVENT_COLUMNS, LEDGER_COLUMNS, TRACE_COLUMNS
from prunesim.runner import RunResult

FILES = ("summary.json", "scenario.json", "trace.csv", "ledger.csv", "events.csv", "calls.csv")
EDIT_LOG_FILE = "editlog.jsonl"  # one JSON record per line, written for policies that keep an edit log


def run_record(result: RunResult) -> dict:
    """summary.json: the run's identity and every metric."""
    return {
        "scenario": result.scenario.name,
        "policy": result.policy,
        "seed": result.seed,
        "prunesim_version": result.version,
        "budget": result.scenario.budget,
        "budget_kind": result.scenario.budget_kind,
        "window": result.scenario.window,
        "trigger": result.summary.get("acting_trigger", result.scenario.trigger),
        "scenario_trigger": result.scenario.trigger,
        **({"transcript": result.transcript} if result.transcript else {}),
        "metrics": result.summary,
    }


def write_run(result: RunResult, out_dir: Path) -> list[Path]:
    """A recorded run's files (for a long run, :func:`prunesim.io.stream.stream_run` writes as it goes)."""
    if result.edit_log and result.edit_log[0].seq != 1:
        raise ValueError("this run kept only the tail of its edit log: record it (trace) or stream it to write it")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    trace = result.recorder.trace
    n = len(trace["seq"])
    rows = (tuple(trace[c][i] for c in TRACE_COLUMNS) for i in range(n))
    atomic.write_csv(out_dir / "trace.csv", TRACE_COLUMNS, rows)
    ledger = ((("" if v is None else v) for v in row) for row in result.ledger)
    atomic.write_csv(out_dir / "ledger.csv", LEDGER_COLUMNS, ledger)
    atomic.write_csv(out_dir / "events.csv", EVENT_COLUMNS, result.recorder.events)  # the detail as JSON text
    atomic.write_csv(out_dir / "calls.csv", CALL_COLUMNS, result.calls)
    atomic.write_json(out_dir / "scenario.json", result.scenario.to_dict())
    atomic.write_json(out_dir / "summary.json", run_record(result))
    written = [out_dir / f for f in FILES]
    if result.edit_log:  # only policies that keep an edit log have one
        lines = "".join(json.dumps(r.as_dict(), sort_keys=True) + "\n" for r in result.edit_log)
        atomic.write_text(out_dir / EDIT_LOG_FILE, lines)
        written.append(out_dir / EDIT_LOG_FILE)
    elif (out_dir / EDIT_LOG_FILE).exists():  # left by an earlier run in this folder: it is not this run's
        (out_dir / EDIT_LOG_FILE).unlink()
    return written
