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


def print_notes(policies: list[str], scenario, tools: frozenset[str] | None = None) -> None:
    """Each policy's warnings about this scenario (and the transcripts' tools), one line each on stderr."""
    from prunesim.policies import get_policy

    for name in policies:
        for note in get_policy(name).notes(scenario, tools):
            print(f"prunesim: warning: {note}", file=sys.stderr)
