"""prunesim outcomes fit|predict|validate: the reacting agent fitted on real outcomes, its forecasts, their check."""

from __future__ import annotations

import json
import os
from pathlib import Path

from prunesim.cli.commands._common import add_set, out_arg, parse_sets, positive_int, seed_arg
from prunesim.errors import UserError
from prunesim.io import output
from prunesim.io.atomic import json_ready

FIGURES = ("solve_rate", "median_turns", "total_cost", "capped_share")
LABELS = {"solve_rate": "solve rate", "median_turns": "median turns", "total_cost": "total cost",
          "capped_share": "share at the cap"}


def register(sub) -> None:
    p = sub.add_parser("outcomes", help="the reacting agent on real outcomes: fit it, forecast an arm under a "
                                        "policy, cross-validate the forecast (experimental)")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", parser_class=type(p))
    verbs.required = True

    f = verbs.add_parser("fit", help="fit the agent model on outcome files (none: show the shipped fit)")
    f.add_argument("files", nargs="*", metavar="FILE", help="outcome files (CSV) or folders of them")
    f.add_argument("--out", type=out_arg, help="write the fit (JSON) here")
    _common(f)
    f.set_defaults(func=main_fit)

    pr = verbs.add_parser("predict", help="forecast the arm a policy would make of a raw arm")
    pr.add_argument("runs", metavar="RUNS.csv", help="an outcome file holding the raw arm")
    pr.add_argument("--experiment", required=True, help="the raw arm's experiment name in RUNS.csv")
    pr.add_argument("--agent", required=True, choices=("swe-agent", "openhands"), help="the scaffold that ran it")
    pr.add_argument("--policy", required=True, help="any registered policy, a preset or a composition a+b")
    add_set(pr)
    pr.add_argument("--fit", metavar="FIT.json", help="a fit file (default: the shipped fit)")
    pr.add_argument("--cache-read", type=float, default=None, metavar="R",
                    help="the cached bill's price of a cached prompt token over an uncached one (default 0.25)")
    pr.add_argument("--engine", action="store_true", help="run every instance through the SimPy engine, even "
                    "where the fast path would give the same runs")
    pr.add_argument("--seed", type=seed_arg, default=0, help="the seed of the forecast's replicates (default 0)")
    pr.add_argument("--json", action="store_true", help="one JSON object (docs/outcomes.md)")
    pr.set_defaults(func=main_predict)

    v = verbs.add_parser("validate", help="leave each dev arm out, forecast it, judge against two baselines")
    v.add_argument("files", nargs="+", metavar="FILE", help="the dev outcome files (CSV) or folders of them")
    v.add_argument("--out", type=out_arg, help="write every arm's figures and the scores (JSON) here")
    v.add_argument("--per-arm", action="store_true", help="also print every arm's errors beside the baselines' and "
                   "which arms the forecast loses or wins on")
    _common(v)
    v.set_defaults(func=main_validate)


def _common(p) -> None:
    p.add_argument("--replicates", type=positive_int, default=None, help="bootstrap replicates of the fit "
                   "(default 100)")
    p.add_argument("--seed", type=seed_arg, default=0, help="the bootstrap's seed (default 0)")
    p.add_argument("--jobs", type=positive_int, default=None, help="processes that run the arms (default: every "
                   "core; the same output)")
    p.add_argument("--json", action="store_true", help="print JSON")


def _files(items: list[str]) -> list:
    from prunesim.io import outcomes

    paths = []
    for item in items:
        if os.path.isdir(item):
            found = sorted(str(p) for p in Path(item).glob("*.csv"))
            if not found:
                raise UserError(item, None, "a folder with no .csv file")
            paths.extend(found)
        else:
            paths.append(item)
    return outcomes.read_all(paths)


def _replicates(args) -> int:
    from prunesim.studies.agent_fit import REPLICATES

    return args.replicates or REPLICATES


def _check_out(args) -> None:
    if args.out is not None:
        if output.names_folder(args.out):
            raise UserError("--out", args.out, "names a folder; give a file")
        output.check_file(args.out, "--out")


def _emit(args, data: dict, text: str) -> None:
    body = json.dumps(json_ready(data), indent=2, sort_keys=True) + "\n"
    if getattr(args, "out", None) is not None:
        output.write_text(args.out, body, "--out")
    print(body if args.json else text, end="")


# -- fit -----------------------------------------------------------------------------------------
def main_fit(args) -> int:
    from prunesim.studies import agent_fit

    files = _files(args.files) if args.files else None
    _check_out(args)
    if files is None:
        fitted = agent_fit.shipped_fit()
    else:
        fitted = agent_fit.fit(files, _replicates(args), args.seed, args.jobs)
    data = fitted.to_json()
    _emit(args, data, format_fit(fitted))
    return 0


def format_fit(fitted) -> str:
    shown = fitted.where or ", ".join(f"{name} ({digest[:12]})" for name, digest in sorted(fitted.inputs.items()))
    lines = [f"agent fit: {shown}; {fitted.replicates} bootstrap replicates (seed {fitted.seed}); "
             "95% interval over them"]
    for name, s in sorted(fitted.scaffolds.items()):
        lines.append(f"{name}: fitted on {len(s.arms)} arm(s), base prompt {s.base:,} tokens")
        for key, value in s.params.as_dict().items():
            if key == "loglik" or value is None:
                continue
            reps = [getattr(r, key) for r in s.replicates if getattr(r, key) is not None]
            span = f"  [{_q(reps, 2.5):.3g}, {_q(reps, 97.5):.3g}]" if reps else ""
            lines.append(f"  {key:22s} {value:10.4g}{span}")
    return "\n".join(lines) + "\n"


def _q(values, q):
    import numpy as np

    return float(np.percentile(values, q))


# -- predict -------------------------------------------------------------------------------------
def main_predict(args) -> int:
    from prunesim.io import outcomes
    from prunesim.policies import get_policy
    from prunesim.studies import agent_fit
    from prunesim.studies.outcome_forecast import CACHE_READ

    get_policy(args.policy)  # an unknown policy before the file is read
    cache_read = CACHE_READ if args.cache_read is None else args.cache_read
    if not 0 <= cache_read <= 1:
        raise UserError("--cache-read", str(args.cache_read), "must be from 0 to 1")
    fitted = agent_fit.read_fit(args.fit) if args.fit else agent_fit.shipped_fit()
    found = outcomes.read(args.runs)
    arms = {a.experiment: a for a in found.arms}
    if args.experiment not in arms:
        near = ", ".join(sorted(arms)[:6]) + (" ..." if len(arms) > 6 else "")
        raise UserError("--experiment", args.experiment, f"not in {args.runs} (its experiments: {near})")
    raw = arms[args.experiment]
    agent_fit.check_scaffold(raw, args.agent)
    result = agent_fit.predict(raw, args.policy, args.agent, fitted, parse_sets(args.set) or None, args.seed,
                               cache_read, args.engine)
    data = predict_json(result, args)
    _emit(args, data, format_predict(data))
    return 0


def predict_json(result: dict, args) -> dict:
    arm, interval = result["arm"], result["interval"]
    return {"n": result["n"], "experiment": args.experiment, "policy": args.policy, "agent": args.agent,
            "arm": {k: arm[k] for k in FIGURES}, "interval": {k: interval[k] for k in FIGURES},
            "raw": result["raw"], "fit": result["fit"],
            "cached_bill": {"total_cost": arm["total_cost_cached"], "interval": interval["total_cost_cached"],
                            **result["bills"]},
            "failed_to_start": result["failed_to_start"], "path": result["path"]}


def format_predict(d: dict) -> str:
    raw, arm, iv = d["raw"], d["arm"], d["interval"]
    lines = [f"outcomes predict: {d['experiment']} ({d['n']} instances, {d['agent']}) under {d['policy']}; "
             f"forecast [95% interval: fit, arm and run noise] beside the raw arm as recorded",
             f"{'figure':18s} {'raw':>12s} {'forecast':>12s}   interval"]
    for k in FIGURES:
        fmt = _fmt(k)
        lines.append(f"{LABELS[k]:18s} {fmt(raw[k]):>12s} {fmt(arm[k]):>12s}   [{fmt(iv[k][0])}, {fmt(iv[k][1])}]")
    cb = d["cached_bill"]
    lines.append(f"{'total cost, cached':18s} {_fmt('total_cost')(raw['total_cost']):>12s} "
                 f"{_fmt('total_cost')(cb['total_cost']):>12s}   [{cb['interval'][0]:,.2f}, {cb['interval'][1]:,.2f}]")
    up_u, up_c = arm["total_cost"] > raw["total_cost"], cb["total_cost"] > raw["total_cost"]
    sign = ("both bills put it " + ("above" if up_u else "below") + " the raw arm" if up_u == up_c else
            "the cache decides the sign: " + ("above" if up_u else "below") + " the raw arm uncached, "
            + ("above" if up_c else "below") + " cached")
    growth = cb.get("input_growth_per_million_per_1k_prompt", 0.0)
    grows = f" + {growth:.3g}/M per 1k tokens of the run's mean prompt" if growth else ""
    lines.append(f"cost in the file's units; uncached: every prompt token at the raw arm's price "
                 f"({cb['input_per_million']:.4g}/M in{grows}, {cb['output_per_million']:.4g}/M out, "
                 f"R^2 {cb['r2']:.3f}); "
                 f"cached: the unchanged prefix read at {cb['cache_read']:g} of the list price. {sign}")
    if d["failed_to_start"]:
        lines.append(f"{d['failed_to_start']} run(s) failed to start (cost 0, at most one turn): kept as recorded, "
                     "unsolved")
    f = d["fit"]
    lines.append(f"fit: {f['source'] or 'given'}; need_rate {f['need_rate']:.3g}, need_cv {f['need_cv']:.3g}, "
                 f"need_decay {f['need_decay']:.3g}, summary_fidelity {f['summary_fidelity']}; {d['path']} path")
    return "\n".join(lines) + "\n"


def _fmt(key: str):
    if key in ("solve_rate", "capped_share"):
        return lambda x: f"{x:.3f}"
    if key == "median_turns":
        return lambda x: f"{x:.1f}"
    return lambda x: f"{x:,.2f}"


# -- validate ------------------------------------------------------------------------------------
def main_validate(args) -> int:
    from prunesim.studies import agent_fit

    files = _files(args.files)
    _check_out(args)
    result = agent_fit.cross_validate(files, _replicates(args), args.seed, args.jobs)
    _emit(args, result, format_validate(result) + (format_per_arm(result) if args.per_arm else ""))
    return 0


def format_validate(r: dict) -> str:
    s = r["score"]
    lines = [f"outcomes validate: {s['arms']} arm(s), each forecast from a fit without its setting; "
             f"{r['replicates']} replicates",
             f"{'arm':60s} {'figure':16s} {'raw':>9s} {'recorded':>9s} {'forecast':>9s} {'interval':>21s} "
             f"{'simple':>9s}"]
    for row in r["rows"]:
        name = f"{_arm_label(row)}: {row['experiment']}"
        for k in FIGURES:
            fmt = _fmt(k)
            lo, hi = row["interval"][k]
            lines.append(f"{name[:60]:60s} {LABELS[k][:16]:16s} {fmt(row['raw'][k]):>9s} {fmt(row['recorded'][k]):>9s} "
                         f"{fmt(row['forecast'][k]):>9s} {'[' + fmt(lo) + ', ' + fmt(hi) + ']':>21s} "
                         f"{fmt(row['simple'][k]):>9s}")
            name = ""
    lines.append("mean absolute error (solve rate and share at the cap in points; turns and cost as ratios to the "
                 "raw arm):")
    lines.append(f"{'':10s} " + " ".join(f"{LABELS[k]:>16s}" for k in FIGURES))
    for who in ("forecast", "null", "simple"):
        lines.append(f"{who:10s} " + " ".join(f"{s[who][k]:16.3f}" for k in FIGURES))
    fd, sd, cov = s["forecast_direction"], s["simple_direction"], s["coverage"]
    lines.append(f"direction right on effects whose 95% interval excludes no effect: forecast {fd['right']}/"
                 f"{fd['significant']}, simple {sd['right']}/{sd['significant']}")
    lines.append(f"coverage of the forecast's 95% intervals: {cov['covered']}/{cov['figures']} "
                 f"({cov['share']:.0%})")
    lines.append(f"total cost with the cached bill: mean absolute error {s['forecast_cached_bill_total_cost']:.3f}")
    if "outcome_loglik" in s:
        lines.append(f"log-likelihood of the held-out arms' outcomes (per run, summed over the arms): "
                     f"{s['outcome_loglik']:.4f}")
    return "\n".join(lines) + "\n"


def _arm_label(row: dict) -> str:
    return f"{row['scaffold']} {row['strategy']}" + (f" M={row['m']}" if row["m"] else "") + f" n={row['n']}"


ERROR_FMT = {"solve_rate": "{:6.2f}", "median_turns": "{:6.3f}", "total_cost": "{:6.3f}", "capped_share": "{:6.2f}"}


def format_per_arm(r: dict) -> str:
    """Every arm's errors (forecast, null, simple) and each arm's share of the forecast's excess over the better
    baseline (prunesim.studies.outcome_validate.error_table and excess)."""
    from prunesim.studies.outcome_validate import error_table, excess

    rows = r["rows"]
    if not rows:
        return ""
    lines = ["errors per arm, forecast / null / simple (solve rate and share at the cap in points; turns and cost "
             "as ratios to the raw arm):",
             f"{'arm':44s} " + " ".join(f"{LABELS[k]:>20s}" for k in FIGURES)]
    for row, errors in error_table(rows):
        label = row.get("label") or _short_label(row)
        lines.append(f"{label[:44]:44s} " + " ".join(
            " ".join(ERROR_FMT[k].format(errors[who][k]) for who in ("forecast", "null", "simple")) for k in FIGURES))
    lines.append("the forecast's mean error minus the better baseline's, split into the arms' shares (positive: "
                 "the forecast loses there):")
    for k in FIGURES:
        best, shares = excess(rows, k)
        fmt = ERROR_FMT[k].replace(":6", ":+")
        lines.append(f"  {LABELS[k]} against {best}: {fmt.format(sum(v for _, v in shares))}")
        ranked = sorted(shares, key=lambda item: -item[1])
        for word, picked in (("loses most on", [x for x in ranked[:3] if x[1] > 0]),
                             ("wins most on", [x for x in ranked[::-1][:3] if x[1] < 0])):
            if picked:
                lines.append(f"    {word}: " + ", ".join(f"{_short_label(a)} {fmt.format(v)}" for a, v in picked))
    return "\n".join(lines) + "\n"


def _short_label(row: dict) -> str:
    return f"{_arm_label(row)} {row['model'][:16]}"
