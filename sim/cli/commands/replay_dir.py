"""prunesim replay-dir: every transcript in a folder under every policy (and grid point), one CSV row each.

``--grid`` takes the sweep's syntax (``NAME=VALUES``, ``POLICY:NAME=VALUES``):
each transcript is replayed at every grid point of every policy, and each axis
is a column named as given, after the identity columns. The points are planned
and validated by the sweep's own planner before anything is read or written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from prunesim.cli.commands._common import (
    Failed,
    Tally,
    add_agent,
    add_prices,
    add_reaction,
    add_set,
    add_transcript_options,
    check_distinct,
    check_transcript_options,
    option_files,
    out_arg,
    print_notes,
    progress,
    report_line,
    scenario_sets,
    seed_arg,
)
from prunesim.errors import ResourceError, UserError
from prunesim.io import output
from prunesim.io.atomic import format_cell
from prunesim.io.labels import policy_labels
from prunesim.io.scenario_files import load_replay
from prunesim.io.transcripts.identity import Seen
from prunesim.model.agent_profiles import NONE
from prunesim.observe.metrics import METRIC_NAMES
from prunesim.observe.metrics.outcome import NAMES as OUTCOME_NAMES
from prunesim.observe.recorder import csv_line
from prunesim.policies import parse_names
from prunesim.studies import observable
from prunesim.studies.grid import inert_axes, parse_axes
from prunesim.studies.leaderboard import ACTIONS, uncached_bill
from prunesim.studies.pool import default_jobs, portable
from prunesim.studies.sweep import metric_column, plan_sweep
from prunesim.studies.transcript_replay import REPLAY_METRICS, TRANSCRIPT_SUFFIXES, expand, iter_sources, replay

if TYPE_CHECKING:
    from prunesim.runner import RunResult

ID_COLUMNS = ("transcript", "format", "policy", "turns", "budget", "repeats")
# What each row was billed on (prunesim.io.settings) and its bill without the prompt cache: after the metrics, so
# that every older column keeps its place. A metric the transcript cannot move is left empty (observable.py).
RUNTIME_COLUMNS = ("model", "price_table", "not_recorded", "uncached_cost_usd")
COLUMNS = ID_COLUMNS + tuple(m for m in REPLAY_METRICS if m not in ID_COLUMNS) + tuple(
    m for m in METRIC_NAMES if m not in ID_COLUMNS and m not in REPLAY_METRICS
) + RUNTIME_COLUMNS


def register(sub) -> None:
    p = sub.add_parser("replay-dir", help="replay a folder of transcripts or workloads under several policies")
    p.add_argument("dir", type=Path, help="a folder of transcripts and/or workload files (searched recursively), "
                   "or one such file")
    p.add_argument("--policies", required=True, help="comma-separated policy names, or all")
    p.add_argument("--scenario", default="transcript", help="scenario for the window and policies")
    add_set(p)
    add_prices(p)
    add_reaction(p)
    add_agent(p)
    p.add_argument("--grid", action="append", metavar="NAME=VALUES",
                   help="replay every transcript at each value (A:B:STEP or a,b,c; POLICY:NAME=VALUES for one "
                        "policy's runs only), as in prunesim sweep; repeatable: the cartesian product is replayed")
    p.add_argument("--seed", type=seed_arg, help="seed of the policies' random streams")
    p.add_argument("--jobs", type=int, default=None, help="processes that replay the workloads, each on one "
                   "(default: every core; 1: this process only); the rows are the same for any number")
    add_transcript_options(p)
    p.add_argument("--out", type=out_arg, help="CSV file (default: standard output)")
    p.set_defaults(func=main)


# Grid axes a replay cannot take: the transcript sets its turns; the seed and policies have their own flags.
_NOT_AXES = {"turns": "a replay runs the transcript's own turns", "seed": "use --seed", "policy": "use --policies"}


class Grid:
    """What each transcript is replayed under: (policy, scenario, grid point) in order, and the CSV header."""

    def __init__(self, base, policies: list[str], axes: dict):
        for name in axes:
            param = name.rpartition(":")[2]
            if param in _NOT_AXES:
                raise UserError("--grid", name, f"cannot be swept here: {_NOT_AXES[param]}")
        self.axes = list(axes)
        if not axes:
            self.runs = [(policy, base, {}) for policy in policies]
        else:
            plan = plan_sweep(base, axes, policies, [0])  # validates every point before any replay
            self.runs = [(spec.policy, plan.scenarios[spec.point], plan.points[spec.point]) for spec in plan.runs]
        # A result whose name is also an axis (--grid budget=...) is written as summary.<name>, as in runs.csv.
        ids = [metric_column(c, self.axes) for c in ID_COLUMNS]
        # The agent model's figures only where one may run: a replay with --agent none keeps the columns it had
        # before agent models existed.
        dropped = () if base.agent.profile != NONE else OUTCOME_NAMES
        self.columns = ids[:3] + self.axes + ids[3:] + [metric_column(c, self.axes) for c in COLUMNS
                                                           if c not in ID_COLUMNS and c not in dropped]


def main(args) -> int:
    if not args.dir.exists():
        raise UserError(str(args.dir), None, "does not exist")
    policies = parse_names(args.policies)
    args.jobs = default_jobs(args.jobs)  # refused before any replay
    overrides = scenario_sets(args)
    # With --grid only its points run, each checked for the policies that run it (plan_sweep): a table the grid
    # moves (slack-gated:gate.lead) may be wrong in the base.
    base = load_replay(args.scenario, overrides, () if args.grid else policies, prices=args.prices)
    axes = parse_axes(args.grid)
    grid = Grid(base, policies, axes)
    check_transcript_options(args)
    if args.out is not None and (output.names_folder(args.out) or output.kind_of(Path(args.out), "--out") == "folder"):
        raise UserError("--out", args.out, "names a folder; give a CSV file")
    files = expand([args.dir])
    if not files:
        raise UserError(str(args.dir), None, "no transcript or workload files found")
    check_distinct(files)
    if args.out is not None:
        output.check_not_input(args.out, files + option_files(args), "--out")
        if args.out.endswith(TRANSCRIPT_SUFFIXES):  # a name the next read of the folder would take as input
            output.check_outside(args.out, [args.dir], "--out")
    for line in inert_axes(axes, policies):
        print(line, file=sys.stderr)
    if args.out is None:
        out = _Held(sys.stdout)
        code, complete = _replay_all(args, base, policies, grid, out)
        if complete:
            out.commit()
        return code
    with output.FileOutput(args.out, flag="--out") as file:
        out = _Held(file) if file.kind == "stream" else file  # a file is staged; a device or pipe is not
        code, complete = _replay_all(args, base, policies, grid, out)
        if complete:  # a run that replayed nothing, or missed a file, never replaces an existing result
            out.commit()
    return code


class _Held:
    """Rows for standard output, a device or a pipe, held until the folder is done: a folder with a bad file
    sends none (a file output is staged beside its target instead, and never shown until committed)."""

    def __init__(self, target) -> None:
        self.target = target
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)

    def commit(self) -> None:
        self.target.write("".join(self.parts))
        if hasattr(self.target, "commit"):
            self.target.commit()


def _replay_all(args, base, policies, grid: Grid, out) -> tuple[int, bool]:
    """Replay every source under every policy and grid point; a file's rows go to ``out`` only when all its
    runs replayed. Returns the exit code and whether ``out`` may be committed (rows, and no file missed
    unless --skip-bad)."""
    files = expand([args.dir])
    idle = {p: Idle("replay" if grid.axes else "transcript") for p in policies}
    tools: set[str] = set()
    written = {"rows": 0, "workloads": 0}
    with progress(len(files)) as bar:
        tally = Tally(bar, args.skip_bad)

        def process(data) -> tuple[list[str], list[str], set[str], list]:
            # On a worker when --jobs asks for several: it changes nothing here, and kept() counts its runs.
            rows, warnings, summaries = [], dict.fromkeys(data.warnings), []  # each of its replays' warnings once
            for policy, scenario, point in grid.runs:
                try:
                    line, result = _row(data, scenario, policy, args.seed, grid, point)
                except (ResourceError, MemoryError):
                    raise
                except Exception as err:  # noqa: BLE001 - the file's failure (Tally says it); its runs so far count
                    return Failed(portable(err), summaries)
                rows.append(line)
                summaries.append((policy, result.summary))
                warnings.update(dict.fromkeys(result.warnings))
            return rows, list(warnings), {p["tool"] for p in data.parts if p.get("tool")}, summaries

        def kept(outcome) -> None:
            for policy, summary in outcome.partial if isinstance(outcome, Failed) else outcome[3]:
                idle[policy].add(summary)

        def commit(path, results) -> None:
            lines = [line for rows, _, _, _ in results for line in rows]
            for _, warnings, used, _ in results:
                for w in warnings:
                    report_line(bar, "warning", w)
                tools.update(used)
            if lines and not written["rows"]:  # the header only once there is a row: no rows, nothing written
                out.write(csv_line(grid.columns))
            out.write("".join(lines))
            written["rows"] += len(lines)
            written["workloads"] += len(results)

        seen = Seen(lambda line: report_line(bar, "warning", line))  # a copied transcript is one row per policy
        sources = iter_sources([args.dir], args.tokenizer, args.calibration, args.sidechains, files=files)
        tally.per_file(sources, process, commit, discard=seen.forget, tick=bar.update, jobs=args.jobs,
                       seen=seen, kept=kept)
    print_notes(policies, base, frozenset(tools))
    if tally.says_more():  # else the one file's error line says it all
        print(f"replayed {written['rows']} row(s) from {written['workloads']} workload(s) in {len(files)} file(s); "
              f"{tally.summary()}", file=sys.stderr)
    label = policy_labels(idle)  # a policy from a file by its class, as every table shows it
    for policy, counts in idle.items():
        note = counts.note(policy, label[policy])
        if note:
            print(note, file=sys.stderr)
    return tally.exit_code(), bool(written["rows"]) and tally.complete()


def _row(data, scenario, policy: str, seed, grid: Grid, point: dict) -> tuple[str, RunResult]:
    result, _ = replay(data, scenario, policy, seed, trace="none")  # rows of summaries: no trace kept
    s = result.summary
    runtime = result.settings.runtime()
    pricing = result.scenario.pricing
    row = {"transcript": data.name, "format": data.header["format"], "policy": policy, "turns": data.turns,
           "budget": result.scenario.budget, **s, "model": runtime["model"], "price_table": runtime["price_table"],
           "not_recorded": ";".join(runtime["not_recorded"]),
           "uncached_cost_usd": uncached_bill(s, (pricing.input, pricing.output))}
    for metric in observable.of_transcript(data, result.scenario):  # cannot move here: empty, never a 0
        row[metric] = ""
    if grid.axes:
        row = {metric_column(k, grid.axes): v for k, v in row.items()}
        row.update(point)
    return csv_line([format_cell(row.get(c, "")) for c in grid.columns]), result


class Idle:
    """Transcripts on which a policy never acted: a replay that never prunes says nothing about the policy."""

    def __init__(self, unit: str = "transcript"):
        self.unit = unit  # with a grid, one transcript is replayed several times
        self.replays = self.never_acted = self.never_triggered = 0

    def add(self, summary: dict) -> None:
        self.replays += 1
        if not any(summary[a] for a in ACTIONS):  # no pass, eviction, placeholder, summary or warning
            self.never_acted += 1
            self.never_triggered += summary["first_trigger_turn"] < 0

    def note(self, policy: str, shown: str | None = None) -> str:
        """The line saying on how many replays ``policy`` never acted (``shown``: how the line names it)."""
        if not self.never_acted or policy == "noop":
            return ""
        idle = self.never_acted - self.never_triggered
        parts = [f"{self.never_triggered} never reached its trigger (lower the budget or the trigger)"] * bool(
            self.never_triggered) + [f"{idle} reached it with nothing it would remove"] * bool(idle)
        return (f"{shown or policy}: never acted on {self.never_acted} of {self.replays} {self.unit}(s): "
                f"{'; '.join(parts)}")
