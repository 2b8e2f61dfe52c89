"""prunesim defaults: every scenario parameter's default beside the shipped scenarios' values; with --explain,
where one value of a run comes from (user > recorded > fitted > default)."""

from __future__ import annotations

from pathlib import Path

from prunesim.cli.commands._common import add_prices, add_set, scenario_sets
from prunesim.errors import UserError
from prunesim.io.scenario_files import defaults_table, dumps, nested_defaults

UNSET = "unset"  # what the table shows for a key a file leaves out and a preset (or the policy) fills in


def register(sub) -> None:
    p = sub.add_parser("defaults", help="print every scenario parameter's default and the shipped scenarios' values; "
                       "--explain KEY: where a run's value of KEY comes from")
    p.add_argument("--markdown", action="store_true", help="as a Markdown table")
    p.add_argument("--toml", action="store_true",
                   help="every default as a scenario file (TOML) to copy from: the keys a preset or the policy "
                        "fills in are comments")
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
        if args.toml:
            if args.markdown:
                raise UserError("--markdown", None, "does not go with --toml")
            print(defaults_toml(), end="")
            return 0
        return _table(args.markdown)
    if args.toml:
        raise UserError("--toml", None, "applies to the defaults, not to --explain")
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
        resolved = settings.of(replay_scenario(base, data)).with_agent(str(data.header.get("format") or ""))
        what = f"{data.name} on scenario {base.name}"
    else:
        resolved = settings.load(name, overrides, None, "--set", args.prices).with_agent()
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


def defaults_toml() -> str:
    """Every default as TOML that a scenario file may hold. TOML has no null: a key that is unset (a preset or the
    policy gives it) is a comment under its table, to fill in by hand."""
    data = nested_defaults()
    unset: dict[str, list[str]] = {}

    def strip(table: dict, prefix: str) -> dict:
        out = {}
        for key, value in table.items():
            if value is None:
                unset.setdefault(prefix, []).append(key)
            elif isinstance(value, dict):
                out[key] = strip(value, f"{prefix}{key}.")
            else:
                out[key] = value
        return out

    lines = ["# Every scenario parameter at its default (prunesim defaults --toml). A file that leaves a key out",
             "# gets this value; keys shown as comments are unset: a preset, the policy or the agent profile gives",
             "# them. A key a file keeps is the user's: on a replay it wins over the recording's value",
             "# (docs/settings.md), so keep only the keys you mean to set.", ""]
    lines += dumps(strip(data, "")).splitlines()
    for prefix, keys in unset.items():
        header = f"[{prefix.rstrip('.')}]"
        chooser = "the agent profile gives it" if prefix == "agent." else "a preset or the policy chooses it"
        comments = [f"# {key} = ...  ({UNSET}: {chooser})" for key in keys]
        if header in lines:
            at = lines.index(header) + 1
            lines[at:at] = comments
        else:
            lines += ["", header, *comments]
    return "\n".join(lines) + "\n"
