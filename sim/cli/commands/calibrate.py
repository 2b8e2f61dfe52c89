"""prunesim calibrate SCENARIO --targets T --params a.b,c.d --seeds 0:100 --out CALIBRATED.toml"""

from __future__ import annotations

import math
import os
import shlex
import sys
from pathlib import Path

from prunesim.cli.commands._common import add_engine, engine_choice, out_file_arg, parse_seeds, positive_int
from prunesim.errors import UserError
from prunesim.io import inputs, output
from prunesim.io.scenario_files import load, resolve_path, resolve_text
from prunesim.studies.calibrate import OBJECTIVE_TEXT, Calibration, calibrate, calibrated_text, parse_params
from prunesim.studies.targets import load_targets


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="fit scenario parameters to published figures (scipy.optimize)")
    p.add_argument("scenario", help="a scenario file or the name of a shipped scenario")
    p.add_argument("--targets", required=True, help="a targets file, or the name of a shipped one (seed-000)")
    p.add_argument("--params", required=True, metavar="NAME[=LOW:HIGH],...",
                   help="the numeric parameters to fit, dotted; bounds from the flag or the targets' [bounds]")
    p.add_argument("--seeds", default="0:100", help="the seeds every candidate runs (default 0:100)")
    p.add_argument("--max-evals", type=positive_int, default=400, metavar="N",
                   help="the optimizer's budget of distinct candidates (default 400); each differential-evolution "
                        "start runs at least two generations of 4 per parameter (5 at the least), so a small "
                        "budget is exceeded: the header records how many were tried")
    p.add_argument("--out", required=True, type=out_file_arg, help="the calibrated scenario file to write")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_engine(p)
    p.set_defaults(func=main)




def check_out(out: Path, force: bool) -> None:
    """Refuse, before any work, an --out that would replace a file without --force or cannot be written."""
    output.check_file(out, "--out")  # proves the place takes a file now, not after minutes of fitting
    if out.exists() and output.kind_of(out) == "file" and not force:
        raise UserError("--out", str(out), "exists; give --force to replace it")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def command_line(args) -> str:
    """The command that regenerates the file, with every choice spelled out."""
    parts = ["prunesim", "calibrate", args.scenario, "--targets", args.targets, "--params", args.params,
             "--seeds", args.seeds, "--max-evals", str(args.max_evals), "--out", str(args.out)]
    if args.force or (args.out.exists() and output.kind_of(args.out) == "file"):
        parts.append("--force")  # regenerating it replaces the file this run wrote (a stream needs no --force)
    return " ".join(shell_quote(part) for part in parts)


def shell_quote(word: str) -> str:
    """``word`` as a POSIX shell reads it back; one with a control character (a newline in a file
    name) as ``$'...'``, which stays on one line of the header and still names the same file."""
    if word.isprintable():
        return shlex.quote(word)
    return "$'" + "".join(ch if ch.isprintable() and ch not in "'\\" else _escaped(ch) for ch in word) + "'"


def _escaped(ch: str) -> str:
    named = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "'": "\\'", "\\": "\\\\"}
    if "\udc80" <= ch <= "\udcff":  # a byte of a file name that is not UTF-8: the same byte back
        return f"\\x{ord(ch) - 0xdc00:02x}"
    return named.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\U{ord(ch):08x}")


def main(args) -> int:
    seeds = parse_seeds(args.seeds)
    check_out(args.out, args.force)
    base = load(args.scenario)
    base_path = resolve_path(args.scenario)
    base_text = inputs.read_text(base_path, "scenario file")
    targets = load_targets(args.targets, base)
    if args.force and _same_file(args.out, base_path):  # the scenario recalibrated in place: its own result
        inputs.release(base_path)
    output.check_file(args.out, "--out")  # --force replaces a result, never a file read (targets, extends chain)
    params = parse_params(args.params, base, targets)
    command = command_line(args)

    def progress(n: int, value: float, best: float) -> None:
        if not args.quiet and (n == 1 or n % 10 == 0):
            print(f"calibrate: {n} candidates, objective {value:.4g}, best {best:.4g}", file=sys.stderr, flush=True)

    engine = engine_choice(args, "calibrate", base, targets.variants, args.max_evals * len(seeds))
    cal = calibrate(base, targets, params, seeds, args.max_evals, progress, engine)
    text = calibrated_text(base_text, cal, command, args.targets, base_path, args.out)
    resolve_text(text, args.out)  # what it writes, run reads: checked as run would load it
    output.write_text(args.out, text, "--out")
    print(format_fit(cal))
    print(f"written: {args.out}")
    return 0


def _num(x: float) -> str:
    if math.isnan(x) or math.isinf(x):
        return str(x)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def format_fit(cal: Calibration) -> str:
    seeds = cal.seeds
    lines = [f"calibrate: {len(cal.params)} parameters, {len(cal.figures)} figures, {len(seeds)} seeds "
             f"{seeds[0]}..{seeds[-1]}, {cal.evaluations} candidates ({cal.optimizer_message})",
             f"{'parameter':32s} {'start':>10s} {'fitted':>10s}  bounds"]
    for p in cal.params:
        lines.append(f"{p.name:32s} {cal.start[p.name]:>10.6g} {cal.fitted[p.name]:>10.6g}  "
                     f"{p.low:g}..{p.high:g}")
    lines.append(f"{'variant':13s} {'figure':44s} {'published':>10s} {'start':>9s} {'fitted':>9s} "
                 f"{'accepted':>15s}  in range")
    for f in cal.figures:
        t = f.target
        lines.append(f"{t.variant:13s} {t.label:44s} {t.published:>10s} {_num(f.start):>9s} {_num(f.fitted):>9s} "
                     f"{t.accepted_text():>15s}  {'yes' if f.ok else 'NO'}{'' if t.fit else '  (not fitted)'}")
    lines.append(f"objective ({OBJECTIVE_TEXT}): start {cal.start_objective:.4g}, "
                 f"fitted {cal.objective:.4g}; {sum(f.ok for f in cal.figures)} of {len(cal.figures)} in range "
                 "on the fitting seeds")
    return "\n".join(lines)
