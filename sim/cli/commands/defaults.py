"""prunesim defaults: every scenario parameter's default beside the shipped scenarios' values."""

from __future__ import annotations

from prunesim.io.scenario_files import defaults_table


def register(sub) -> None:
    p = sub.add_parser("defaults", help="print every scenario parameter's default and the shipped scenarios' values")
    p.add_argument("--markdown", action="store_true", help="as a Markdown table")
    p.set_defaults(func=main)


def main(args) -> int:
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
