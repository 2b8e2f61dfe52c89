"""Making a local package's entry points visible the way ``pip install`` does, without changing the environment."""

from __future__ import annotations

import tomllib
from pathlib import Path


def install_like_pip(site: Path, project: Path) -> None:
    """Write into ``site`` the dist-info pip would write for ``project`` (name, version, entry points), and link its
    packages (from ``src/``) beside it; put ``site`` on PYTHONPATH to use it."""
    meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    info = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n")
    lines = []
    for group, entries in meta.get("entry-points", {}).items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {target}" for name, target in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    for package in (project / "src").iterdir():
        (site / package.name).symlink_to(package.resolve(), target_is_directory=True)
