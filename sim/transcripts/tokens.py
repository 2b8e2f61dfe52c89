"""Token counting for imported transcripts.

Two counters, chosen by name (``--tokenizer``):

* ``chars`` (the default): ``ceil(len(text) / 3.3)``. Constant time per
  string, no dependency, bounded memory on any input. 3.3 characters per token
  is what the mini-swe-agent samples show for their model (code, shell output
  and English prose mixed); fidelity fits one scale factor per model on top, so
  the divisor only needs to be about right, not exact.
* ``o200k_base`` / ``cl100k_base``: exact BPE counts with OpenAI's encodings,
  from the optional ``bpe-openai`` package (``pip install prunesim[tokens]``).
  It ships both encodings inside its wheel, so it works offline; ``tiktoken``
  downloads its encoding files on first use and fails without network.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from sim.errors import UserError

DEFAULT = "chars"
CHARS_PER_TOKEN = 3.3
BPE_ENCODINGS = ("o200k_base", "cl100k_base")
NAMES = (DEFAULT, *BPE_ENCODINGS)


def count_chars(text: str) -> int:
    """The default estimate: ceil(characters / 3.3); 0 for empty text."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def bpe_available() -> bool:
    try:
        import bpe_openai  # noqa: F401
    except ImportError:
        return False
    return True


_CACHE: dict[str, Callable[[str], int]] = {}


def get_counter(name: str = DEFAULT) -> Callable[[str], int]:
    """A function text -> tokens for the counter ``name``; a UserError if unknown or not installed."""
    if name == DEFAULT:
        return count_chars
    if name not in BPE_ENCODINGS:
        raise UserError("--tokenizer", name, f"unknown tokenizer (known: {', '.join(NAMES)})")
    if name not in _CACHE:
        try:
            import bpe_openai
        except ImportError:
            raise UserError(
                "--tokenizer", name, "needs the optional package bpe-openai (pip install 'prunesim[tokens]')"
            ) from None
        encoding = bpe_openai.get_encoding(name)

        def count(text: str, _enc=encoding) -> int:
            return len(_enc.encode(text, disallowed_special=())) if text else 0

        _CACHE[name] = count
    return _CACHE[name]
