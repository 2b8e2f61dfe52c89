"""Replaying workloads under policies, and the replay metrics.

Sources are transcripts (any supported format) or prunesim workload files,
read one file at a time (a JSON-lines transcript one run at a time), so a
folder of any size replays in bounded memory.

Replay metrics (defined in :data:`prunesim.observe.metrics.METRICS`): a *repeat* is a tool
call whose content key was called before in the same transcript. Under a
policy, a repeat *hits pruned content* when every earlier span holding that key
(call or output) had left the window (evicted, dropped by a fallback, cleared
to a placeholder or a forced drop) before the repeat and no summary carries it,
and *hits the window* when one is still there or a summary carries it.
The gap is the number of turns from the most recent removal of that key's
content to the repeat.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from prunesim.errors import ResourceError, UserError, from_os_error
from prunesim.io.scenario_files import replace
from prunesim.io.transcripts import formats
from prunesim.io.transcripts import workload as wl
from prunesim.io.transcripts.tokens import DEFAULT, get_counter
from prunesim.model.scenario import Scenario
from prunesim.runner import RunResult, run_one

TRANSCRIPT_SUFFIXES = (".json", ".traj", ".jsonl")
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
            out.append(path)
    return out


def iter_workloads(path: Path, tokenizer: str = DEFAULT, calibration: str = "auto",
                   sidechains: str = "separate", transcripts_only: bool = False) -> Iterator[wl.WorkloadData]:
    """The workloads in one file: a workload file as is, a transcript imported on the fly.

    Each workload carries the import's warnings (``.warnings``) for the caller to show.
    """
    path = Path(path)
    if not transcripts_only and path.is_file() and wl.is_workload_file(path):
        yield wl.read(path)
        return
    get_counter(tokenizer)
    for t in formats.iter_transcripts(path, sidechains):
        data = wl.from_transcript(t, tokenizer, calibration)
        data.warnings[:0] = t.warnings
        yield data


def iter_sources(paths: list[Path], tokenizer: str = DEFAULT, calibration: str = "auto",
                 sidechains: str = "separate", files: list[Path] | None = None, transcripts_only: bool = False,
                 ) -> Iterator[tuple[Path, wl.WorkloadData | Exception]]:
    """(file, workload) for every workload found, or (file, error) for a file that failed.

    One bad file never stops the others: its :class:`UserError` (or, for a bug
    met on that file, the exception itself) is yielded in its place. A file
    whose later runs fail after earlier ones imported yields both. Only a
    failure of the machine (disk, memory) or an interrupt stops the walk.
    With ``transcripts_only`` a workload file is not read as one (``import``).
    """
    for path in files if files is not None else expand(paths):
        try:
            for data in iter_workloads(path, tokenizer, calibration, sidechains, transcripts_only):
                yield path, data
        except UserError as err:
            yield path, err
        except OSError as err:
            one = from_os_error(err, path)
            if not isinstance(one, UserError):
                raise one from None
            yield path, one
        except (ResourceError, MemoryError):
            raise
        except Exception as err:  # noqa: BLE001 - a bug met on one file: reported as such, the rest goes on
            yield path, err


def replay_scenario(base: Scenario, data: wl.WorkloadData) -> Scenario:
    """The base scenario, run for exactly the workload's turns."""
    return replace(base, {"turns": data.turns}) if base.turns != data.turns else base


def replay(data: wl.WorkloadData, base: Scenario, policy: str | None = None, seed: int | None = None,
           trace: str = "all") -> tuple[RunResult, dict]:
    """Run the workload under ``policy``; the run and its replay metrics."""
    scenario = replay_scenario(base, data)
    workload = wl.TranscriptWorkload(
        data, scenario.workload.reasoning_stale_after, scenario.workload.output_stale_after
    )
    result = run_one(scenario, policy, seed, trace="all", workload=workload)
    metrics = replay_metrics(result)
    result.summary.update(metrics)
    return result, metrics


def replay_metrics(result: RunResult) -> dict:
    """Repeats of a content key against what the policy had removed (see the module docstring)."""
    t = result.recorder.trace
    live: dict[str, set[int]] = {}  # key -> span ids holding it in the window
    removed_at: dict[str, int] = {}  # key -> turn of the latest removal of its content
    called: set[str] = set()
    held: dict[int, tuple[str, int]] = {}  # span id -> (key, tokens left)
    repeats = after = inside = 0
    gaps: list[int] = []
    rows = zip(t["event"], t["kind"], t["span_id"], t["key"], t["turn"], t["delta"], strict=True)
    for event, kind, span_id, key, turn, delta in rows:
        if event == "append":
            if not key or kind not in ("tool_call", "tool_output"):
                continue
            if kind == "tool_call":
                if key in called:
                    repeats += 1
                    if live.get(key):
                        inside += 1
                    else:
                        after += 1
                        gaps.append(turn - removed_at.get(key, turn))
                called.add(key)
            live.setdefault(key, set()).add(span_id)
            held[span_id] = (key, delta)
        elif span_id in held and (delta < 0 or event == "summary_dropped"):
            # An eviction, a fallback or a forced drop; a truncation that leaves part of the span keeps it.
            # Content a summary carries stays held until a summary drops it (a row that frees nothing
            # when an earlier summary carried it).
            if event == "summarized":
                continue
            k, left = held[span_id]
            left = 0 if event == "summary_dropped" else left + delta
            if left > 0:
                held[span_id] = (k, left)
                continue
            del held[span_id]
            live[k].discard(span_id)
            removed_at[k] = turn
    return {
        "repeats": repeats,
        "repeats_after_prune": after,
        "repeats_in_window": inside,
        "repeat_gap_mean": round(sum(gaps) / len(gaps), 3) if gaps else 0.0,
        "repeat_gap_max": max(gaps) if gaps else 0,
    }

