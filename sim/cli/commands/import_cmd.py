"""prunesim import: transcripts -> prunesim workload files (docs/transcripts.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from prunesim.errors import UserError
from prunesim.io.transcripts import formats, tokens
from prunesim.io.transcripts import workload as wl
from prunesim.studies.transcript_replay import expand


def register(sub) -> None:
    p = sub.add_parser("import", help="convert agent transcripts into prunesim workload files")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="transcript files or folders of them")
    p.add_argument("--out", type=Path, required=True,
                   help="a .jsonl file when one workload results, else a folder (NAME.workload.jsonl per run)")
    p.add_argument("--tokenizer", default=tokens.DEFAULT, help=f"one of: {', '.join(tokens.NAMES)}")
    p.set_defaults(func=main)


def _single_file_target(out: Path, files: list[Path]) -> bool:
    if out.is_dir() or out.suffix != ".jsonl":
        return False
    if len(files) != 1:
        raise UserError("--out", str(out), f"{len(files)} input files give several workloads; give a folder")
    return True


def main(args) -> int:
    count = tokens.get_counter(args.tokenizer)
    files = expand(args.paths)
    if not files:
        raise UserError("import", None, "no transcript files found")
    if args.out.exists() and not args.out.is_dir() and args.out.suffix != ".jsonl":
        raise UserError("--out", str(args.out), "exists and is not a folder")
    single = _single_file_target(args.out, files)
    failed = 0
    used: set[str] = set()
    written = 0
    for path in files:
        try:
            runs = formats.iter_transcripts(path)
            for t in runs:
                data = wl.from_transcript(t, count, args.tokenizer)
                if single:
                    if written:
                        raise UserError(str(path), None, "holds several runs; give --out a folder")
                    target = args.out
                else:
                    target = args.out / _unique(f"{data.name}.workload.jsonl", used)
                wl.write(target, data)
                written += 1
                h = data.header
                print(f"{target}: {h['format']}, {h['turns']} turns, {h['parts']} parts, {h['repeats']} repeats")
        except UserError as err:
            failed += 1
            print(f"prunesim: error: {err}", file=sys.stderr)
    print(f"imported {written} workload(s); {failed} file(s) failed")
    return 2 if failed else 0


def _unique(name: str, used: set[str]) -> str:
    stem = name[: -len(".workload.jsonl")]
    candidate, n = name, 1
    while candidate in used:
        n += 1
        candidate = f"{stem}-{n}.workload.jsonl"
    used.add(candidate)
    return candidate
