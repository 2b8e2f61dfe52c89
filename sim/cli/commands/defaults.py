"""prunesim defaults: every scenario parameter's default beside the shipped scenarios' values."""

from __future__ import annotations

from prunesim.io.scenario_files import defaults_table, dumps, nested_defaults

UNSET = "unset"  # what the table shows for a key a file leaves out and a preset (or the policy) fills in


def register(sub) -> None:
    p = sub.add_parser("defaults", help="print every scenario parameter's default and the shipped scenarios' values")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--markdown", action="store_true", help="as a Markdown table")
    shape.add_argument("--toml", action="store_true",
                       help="every default as a scenario file (TOML) to copy from: the keys a preset or the policy "
                            "fills in are comments")
    p.set_defaults(func=main)


def main(args) -> int:
    if args.toml:
        print(defaults_toml(), end="")
        return 0
    header, rows = defaults_table()
    if args.markdown:
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
             "# gets this value; keys shown as comments are unset: a preset or the policy chooses them.", ""]
    lines += dumps(strip(data, "")).splitlines()
    for prefix, keys in unset.items():
        header = f"[{prefix.rstrip('.')}]"
        comments = [f"# {key} = ...  ({UNSET}: a preset or the policy chooses it)" for key in keys]
        if header in lines:
            at = lines.index(header) + 1
            lines[at:at] = comments
        else:
            lines += ["", header, *comments]
    return "\n".join(lines) + "\n"
