"""Content identity of data files: what checkpoints and reports record instead of paths."""

from __future__ import annotations

import hashlib


def file_sha256(path) -> str:
    """SHA-256 (hex) of a file's bytes: the same for a copy, a symlink, a relative or absolute path."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
