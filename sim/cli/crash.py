"""Crash reports: the full traceback of an unexpected exception, saved to a file.

A user never sees a raw traceback: the command line prints one line naming the
report and exits with code 70. Reports go to the first of these that can be
written:

1. ``$PRUNESIM_CRASH_DIR``;
2. ``$XDG_STATE_HOME/prunesim/crashes`` (``~/.local/state/prunesim/crashes``
   when ``XDG_STATE_HOME`` is unset);
3. ``prunesim-crashes`` in the system's temporary folder.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
import traceback
from pathlib import Path

from prunesim import __version__


def crash_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("PRUNESIM_CRASH_DIR"):
        dirs.append(Path(os.environ["PRUNESIM_CRASH_DIR"]))
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    dirs.append(Path(state) / "prunesim" / "crashes")
    dirs.append(Path(tempfile.gettempdir()) / "prunesim-crashes")
    return dirs


def report_text(err: BaseException, argv: list[str] | None) -> str:
    lines = [
        f"prunesim {__version__} crash report, {time.strftime('%Y-%m-%d %H:%M:%S %z')}",
        f"command: prunesim {' '.join(argv if argv is not None else sys.argv[1:])}",
        f"working folder: {os.getcwd() if os.path.isdir('.') else '?'}",
        f"python {platform.python_version()} on {platform.platform()}",
        "",
        *traceback.format_exception(err),
    ]
    return "\n".join(line.rstrip("\n") for line in lines) + "\n"


def save(err: BaseException, argv: list[str] | None = None) -> Path | None:
    """Write a crash report; its path, or None when no folder could take it."""
    text = report_text(err, argv)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for folder in crash_dirs():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for n in range(100):
                path = folder / f"crash-{stamp}-{os.getpid()}{f'-{n}' if n else ''}.txt"
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                except FileExistsError:
                    continue
                # errors: a file name that is not UTF-8 (legal on Linux) in the command line is written as its bytes
                with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
                    fh.write(text)
                return path
        except OSError:
            continue
    return None


def one_line(err: BaseException, argv: list[str] | None = None, where: str | None = None) -> str:
    """The line a user sees for a bug: what broke, and where the traceback went."""
    path = save(err, argv)
    what = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    what = " ".join(what.split())
    if len(what) > 200:
        what = what[:197] + "..."
    prefix = f"{where}: " if where else ""
    saved = f"full traceback in {path}" if path else "the traceback could not be saved (no writable folder)"
    return f"prunesim: internal error: {prefix}{what}; this is a bug in prunesim, not in your input; {saved}"
