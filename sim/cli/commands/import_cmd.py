"""prunesim import: transcripts -> prunesim workload files (docs/transcripts.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

from prunesim.cli.commands._common import (
    Tally,
    add_transcript_options,
    check_distinct,
    check_transcript_options,
    option_files,
    out_arg,
    progress,
    report_line,
    say,
)
from prunesim.errors import UserError
from prunesim.io import output
from prunesim.io.transcripts import workload as wl
from prunesim.io.transcripts.identity import Seen
from prunesim.studies.transcript_replay import expand, iter_sources


def register(sub) -> None:
    p = sub.add_parser("import", help="convert agent transcripts into prunesim workload files")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="transcript files or folders of them")
    p.add_argument("--out", type=out_arg, required=True,
                   help="a .jsonl file (or a device or pipe) when one workload results, else a folder "
                        "(NAME.workload.jsonl per run); a trailing / always means a folder")
    add_transcript_options(p)
    p.set_defaults(func=main)


def _single_file_target(text: str, files: list[Path]) -> bool:
    """Is ``--out`` one workload file (a .jsonl name, a device or a pipe) rather than a folder?"""
    out = Path(text)
    kind = output.kind_of(out, "--out")
    if output.names_folder(text) or kind == "folder":
        return False
    if kind == "stream" or out.suffix == ".jsonl":
        if len(files) != 1:
            raise UserError("--out", text, f"{len(files)} input files give several workloads; give a folder")
        return True
    if out.exists():
        raise UserError("--out", text, "exists and is not a folder")
    return False


def main(args) -> int:
    check_transcript_options(args)
    files = expand(args.paths)
    if not files:
        raise UserError("import", None, "no transcript files found")
    check_distinct(files)
    single = _single_file_target(args.out, files)
    if single:
        output.check_not_input(args.out, files + option_files(args), "--out")
        output.check_file(args.out, "--out")
        output.check_own_kind(args.out, b'"prunesim_workload"', "a prunesim workload file", "--out")
    else:
        output.check_folder(args.out, "--out")
        output.check_outside(args.out, args.paths, "--out")
    seen = Seen()  # a run whose content another file (or line) gave is imported once
    sources = iter_sources(files, args.tokenizer, args.calibration, args.sidechains, files=files,
                           transcripts_only=True, seen=seen)
    with progress(len(files)) as bar:
        seen.on_repeat = lambda line: report_line(bar, "warning", line)
        tally = Tally(bar, args.skip_bad)
        if single:
            written = _import_one(args, sources, tally, bar)
        else:
            written = _import_folder(args, sources, tally, bar, seen)
    summary = tally.summary()
    if tally.says_more():  # else the one file's error line says it all
        print(f"imported {written} workload(s) from {len(files)} file(s); {summary}"
              + ("; nothing written" if not written and "nothing written" not in summary else ""))
    return tally.exit_code()


def _describe(target, data: wl.WorkloadData) -> str:
    h = data.header
    return (f"{target}: {h['format']}, {h['turns']} turns, {h['parts']} parts, {h['repeats']} repeats, "
            f"calibration {h['calibration']}")


def _warn(bar, data: wl.WorkloadData) -> None:
    for w in data.warnings:
        report_line(bar, "warning", w)


def _import_one(args, sources, tally: Tally, bar) -> int:
    """One transcript file holding one run into one workload file; nothing is written unless it all worked."""
    path, first = next(sources)
    if isinstance(first, Exception):
        tally.failed(path, first)
        return 0
    second = next(sources, None)
    if second is not None:  # read before anything is written: a second run means the target is wrong
        raise UserError(str(path), None, "holds several runs; give --out a folder")
    _warn(bar, first)
    output.write_text(args.out, wl.dumps(first), "--out")
    tally.ok()
    bar.update()
    say(bar, _describe(args.out, first))
    return 1


class _NothingImported(Exception):
    """Leaves the staging folder unused: no output folder appears when no file could be imported."""


def _import_folder(args, sources, tally: Tally, bar, seen: Seen) -> int:
    """Every run into ``--out/NAME.workload.jsonl``; the folder appears (or gains its files) only at the end,
    and a file with a bad run in it contributes no workload."""
    out = Path(args.out)
    used: set[str] = set()
    lines: list[str] = []
    try:
        with output.folder(out, flag="--out") as staging:
            held = staging / ".one-file"  # a file's workloads wait here until all its runs are read

            def process(data: wl.WorkloadData) -> tuple[str, list[str]]:
                held.mkdir(exist_ok=True)
                name = _unique(f"{data.name}.workload.jsonl", used)
                wl.write(held / name, data)
                return _describe(out / name, data), data.warnings

            def commit(path, results) -> None:
                for entry in sorted(held.iterdir()) if held.exists() else ():
                    entry.rename(staging / entry.name)
                for line, warnings in results:
                    for w in warnings:
                        report_line(bar, "warning", w)
                    lines.append(line)

            def discard(path) -> None:
                seen.forget(path)
                if held.exists():
                    for entry in held.iterdir():
                        used.discard(entry.name)
                    shutil.rmtree(held)

            tally.per_file(sources, process, commit, discard, tick=bar.update)
            if held.exists():
                held.rmdir()
            if not lines or not tally.complete():  # a folder with a bad file gives all of it or nothing
                raise _NothingImported
    except _NothingImported:
        lines = []
    for line in lines:
        say(bar, line)
    return len(lines)


def _unique(name: str, used: set[str]) -> str:
    """A file name no other workload of this import has, that fits a file system's 255 bytes."""
    stem = name[: -len(".workload.jsonl")]
    candidate, n = output.fit_name(stem, ".workload.jsonl"), 1
    while candidate in used:
        n += 1
        candidate = output.fit_name(f"{stem}-{n}", ".workload.jsonl")
    used.add(candidate)
    return candidate
