"""prunesim list: shipped scenarios and registered policies."""

from __future__ import annotations

from prunesim import api


def register(sub) -> None:
    p = sub.add_parser("list", help="show the shipped scenarios and the registered policies")
    p.set_defaults(func=main)


def main(args) -> int:
    print("scenarios:")
    for name, description in api.list_scenarios().items():
        print(f"  {name:24s} {description}")
    print("policies:")
    policies = api.list_policies()
    width = max(24, *(len(name) for name in policies))
    for name, summary in policies.items():
        print(f"  {name:{width}s} {summary}")
    return 0
