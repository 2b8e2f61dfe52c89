"""prunesim replay NAME: a published failure, simulated over many seeds."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from prunesim import __version__
from prunesim.cli.commands._common import add_engine, engine_choice, out_arg, out_file_arg, parse_seeds, seed_arg
from prunesim.errors import UserError
from prunesim.io import output, reproduce
from prunesim.io.atomic import dumps_json, json_ready
from prunesim.io.results import write_run
from prunesim.io.scenario_files import load, replace
from prunesim.policies import REGISTRY
from prunesim.runner import run_one
from prunesim.studies import ranges
from prunesim.studies import replay as study
from prunesim.studies.replay import REPLAY_SEEDS, REPLAYS, get_replay, median_seed

# replay name -> name of its story-figure function in plots.stories
FIGURES = {"oscillation": "oscillation_figures", "reentrancy": "reentrancy_figures"}


def register(sub) -> None:
    p = sub.add_parser("replay", help="replay a published failure over many seeds")
    p.add_argument("name", help=f"one of: {', '.join(sorted(REPLAYS))}")
    p.add_argument("--seeds", default=None,
                   help="seeds as A:B (B excluded), a list, or one integer (default 1000:1100: seeds no shipped "
                        "scenario was calibrated on; long-session: 0:5)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--plot", type=_plot_dir, metavar="DIR",
                   help="also run every variant once with a full trace, write the runs under DIR/runs/ "
                        "and draw the story figure into DIR")
    p.add_argument("--plot-seed", type=plot_seed, default=None, metavar="N|median",
                   help="the seed of the plotted runs: a number, or 'median' for the run nearest the medians "
                        "over --seeds (default: the scenario's seed)")
    p.add_argument("--format", choices=("png", "svg", "pdf"), default="png", help="format of the --plot figure")
    p.add_argument("--out", type=out_file_arg, metavar="FILE",
                   help="also write the report, the command, the scenario and the seeds to FILE as JSON, for "
                        "prunesim report (--plot DIR writes the same to DIR/replay.json)")
    from prunesim.model.agent_profiles import NONE, shipped_profiles

    p.add_argument("--agent", choices=(NONE, *shipped_profiles()), metavar="NAME",
                   help="reentrancy: also predict, under this agent profile, each variant's model calls and solved "
                        f"share and the difference records make (default {PREDICTION_PROFILE}; none: no prediction; "
                        "docs/agent.md)")
    p.add_argument("--ranges", type=Path, metavar="FILE", default=None,
                   help="the ranges record (prunesim validate --out) whose figures held in most ranges of seeds "
                        "the headline counts (default: the one shipped beside the replay's targets)")
    add_engine(p)
    p.set_defaults(func=main)


# The profile the reentrancy replay predicts with when --agent is not given: a tool-loop agent's, with a turn cap
# and a success model (the story's agent is no particular scaffold).
PREDICTION_PROFILE = "swe-agent"


def main(args) -> int:
    replay = get_replay(args.name)
    if args.seeds is not None:
        seeds = parse_seeds(args.seeds)
    else:  # each replay's own default (a long one runs fewer seeds)
        seeds = list(getattr(replay, "default_seeds", REPLAY_SEEDS))
    if args.plot is None and args.plot_seed is not None:
        raise UserError("--plot-seed", str(args.plot_seed), "only applies with --plot DIR")
    if args.plot is not None:
        if args.name not in FIGURES:
            raise UserError("--plot", args.name, "this replay has no story figure")
        output.check_folder(args.plot, "--plot")
    if args.out is not None:
        output.check_file(args.out, "--out")
    engine = None
    if hasattr(replay, "run_variants"):  # a replay of published figures: its variants can go to the kernel
        engine = engine_choice(args, "replay", load(replay.scenario), replay.variants, len(seeds))
    elif args.engine == "kernel":
        raise UserError("--engine", None, f"the kernel does not cover the {args.name} replay: use --engine simpy "
                        "or auto")
    elif args.engine == "auto":
        print(f"replay: engine: simpy (the kernel does not cover the {args.name} replay)", file=sys.stderr)
    agent = _prediction_profile(args, replay)
    if args.ranges is not None:
        if not hasattr(replay, "run_variants"):
            raise UserError("--ranges", str(args.ranges), f"the {args.name} replay has no figures to count")
        record = ranges.read(args.ranges)
        report = replay.run(seeds, engine=engine, record=record)
    elif engine is not None:
        report = replay.run(seeds, engine=engine)
    else:
        report = replay.run(seeds, agent=agent) if agent else replay.run(seeds)
    if args.json:
        print(json.dumps(json_ready(report.as_dict()), indent=2, sort_keys=True))
    else:
        print(getattr(replay, "format_report", format_report)(report))
    record = result_record(args, replay, report, seeds)
    if args.out is not None:
        write_json(Path(args.out), record, "--out")
    if args.plot is not None:
        if args.plot_seed == "median":
            seed = median_seed(report)
        else:
            seed = load(replay.scenario).seed if args.plot_seed is None else args.plot_seed
        from prunesim.plots import stories

        with output.folder(args.plot, "--plot") as staging:  # the runs and the figure, all or none
            run_dirs = write_variant_runs(replay, staging / "runs", seed)
            figures = getattr(stories, FIGURES[args.name])(run_dirs, staging, fmt=args.format)
            runs = {label: path.relative_to(staging).as_posix() for label, path in run_dirs.items()}
            write_json(staging / RESULT_FILE, {**record, "plot_seed": seed, "runs": runs})
        print(f"plotted seed: {seed}")
        for name in figures:
            print(f"figure: {args.plot / f'{name}.{args.format}'}")
    return 0


def _prediction_profile(args, replay) -> str:
    """The agent profile the replay predicts with ('' for none); --agent on a replay that predicts nothing is
    refused."""
    if not getattr(replay, "predicts", False):
        if args.agent is not None:
            raise UserError("--agent", args.agent, f"the {args.name} replay makes no prediction under an agent "
                            "model (reentrancy does)")
        return ""
    chosen = PREDICTION_PROFILE if args.agent is None else args.agent
    return "" if chosen == "none" else chosen


RESULT_FILE = "replay.json"  # what --plot DIR writes beside its figures; prunesim report reads it


def result_record(args, replay, report, seeds: list[int]) -> dict:
    """What the replay ran and found, as the JSON result file prunesim report reads."""
    base = load(replay.scenario)
    record = {
        "kind": "replay",
        "format": 1,
        "command": getattr(args, "command_line", None),
        "prunesim_version": __version__,
        "scenario": base.to_dict(),
        "seeds": list(seeds),
        "variants": [{"label": v.label, "policy": v.policy, "overrides": dict(v.overrides or {})}
                     for v in getattr(replay, "variants", ())],
        "report": json_ready(report.as_dict()),
        "reproduce": reproduce.record(seeds),  # the inputs' hashes with the command (prunesim.io.reproduce)
    }
    figures = getattr(report, "figures", None)
    if figures and hasattr(figures[0], "figure"):  # a replay judged on published figures: how each is judged
        record["judging"] = [{"judged": r.figure.judged, "accepted": r.figure.accepted_text(),
                              "statistic": r.figure.reduce} for r in figures]
    return record


def write_json(path: Path, record: dict, flag: str | None = None) -> None:
    output.write_text(path, dumps_json(record), flag)


def _plot_dir(text: str) -> Path:
    return Path(out_arg(text))


def plot_seed(text: str):
    if text == "median":
        return text
    return seed_arg(text)


def slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-") or "variant"


def write_variant_runs(replay, out: Path, seed: int) -> dict[str, Path]:
    """Run each variant of ``replay`` once with a full trace; write its run directory under ``out``."""
    base = load(replay.scenario)
    run_dirs = {}
    for v in replay.variants:
        if v.policy not in REGISTRY or getattr(REGISTRY[v.policy], "planner", None) not in (None, *REGISTRY):
            continue  # a variant whose policy this build lacks is skipped, as in the replay itself
        sc = replace(base, v.overrides) if v.overrides else base
        path = out / slug(v.label)
        write_run(run_one(sc, v.policy, seed, trace="all"), path)
        run_dirs[v.label] = path
    return run_dirs


def _num(x: float) -> str:
    if x != x or abs(x) == float("inf"):
        return str(x)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def format_report(report) -> str:
    seeds = report.seeds
    span = f"seeds {seeds[0]}..{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else "seeds"
    lines = [
        f"replay {report.name}: scenario {report.scenario}, {len(seeds)} {span}; a yes/no figure is the share "
        "of runs where it holds [Wilson 95% interval]",
        f"{'variant':13s} {'figure':44s} {'published':>10s} {'median':>9s} {'p10..p90':>17s}  "
        f"{'accepted':>15s}  in range  counted" + ("  ranges" if report.ranges and report.ranges.current else ""),
    ]
    for r in report.figures:
        f = r.figure
        spread = f"{_num(r.p10)}..{_num(r.p90)}" if f.reduce == "median" else f"[{r.p10:.2f}..{r.p90:.2f}]"
        verdict = ("yes" if r.ok else "NO") if f.judged else "-"
        lines.append(
            f"{f.variant:13s} {f.label:44s} {f.published:>10s} {_num(r.median):>9s} {spread:>17s}  "
            f"{f.accepted_text():>15s}  {verdict:>8s}  {_counted(r, report) if f.judged else '-':>7s}"
            + _ranges_cell(r, report)
        )
        reason = study.why(r, report) if f.judged else ""
        if reason:
            lines.append(f"    why: {reason}")
    if report.contrasts:
        lines += ["", "contrasts (the seed's two settings over the same seeds): share of runs under the first minus "
                      "under the second [paired 95% interval]",
                  f"{'contrast':60s} {'published':>10s} {'difference':>24s}  {'accepted':>9s}  in range  counted"
                  + ("  ranges" if report.ranges and report.ranges.current else "")]
        for c in report.contrasts:
            name = f"{c.contrast.label} ({c.contrast.metric})"
            cell = f"{c.difference:+.2f} [{c.low:+.2f}..{c.high:+.2f}]"
            lines.append(f"{name:60s} {c.contrast.published:>10s} {cell:>24s}  {c.contrast.accepted_text():>9s}  "
                         f"{'yes' if c.ok else 'NO':>8s}  {_counted(c, report):>7s}" + _ranges_cell(c, report))
            reason = study.why(c, report)
            if reason:
                lines.append(f"    why: {reason}")
    if report.specificity is not None:
        from prunesim.studies.specificity import format_rows as specificity_rows

        lines += specificity_rows(report.specificity)
    if any("pinned_under" in runs[0] for runs in report.runs.values() if runs):
        lines += ["", "the band after the first trigger (medians over the runs):", *study.band_lines(report)]
    bound = study.gate_bound(report)
    if bound is not None:
        low, high = bound["interval"]
        lines += ["", f"the gate on estimates: {bound['net_negative']} of {bound['passes']} passes net-negative "
                      f"({bound['share']:.3f} [{low:.3f}..{high:.3f}]), against its own bound on a net-negative pass, "
                      f"{bound['mean_bound']:.3f} on average over them: "
                      + ("within it" if bound["within"] else "NOT within it")]
    if report.counterfactuals:
        from prunesim.studies.counterfactuals import format_rows

        lines += format_rows(report.counterfactuals)
    lines += headline(report)
    return "\n".join(lines)


def _counted(result, report) -> str:
    return "yes" if result.counted else "NO"


def _ranges_cell(result, report) -> str:
    if report.ranges is None or not report.ranges.current:
        return ""
    held = report.ranges.held(ranges.key(result))
    return f"  {held[0]:>2d}/{held[1]}" if held else "     -"


def headline(report) -> list[str]:
    """The count a reader takes away: what holds on these seeds, and what holds across ranges of seeds."""
    judged = report.judged
    n = len(judged)
    here = sum(r.counted for r in judged)
    lines = [f"{here} of {n} judged figures counted on these seeds (in range, telling the seed's settings apart, "
             "specific where a verdict; contrasts in range with their interval)"]
    check = report.ranges
    if check is None:
        lines.append("no ranges record: how many hold across independent ranges of seeds is not known "
                     "(prunesim validate --ranges N --out FILE)")
    elif not check.current:
        lines.append(f"the ranges record {check.source} does not match this model and scenario (stale): nothing is "
                     "counted across ranges until prunesim validate --ranges N --out writes it again")
    else:
        held = sum(study.counted(r, report) for r in judged)
        lines.append(f"{held} of {n} figures hold: counted here and holding in most of the {check.ranges} independent "
                     "ranges of the ranges record (docs/model.md, \"Where the model disagrees\")")
    return lines
