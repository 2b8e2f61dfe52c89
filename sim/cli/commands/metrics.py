"""prunesim metrics: the definition of every metric."""

from __future__ import annotations

from prunesim.observe.metrics import METRICS


def register(sub) -> None:
    p = sub.add_parser("metrics", help="print the definition of every metric")
    p.add_argument("--markdown", action="store_true", help="as a Markdown table")
    p.set_defaults(func=main)


def main(args) -> int:
    if args.markdown:
        print("| metric | unit | definition |")
        print("| --- | --- | --- |")
        for m in METRICS:
            print(f"| `{m.name}` | {m.unit} | {m.definition} |")
    else:
        for m in METRICS:
            print(f"{m.name:24s} [{m.unit}] {m.definition}")
    return 0
