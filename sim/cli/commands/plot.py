"""prunesim plot: figures from result files (run directories and sweeps); never simulates."""

from __future__ import annotations

from pathlib import Path

from prunesim.cli.commands._common import out_arg
from prunesim.errors import UserError
from prunesim.io import output


def _common(p) -> None:
    p.add_argument("--out", type=out_arg,
                   help="a .png/.svg/.pdf file, a device or pipe, or a directory (ending with /) for the default name")
    p.add_argument("--format", choices=("png", "svg", "pdf"), help="output format (default: from --out, else png)")


def register(sub) -> None:
    p = sub.add_parser("plot", help="plot traces, pass ledgers, cost break-even, sweep curves, distributions, phase "
                                     "diagrams and leaderboards from result files")
    kinds = p.add_subparsers(dest="plot", metavar="KIND", parser_class=type(p))
    kinds.required = True

    t = kinds.add_parser("trace", help="utilization of one or more runs, overlaid")
    t.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR")
    t.add_argument("--x", choices=("turn", "time"), default="turn", help="x axis: turn (default) or simulated time")
    t.add_argument("--ylim", metavar="[LOW:]HIGH|full", help="y axis range in tokens, or full: from 0 to the "
                   "window (default: the band, with the budget and the triggers in view)")
    _common(t)
    t.set_defaults(func=main_trace)

    led = kinds.add_parser("ledger", help="one run's prune passes: costs, yields, cumulative overhead vs net")
    led.add_argument("run", type=Path, metavar="RUN_DIR")
    _common(led)
    led.set_defaults(func=main_ledger)

    be = kinds.add_parser("breakeven", help="cumulative cost of two runs of one workload, and each pass's "
                                            "break-even turn")
    be.add_argument("runs", nargs=2, type=Path, metavar="RUN_DIR", help="two runs of the same scenario and seed")
    _common(be)
    be.set_defaults(func=main_breakeven)

    s = kinds.add_parser("sweep", help="a metric against the acting trigger or a grid parameter, one line per "
                                       "policy, with 95%% intervals")
    s.add_argument("sweep", type=Path, metavar="SWEEP_DIR")
    s.add_argument("--metric", required=True, help="a column of runs.csv (see prunesim metrics)")
    s.add_argument("--x", help="x axis: acting_trigger (default when runs.csv has it: where each run's policy "
                   "started to act), nominal (the trigger parameter as set), or a grid parameter")
    s.add_argument("--stat", choices=("share", "median", "mean"),
                   help="share of runs where the metric is true/above zero (Wilson 95%% interval), or median or "
                        "mean over seeds (bootstrap 95%% band); default: share for yes/no metrics and failure "
                        "counts, else median")
    _common(s)
    s.set_defaults(func=main_sweep)

    pa = kinds.add_parser("pareto", help="a leaderboard's cost against re-retrievals, one point per policy with "
                          "its intervals")
    pa.add_argument("leaderboard", type=Path, metavar="LEADERBOARD", help="leaderboard.csv or the folder holding it")
    pa.add_argument("--x", default="input_ratio", help="the figure across (default input_ratio)")
    pa.add_argument("--y", default="re_retrievals", help="the figure up (default re_retrievals)")
    pa.add_argument("--stat", choices=("auto", "median", "mean", "share"), default="auto",
                    help="what a point is on both axes (default auto: median for ratios and sizes, mean per unit "
                         "for counts, share of units for yes/no figures)")
    pa.add_argument("--frontier", action="store_true",
                    help="draw each policy's settings as a line over its acting threshold (a leaderboard with a "
                         "setting column)")
    _common(pa)
    pa.set_defaults(func=main_pareto)

    cd = kinds.add_parser("cdf", help="a metric's distribution over runs or transcripts: an empirical CDF per "
                                      "policy, with p50 and p90")
    cd.add_argument("results", type=Path, metavar="SWEEP_OR_LEADERBOARD",
                    help="a sweep directory, or a leaderboard folder (or its leaderboard.csv)")
    cd.add_argument("--metric", required=True, help="a column of runs.csv")
    cd.add_argument("--fix", action="append", metavar="PARAM=VALUE",
                    help="a sweep: the grid point, every grid parameter that varies held at one value; repeatable")
    cd.add_argument("--policies", help="comma-separated: only these policies (default: every one in the file)")
    _common(cd)
    cd.set_defaults(func=main_cdf)

    ph = kinds.add_parser("phase", help="a metric over two grid parameters, with the headroom = overhead boundary")
    ph.add_argument("sweep", type=Path, metavar="SWEEP_DIR")
    ph.add_argument("--x", required=True, help="grid parameter across")
    ph.add_argument("--y", required=True, help="grid parameter up")
    ph.add_argument("--metric", required=True, help="a column of runs.csv")
    ph.add_argument("--stat", choices=("median", "share"),
                    help="median of the metric, or share of runs where it is true/above zero "
                         "(default: share for booleans and failure counts, else median)")
    ph.add_argument("--policy", help="the policy to show (required when the sweep has several)")
    ph.add_argument("--fix", action="append", metavar="PARAM=VALUE",
                    help="hold another grid parameter at one value; repeatable")
    _common(ph)
    ph.set_defaults(func=main_phase)


def _target(args, default_dir: Path, name: str) -> tuple[Path, str]:
    """Where the figure goes, checked before the result files are read."""
    from prunesim.plots import style

    return style.output_path(args.out, default_dir, name, args.format)


def _write(fig, target: tuple[Path, str]) -> int:
    from prunesim.plots import style

    path, fmt = target
    style.save(fig, path, fmt, "--out")
    if output.kind_of(path) != "stream":
        print(path)
    return 0


def main_trace(args) -> int:
    from prunesim.plots.io import read_run
    from prunesim.plots.trace import trace_figure

    ylim = parse_ylim(args.ylim) if args.ylim is not None else None
    target = _target(args, args.runs[0], "trace" if args.x == "turn" else "trace-time")
    runs = [read_run(p, need=("trace",), optional=("ledger", "events")) for p in args.runs]
    for p, run in zip(args.runs, runs, strict=True):
        if not run.trace:
            raise UserError(str(p / "trace.csv"), None, "no rows: nothing to plot")
    return _write(trace_figure(runs, x=args.x, ylim=ylim), target)


YLIM_MAX = 1e15  # tokens: a million times the largest context windows, far below where axis ticks overflow


def parse_ylim(text: str) -> tuple[float, float] | str:
    """``HIGH`` (from 0) or ``LOW:HIGH``, finite numbers with LOW < HIGH; or ``full``."""
    import math

    if text == "full":
        return text
    parts = text.split(":")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) not in (1, 2) or not all(math.isfinite(v) for v in values):
        raise UserError("--ylim", text, "expected HIGH or LOW:HIGH in tokens")
    low, high = (0.0, values[0]) if len(values) == 1 else (values[0], values[1])
    if any(abs(v) > YLIM_MAX for v in (low, high)):  # matplotlib's tick locator overflows near the float limit
        raise UserError("--ylim", text, f"out of range: LOW and HIGH must be within +-{YLIM_MAX:.0e} tokens")
    if not low < high:
        raise UserError("--ylim", text, "LOW must be below HIGH")
    return low, high


def main_ledger(args) -> int:
    from prunesim.plots.io import read_run
    from prunesim.plots.ledger import ledger_figure

    target = _target(args, args.run, "ledger")
    run = read_run(args.run, need=("ledger",))
    return _write(ledger_figure(run), target)


def main_breakeven(args) -> int:
    import re

    from prunesim.io.labels import policy_labels
    from prunesim.plots.breakeven import breakeven_figure
    from prunesim.plots.io import read_run

    a, b = (read_run(p, need=("ledger", "calls")) for p in args.runs)
    names = policy_labels([a.policy, b.policy])  # a file's policy by its class, not a path with slashes
    stem = "-".join(re.sub(r"[^\w.+-]", "_", names[p]) for p in (a.policy, b.policy))
    target = _target(args, args.runs[0], f"breakeven-{stem}")
    return _write(breakeven_figure(a, b), target)


def main_sweep(args) -> int:
    from prunesim.plots.io import read_sweep
    from prunesim.plots.sweep import choose_x, sweep_figure

    sweep = read_sweep(args.sweep)
    x = choose_x(sweep, args.x)
    target = _target(args, args.sweep, f"sweep-{args.metric}-{x}")
    return _write(sweep_figure(sweep, args.metric, x, stat=args.stat), target)


def _fixes(items) -> dict[str, str]:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise UserError("--fix", item, "expected PARAM=VALUE")
        key, value = item.split("=", 1)
        out[key.strip()] = value.strip()
    return out


def main_phase(args) -> int:
    from prunesim.plots.io import read_sweep
    from prunesim.plots.phase import phase_figure

    target = _target(args, args.sweep, f"phase-{args.metric}-{args.x}-{args.y}")
    sweep = read_sweep(args.sweep)
    fig = phase_figure(sweep, args.x, args.y, args.metric, stat=args.stat, policy=args.policy, fix=_fixes(args.fix))
    return _write(fig, target)


def main_cdf(args) -> int:
    from prunesim.plots.cdf import cdf_figure, cdf_rows

    folder = args.results.parent if args.results.name == "leaderboard.csv" else args.results
    target = _target(args, folder, f"cdf-{args.metric}")
    rows, what, noun = cdf_rows(args.results, args.metric, _fixes(args.fix))
    if args.policies is not None:
        wanted = [p.strip() for p in args.policies.split(",")]
        present = list(dict.fromkeys(str(r["policy"]) for r in rows))
        unknown = [p for p in wanted if p not in present]
        if unknown or not all(wanted):
            raise UserError("--policies", args.policies, f"not in the file: {', '.join(unknown) or 'an empty name'} "
                                                         f"(policies: {', '.join(present)})")
        rows = [r for r in rows if str(r["policy"]) in wanted]
    return _write(cdf_figure(rows, args.metric, what, noun), target)


def main_pareto(args) -> int:
    from prunesim.plots.pareto import pareto_figure, read_leaderboard

    board = read_leaderboard(args.leaderboard)
    target = _target(args, board.path.parent, f"pareto-{args.x}-{args.y}")
    fig = pareto_figure(board, args.x, args.y, stat=args.stat, frontier=args.frontier)
    return _write(fig, target)
