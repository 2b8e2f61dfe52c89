"""Token counting for imported transcripts.

Three counters, chosen by name (``--tokenizer``):

* ``pieces`` (the default): an estimate that splits text the way byte-pair
  encoders do, without a vocabulary. A run of letters is one token per six
  letters (rounded up), a run of digits one token per three digits (current
  encoders group digits by three), every other visible character one token,
  and a run of two or more whitespace characters one token per four (a single
  space joins the word after it). One regular-expression pass, no dependency.
* ``chars``: ``ceil(len(text) / 3.3)``, the fastest. 3.3 characters per token
  is what the mini-swe-agent samples show for their model; it misjudges text
  whose mix of prose, code and numbers differs from that.
* ``o200k_base`` / ``cl100k_base``: exact BPE counts with OpenAI's encodings,
  from the ``bpe-openai`` package.
  It ships both encodings inside its wheel, so it works offline; ``tiktoken``
  downloads its encoding files on first use and fails without network. The
  encoder refuses long inputs (a million characters, or 200,000 tokens), so
  text is encoded in pieces of at most ``BPE_CHUNK_CHARS`` characters, cut
  before a space that starts a word or after a newline: the encoders'
  pre-tokenizers never join across such a point, so the count is the one a
  single call would give. Only text with no such point in 16,384 characters
  (a base64 blob) is cut anywhere, which can shift its count by a token.

These are raw counts in the counter's own units. What a given model's API
bills for a message (its tokenizer, the framing around each message) is the
job of :mod:`.calibration`, which works on :func:`features` of the text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator

import numpy as np
from prunesim.errors import UserError

DEFAULT = "pieces"
CHARS_PER_TOKEN = 3.3
BPE_ENCODINGS = ("o200k_base", "cl100k_base")
NAMES = (DEFAULT, "chars", *BPE_ENCODINGS)

_PIECES = re.compile(r"[^\W\d_]+|\d+|\s+|.", re.S)
LETTERS_PER_TOKEN = 6
DIGITS_PER_TOKEN = 3
SPACES_PER_TOKEN = 4


def count_pieces(text: str) -> int:
    """The default estimate: letter runs by six, digit runs by three, symbols one each, long blanks by four."""
    n = 0
    for piece in _PIECES.findall(text):
        first = piece[0]
        if first.isspace():
            n += 0 if len(piece) == 1 else -(-len(piece) // SPACES_PER_TOKEN)
        elif first.isdigit():
            n += -(-len(piece) // DIGITS_PER_TOKEN)
        elif first.isalpha():
            n += -(-len(piece) // LETTERS_PER_TOKEN)
        else:
            n += 1
    return n


def count_chars(text: str) -> int:
    """The default estimate: ceil(characters / 3.3); 0 for empty text."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


# Pieces classes for calibration (see features()): a linear model over these fits a
# provider's tokenizer far better than one scale on a single count.
PIECE_FEATURES = ("newlines", "blanks", "digit_runs", "digits", "words", "letters", "long_word_letters",
                  "other_letters", "symbols")
LONG_WORD = 8


# Character classes: 0 ASCII letter, 1 digit, 2 newline, 3 other blank, 4 symbol (underscore too), 5 other letter.
_ASCII_CLASS = np.full(128, 4, np.int8)
for _c in range(128):
    _ch = chr(_c)
    _ASCII_CLASS[_c] = 0 if _ch.isalpha() else 1 if _ch.isdigit() else 2 if _ch == "\n" else 3 if _ch.isspace() else 4


def _class_of(ch: str) -> int:
    return 5 if ch.isalpha() else 1 if ch.isdigit() else 3 if ch.isspace() else 4


def piece_features(text: str) -> tuple[int, ...]:
    """Counts of the pieces' classes: newlines, blank characters in runs of two or more (newlines aside),
    digit runs and digits, ASCII words (runs of ASCII letters) and their letters, letters of words beyond
    LONG_WORD, letters outside ASCII, and other visible characters (punctuation, symbols, underscores).

    Computed on the array of code points, so that a long output stays fast.
    """
    if not text:
        return (0,) * len(PIECE_FEATURES)
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    cls = np.empty(len(codes), np.int8)
    low = codes < 128
    cls[low] = _ASCII_CLASS[codes[low]]
    if not low.all():
        high = codes[~low]
        uniq, inverse = np.unique(high, return_inverse=True)
        cls[~low] = np.array([_class_of(chr(c)) for c in uniq.tolist()], np.int8)[inverse]
    starts = np.flatnonzero(np.concatenate(([True], cls[1:] != cls[:-1])))
    lengths = np.diff(np.append(starts, len(cls)))
    kinds = cls[starts]
    counts = np.bincount(cls, minlength=6)
    blank_runs = lengths[kinds == 3]
    word_runs = lengths[kinds == 0]
    return (int(counts[2]), int(blank_runs[blank_runs >= 2].sum()), int((kinds == 1).sum()), int(counts[1]),
            len(word_runs), int(counts[0]), int(np.maximum(word_runs - LONG_WORD, 0).sum()), int(counts[5]),
            int(counts[4]))


def features(tokenizer: str):
    """A function text -> feature tuple for calibrating counts of ``tokenizer``: the piece classes for
    ``pieces``, else the raw count alone."""
    if tokenizer == DEFAULT:
        return piece_features
    count = get_counter(tokenizer)
    return lambda text: (count(text),)


def feature_names(tokenizer: str) -> tuple[str, ...]:
    return PIECE_FEATURES if tokenizer == DEFAULT else (tokenizer,)


def bpe_available() -> bool:
    try:
        import bpe_openai  # noqa: F401
    except ImportError:
        return False
    return True


# At most 4 UTF-8 bytes a character and at least one byte a token: a piece this long holds at most
# 131,072 tokens, under the encoder's limits (1,000,000 characters, 200,000 tokens).
BPE_CHUNK_CHARS = 32_768


# Where a piece may end: before a space that starts a word, or after a newline followed by text.
# The o200k and cl100k pre-tokenizers start a new pre-token there, so no token spans the cut.
_CUT = re.compile(r" (?=\S)|(?<=\n)(?=\S)")


def chunks(text: str, size: int = BPE_CHUNK_CHARS) -> Iterator[str]:
    """``text`` in consecutive pieces of at most ``size`` characters, each cut at the last word boundary
    (see ``_CUT``) in its second half; a piece with none there (a base64 blob) is cut at ``size``."""
    start, n = 0, len(text)
    while n - start > size:
        end = start + size
        cut = end
        for m in _CUT.finditer(text, start + size // 2, end):
            cut = m.start()
        yield text[start:cut]
        start = cut
    yield text[start:]


_CACHE: dict[str, Callable[[str], int]] = {}


def get_counter(name: str = DEFAULT) -> Callable[[str], int]:
    """A function text -> tokens for the counter ``name``; a UserError if unknown or not installed."""
    if name == DEFAULT:
        return count_pieces
    if name == "chars":
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
            return sum(len(_enc.encode(chunk, disallowed_special=())) for chunk in chunks(text)) if text else 0

        _CACHE[name] = count
    return _CACHE[name]
