"""Modules that take part in an import cycle import first, on their own, in a fresh interpreter.

tests/test_layout.py reads the import statements and forgives a package's ``__init__`` importing its own
submodules. Python runs a package's ``__init__`` before any of its submodules, so a cycle can still pass
through one: the engine imported the policy contract, whose package imported a policy that imported the
engine, and ``import prunesim.runner`` in a new process raised ImportError. Here every import also depends
on the packages above the module it names; each module of a cycle in that graph (a strongly connected
component of more than one module) is then imported first in a clean interpreter, which is what a user's
``import`` does. Importing all 150 modules that way takes 15 s; the cycles hold a few.
"""

from __future__ import annotations

import subprocess
import sys

from test_layout import imports_of, modules

SCRIPT = r"""
import importlib, sys
failed = []
for name in sys.argv[1:]:
    for loaded in [k for k in sys.modules if k == "prunesim" or k.startswith("prunesim.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as err:  # every module that fails is reported, not the first
        failed.append(f"{name}: {type(err).__name__}: {err}")
print("\n".join(failed))
"""


def graph() -> dict[str, set[str]]:
    """Each module -> what importing it runs first: what it imports, and every package above each of those."""
    known = modules()
    out = {}
    for name, path in known.items():
        needs = set()
        for target in imports_of(name, path):
            parts = target.split(".")
            needs.update(".".join(parts[:k]) for k in range(2, len(parts) + 1))
        out[name] = {m for m in needs if m in known and m != name}
    return out


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, nexts = work[-1]
            for nxt in nexts:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle_through_a_package():
    edges = {"p": {"p.a"}, "p.a": {"q"}, "q": {"p.b", "p"}, "p.b": set(), "r": {"q"}}
    assert cycles(edges) == [["p", "p.a", "q"]]


def test_every_module_of_a_cycle_imports_first_on_its_own():
    suspects = sorted({m for component in cycles(graph()) for m in component if not m.endswith("__main__")})
    if not suspects:
        return  # no cycle at all, even through a package's __init__: nothing can fail to import first
    done = subprocess.run([sys.executable, "-c", SCRIPT, *suspects], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line] == [], f"checked: {suspects}"
