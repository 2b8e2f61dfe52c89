"""prunesim report RESULTS... --out report.html: one self-contained HTML page of result files; never simulates."""

from __future__ import annotations

from pathlib import Path

from prunesim import __version__
from prunesim.cli.commands._common import out_arg
from prunesim.errors import UserError
from prunesim.io import output


def register(sub) -> None:
    p = sub.add_parser(
        "report",
        help="one self-contained HTML page (figures inline, nothing loaded from the network) of runs, sweeps, "
             "leaderboards and replays",
        description="Read result folders (a run, a sweep, a leaderboard) and replay results (replay.json, or the "
                    "folder replay --plot writes) and write one HTML page: what was run, the tables, the figures "
                    "as inline SVG, the figures that disagree with the seed, and which file each figure's data is "
                    "in. Nothing is simulated. See docs/report.md.",
    )
    p.add_argument("results", nargs="+", type=Path, metavar="RESULT",
                   help="a run, sweep or leaderboard folder, a leaderboard.csv, or a replay's JSON file or folder")
    p.add_argument("--out", type=out_arg, required=True, metavar="FILE", help="the HTML file to write")
    p.add_argument("--metric", action="append", metavar="NAME",
                   help="a sweep metric to draw (a column of runs.csv); repeatable (default: oscillating, passes, "
                        "overhead_ratio, input_tokens_billed, forced_truncations, re_retrievals, those the sweep has)")
    p.set_defaults(func=main)


def main(args) -> int:
    from prunesim.plots import report

    if output.names_folder(args.out):
        raise UserError("--out", args.out, "names a folder; give the name of the HTML file to write")
    out = report.write(args.results, Path(args.out), __version__, metrics=args.metric)
    if output.kind_of(out) != "stream":  # a page sent to a pipe or /dev/stdout is the whole output
        print(out)
    return 0
