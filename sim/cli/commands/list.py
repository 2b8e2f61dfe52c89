"""prunesim list: shipped scenarios and registered policies."""

from __future__ import annotations

from prunesim import api
from prunesim.errors import UserError
from prunesim.policies import entry_point_policies


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
    broken = [err for err in entry_point_policies().values() if isinstance(err, UserError)]
    for err in broken:  # an installed plugin that does not load: named, so the user can fix or remove it
        print(f"  (not loaded) {err}")
    return 0
