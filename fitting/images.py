"""Image size from the first bytes of a base64 payload (PNG, GIF, JPEG, WebP),
so the estimator can use the provider's size rule instead of a fixed cost."""

from __future__ import annotations

import base64
import binascii
import struct

_SNIFF_CHARS = 65536  # a multiple of 4; enough for JPEG headers with EXIF


def decoded_size(b64: str) -> int:
    """Bytes the base64 text decodes to."""
    n = len(b64.rstrip("="))
    return n * 3 // 4


def sniff_dimensions(b64: str) -> tuple[int, int] | None:
    """(width, height) read from an image header, or None."""
    head = b64[:_SNIFF_CHARS]
    head = head[: len(head) - len(head) % 4]
    try:
        data = base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return None
    return dimensions(data)


def dimensions(data: bytes) -> tuple[int, int] | None:
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        w, h = struct.unpack(">II", data[16:24])
        return int(w), int(h)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        w, h = struct.unpack("<HH", data[6:10])
        return int(w), int(h)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            w = 1 + int.from_bytes(data[24:27], "little")
            h = 1 + int.from_bytes(data[27:30], "little")
            return w, h
        if chunk == b"VP8 ":
            w, h = struct.unpack("<HH", data[26:30])
            return int(w) & 0x3FFF, int(h) & 0x3FFF
        if chunk == b"VP8L" and len(data) >= 25:
            bits = int.from_bytes(data[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        return None
    if data[:2] == b"\xff\xd8":
        return _jpeg(data)
    return None


def _jpeg(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            i += 1
            continue
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
            i += 1 if marker == 0xFF else 2
            continue
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return int(w), int(h)
        i += 2 + length
    return None
