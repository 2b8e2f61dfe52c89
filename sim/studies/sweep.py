"""Parameter sweeps: grid points x policies x seeds, in parallel and resumable.

A sweep directory holds

* ``sweep.json``: the resolved description (``scenario_name``, ``scenario``: the
  resolved base scenario, ``grid``: each axis and its expanded values in axis
  order, ``policies``, ``seeds``, ``overrides``, ``prunesim_version``, and
  ``columns``: the column set of ``runs.csv``);
* ``runs.csv``: one tidy row per finished run, a column per grid axis (a
  policy-qualified axis, ``slack-gated:gate.headroom``, is empty in the other
  policies' rows: each policy runs the shared axes times its own). Rows are appended as runs
  finish, each batch of complete lines with one ``os.write`` (synced to disk at
  most a second later, and before the sweep ends), so a crash can leave at most
  one trailing partial line, which the next start detects and cuts off. When every run is present the file is
  rewritten (atomically) sorted by (policy, grid point, seed) in the order of
  the sweep description, so a complete sweep's ``runs.csv`` is byte-identical
  whatever ``--jobs`` or executor produced it;
* ``.lock``: an exclusive ``flock`` held for the whole sweep, so a second sweep
  on the same directory is refused instead of interleaving rows;
* ``traces/<run_id>/`` with ``--traces``: each run's files (see ``sim.results``);
* ``reproduce.json``: the command that started the sweep, the prunesim version,
  the SHA-256 of every input file (the scenario and its ``extends`` chain, a
  user's policy files) and the seeds (:mod:`prunesim.io.reproduce`).

Running the same sweep again skips the runs whose ``run_id`` is already in
``runs.csv``; a different sweep on the same directory is refused, and so is a
resume after an input file changed (a user's policy edited: the rows would mix
two versions of it under one name) or under another prunesim version.

``run_id`` is a stable hash of the resolved scenario dict, the policy, the seed
and the prunesim version: the same run gets the same id on any machine.

Each (grid point, policy) runs on the engine :func:`choose_engines` gives it: the SimPy engine, or the
compiled kernel (:mod:`prunesim.kernel`) where it covers the runs. The two give the same summaries byte for
byte, so the engine is not part of the sweep's description: a sweep may be resumed on either.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import logging
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prunesim import __version__
from prunesim.errors import UserError, from_os_error
from prunesim.io import atomic, output, reproduce
from prunesim.io import scenario_files as scenario_mod
from prunesim.io.results import write_run
from prunesim.io.sweep_files import (  # noqa: F401 - read_runs and the file names are part of this module's API
    ID_COLUMNS,
    LOCK_FILE,
    RUNS_FILE,
    SWEEP_FILE,
    check_description,
    complete_part,
    read_bytes,
    read_description,
    read_runs,
    read_table,
)
from prunesim.kernel.choice import KernelRefused, auto_min_turns, kernel_gap, pick
from prunesim.model.scenario import Scenario, seed_problem
from prunesim.observe.metrics import METRIC_NAMES
from prunesim.observe.recorder import csv_field, csv_line, number_row
from prunesim.policies import get_policy, user_policy_fault
from prunesim.runner import check_tables, run_one
from prunesim.studies.grid import axis_values, check_runs, expand_grid, split_axis
from prunesim.studies.pool import stop_workers
from prunesim.studies.workers import refusal_in, refused, worker_start

TRACES_DIR = "traces"
FORMAT = 1
# Grid names the sweep sets itself: seeds and policies have their own flags.
RESERVED_AXES = {"seed": "--seeds", "policy": "--policies"}
EXECUTORS = ("local", "dask")


# -- identity -----------------------------------------------------------------
def run_id(scenario_dict: dict, policy: str, seed: int, version: str = __version__) -> str:
    """A stable 16-hex-digit hash of what determines a run's output.

    It is the SHA-256 of ``{"policy": ..., "scenario": ..., "seed": ..., "version": ...}`` as compact JSON with
    its keys sorted (the scenario's ``[replay] pinned`` left out), cut to 16 hex digits."""
    return run_ids(scenario_dict, policy, [seed], version)[0]


def run_ids(scenario_dict: dict, policy: str, seeds: Iterable[int], version: str = __version__) -> list[str]:
    """:func:`run_id` of each seed of one scenario and policy, the scenario serialized once rather than once a
    seed (a sweep's plan made every run's id from the whole scenario: most of planning a 9,300-run sweep)."""
    # What the user set ([replay] pinned) is where values came from, not a value: hashed without it.
    replay = scenario_dict.get("replay")
    if isinstance(replay, dict) and replay.get("pinned"):
        scenario_dict = {**scenario_dict, "replay": {k: v for k, v in replay.items() if k != "pinned"}}
    # The object's keys in sorted order are policy, scenario, seed, version: the text up to the seed is common.
    head = hashlib.sha256(f'{{"policy":{_compact(policy)},"scenario":{_compact(scenario_dict)},"seed":'.encode())
    tail = f',"version":{_compact(version)}}}'
    ids = []
    for seed in seeds:
        h = head.copy()
        h.update((_compact(seed) + tail).encode())
        ids.append(h.hexdigest()[:16])
    return ids


# json.dumps(value, sort_keys=True, separators=(",", ":")), its encoder made once (dumps makes one a call)
_COMPACT = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def _compact(value: Any) -> str:
    return _COMPACT.encode(atomic.json_ready(value))


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep, in its place in the sort order."""

    run_id: str
    point: int  # index into SweepPlan.points
    policy: str
    seed: int


@dataclass
class SweepPlan:
    """A validated sweep: every grid point's scenario built and checked."""

    scenario_name: str
    base: Scenario
    axes: dict[str, list[Any]]
    points: list[dict[str, Any]]
    scenarios: list[Scenario]
    policies: list[str]
    seeds: list[int]
    overrides: dict[str, Any]
    version: str = __version__
    runs: list[RunSpec] = field(default_factory=list)

    def description(self) -> dict:
        """What sweep.json holds (without the column set, which is fixed at the first start).

        ``grid`` is an object in axis order (the order of expansion and of the columns);
        ``scenario`` is the resolved base scenario (its ``name`` is the scenario's name).
        """
        return {
            "format": FORMAT,
            "scenario_name": self.scenario_name,
            "scenario": self.base.to_dict(),
            "grid": dict(self.axes),
            "policies": self.policies,
            "seeds": self.seeds,
            "overrides": self.overrides,
            "prunesim_version": self.version,
        }


def description_json(desc: dict) -> str:
    """sweep.json's text: keys in insertion order (the grid's order is meaningful), values JSON-ready."""
    return json.dumps(atomic.json_ready(desc), indent=2) + "\n"


def plan_sweep(
    scenario: str | Scenario,
    axes: dict[str, Sequence[Any]] | None = None,
    policies: Sequence[str] | None = None,
    seeds: Iterable[int] = range(100),
    overrides: dict[str, Any] | None = None,
) -> SweepPlan:
    """Validate a sweep and build every grid point's scenario; :class:`UserError` on bad input.

    ``axes`` maps a parameter to its values; a name ``POLICY:PARAM`` is an axis
    of that policy's runs only (see :mod:`prunesim.studies.grid`).
    """
    overrides = dict(overrides or {})
    for name in policies or ():  # first: a policy from a file or a plugin may declare its own scenario table
        get_policy(name, where="--policies")
    # With axes, each point is checked for the policies that run it (below), not the base for all of them.
    checked = () if axes else policies
    if isinstance(scenario, Scenario):
        base = scenario_mod.replace(scenario, overrides, policy=checked) if overrides else scenario
    else:
        base = scenario_mod.load(str(scenario), overrides, checked)
    axes = {name: axis_values(values) for name, values in (axes or {}).items()}
    base_dict = base.to_dict()
    policies = list(policies) if policies else [base.policy]
    if len(set(policies)) != len(policies):
        raise UserError("--policies", ",".join(policies), "a policy is given twice")
    for name in policies:
        get_policy(name, where="--policies")
    for name in axes:
        _check_axis_name(name, base.to_dict(full=True), overrides, policies, axes)  # [agent] too, set or not
    seeds = list(seeds)
    if not seeds:
        raise UserError("--seeds", None, "no seeds")
    if len(set(seeds)) != len(seeds):
        raise UserError("--seeds", None, "a seed is given twice")
    for seed in seeds:  # the API's sweeps take seeds as the flag does
        if problem := seed_problem(seed):
            raise UserError("--seeds", None, problem)
    sizes = {p: math.prod(len(axis_values(v)) for n, v in axes.items() if split_axis(n)[0] in (None, p))
             for p in policies}
    check_runs({"grid points and policies": sum(sizes.values()), "seeds": len(seeds)}, "sweep")
    # Each policy runs the shared axes times its own; identical points are built once.
    points: list[dict[str, Any]] = []
    scenarios: list[Scenario] = []
    dicts: list[dict] = []
    wheres: list[str] = []
    index: dict[str, int] = {}
    per_policy: dict[str, list[int]] = {}
    for policy in policies:
        mine = {n: v for n, v in axes.items() if split_axis(n)[0] in (None, policy)}
        seen_scenarios: set[str] = set()
        per_policy[policy] = []
        for point in expand_grid(mine):
            key = json.dumps(atomic.json_ready(point), sort_keys=True)
            if key not in index:
                where = "--grid point " + " ".join(f"{k}={atomic.format_cell(v)}" for k, v in point.items())
                where += " (with --set)" if overrides else ""  # a value set there may be the one at fault
                params = {split_axis(k)[1]: v for k, v in point.items()}
                # Like --set: an absolute budget or trigger turns off sizing to each transcript.
                data = scenario_mod.absolute_sizes_win(
                    scenario_mod.apply_overrides(base_dict, params, where="--grid"), params)
                try:
                    sc = scenario_mod.from_dict(data, where, ()) if point else base  # checked below, per policy
                except UserError as err:
                    raise _named_once(err, where, point, bool(overrides)) from None
                index[key] = len(points)
                points.append(point)
                scenarios.append(sc)
                dicts.append(sc.to_dict())
                wheres.append(where if point else f"{base.name} (with --set)" if overrides else base.name)
            i = index[key]
            # a point is refused for what the policies that run it read, not for another policy's tables
            cls = get_policy(policy)
            check_tables(scenarios[i], cls, wheres[i] if len(policies) == 1 else f"{wheres[i]} under {cls.name}")
            text = json.dumps(atomic.json_ready(dicts[i]), sort_keys=True)
            if text in seen_scenarios:
                raise UserError("--grid", None, "two grid points give the same scenario (a value is repeated)")
            seen_scenarios.add(text)
            per_policy[policy].append(i)
    plan = SweepPlan(base.name, base, axes, points, scenarios, policies, seeds, overrides)
    plan.runs = [
        RunSpec(rid, i, policy, seed)
        for policy in policies
        for i in per_policy[policy]
        for rid, seed in zip(run_ids(dicts[i], policy, seeds, plan.version), seeds, strict=True)
    ]
    return plan


def _named_once(err: UserError, where: str, point: dict, overrides: bool) -> UserError:
    """A grid point's value refused: named once, by its key, the point's other values beside it (the point's
    name already held the value the error repeats)."""
    axis = next((k for k in point if split_axis(k)[1] == err.key), None)
    if err.where != where or axis is None or atomic.format_cell(point[axis]) not in err.problem:
        return err
    rest = " ".join(f"{k}={atomic.format_cell(v)}" for k, v in point.items() if k != axis)
    return UserError(("--grid point " + rest if rest else "--grid") + (" (with --set)" if overrides else ""),
                     err.key, err.problem)


def _check_axis_name(name: str, base_dict: dict, overrides: dict, policies: list[str], axes: dict) -> None:
    policy, param = split_axis(name)
    if policy is not None:
        if policy not in policies:
            raise UserError("--grid", name, f"names the policy {policy!r}, which is not swept "
                            f"(--policies {','.join(policies)})")
        if param in axes:
            raise UserError("--grid", name, f"is also given for every policy ({param}); give it in one place")
    if param in RESERVED_AXES:
        raise UserError("--grid", name, f"is set by the sweep itself; use {RESERVED_AXES[param]}")
    if param in overrides:
        raise UserError("--grid", name, "is also given with --set; give it in one place")
    # A policy's own tables (one from a file or a plugin) are parameters of its runs, set or not in the base.
    owners = [policy] if policy is not None else policies
    node: Any = {**{t: dataclasses.asdict(table()) for p in owners for t, table in get_policy(p).tables.items()},
                 **base_dict}
    for part in param.split("."):
        if not isinstance(node, dict) or part not in node:
            raise UserError("--grid", name, "unknown scenario parameter")
        node = node[part]
    if isinstance(node, (dict, list)):
        raise UserError("--grid", name, "is a table or list, not a single parameter")


def metric_column(name: str, taken: Iterable[str]) -> str:
    """The runs.csv column of metric ``name``: its own name unless a grid or id column has it."""
    return f"summary.{name}" if name in set(taken) else name


# -- the runs file ------------------------------------------------------------
def _repair(path: Path, columns: list[str]) -> None:
    """Make runs.csv end at a line end: cut a partial last row (the run is redone), complete a bare header."""
    header = csv_line(columns).encode("utf-8")
    data = read_bytes(path, RUNS_FILE, own=True)
    body, tail = complete_part(data)
    if not tail and body:
        return
    try:
        if not body:  # nothing but a header, whole or cut short (or an empty file): no row can be lost
            if data != header:
                atomic.write_bytes(path, header)
            return
        with open(path, "r+b") as fh:
            fh.truncate(len(body))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as err:
        raise from_os_error(err, path) from None


class _Appender:
    """runs.csv open for appending: each batch's complete lines in one write, so that a crash leaves at most one
    partial line. They reach the disk (``fdatasync``) at most ``sync_s`` seconds after they were written, and all
    of them before the sweep ends: a sync is some milliseconds of waiting, and syncing every batch took longer
    than a short kernel sweep's runs. A killed sweep loses no written line (the system has it); a machine that
    loses power loses at most the last ``sync_s`` seconds' rows, run again on resume. Every line is kept
    (``lines``, by run id) for the sorted rewrite of a complete sweep."""

    def __init__(self, path: Path, lines: dict[str, str], sync_s: float = 1.0):
        self.path, self.lines, self.sync_s = path, lines, sync_s
        try:
            self.fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        except OSError as err:
            raise from_os_error(err, path) from None
        self.synced_at = time.monotonic()
        self.unsynced = False

    def write(self, rows: list[tuple[str, str]]) -> None:
        """Append ``rows`` ((run id, line)) in one write."""
        data = "".join(line for _, line in rows).encode("utf-8")
        try:
            while data:  # (looped only if the system writes short)
                written = os.write(self.fd, data)
                data = data[written:]
            self.unsynced = True
            if time.monotonic() - self.synced_at >= self.sync_s:
                self.sync()
        except OSError as err:
            raise from_os_error(err, self.path) from None
        self.lines.update(rows)

    def sync(self) -> None:
        if self.unsynced:
            os.fdatasync(self.fd)
            self.unsynced = False
        self.synced_at = time.monotonic()

    def close(self) -> None:
        """Sync what is left, then close (closed whatever the sync says)."""
        try:
            self.sync()
        except OSError as err:
            raise from_os_error(err, self.path) from None
        finally:
            os.close(self.fd)


# -- engines ------------------------------------------------------------------
Pair = tuple[int, str]  # (grid point, policy)


def choose_engines(plan: SweepPlan, requested: str = "simpy", traces: bool = False,
                   done: Collection[str] = frozenset()) -> dict[Pair, str]:
    """The engine of each (grid point, policy) of ``plan``, chosen before any run (``requested``: ``--engine``).

    ``kernel`` refuses a pair the kernel does not cover, and ``--traces`` (the kernel makes summaries, not
    traces); ``auto`` gives the kernel the pairs it covers when their runs still to run (not in ``done``, the
    run ids runs.csv holds: a resumed sweep weighs what is left) add up to enough turns to pay for loading it
    (:func:`prunesim.kernel.choice.auto_min_turns`), SimPy the rest.
    """
    pairs = sorted({(s.point, s.policy) for s in plan.runs})
    if requested == "simpy" or not pairs:
        pick(requested, [], 0)  # the name is still checked
        return dict.fromkeys(pairs, "simpy")
    if traces:
        if requested == "kernel":
            raise KernelRefused("--engine", "kernel", "--traces writes each run's trace, which only the SimPy "
                                "engine records: use --engine simpy or auto")
        return dict.fromkeys(pairs, "simpy")
    runs: dict[Pair, int] = dict.fromkeys(pairs, 0)
    for spec in plan.runs:
        if spec.run_id not in done:
            runs[(spec.point, spec.policy)] += 1
    covered = [p for p in pairs if not kernel_gap(plan.scenarios[p[0]], p[1])]
    turns = sum(runs[p] * plan.scenarios[p[0]].turns for p in covered)
    return {p: pick(requested, [(plan.scenarios[p[0]], p[1])], turns) for p in pairs}


def finished_runs(out: str | Path) -> frozenset[str]:
    """The run ids ``out/runs.csv`` holds already (none when there is no such file, or one that cannot be read:
    running the sweep says what is wrong with it), for a caller that describes the engines before it runs."""
    try:
        _, body, _ = read_table(Path(out) / RUNS_FILE, RUNS_FILE, own=True)
    except (UserError, OSError):
        return frozenset()
    return frozenset(row[0] for row in body if row)


def describe_engines(plan: SweepPlan, engines: dict[Pair, str], traces: bool = False) -> str:
    """One line: which engine runs which policy's grid points, and why the others stay on SimPy (``traces``:
    ``--traces``, as given to :func:`choose_engines`)."""
    few = ("--traces (only the SimPy engine records a run's trace)" if traces else
           f"too few turns to pay for loading the kernel (below {auto_min_turns():,})")
    parts = []
    for policy in plan.policies:
        mine = {p: e for p, e in engines.items() if p[1] == policy}
        on_kernel = sum(e == "kernel" for e in mine.values())
        if on_kernel:
            parts.append(f"kernel for {policy}{_of_points(on_kernel, len(mine))}")
        reasons: dict[str, int] = {}
        for p, e in mine.items():
            if e == "simpy":
                reason = kernel_gap(plan.scenarios[p[0]], policy) or few
                reasons[reason] = reasons.get(reason, 0) + 1
        parts += [f"simpy for {policy}{_of_points(n, len(mine))}: {reason}" for reason, n in reasons.items()]
    return "engine: " + "; ".join(parts)


def _of_points(n: int, points: int) -> str:
    return f" at {n} of {points} grid points" if n < points else ""


_KERNEL = None  # this process's compiled kernel, loaded at its first run (it keeps each seed's draws)


def _kernel_summaries(scenario: Scenario, policy: str, seeds: list[int]) -> list[dict]:
    global _KERNEL
    if _KERNEL is None:
        from prunesim.kernel.summary import Kernel
        _KERNEL = Kernel()
    return _KERNEL.summaries(scenario, policy, seeds)


# -- running ------------------------------------------------------------------
def run_batch(scenario: Scenario, policy: str, items: Sequence[tuple[str, int]], traces_dir: str | None,
              engine: str = "simpy"):
    """Worker entry point: run each (run_id, seed) on ``engine``; returns [(run_id, summary)].

    What a user's policy raised (``sys.exit()`` too) is worded here, where its frames are: a worker's exception
    reaches the sweep as a copy without them, and a SystemExit would end the sweep as if it were done."""
    try:
        return _run_batch(scenario, policy, items, traces_dir, engine)
    except (Exception, SystemExit) as err:
        fault = user_policy_fault(err)
        if fault is None:
            raise
        raise fault from None


def _run_batch(scenario: Scenario, policy: str, items: Sequence[tuple[str, int]], traces_dir: str | None,
               engine: str) -> list[tuple[str, dict]]:
    if engine == "kernel":  # summaries only: choose_engines keeps --traces on SimPy
        summaries = _kernel_summaries(scenario, policy, [seed for _, seed in items])
        return [(rid, summary) for (rid, _), summary in zip(items, summaries, strict=True)]
    out = []
    for rid, seed in items:
        result = run_one(scenario, policy, seed, trace="all" if traces_dir else "none")
        if traces_dir:
            write_run(result, Path(traces_dir) / rid)
        out.append((rid, result.summary))
    return out


# The most runs in one batch, by engine: a batch of kernel runs costs as much to send, prepare and answer as
# dozens of its runs take (a 60-turn run: about 40 us), so its batches are the pair's runs, up to this many.
MAX_BATCH = {"simpy": 32, "kernel": 1024}


def _batches(plan: SweepPlan, pending: list[RunSpec], jobs: int, engines: dict[Pair, str]) -> list[tuple]:
    """Runs grouped by (grid point, policy) into chunks small enough to balance the workers (16 a worker), each
    with its engine."""
    fair = math.ceil(len(pending) / max(1, jobs * 16))
    groups: dict[tuple[int, str], list[RunSpec]] = {}
    for spec in pending:
        groups.setdefault((spec.point, spec.policy), []).append(spec)
    out = []
    for (point, policy), specs in groups.items():
        engine = engines.get((point, policy), "simpy")
        size = max(1, min(MAX_BATCH[engine], fair))
        for i in range(0, len(specs), size):
            out.append((plan.scenarios[point], policy, [(s.run_id, s.seed) for s in specs[i : i + size]], engine))
    return out


def _worker_init(lock_fd: int) -> None:
    """In a forked worker: let go of the sweep's lock, and die with the sweep."""
    os.close(lock_fd)  # the lock stays held by the sweep's own descriptor
    worker_start()


def _local_results(batches: list[tuple], jobs: int, traces_dir: str | None, lock_fd: int) -> Iterator[list]:
    if jobs <= 1 or len(batches) <= 1:
        for sc, policy, items, engine in batches:
            yield run_batch(sc, policy, items, traces_dir, engine)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    workers = min(jobs, len(batches))
    if "fork" in multiprocessing.get_all_start_methods():  # fast: the code is already imported
        ctx = multiprocessing.get_context("fork")
        pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init, initargs=(lock_fd,))
    else:  # spawned workers inherit no descriptors
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=worker_start)
    finished = False
    try:
        try:
            futures = [pool.submit(run_batch, sc, policy, items, traces_dir, engine)
                       for sc, policy, items, engine in batches]
        except OSError as err:  # the workers are started at the first submit: fork() refused
            raise refused(err, jobs, workers, len(pool._processes or {}), KEPT) from None
        for fut in as_completed(futures):
            yield fut.result()
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:  # SIGTERM, Ctrl-C, a failed run: the batches in flight are lost anyway (a resume re-runs them)
            stop_workers(pool)


KEPT = "the runs done are kept: run the sweep again"  # what a refused --jobs leaves


class DaskRunner:
    """A Dask client (on ``scheduler``, or on a LocalCluster on loopback), connected before anything is written."""

    def __init__(self, jobs: int, scheduler: str | None):
        from distributed import Client, LocalCluster

        self.cluster = None
        try:
            if scheduler:
                self.client = Client(scheduler)  # timeout: distributed.comm.timeouts.connect
            else:
                # What workers log when the sweep is stopped (batches cancelled, the scheduler gone) is not the
                # user's business: a run that fails reaches the sweep through its future, named there.
                self.cluster = LocalCluster(
                    n_workers=jobs, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
                    silence_logs=logging.CRITICAL,
                )
                self.client = Client(self.cluster)
        except Exception as err:
            if self.cluster is not None:
                self.cluster.close()
            if (refusal := refusal_in(err)) is not None:  # a worker process the system refused: too many --jobs
                raise refused(refusal, jobs, after=KEPT) from None
            if not isinstance(err, (OSError, TimeoutError, ValueError)):
                raise
            raise UserError("--scheduler" if scheduler else "--executor", scheduler or "dask",
                            f"cannot start or reach the Dask cluster: {err}") from None

    def results(self, batches: list[tuple], traces_dir: str | None) -> Iterator[list]:
        from distributed import as_completed

        futures = [
            self.client.submit(run_batch, sc, policy, items, traces_dir, engine, pure=False)
            for sc, policy, items, engine in batches
        ]
        try:
            for fut in as_completed(futures):
                yield fut.result()
        finally:
            self.client.cancel(futures)

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


# A Dask scheduler address: [PROTOCOL://]HOST:PORT, HOST a name, an IPv4 address or a bracketed IPv6 one.
DASK_PROTOCOLS = ("tcp", "tls", "ws", "wss", "ucx")
_SCHEDULER = re.compile(r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+)"
                        r":(?P<port>[0-9]+)/?")


def check_scheduler(address: str) -> None:
    """UserError unless ``address`` looks like a Dask scheduler's: [tcp://]HOST:PORT with a port from 1 to 65535."""
    m = _SCHEDULER.fullmatch(address)
    expected = f"expected [PROTOCOL://]HOST:PORT, PROTOCOL one of {', '.join(DASK_PROTOCOLS)}"
    if not m:
        raise UserError("--scheduler", address, expected)
    if m["scheme"] is not None and m["scheme"] not in DASK_PROTOCOLS:
        raise UserError("--scheduler", address, f"unknown protocol {m['scheme']!r}; {expected}")
    if not 1 <= int(m["port"]) <= 65535:
        raise UserError("--scheduler", address, "the port must be from 1 to 65535")


def check_executor(executor: str, scheduler: str | None) -> None:
    if executor not in EXECUTORS:
        raise UserError("--executor", executor, f"unknown executor (known: {', '.join(EXECUTORS)})")
    if scheduler is not None and executor != "dask":
        raise UserError("--scheduler", scheduler, "only applies with --executor dask")
    if scheduler is not None:
        check_scheduler(scheduler)
    if executor == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise UserError(
                "--executor", "dask", "needs dask.distributed: pip install 'prunesim[dask]'"
            ) from None


@dataclass
class SweepStats:
    total: int
    already_done: int
    ran: int
    seconds: float
    complete: bool


def _lock(out: Path) -> int:
    try:
        fd = os.open(out / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise from_os_error(err, out / LOCK_FILE) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UserError(
            str(out), None,
            f"another sweep is running in this directory (it holds {LOCK_FILE}); wait for it or use another --out",
        ) from None
    return fd


def _first_difference(old: Any, new: Any, path: str = "") -> tuple[str, Any, Any] | None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            diff = _first_difference(old.get(key), new.get(key), f"{path}.{key}" if path else str(key))
            if diff:
                return diff
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            diff = _first_difference(a, b, f"{path}[{i}]")
            if diff:
                return diff
        return None
    return None if old == new else (path, old, new)


def _short(value: Any) -> str:
    text = json.dumps(atomic.json_ready(value))
    return text if len(text) <= 60 else text[:57] + "..."


def execute(
    plan: SweepPlan,
    out: str | Path,
    jobs: int | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    traces: bool = False,
    progress: bool | str = True,
    engine: str = "simpy",
) -> SweepStats:
    """Run every run of ``plan`` not yet in ``out/runs.csv``; resumable, locked, crash-safe.

    ``engine``: ``simpy``, ``kernel`` or ``auto``, for each (grid point, policy) as :func:`choose_engines`
    decides."""
    started = time.perf_counter()
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if jobs < 1:
        raise UserError("--jobs", str(jobs), "must be at least 1")
    check_executor(executor, scheduler)
    engines = choose_engines(plan, engine, traces)
    out = Path(out)
    output.check_folder(out, "--out")
    if out.is_dir() and not (out / SWEEP_FILE).exists() and any(p.name not in (LOCK_FILE, reproduce.FILE)
                                                                 for p in out.iterdir()):
        raise UserError("--out", str(out), f"is not empty and holds no {SWEEP_FILE}; choose a new directory")
    dask = DaskRunner(jobs, scheduler) if executor == "dask" else None
    try:
        return _execute(plan, out, jobs, dask, traces, progress, started, engines, engine)
    finally:
        if dask is not None:
            dask.close()


def _execute(plan: SweepPlan, out: Path, jobs: int, dask: DaskRunner | None, traces: bool, progress: bool,
             started: float, engines: dict[Pair, str], requested: str) -> SweepStats:
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise from_os_error(err, out) from None
    try:
        lock = _lock(out)
    except BaseException:
        _remove_unstarted(out, created)
        raise
    try:
        desc = json.loads(description_json(plan.description()))
        sweep_path, runs_path = out / SWEEP_FILE, out / RUNS_FILE
        probes: dict[str, dict] = {}
        traces_dir = str(out / TRACES_DIR) if traces else None
        if sweep_path.exists() or sweep_path.is_symlink():
            try:
                old = read_description(out, own=True)
            except UserError as err:
                raise UserError(err.where, err.key, f"{err.problem}; use a new --out directory") from None
            _check_inputs(out)
            columns = old.pop("columns", None)
            diff = _first_difference(old, desc)
            if diff:
                key, was, now = diff
                raise UserError(
                    str(sweep_path), key,
                    f"this directory holds a different sweep (was {_short(was)}, now {_short(now)}); "
                    "rerun with the same arguments to resume, or use a new --out directory",
                )
            if not isinstance(columns, list):
                raise UserError(str(sweep_path), "columns", "missing; use a new --out directory")
        else:
            # The column set is fixed now: the metrics the policies report on a first run, those of
            # prunesim.observe.metrics in its order, then any others a policy adds, sorted. The agent model's
            # figures depend on its profile: a first run of each policy under each [agent] table of the grid.
            for policy in plan.policies:
                firsts: dict[str, RunSpec] = {}
                for s in plan.runs:
                    if s.policy == policy:
                        firsts.setdefault(repr(plan.scenarios[s.point].agent), s)
                for spec in firsts.values():
                    items = [(spec.run_id, spec.seed)]
                    probes[spec.run_id] = run_batch(plan.scenarios[spec.point], policy, items, traces_dir,
                                                    engines[(spec.point, policy)])[0][1]
            reported = {k for summary in probes.values() for k in summary}
            metrics = [m for m in METRIC_NAMES if m in reported] + sorted(reported - set(METRIC_NAMES))
            fixed = list(ID_COLUMNS) + list(plan.axes)
            columns = fixed + [metric_column(m, fixed) for m in metrics]
            atomic.write_json(out / reproduce.FILE, reproduce.record(plan.seeds))  # before sweep.json: a resume
            atomic.write_text(sweep_path, description_json({**desc, "columns": columns}))  # finds both or neither
        if not runs_path.exists() and not runs_path.is_symlink():
            atomic.write_text(runs_path, csv_line(columns))
        _repair(runs_path, columns)
        _, body, _ = read_table(runs_path, RUNS_FILE, header=columns, own=True)
        done = {row[0] for row in body}
        # each run's line as the sorted rewrite writes it, the first found of a run (its cells are all it keeps)
        lines: dict[str, str] = {}
        for row in body:
            if row[0] not in lines:
                lines[row[0]] = csv_line(row)
        del body
        # What is left to run, read under the lock: a resumed sweep weighs it; a fresh sweep's probes (run above on
        # the engines chosen for every run) count as left to run, so that its other runs take the same engines.
        engines = choose_engines(plan, requested, traces, frozenset(done))
        planned = {s.run_id for s in plan.runs}
        stray = done - planned
        if stray:
            raise UserError(str(runs_path), None, f"holds {len(stray)} runs that are not in this sweep")
        already = len(done)
        pending = [s for s in plan.runs if s.run_id not in done]
        specs = {s.run_id: s for s in plan.runs}
        row_of = _row_maker(plan, columns)
        appender = _Appender(runs_path, lines)
        bar = _progress(len(plan.runs), already, progress)
        try:
            ready = [(rid, row_of(specs[rid], summary)) for rid, summary in probes.items() if rid not in done]
            if ready:
                appender.write(ready)
                done.update(rid for rid, _ in ready)
                bar.update(len(ready))
            pending = [s for s in pending if s.run_id not in done]
            batches = _batches(plan, pending, jobs, engines)
            if dask is not None:
                results = dask.results(batches, traces_dir)
            else:
                results = _local_results(batches, jobs, traces_dir, lock)
            for batch in results:
                fresh = [(rid, row_of(specs[rid], summary)) for rid, summary in batch if rid not in done]
                if fresh:
                    appender.write(fresh)
                    done.update(rid for rid, _ in fresh)
                bar.update(len(batch))
        finally:
            bar.close()
            appender.close()
        complete = planned <= done
        if complete:
            _rewrite_sorted(runs_path, plan, csv_line(columns), lines)
        stats = SweepStats(len(plan.runs), already, len(done) - already, time.perf_counter() - started, complete)
        return stats
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)
        _remove_unstarted(out, created)


def _check_inputs(out: Path) -> None:
    """A resume refuses when an input of the runs done has changed (a user's policy file edited, a scenario file,
    a prunesim version): its rows would mix two versions under one name (:func:`prunesim.io.reproduce.changed`)."""
    recorded = reproduce.read(out)
    if recorded is None:
        warnings.warn(f"{out / reproduce.FILE}: missing or not a prunesim record (a sweep started by a prunesim "
                      "that kept none): whether its inputs changed since cannot be checked", stacklevel=2)
        return
    reproduce.changed(recorded, str(out / reproduce.FILE))


def _remove_unstarted(out: Path, created: bool) -> None:
    """A folder this sweep made but never described (it failed on its first runs) is removed, lock and all:
    a failed command leaves nothing behind."""
    if not created or (out / SWEEP_FILE).exists():
        return
    try:
        (out / LOCK_FILE).unlink(missing_ok=True)
        (out / reproduce.FILE).unlink(missing_ok=True)
        out.rmdir()  # only if empty: anything else in it is not this sweep's to remove
    except OSError:
        pass


def _metric_name(column: str, fixed: Sequence[str]) -> str:
    """The metric behind a runs.csv column (undoing the ``summary.`` prefix of a name clash)."""
    prefix = "summary."
    return column[len(prefix):] if column.startswith(prefix) and column[len(prefix):] in fixed else column


def _row_maker(plan: SweepPlan, columns: list[str]) -> Callable[[RunSpec, dict], str]:
    fixed = list(ID_COLUMNS) + list(plan.axes)
    names = [_metric_name(c, fixed) for c in columns[len(fixed):]]
    in_order = tuple(names)
    known = set(names)
    # The cells a (grid point, policy) shares, made once: the text before the seed's cell and after it.
    shared: dict[tuple[int, str], tuple[str, str]] = {}

    def row(spec: RunSpec, summary: dict) -> str:
        # A summary of every metric in the columns' order (the usual case, told by one comparison) is taken as it
        # is; any other is checked and looked up name by name.
        whole = tuple(summary) == in_order
        if not whole:
            unknown = set(summary) - known
            if unknown:
                raise RuntimeError(
                    f"policy {spec.policy!r} reported metrics {sorted(unknown)} that its first run (under the same "
                    "[agent] table) did not; a policy must report the same metric keys on every run"
                )
        pair = (spec.point, spec.policy)
        if pair not in shared:
            point = plan.points[spec.point]
            after = [plan.version] + [atomic.format_cell(point[a]) if a in point else "" for a in plan.axes]
            shared[pair] = csv_line([plan.scenario_name, spec.policy])[:-1], csv_line(["", *after])[:-1]
        before, after = shared[pair]
        head = f"{csv_field(spec.run_id)},{before},{csv_field(atomic.format_cell(spec.seed))}{after}"
        # A summary of plain numbers (every metric there) is one %-format; anything else cell by cell.
        figures = None
        if names and (whole or len(summary) == len(names)):
            figures = number_row(list(summary.values()) if whole else [summary[n] for n in names])
        if figures is None:
            cells = [atomic.format_cell(summary[n]) if n in summary else "" for n in names]
            return head + "\n" if not cells else f"{head},{csv_line(['', *cells])[1:]}"
        return f"{head},{figures}"

    return row


def _rewrite_sorted(runs_path: Path, plan: SweepPlan, header: str, lines: dict[str, str]) -> None:
    """A complete sweep's rows in the plan's order, each run once (``lines``: every run's line, by run id, as the
    file holds it); a file already so is left untouched."""
    text = header + "".join(lines[s.run_id] for s in plan.runs)
    if read_bytes(runs_path, RUNS_FILE, own=True) != text.encode("utf-8"):
        atomic.write_text(runs_path, text)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, initial: int, enabled: bool | str):
    """tqdm's bar on a terminal; ``enabled == "lines"`` (a sweep that said it is long): else a line at every tenth."""
    if enabled == "lines":
        from prunesim.studies.progress import Progress

        return Progress(total, "run", "sweep", initial)
    if not enabled or not sys.stderr.isatty():
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="run", file=sys.stderr, dynamic_ncols=True, smoothing=0.05)


# -- the Python API -------------------------------------------------------------
def run_sweep(
    scenario: str | Scenario,
    grid: dict[str, Sequence[Any]] | None = None,
    policies: Sequence[str] | None = None,
    seeds: Iterable[int] = range(100),
    out: str | Path = "sweep-out",
    overrides: dict[str, Any] | None = None,
    jobs: int | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    traces: bool = False,
    progress: bool = False,
    engine: str = "simpy",
) -> list[dict]:
    """Run (or resume) a sweep into ``out`` and return its tidy table, one dict per run (``engine``: see
    :func:`execute`).

    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> rows = run_sweep("oscillation-40", {"trigger": [20000, 22000]}, ["naive"], range(3), out, jobs=1)
    >>> len(rows), sorted({row["trigger"] for row in rows}), sorted({row["seed"] for row in rows})
    (6, [20000, 22000], [0, 1, 2])
    >>> import shutil; shutil.rmtree(out)
    """
    plan = plan_sweep(scenario, grid, policies, seeds, overrides)
    execute(plan, out, jobs=jobs, executor=executor, scheduler=scheduler, traces=traces, progress=progress,
            engine=engine)
    return read_runs(out)


def parse_value(text: str) -> Any:
    """A runs.csv cell as a Python value (see :func:`sim.atomic.parse_cell`)."""
    return atomic.parse_cell(text)
