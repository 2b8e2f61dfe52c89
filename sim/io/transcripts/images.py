"""Image blocks: their pixel size from the encoded header, and the tokens a provider documents for it.

Transcripts store images as base64 data. An image's prompt tokens depend only
on its pixel size, by the providers' documented rules:

* Anthropic (Claude): an image whose long edge exceeds 1568 px, or whose area
  exceeds about 1.15 megapixels, is first scaled down keeping its aspect ratio;
  it then costs ``width * height / 750`` tokens (about 1,600 at most).
* OpenAI (high detail): the image is scaled to fit 2048 x 2048, then so that
  its short side is at most 768 px; it costs 85 tokens plus 170 per 512-px tile.

Only the first bytes are decoded (PNG, JPEG, GIF, WebP headers). An image whose
size cannot be read returns ``None``: the caller skips it and says so.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct

HEAD_CHARS = 1 << 16  # base64 characters decoded to find a header (48 KiB of image)
ANTHROPIC_MAX_EDGE = 1568
ANTHROPIC_MAX_PIXELS = 1_150_000
ANTHROPIC_PIXELS_PER_TOKEN = 750


def size_of(data: str) -> tuple[int, int] | None:
    """(width, height) of a base64-encoded PNG, JPEG, GIF or WebP image; None when unreadable."""
    if not isinstance(data, str):
        return None
    head = data[:HEAD_CHARS]
    head = head[: len(head) - len(head) % 4]
    try:
        raw = base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return None
    return _png(raw) or _gif(raw) or _webp(raw) or _jpeg(raw)


def _png(raw: bytes):
    if raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24 and raw[12:16] == b"IHDR":
        return struct.unpack(">II", raw[16:24])
    return None


def _gif(raw: bytes):
    if raw[:6] in (b"GIF87a", b"GIF89a") and len(raw) >= 10:
        return struct.unpack("<HH", raw[6:10])
    return None


def _webp(raw: bytes):
    if raw[:4] != b"RIFF" or raw[8:12] != b"WEBP" or len(raw) < 30:
        return None
    chunk = raw[12:16]
    if chunk == b"VP8X":
        w = 1 + int.from_bytes(raw[24:27], "little")
        h = 1 + int.from_bytes(raw[27:30], "little")
        return w, h
    if chunk == b"VP8L" and raw[20] == 0x2F:
        bits = int.from_bytes(raw[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    if chunk == b"VP8 " and raw[23:26] == b"\x9d\x01\x2a":
        w, h = struct.unpack("<HH", raw[26:30])
        return w & 0x3FFF, h & 0x3FFF
    return None


_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg(raw: bytes):
    if raw[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 9 <= len(raw):
        if raw[i] != 0xFF:
            return None
        marker = raw[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = struct.unpack(">H", raw[i + 2:i + 4])[0]
        if marker in _SOF:
            h, w = struct.unpack(">HH", raw[i + 5:i + 9])
            return w, h
        i += 2 + length
    return None


def anthropic_tokens(width: int, height: int) -> int:
    """Claude's documented image cost: scaled into 1568 px and 1.15 MP, then width*height/750."""
    if width <= 0 or height <= 0:
        return 0
    scale = min(1.0, ANTHROPIC_MAX_EDGE / max(width, height), math.sqrt(ANTHROPIC_MAX_PIXELS / (width * height)))
    w, h = max(1, int(width * scale)), max(1, int(height * scale))
    return math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN)


def openai_tokens(width: int, height: int) -> int:
    """OpenAI's documented high-detail cost: fit 2048 px, short side at most 768 px, 85 + 170 per 512-px tile."""
    if width <= 0 or height <= 0:
        return 0
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)
