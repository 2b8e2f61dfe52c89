"""prunesim import: transcripts -> prunesim workload files (docs/transcripts.md)."""

from __future__ import annotations

from pathlib import Path

from prunesim.cli.commands._common import (
    add_transcript_options,
    check_transcript_options,
    progress,
    report_line,
    say,
)
from prunesim.errors import UserError
from prunesim.io.transcripts import formats
from prunesim.io.transcripts import workload as wl
from prunesim.studies.transcript_replay import expand


def register(sub) -> None:
    p = sub.add_parser("import", help="convert agent transcripts into prunesim workload files")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="transcript files or folders of them")
    p.add_argument("--out", type=Path, required=True,
                   help="a .jsonl file when one workload results, else a folder (NAME.workload.jsonl per run)")
    add_transcript_options(p)
    p.set_defaults(func=main)


def _single_file_target(out: Path, files: list[Path]) -> bool:
    if out.is_dir() or out.suffix != ".jsonl":
        return False
    if len(files) != 1:
        raise UserError("--out", str(out), f"{len(files)} input files give several workloads; give a folder")
    return True


def main(args) -> int:
    check_transcript_options(args)
    files = expand(args.paths)
    if not files:
        raise UserError("import", None, "no transcript files found")
    if args.out.exists() and not args.out.is_dir() and args.out.suffix != ".jsonl":
        raise UserError("--out", str(args.out), "exists and is not a folder")
    single = _single_file_target(args.out, files)
    failed = 0
    used: set[str] = set()
    written = 0
    with progress(len(files)) as bar:
        for path in files:
            try:
                runs = formats.iter_transcripts(path, args.sidechains)
                if single:  # know there is exactly one run before writing anything
                    runs = _only_run(runs, path)
                for t in runs:
                    data = wl.from_transcript(t, args.tokenizer, args.calibration)
                    for w in [*t.warnings, *data.warnings]:
                        report_line(bar, "warning", w)
                    target = args.out if single else args.out / _unique(f"{data.name}.workload.jsonl", used)
                    wl.write(target, data)
                    written += 1
                    h = data.header
                    say(bar, f"{target}: {h['format']}, {h['turns']} turns, {h['parts']} parts, "
                             f"{h['repeats']} repeats, calibration {h['calibration']}")
            except UserError as err:
                failed += 1
                report_line(bar, "error", str(err))
            bar.update()
    print(f"imported {written} workload(s) from {len(files)} file(s); {failed} file(s) failed")
    return 0 if written else 2


def _only_run(runs, path: Path) -> list:
    first = next(runs, None)
    if first is not None and next(runs, None) is not None:
        raise UserError(str(path), None, "holds several runs; give --out a folder")
    return [first] if first is not None else []


def _unique(name: str, used: set[str]) -> str:
    stem = name[: -len(".workload.jsonl")]
    candidate, n = name, 1
    while candidate in used:
        n += 1
        candidate = f"{stem}-{n}.workload.jsonl"
    used.add(candidate)
    return candidate
