"""Where the tests find the real agent transcripts, and the skip that says how to give them.

The transcripts are third-party data, never part of the repository: a test
that needs them reads ``PRUNESIM_TRACES`` (a folder holding ``mini-swe-agent/``,
``claude-code-dev/`` and the like) or, when it is not set, ``../shared/traces``
beside the checkout. Without them those tests skip with :data:`HOW`
(docs/testing.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRACES = Path(os.environ.get("PRUNESIM_TRACES") or ROOT.parent / "shared" / "traces")
HOW = "set PRUNESIM_TRACES to the folder of real transcripts, or put it at ../shared/traces beside the checkout " \
      "(docs/testing.md)"


def traces_dir() -> Path:
    return TRACES


def reason(*folders: str) -> str:
    where = ", ".join(str(TRACES / f) for f in folders) if folders else str(TRACES)
    return f"needs the real transcripts ({where} is missing): {HOW}"


def needs(*folders: str) -> pytest.MarkDecorator:
    """Skip unless every one of these subfolders of the transcripts folder (or the folder itself) is there."""
    present = TRACES.is_dir() and all((TRACES / f).is_dir() for f in folders)
    return pytest.mark.skipif(not present, reason=reason(*folders))
