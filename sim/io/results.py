"""Run results on disk: trace.csv, ledger.csv, events.csv, calls.csv, summary.json, scenario.json, and
what reproduces the run, reproduce.json (:mod:`prunesim.io.reproduce`).

A run directory is written whole or not at all. Plots and aggregation read
these files; they never run simulations.
"""

from __future__ import annotations

import json
from pathlib import Path

from prunesim.io import atomic, output, reproduce
from prunesim.observe.recorder import (  # noqa: F401 - the files' columns, for their readers (plots)
    CALL_COLUMNS,
    ENGINE_LEDGER_COLUMNS,
    EVENT_COLUMNS,
    LEDGER_COLUMNS,
    TRACE_COLUMNS,
    Recorder,
)
from prunesim.runner import RunResult

FILES = ("summary.json", "scenario.json", "trace.csv", "ledger.csv", "events.csv", "calls.csv", "settings.json")
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


def scenario_record(result: RunResult) -> dict:
    """scenario.json: the resolved scenario the run ran, its ``seed`` the run's own (``run --seed 3`` records 3),
    so that the file given back to ``prunesim run`` runs the same run."""
    return {**result.scenario.to_dict(), "seed": result.seed}


def run_settings(result: RunResult):
    """The run's :class:`~prunesim.io.settings.Settings` (each value and where it came from): settings.json."""
    from prunesim.io import settings

    if result.settings is None:
        result.settings = settings.of(result.scenario)
    return result.settings


def write_run(result: RunResult, out_dir: Path, record: dict | None = None) -> list[Path]:
    """Write a recorded run's files into ``out_dir``: all of them, or (on an error) none.

    The files are made in a staging folder and moved in together
    (:func:`prunesim.io.output.folder`); other files in ``out_dir`` are left
    alone, except an ``editlog.jsonl`` of an earlier run, which is not this run's.
    A long run is better written as it goes: :func:`prunesim.io.stream.stream_run`. ``record``: what
    reproduces it (:func:`prunesim.io.reproduce.record`), written as reproduce.json; none is written without
    it (a sweep's runs, whose folder holds the sweep's).
    """
    if result.recorder.trace is None:  # a streaming recorder's rows went to its files as the run made them
        raise ValueError("this run was written as it went (prunesim.io.stream.stream_run): its files are in the "
                         "folder it was streamed to, and it holds no rows to write again")
    if result.recorder.mode == "none" and type(result.recorder) is Recorder:  # its recorder heard nothing
        raise ValueError("this run kept no ledger, events or calls (trace 'none'): record it (trace 'turns' or "
                         "'all') or stream it (prunesim.io.stream.stream_run) to write it")
    if result.edit_log and result.edit_log[0].seq != 1:
        raise ValueError("this run kept only the tail of its edit log: record it (trace) or stream it to write it")
    out_dir = Path(out_dir)
    trace = result.recorder.trace
    n = len(trace["seq"])
    rows = (tuple(trace[c][i] for c in TRACE_COLUMNS) for i in range(n))
    with output.folder(out_dir, stale=[EDIT_LOG_FILE, reproduce.FILE]) as staging:
        atomic.write_csv(staging / "trace.csv", TRACE_COLUMNS, rows)
        ledger = ((("" if v is None else v) for v in row) for row in result.ledger)
        atomic.write_csv(staging / "ledger.csv", LEDGER_COLUMNS, ledger)
        atomic.write_csv(staging / "events.csv", EVENT_COLUMNS, result.recorder.events)  # the detail as JSON text
        atomic.write_csv(staging / "calls.csv", CALL_COLUMNS, result.calls)
        atomic.write_json(staging / "scenario.json", scenario_record(result))
        atomic.write_json(staging / "summary.json", run_record(result))
        atomic.write_json(staging / "settings.json", run_settings(result).to_json())
        if record is not None:
            atomic.write_json(staging / reproduce.FILE, record)
        if result.edit_log:  # only policies that keep an edit log have one
            lines = "".join(json.dumps(r.as_dict(), sort_keys=True) + "\n" for r in result.edit_log)
            atomic.write_text(staging / EDIT_LOG_FILE, lines)
    written = [out_dir / f for f in FILES]
    if record is not None:
        written.append(out_dir / reproduce.FILE)
    if result.edit_log:
        written.append(out_dir / EDIT_LOG_FILE)
    return written
