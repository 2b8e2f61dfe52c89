"""prunesim defaults: every scenario parameter's default beside the shipped scenarios' values; with --explain,
where one value of a run comes from (user > recorded > fitted > default)."""

from __future__ import annotations

from pathlib import Path

from prunesim.cli.commands._common import add_prices, add_set, scenario_sets
from prunesim.errors import UserError
from prunesim.io.scenario_files import defaults_table


def register(sub) -> None:
    p = sub.add_parser("defaults", help="print every scenario parameter's default and the shipped scenarios' values; "
                       "--explain KEY: where a run's value of KEY comes from")
    p.add_argument("--markdown", action="store_true", help="as a Markdown table")
    p.add_argument("--explain", metavar="KEY", help="print the chain of KEY (e.g. pricing.model, window, "
                   "reaction.probability, clock, calibration; 'runtime': the values an output names): the value "
                   "used, its source (user, recorded, fitted, default) and where, then the values it won over")
    p.add_argument("--scenario", help="with --explain: the scenario (default: transcript with --transcript, else "
                   "oscillation-40)")
    p.add_argument("--transcript", type=Path, help="with --explain: a one-run transcript or workload file, replayed "
                   "on its recorded runtime")
    add_set(p)
    add_prices(p)
    p.set_defaults(func=main)


def main(args) -> int:
    if args.explain is None:
        for flag in ("scenario", "transcript", "set", "prices"):
            if getattr(args, flag) is not None:
                raise UserError(f"--{flag}", None, "applies to --explain KEY only")
        return _table(args.markdown)
    if args.markdown:
        raise UserError("--markdown", None, "applies to the defaults table, not to --explain")
    return _explain(args)


def _explain(args) -> int:
    from prunesim.io import settings
    from prunesim.io.scenario_files import check_replay_overrides

    overrides = scenario_sets(args)
    name = args.scenario or ("transcript" if args.transcript is not None else "oscillation-40")
    if args.transcript is not None:
        from prunesim.studies.transcript_replay import one_workload, replay_scenario

        check_replay_overrides(overrides)
        base = settings.load(name, overrides, None, "--set", args.prices).scenario
        data = one_workload(args.transcript)
        resolved = settings.of(replay_scenario(base, data))
        what = f"{data.name} on scenario {base.name}"
    else:
        resolved = settings.load(name, overrides, None, "--set", args.prices)
        what = f"scenario {resolved.scenario.name}"
    keys = [k for k in settings.RUNTIME_KEYS if k in resolved] if args.explain == "runtime" else [args.explain]
    for key in keys:
        resolved.chain(key)  # an unknown key: one line naming it
    print(f"{what}: the value used first, then the values it won over (precedence: "
          f"{' > '.join(settings.SOURCES)})")
    for key in keys:
        print(key)
        for line in resolved.explain(key):
            print("  " + line)
    return 0


def _table(markdown: bool) -> int:
    header, rows = defaults_table()
    if markdown:
        print("| " + " | ".join(f"`{h}`" if i > 1 else h for i, h in enumerate(header)) + " |")
        print("|" + " --- |" * len(header))
        for row in rows:
            print("| " + " | ".join([f"`{row[0]}`", *row[1:]]) + " |")
        return 0
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    for line in [header, *rows]:
        print("  ".join(f"{c:{w}s}" for c, w in zip(line, widths, strict=True)).rstrip())
    return 0
