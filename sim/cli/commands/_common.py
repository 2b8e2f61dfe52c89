"""Argument helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import sys

from prunesim.errors import UserError
from prunesim.io.scenario_files import parse_set


def parse_seeds(text: str, flag: str = "--seeds") -> list[int]:
    """``A:B`` (B excluded), ``A,B,C`` or ``N``."""
    try:
        if ":" in text:
            a, b = text.split(":", 1)
            lo, hi = int(a), int(b)
            if lo < 0 or hi <= lo:
                raise UserError(flag, text, "range must be A:B with 0 <= A < B")
            return list(range(lo, hi))
        seeds = [int(x) for x in text.split(",")]
    except ValueError:
        raise UserError(flag, text, "expected A:B, a comma-separated list, or one integer") from None
    if any(s < 0 for s in seeds):
        raise UserError(flag, text, "seeds must not be negative")
    return seeds


def parse_sets(items: list[str] | None) -> dict:
    out = {}
    for item in items or []:
        key, value = parse_set(item)
        out[key] = value
    return out


def add_set(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a scenario parameter (dotted for tables, e.g. workload.tool_output.mean=300); repeatable",
    )


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


# -- folders of transcripts -----------------------------------------------------------
PROGRESS_MIN_FILES = 5  # a folder of more files than this shows a progress bar (on a terminal)


def add_transcript_options(parser: argparse.ArgumentParser) -> None:
    """--tokenizer, --calibration and --sidechains: how transcripts are read and sized."""
    from prunesim.io.transcripts import tokens

    parser.add_argument("--tokenizer", default=tokens.DEFAULT, help=f"one of: {', '.join(tokens.NAMES)}")
    parser.add_argument("--calibration", default="auto", metavar="auto|none|FILE",
                        help="size parts for the transcript's model: auto (the shipped profiles, default), "
                             "none (raw counts) or a calibration file from fidelity --fit-out")
    parser.add_argument("--sidechains", default="separate", choices=("separate", "skip"),
                        help="Claude Code subagent conversations: their own workloads (default) or left out")


def check_transcript_options(args) -> None:
    from prunesim.io.transcripts import calibration, tokens

    tokens.get_counter(args.tokenizer)
    calibration.check_setting(args.calibration, args.tokenizer)


def progress(total: int, unit: str = "file"):
    """A tqdm bar on stderr for a folder of more than a few files (when stderr is a terminal), else a no-op."""
    import sys

    if total <= PROGRESS_MIN_FILES or not sys.stderr.isatty():
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, file=sys.stderr, dynamic_ncols=True, leave=False)


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def report_line(bar, kind: str, text: str) -> None:
    """One line on stderr (``prunesim: error: ...``) that does not break the progress bar."""
    say(bar, f"prunesim: {kind}: {text}", err=True)


def say(bar, line: str, err: bool = False) -> None:
    """Print a line to stdout (or stderr) above the progress bar, if one is shown."""
    import sys

    stream = sys.stderr if err else sys.stdout
    if isinstance(bar, _NoBar):
        print(line, file=stream)
    else:
        from tqdm import tqdm

        tqdm.write(line, file=stream)


def print_notes(policies: list[str], scenario, tools: frozenset[str] | None = None) -> None:
    """Each policy's warnings about this scenario (and the transcripts' tools), one line each on stderr."""
    from prunesim.policies import get_policy

    for name in policies:
        for note in get_policy(name).notes(scenario, tools):
            print(f"prunesim: warning: {note}", file=sys.stderr)
