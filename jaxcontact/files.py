"""Data files: content identity (what checkpoints and reports record instead of paths), the
one reader of ``.npz`` archives with one-line errors for unreadable files, and where the shared
data that are never shipped with the package lie (``shared_dir``)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def shared_dir() -> Path:
    """The shared data directory: ``$JAXCONTACT_SHARED``, else ``shared/`` beside the repository
    (``<repo>/../shared``). The real cube tosses (``cube_tosses_path``) and the planar impacts
    (``impacts.data.default_data_path``) lie under its ``data/``."""
    root = os.environ.get("JAXCONTACT_SHARED")
    return Path(root) if root else Path(__file__).resolve().parents[1].parent / "shared"


def cube_tosses_path() -> Path:
    """The real cube tosses in the shared data, used by the ContactNets and sysid studies; never
    shipped with the package (its subset is: ``contactnets.data.bundled_path``)."""
    return shared_dir() / "data" / "cube_tosses" / "tosses.npz"


def file_sha256(path) -> str:
    """SHA-256 (hex) of a file's bytes: the same for a copy, a symlink, a relative or absolute path."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_npz(path, what: str = "data file") -> dict:
    """Every array of the ``.npz`` archive ``path``, read eagerly, as {name: numpy array}.

    One-line errors, the ``what`` of the file named: ``FileNotFoundError`` for a missing file,
    ``ValueError`` for anything that is not a readable archive (empty, truncated, plain text, a
    pickle, a single ``.npy`` array, a member that cannot be decompressed). Pickled object arrays
    are never loaded."""
    import numpy as np

    path = str(path)
    try:
        z = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise ValueError(f"{what} {path}: is a directory, not an .npz file") from None
    except Exception as err:  # empty (EOFError), text or pickle (ValueError), unreadable (OSError)
        raise ValueError(f"{what} {path}: not a readable .npz archive ({type(err).__name__}: {err})") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise ValueError(f"{what} {path}: a single .npy array, not an .npz archive of named arrays")
    try:
        with z:
            return {k: z[k] for k in z.files}
    except Exception as err:  # a truncated or corrupt member (zipfile / zlib errors)
        raise ValueError(f"{what} {path}: not a readable .npz archive ({type(err).__name__}: {err})") from None
