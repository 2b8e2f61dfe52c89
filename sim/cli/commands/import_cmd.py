"""prunesim import: transcripts -> prunesim workload files (docs/transcripts.md)."""

from __future__ import annotations

from pathlib import Path

from prunesim.cli.commands._common import Tally, out_arg
from prunesim.errors import UserError
from prunesim.io import output
from prunesim.io.transcripts import tokens
from prunesim.io.transcripts import workload as wl
from prunesim.studies.transcript_replay import expand, iter_sources


def register(sub) -> None:
    p = sub.add_parser("import", help="convert agent transcripts into prunesim workload files")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="transcript files or folders of them")
    p.add_argument("--out", type=out_arg, required=True,
                   help="a .jsonl file when one workload results, else a folder (NAME.workload.jsonl per run)")
    p.add_argument("--tokenizer", default=tokens.DEFAULT, help=f"one of: {', '.join(tokens.NAMES)}")
    p.set_defaults(func=main)


def _single_file_target(text: str, files: list[Path]) -> bool:
    """Is ``--out`` one workload file (a .jsonl name, a device or a pipe) rather than a folder?"""
    out = Path(text)
    kind = output.kind_of(out)
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
    tokens.get_counter(args.tokenizer)
    files = expand(args.paths)
    if not files:
        raise UserError("import", None, "no transcript files found")
    if _single_file_target(args.out, files):
        return _import_one(args, files)
    return _import_folder(args, files)


def _describe(target, data: wl.WorkloadData) -> str:
    h = data.header
    return f"{target}: {h['format']}, {h['turns']} turns, {h['parts']} parts, {h['repeats']} repeats"


def _import_one(args, files: list[Path]) -> int:
    """One transcript file holding one run into one workload file; nothing is written unless it all worked."""
    tally = Tally()
    sources = iter_sources(files, args.tokenizer)
    path, first = next(sources)
    if isinstance(first, Exception):
        tally.failed(path, first)
        return tally.exit_code()
    second = next(sources, None)
    if second is not None:  # read before anything is written: a second run means the target is wrong
        raise UserError(str(path), None, "holds several runs; give --out a folder")
    wl.write(Path(args.out), first)
    print(_describe(args.out, first))
    print("imported 1 workload(s); 0 file(s) failed")
    return 0


class _NothingImported(Exception):
    """Leaves the staging folder unused: no output folder appears when no file could be imported."""


def _import_folder(args, files: list[Path]) -> int:
    """Every run into ``--out/NAME.workload.jsonl``; the folder appears (or gains its files) only at the end."""
    tally = Tally()
    out = Path(args.out)
    used: set[str] = set()
    lines: list[str] = []
    written = 0
    last_path = None
    try:
        with output.folder(out, flag="--out") as staging:
            for path, data in iter_sources(files, args.tokenizer):
                if isinstance(data, Exception):  # one line; the other files go on
                    tally.failed(path, data)
                    continue
                if path != last_path:
                    tally.ok()
                    last_path = path
                name = _unique(f"{data.name}.workload.jsonl", used)
                wl.write(staging / name, data)
                written += 1
                lines.append(_describe(out / name, data))
            if not written:
                raise _NothingImported
    except _NothingImported:
        pass
    for line in lines:
        print(line)
    print(f"imported {written} workload(s); {tally.summary()}" + ("; nothing written" if not written else ""))
    return tally.exit_code()


def _unique(name: str, used: set[str]) -> str:
    stem = name[: -len(".workload.jsonl")]
    candidate, n = name, 1
    while candidate in used:
        n += 1
        candidate = f"{stem}-{n}.workload.jsonl"
    used.add(candidate)
    return candidate
