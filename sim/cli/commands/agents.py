"""prunesim agents: the agent profiles, every parameter's value and where it comes from."""

from __future__ import annotations

import json

from prunesim.model.agent_profiles import PARAMETERS, AgentParams, reasons, resolve, shipped_fit, shipped_profiles


def register(sub) -> None:
    p = sub.add_parser("agents", help="show the agent profiles: each scaffold's turn cap and reaction parameters, "
                                      "with the source of every value")
    p.add_argument("--markdown", action="store_true", help="one Markdown table (docs/agent.md holds it)")
    p.add_argument("--json", action="store_true", help="every profile's values, sources and reasons as JSON")
    p.add_argument("--why", action="store_true", help="say under each value why it is what it is")
    p.set_defaults(func=main)


def profiles() -> dict:
    """Each shipped profile resolved (the fit file over the shipped values), by name."""
    return {name: resolve(AgentParams(profile=name)) for name in shipped_profiles()}


def main(args) -> int:
    resolved = profiles()
    if args.json:
        out = {name: {"scaffold": p.scaffold, "parameters": p.provenance()} for name, p in resolved.items()}
        print(json.dumps({"fit_file": shipped_fit() is not None, "profiles": out}, indent=2, sort_keys=True))
        return 0
    if args.markdown:
        print("| parameter | " + " | ".join(f"`{name}`" for name in resolved) + " |")
        print("| --- |" + " --- |" * len(resolved))
        for param in PARAMETERS:
            print(f"| `{param}` | " + " | ".join(_cell(p.values[param], p.sources[param]) for p in resolved.values())
                  + " |")
        return 0
    fit = "sim/model/agent_fit.json holds a fit" if shipped_fit() else "no fit file shipped: no value is fitted yet"
    print(f"agent profiles ({fit}); value (source) per parameter, '-' where the mechanism is off:")
    width = max(len(p) for p in PARAMETERS)
    why = {name: reasons(p) for name, p in resolved.items()}
    for name, p in resolved.items():
        print(f"{name} ({p.scaffold}):")
        for param in PARAMETERS:
            print(f"  {param:{width}s}  {_shown(p.values[param])} ({p.sources[param]})")
            if args.why and why[name][param]:
                print(f"  {'':{width}s}    {why[name][param]}")
    return 0


def _shown(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _cell(value, source: str) -> str:
    return f"{_shown(value)} ({source})"
