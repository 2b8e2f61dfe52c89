"""The layers: what each package may import, no import cycle, and every package installed."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Installed package name -> folder in the repository (pyproject's package-dir).
FOLDERS = {
    "prunesim": ROOT / "sim",
    "prunesim.policies": ROOT / "policies",
    "prunesim.plots": ROOT / "plots",
    "prunesim.scenarios": ROOT / "scenarios",
}

# What a layer may import from prunesim (besides itself). Keys and values are module prefixes.
ALLOWED = {
    "prunesim.model": ("prunesim.errors", "prunesim.model", "prunesim.policies.base"),
    "prunesim.policies": ("prunesim.errors", "prunesim.model", "prunesim.policies"),
    "prunesim.observe": ("prunesim.errors", "prunesim.model", "prunesim.observe"),
    "prunesim.runner": ("prunesim", "prunesim.model", "prunesim.observe", "prunesim.policies"),
    # The compiled kernel builds a run as run_one does and hands its record to the observers.
    "prunesim.kernel": ("prunesim", "prunesim.errors", "prunesim.model", "prunesim.observe", "prunesim.policies",
                        "prunesim.runner", "prunesim.kernel"),
    "prunesim.io": ("prunesim", "prunesim.errors", "prunesim.model", "prunesim.observe", "prunesim.policies",
                    "prunesim.runner", "prunesim.io"),
    "prunesim.plots": ("prunesim.errors", "prunesim.io", "prunesim.observe.metrics", "prunesim.plots"),
    "prunesim.studies": ("prunesim", "prunesim.errors", "prunesim.model", "prunesim.observe", "prunesim.policies",
                         "prunesim.runner", "prunesim.kernel", "prunesim.io", "prunesim.studies"),
}


def modules() -> dict[str, Path]:
    """Every module of the package by its installed name."""
    out = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if package == "prunesim" and parts and parts[0] in ("policies", "plots", "scenarios"):
                continue
            out[".".join([package, *parts])] = path
    return out


def imports_of(name: str, path: Path) -> set[str]:
    """prunesim modules imported by a module at import time (``if TYPE_CHECKING`` blocks aside)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(nodes):
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("prunesim"))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                if module.startswith("prunesim"):
                    found.add(module)
                    found.update(f"{module}.{a.name}" for a in node.names)
            for child in ("body", "orelse", "finalbody", "handlers"):
                if hasattr(node, child) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(getattr(node, child))

    visit(tree.body)
    known = modules()
    return {m for m in found if m in known}


def layer_of(name: str) -> str | None:
    for layer in sorted(ALLOWED, key=len, reverse=True):
        if name == layer or name.startswith(layer + "."):
            return layer
    return None


@pytest.mark.parametrize("name", sorted(n for n in modules() if layer_of(n)))
def test_each_layer_imports_only_the_layers_below_it(name):
    allowed = ALLOWED[layer_of(name)]
    bad = sorted(
        m for m in imports_of(name, modules()[name])
        if not any(m == a or m.startswith(a + ".") for a in allowed) and m not in allowed
    )
    assert not bad, f"{name} imports {bad}"


def test_the_model_never_imports_what_is_built_on_it():
    for name, path in modules().items():
        if name.startswith("prunesim.model"):
            for m in imports_of(name, path):
                assert not m.startswith(("prunesim.studies", "prunesim.io", "prunesim.cli", "prunesim.observe")), (
                    name, m)


def test_there_is_no_import_cycle():
    graph = {name: imports_of(name, path) for name, path in modules().items()}
    # A package's __init__ importing its own submodules is not a cycle between layers.
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in graph.get(node, ()):
            if nxt == node or nxt.startswith(node + "."):
                continue
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt]
                if not any(b.startswith(a + ".") for a, b in zip(cycle, cycle[1:], strict=False)):
                    raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
            elif state.get(nxt) is None:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_pyproject_installs_every_package_folder():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {k: v.name for k, v in FOLDERS.items()}
    packages = {n for n, p in modules().items() if p.name == "__init__.py"}
    assert set(config["packages"]) == packages


def test_package_data_ships_every_template():
    """prunesim report's template lives in plots/templates/: an install without it could not write a page."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    templates = sorted(p.relative_to(FOLDERS["prunesim.plots"]) for p in (ROOT / "plots" / "templates").iterdir())
    assert templates
    for path in templates:
        assert any(path.match(pattern) for pattern in data.get("prunesim.plots", [])), f"{path} is not package data"


def test_every_package_says_what_it_is_for():
    for name, path in modules().items():
        if path.name == "__init__.py":
            assert ast.get_docstring(ast.parse(path.read_text())), f"{name} has no module docstring"
