"""Replaying workloads under policies, and the replay metrics.

Sources are transcripts (any supported format) or prunesim workload files,
read one file at a time (a JSON-lines transcript one run at a time), so a
folder of any size replays in bounded memory.

Replay metrics (defined in :data:`prunesim.observe.metrics.METRICS`): a *repeat* is a tool
call whose content key was called before in the same transcript. Under a
policy, a repeat *hits pruned content* when the latest earlier output of that key
had left the window (evicted by a pass, a non-model eviction, cleared to a
placeholder, a forced drop or the replayed runtime's own recorded compaction)
before the repeat and no summary carries it, and *hits the window* when it is
still there or a summary carries it. The output is what the agent would read
again, and its latest output is the command's latest result: a surviving call
without its output does not hold it, nor does an older output of the same
command. (A key whose output never entered the window, an empty output, is
judged by its latest call instead.) The gap is the number of turns from the
removal of that content to the repeat.

An evicted tool output was *needed* when its key is called again later in the
transcript (``needed_evicted_spans``, ``needed_evicted_tokens`` and
``eviction_precision``, replacing the synthetic definition by staleness).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from prunesim.errors import ResourceError, UserError, from_os_error
from prunesim.io import inputs, settings
from prunesim.io.transcripts import formats, import_cache
from prunesim.io.transcripts import workload as wl
from prunesim.io.transcripts.identity import Seen
from prunesim.io.transcripts.tokens import DEFAULT, get_counter
from prunesim.model.scenario import Scenario
from prunesim.policies import get_policy
from prunesim.runner import RunResult, check_tables, run_one
from prunesim.studies.repeats import RepeatTally

TRANSCRIPT_SUFFIXES = (".json", ".traj", ".jsonl")
REFERENCE = "noop"  # the policy that replays the recorded run as it ran (the runtime's own removals only)
REPLAY_METRICS = (
    "repeats",
    "repeats_after_prune",
    "repeats_in_window",
    "repeat_gap_mean",
    "repeat_gap_max",
)


def expand(paths: list[Path]) -> list[Path]:
    """Files named, and for a folder every transcript-looking file under it (sorted, hidden skipped)."""
    out: list[Path] = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            found = [
                p for p in path.rglob("*")
                if p.is_file() and p.name.endswith(TRANSCRIPT_SUFFIXES)
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            ]
            out.extend(sorted(found))
        else:
            kind = inputs.special_kind(path)  # a folder's own devices and pipes are left out by is_file()
            if kind:
                raise UserError(str(path), None, f"not a regular file ({kind}); give a transcript or a folder")
            out.append(path)
    return out


def iter_workloads(path: Path, tokenizer: str = DEFAULT, calibration: str = "auto",
                   sidechains: str = "separate", transcripts_only: bool = False) -> Iterator[wl.WorkloadData]:
    """The workloads in one file: a workload file as is, a transcript imported on the fly.

    Each workload carries the import's warnings (``.warnings``) for the caller to show.
    """
    path = Path(path)
    if path.is_file() and wl.is_workload_file(path):
        if transcripts_only:  # not "an unknown transcript format": say what the file is
            raise UserError(str(path), None, "is a prunesim workload already, not a transcript to import "
                            "(replay it with run --workload, replay-dir or leaderboard)")
        data = wl.read(path)
        data.path = str(path)
        yield data
        return
    get_counter(tokenizer)
    name = _cache_key(path, tokenizer, calibration, sidechains)
    kept = import_cache.load(name)
    if kept is not None:  # the same file imported the same way before (prunesim.io.transcripts.import_cache)
        for data in kept:
            data.path = str(path)
            yield data
        return
    held: list | None = [] if name else None  # each run as imported (a caller may add to what it is given)
    parts = 0
    for t in formats.iter_transcripts(path, sidechains):
        data = wl.from_transcript(t, tokenizer, calibration)
        data.warnings[:0] = t.warnings
        data.path = str(path)
        if held is not None:
            parts += len(data.parts)
            if parts <= import_cache.HELD_PARTS_MAX:
                held.append(import_cache.frozen(data))
            else:  # too large to hold: imported every time
                held = None
        yield data
    # Every run imported: the file is kept, unless it changed while it was read (a session log still being
    # written): what was imported is then not what the key names, and would be given for those bytes later.
    if held is not None and _cache_key(path, tokenizer, calibration, sidechains) == name:
        import_cache.store(name, held)


def _cache_key(path: Path, tokenizer: str, calibration: str, sidechains: str) -> str:
    """The import cache's key for this file read this way ('' when the cache is off or the file unreadable:
    the import itself then says what is wrong with it)."""
    if import_cache.folder() is None or not path.is_file():  # a pipe or a device is read once, by the importer
        return ""
    try:
        content = path.read_bytes()
    except OSError:
        return ""
    return import_cache.key(path, content, tokenizer, calibration, sidechains)


def one_workload(path: Path) -> wl.WorkloadData:
    """The one workload of a workload file or a one-run transcript (:func:`iter_workloads`); a file that holds
    none or several is a :class:`UserError`. A run the file holds twice (same content) is one run, with a
    warning."""
    seen = Seen()
    runs = (data for data in iter_workloads(Path(path)) if not seen.is_repeat(data))
    data = next(runs, None)
    if data is None:
        raise UserError(str(path), None, "holds no run")
    if next(runs, None) is not None:
        raise UserError(str(path), None, "holds several runs; import it and pass one workload file")
    data.warnings.extend(seen.repeats)
    return data


def iter_sources(paths: list[Path], tokenizer: str = DEFAULT, calibration: str = "auto",
                 sidechains: str = "separate", files: list[Path] | None = None, transcripts_only: bool = False,
                 seen: Seen | None = None) -> Iterator[tuple[Path, wl.WorkloadData | Exception]]:
    """(file, workload) for every workload found, or (file, error) for a file that failed.

    One bad file never stops the others: its :class:`UserError` (or, for a bug
    met on that file, the exception itself) is yielded in its place. A file
    whose later runs fail after earlier ones imported yields both. Only a
    failure of the machine (disk, memory) or an interrupt stops the walk.
    With ``transcripts_only`` a workload file is not read as one (``import``).
    With ``seen`` (:class:`~prunesim.io.transcripts.identity.Seen`), a run whose content was met before, in
    this file or an earlier one, is left out (``seen`` says so); a file that fails is forgotten by it.
    """
    for path in files if files is not None else expand(paths):
        try:
            for data in iter_workloads(path, tokenizer, calibration, sidechains, transcripts_only):
                if seen is None or not seen.is_repeat(data):
                    yield path, data
            continue
        except UserError as err:
            failed: Exception = err
        except OSError as err:
            one = from_os_error(err, path)
            if not isinstance(one, UserError):
                raise one from None
            failed = one
        except (ResourceError, MemoryError):
            raise
        except Exception as err:  # noqa: BLE001 - a bug met on one file: reported as such, the rest goes on
            failed = err
        if seen is not None:
            seen.forget(path)
        yield path, failed


def peak_tokens(data: wl.WorkloadData) -> int:
    """The most the transcript ever holds: the peak utilization of a replay that prunes nothing.

    Every part adds its tokens at its turn; a part the runtime itself dropped
    (``dropped_at: k``, a recorded compaction) leaves before turn ``k``'s call,
    and what replaced it there arrives after it left
    (:func:`workload.replaced_after_compaction`).
    """
    turns = data.turns
    added = [0] * (turns + 2)
    ahead = [0] * (turns + 2)
    dropped = [0] * (turns + 2)
    moved = wl.replaced_after_compaction(data)
    for i, p in enumerate(data.parts):
        if i in moved:
            ahead[p["turn"] + 1] += p["tokens"]
        else:
            added[p["turn"]] += p["tokens"]
        if p.get("dropped_at"):
            dropped[min(p["dropped_at"], turns + 1)] += p["tokens"]
    level = peak = 0
    for turn in range(turns + 1):
        level += ahead[turn] - dropped[turn]
        peak = max(peak, level)
        level += added[turn]
        peak = max(peak, level)
    return peak


recorded_model = settings.recorded_model  # (model, named): the model that ran a workload
_where = settings.transcript_where


def recorded_changes(base: Scenario, data: wl.WorkloadData, given_as: str = "--set") -> dict:
    """The overrides that put the recorded runtime under ``base`` (:func:`prunesim.io.settings.recorded_layer`)."""
    return {k: s.value for k, s in settings.recorded_layer(base, data, given_as).items()}


def replay_scenario(base: Scenario, data: wl.WorkloadData, given_as: str = "--set") -> Scenario:
    """The base scenario, run for exactly the workload's turns, on the recorded runtime, each value with where it
    came from (:func:`prunesim.io.settings.for_transcript`; :func:`prunesim.io.settings.of` reads them).

    ``given_as``: what the caller sets values with (``--set``, or the API's ``overrides``), named in its errors."""
    return settings.for_transcript(base, data, given_as)


def _check_tables(scenario: Scenario, base: Scenario, data: wl.WorkloadData, policy, given_as: str) -> None:
    """The tables the replay's policy reads, checked on the recorded runtime (a value set for the caller's
    window may not fit the one the transcript ran on)."""
    try:
        check_tables(scenario, get_policy(policy or scenario.policy), _where(data))
    except UserError as err:
        raise settings.on_recorded_runtime(err, data, recorded_changes(base, data, given_as), given_as) from None


def replay_notes(scenario: Scenario, data: wl.WorkloadData, given_as: str = "--set") -> list[str]:
    """What a reader of the replay must know about it: an unrecorded model or clock (:func:`forced_cut_note`:
    a window that cut content)."""
    where = _where(data)
    notes = []
    model, named = recorded_model(data)
    if scenario.replay.recorded and not settings.known_pinned(scenario, "pricing.model"):
        if not model:
            notes.append(f"{where}: the transcript records no model: billed as {scenario.pricing.model} on a "
                         f"{scenario.window:,}-token window (set {given_as} pricing.model=NAME)")
        elif not named:
            notes.append(f"{where}: the transcript records no model: billed as {model}, which "
                         f"{data.header.get('format')} runs by default (set {given_as} pricing.model=NAME)")
    if scenario.replay.clock == "recorded" and not data.header.get("call_times"):
        notes.append(f"{where}: {data.header.get('format')} records no time per model call: the replay's clock is "
                     "the latency model's, so pauses in the real session do not expire caches")
    return notes


def forced_cut_note(data: wl.WorkloadData, results: list[RunResult]) -> str:
    """The one warning a transcript's noop replays owe their reader when they cut content by force ('' when none
    did): the window, and per replay the cuts and tokens it made.

    Read from what the runs did (``forced_truncations``, ``truncated_tokens``), not from the parts: a noop replay
    with the runtime's recorded removals sends the recorded prompts, so a cut is content the recorded run sent
    that the replay's window could not hold (a window set below the recorded prompts, or a transcript whose
    prompts exceed the window it claims). ``results`` are replays of ``data`` (several: one per sizes)."""
    cut = [r for r in results if r.policy == REFERENCE and r.summary.get("forced_truncations")]
    if not cut:
        return ""
    # Which sizes cut, where more than one replayed or the sizes are not the stored ones: replay-dir or a
    # leaderboard with a grid over replay.sizes shows one note per sizing, each saying which.
    label = len({r.scenario.replay.sizes for r in results}) > 1 or any(r.scenario.replay.sizes != "anchored"
                                                                       for r in cut)
    counts = "; ".join(f"{r.summary['forced_truncations']:,} forced cut(s), {r.summary['truncated_tokens']:,} tokens"
                       + (f" at the {r.scenario.replay.sizes} sizes" if label else "") for r in cut)
    recorded = [p for p in data.header.get("prompt_tokens") or () if p is not None]
    largest = (f"its largest recorded prompt: {max(recorded):,} tokens" if recorded else
               f"its largest prompt as sized: {max(wl.context_before_calls(data), default=0):,} tokens")
    return (f"{_where(data)}: the noop replay cut content the recorded run sent, on a "
            f"{cut[0].scenario.window:,}-token window: {counts} ({largest})")


def replay(data: wl.WorkloadData, base: Scenario, policy: str | None = None, seed: int | None = None,
           trace: str = "all", scenario: Scenario | None = None, given_as: str = "--set",
           recorder=None, edit_log=None, observers=()) -> tuple[RunResult, dict]:
    """Run the workload under ``policy`` on its recorded runtime; the run and its replay metrics.

    ``trace``: what the run keeps, as :func:`~prunesim.runner.run_one` takes it; the replay metrics are heard
    as the run goes (:class:`~prunesim.studies.repeats.RepeatTally`), so they need no trace. ``recorder`` and
    ``edit_log``: as run_one takes them (a replay written as it goes, :func:`~prunesim.io.stream.stream_run`).
    ``scenario``: ``replay_scenario(base, data)``, for a caller that replays one workload under many
    policies and builds it once; ``given_as``: what the caller set values with (``--set``, or the API's
    ``overrides``), named in its errors and notes; ``observers``: a study's own, heard after the others."""
    if scenario is None:
        scenario = replay_scenario(base, data, given_as)
    _check_tables(scenario, base, data, policy, given_as)
    data = wl.sized_as(data, scenario.replay.sizes)
    workload = wl.TranscriptWorkload(
        data, scenario.workload.reasoning_stale_after, scenario.workload.output_stale_after,
        clock=scenario.replay.clock == "recorded", cache_breaks=scenario.replay.cache_breaks,
    )
    tally = RepeatTally()
    result = run_one(scenario, policy, seed, trace=trace, workload=workload, recorder=recorder,
                     edit_log=edit_log, observers=[tally, *observers])
    result.transcript = data.name
    result.settings = settings.of(scenario)
    # The import's warnings and this replay's notes; the workload itself is left as it was (a caller replays it
    # under many policies and sizings, and shows each warning of its replays once).
    notes = [note for note in (*replay_notes(scenario, data, given_as), forced_cut_note(data, [result])) if note]
    result.warnings = list(dict.fromkeys([*data.warnings, *notes]))
    metrics = tally.metrics(result.summary.get("policy_evicted_tokens", 0))
    result.summary.update(metrics)
    return result, metrics


def replay_metrics(result: RunResult) -> dict:
    """The replay metrics of a run recorded with ``trace="all"``, read back from its trace.

    See the module docstring. Returns the repeat metrics and the transcript
    variant of ``needed_evicted_spans``, ``needed_evicted_tokens`` and
    ``eviction_precision`` (:mod:`prunesim.observe.metrics.eviction`), as
    :func:`replay` computes them while the run goes.
    """
    if result.recorder.mode != "all":
        raise ValueError(f"the replay metrics read every change of the window: this run's trace is "
                         f"{result.recorder.mode!r}, not 'all'")
    tally = RepeatTally()
    t = result.recorder.trace
    for event, kind, span_id, key, turn, delta in zip(t["event"], t["kind"], t["span_id"], t["key"], t["turn"],
                                                      t["delta"], strict=True):
        if event == "append":
            tally.appended(turn, kind, span_id, key, delta)
        else:
            tally.removed(turn, event, span_id, delta)
    return tally.metrics(result.summary.get("policy_evicted_tokens", 0))
