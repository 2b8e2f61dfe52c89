"""The Python environment that runs openhands-sdk, the reference of the ``llm-summary:openhands-sdk`` presets.

openhands-sdk 1.58.2 needs Python 3.12 or later; prunesim runs on 3.11. The differential test
(tests/test_openhands_sdk_differential.py) therefore runs the SDK in a virtual environment of its own,
made once in ``.cache/openhands-sdk-<version>/`` beside the checkout (ignored by git) from the first
Python 3.12+ found: ``PRUNESIM_SDK_PYTHON``, then ``python3.12`` and ``python3.13`` on the PATH, then
pyenv's installed versions. ``.ci/run`` prepares it before the suite (``python tests/openhands_sdk_env.py``)
so that CI runs the test instead of skipping it; a local run makes it on first use.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

SDK = "openhands-sdk==1.58.2"
ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / ".cache" / f"openhands-sdk-{SDK.split('==')[1]}"
READY = HOME / "ready"  # written last: a half-made environment is made again
INSTALL_TIMEOUT_S = 900


class Unavailable(Exception):
    """The SDK's environment cannot be made here; the message says why (the test's skip reason)."""


def candidates() -> list[str]:
    found = [os.environ["PRUNESIM_SDK_PYTHON"]] if os.environ.get("PRUNESIM_SDK_PYTHON") else []
    found += [p for name in ("python3.12", "python3.13") if (p := shutil.which(name))]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if pyenv.is_dir():  # the oldest 3.12+ first: the release the SDK was checked on
        found += [str(v / "bin" / "python3") for v in sorted(pyenv.iterdir(), key=version)
                  if (v / "bin" / "python3").is_file()]
    return found


def version(folder: Path) -> tuple:
    return tuple(int(n) if n.isdigit() else 0 for n in folder.name.split("."))


def new_enough(python: str) -> bool:
    """True when ``python`` runs and is 3.12 or later (a pyenv shim of a version not selected does not run)."""
    try:
        out = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 12))"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == "True"


def base_python() -> str:
    named = os.environ.get("PRUNESIM_SDK_PYTHON")
    if named and not new_enough(named):
        raise Unavailable(f"PRUNESIM_SDK_PYTHON={named} is not a Python 3.12 or later that runs")
    for python in candidates():
        if new_enough(python):
            return python
    raise Unavailable("openhands-sdk needs Python 3.12 or later and none was found (PATH's python3.13/python3.12, "
                      "pyenv's versions); set PRUNESIM_SDK_PYTHON to one")


def python() -> Path:
    """The SDK environment's interpreter, made (once, under a lock) when missing."""
    exe = HOME / "bin" / "python"
    if READY.is_file():
        return exe
    HOME.parent.mkdir(parents=True, exist_ok=True)
    with open(HOME.parent / f"{HOME.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once: one makes it, the other waits and reuses it
        if READY.is_file():
            return exe
        shutil.rmtree(HOME, ignore_errors=True)
        steps = ([base_python(), "-m", "venv", str(HOME)], [str(exe), "-m", "pip", "install", "-q", SDK])
        for step in steps:
            try:
                done = subprocess.run(step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as err:
                raise Unavailable(f"{' '.join(step[2:4])} failed: {err}") from None
            if done.returncode:
                last = (done.stderr.strip().splitlines() or ["no message"])[-1]
                raise Unavailable(f"{' '.join(step[2:4])} {step[-1]} failed: {last}")
        READY.write_text(SDK + "\n")
    return exe


if __name__ == "__main__":
    try:
        print(python())
    except Unavailable as err:
        print(f"openhands-sdk environment: {err}", file=sys.stderr)
        sys.exit(1)
