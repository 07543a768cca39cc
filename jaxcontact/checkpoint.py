"""Checkpoint directories: written atomically, verified on load, marked finished or not.

Every checkpoint kind (``contactnets``, ``dacm``) is a directory of payload files (parameters)
and ``meta.json``. This module is the one place that writes and reads such directories:

* ``write_checkpoint`` writes the files into a hidden temporary sibling folder, records the
  SHA-256 of every payload file and the training status in ``meta.json`` (written last), and
  only then renames the folder into place. An existing checkpoint at the same path (a
  best-so-far update of the same run, or ``--force``) is renamed away first and removed after
  the new one is in place, so a reader never sees a half-written checkpoint.
* ``verified_files`` checks every payload file against its recorded SHA-256, and ``read_meta``
  checks ``meta.json`` against its own (``meta["meta_sha256"]``, the SHA-256 of its canonical
  JSON without that key): a changed, truncated or missing file — ``meta.json`` included, e.g. an
  edited ``"shape"`` — is a one-line ``ValueError`` naming the file.
* ``meta["status"]`` is ``"finished"``, ``"interrupted"`` (Ctrl-C: best-so-far parameters) or
  ``"in_progress"`` (written during training; left behind if the process died), with
  ``meta["reached"]`` saying how far training got. ``status_warning`` is the one-line warning
  evaluate commands print for anything but a finished checkpoint.
* ``RunDirectory`` is where one training run writes: ``--out`` itself if it is new or empty,
  otherwise (``--force`` over an existing checkpoint) the sibling ``<out>.partial``, which is
  swapped into ``--out`` only when training finishes — a crash or Ctrl-C never leaves an
  untrained checkpoint in place of a trained one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import threading
from pathlib import Path

META = "meta.json"
STATUSES = ("finished", "interrupted", "in_progress")
PARTIAL_SUFFIX = ".partial"


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during training; ``str()`` is the one line the command line prints (exit status 130),
    saying where the best-so-far checkpoint was saved. ``partial``: what a trainer that does not
    save checkpoints itself hands to its caller to save (e.g. ``dacm.train.train``)."""

    def __init__(self, message: str, partial=None):
        super().__init__(message)
        self.partial = partial


def sha256_bytes(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


META_SUM = "meta_sha256"


def meta_checksum(meta: dict) -> str:
    """SHA-256 of ``meta`` (without ``META_SUM``) as canonical JSON: sorted keys, no spaces, after a
    JSON round trip (so tuples and lists, and the file's own layout, do not matter)."""
    body = json.loads(json.dumps({k: v for k, v in meta.items() if k != META_SUM}))
    return sha256_bytes(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


@contextlib.contextmanager
def _sigint_deferred():
    """Ctrl-C inside the block is delivered when it ends (only the main thread gets signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got = []
    old = signal.signal(signal.SIGINT, lambda *a: got.append(a))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        if got and callable(old):
            old(*got[0])


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_synced(path: Path, blob: bytes) -> None:
    with open(path, "wb") as f:
        f.write(blob)
        f.flush()
        os.fsync(f.fileno())


def write_checkpoint(path, files: dict, meta: dict, status: str, reached: dict | None = None) -> dict:
    """Write the checkpoint directory ``path`` atomically; returns the meta as written.

    files: {file name: bytes} payload files; their SHA-256 go into ``meta["files"]``, with
    ``meta["status"]`` (one of ``STATUSES``) and ``meta["reached"]`` (how far training got).
    An existing directory at ``path`` is replaced only once the new one is complete."""
    if status not in STATUSES:
        raise ValueError(f"checkpoint status must be one of {STATUSES}, got {status!r}")
    if META in files:
        raise ValueError(f"{META} is written by write_checkpoint, not a payload file")
    path = Path(path)
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True)
    meta = dict(meta, status=status, reached=dict(reached or {}),
                files={name: sha256_bytes(blob) for name, blob in files.items()})
    meta.pop(META_SUM, None)
    meta[META_SUM] = meta_checksum(meta)
    tmp = parent / f".{path.name}.tmp-{os.getpid()}"
    old = parent / f".{path.name}.old-{os.getpid()}"
    for stale in (tmp, old):
        shutil.rmtree(stale, ignore_errors=True)
    try:
        tmp.mkdir()
        for name, blob in files.items():
            _write_synced(tmp / name, blob)
        _write_synced(tmp / META, json.dumps(meta, indent=1).encode())  # last: its presence means complete
        _fsync_dir(tmp)
        with _sigint_deferred():  # the swap is never cut in half by Ctrl-C
            if path.exists():
                path.rename(old)
            tmp.rename(path)
            _fsync_dir(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not path.exists():
            old.rename(path)  # the previous checkpoint stays
        raise
    shutil.rmtree(old, ignore_errors=True)
    return meta


def read_meta(path) -> dict:
    """``meta.json`` of the checkpoint directory ``path``, verified against its own checksum
    (``FileNotFoundError`` / ``ValueError``). A meta without payload checksums (``files``) is of a
    format older than ``write_checkpoint``'s and has none; its loader decides whether to accept it."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"checkpoint directory not found: {path}")
    f = path / META
    if not f.is_file():
        raise ValueError(f"{path}: not a checkpoint directory (missing {META})")
    try:
        meta = json.loads(f.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{f}: corrupt {META} ({err})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{f}: corrupt {META} (not a JSON object)")
    if META_SUM not in meta and "files" in meta:  # written by write_checkpoint (older formats record neither)
        raise ValueError(f"{f}: records no checksum of itself ({META_SUM}): edited, or written by an older version "
                         "(retrain to get a verifiable checkpoint)")
    if META_SUM in meta and meta[META_SUM] != meta_checksum(meta):
        raise ValueError(f"{f}: checksum mismatch, {META} was changed after training (its SHA-256 does not match "
                         f"{META_SUM})")
    return meta


def verified_files(path, meta: dict, names) -> dict:
    """{name: bytes} of the payload files ``names``, each checked against ``meta["files"]``."""
    path = Path(path)
    sums = meta.get("files")
    if not isinstance(sums, dict):
        raise ValueError(f"{path}: {META} records no checksums (corrupt checkpoint)")
    out = {}
    for name in names:
        f = path / name
        if name not in sums:
            raise ValueError(f"{f}: no checksum in {META} (corrupt checkpoint)")
        if not f.is_file():
            raise ValueError(f"{f}: missing (corrupt or incomplete checkpoint)")
        blob = f.read_bytes()
        if sha256_bytes(blob) != sums[name]:
            raise ValueError(f"{f}: checksum mismatch, the file is corrupt or was changed after training "
                             f"(SHA-256 does not match {META})")
        out[name] = blob
    return out


def status_warning(path, meta: dict) -> str | None:
    """One-line warning for a checkpoint that is not marked finished, else None."""
    status = meta.get("status")
    if status == "finished":
        return None
    reached = meta.get("reached") or {}
    where = ", ".join(f"{k} {v}" for k, v in reached.items())
    where = f" ({where})" if where else ""
    if status == "interrupted":
        return f"warning: checkpoint {path} is from an interrupted training run{where}: best-so-far parameters"
    if status == "in_progress":
        return (f"warning: checkpoint {path} was written while training was in progress{where} and the run never "
                "finished (it crashed or is still running): best-so-far parameters")
    return f"warning: checkpoint {path} does not record whether its training finished (written by an older version)"


# ------------------------------------------------------------------------------------ --out


def check_output_dir(path, force: bool, what: str = "--out") -> Path:
    """Refuse an existing non-empty directory (unless ``force``), a path that is a file, or one
    that cannot be created (missing parents are fine: the checkpoint writer creates them; the
    nearest existing ancestor must be a writable directory). One-line ``ValueError``; touches nothing."""
    from .cliargs import check_creatable_directory

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{what} {path}: exists and is not a directory")
    if not path.exists():
        try:
            check_creatable_directory(path)
        except ValueError as err:
            raise ValueError(f"{what} {path}: {err}") from None
    if path.is_dir() and any(path.iterdir()):
        if not force:
            raise ValueError(f"{what} {path}: exists and is not empty (use --force to replace it once the new "
                             "checkpoint is complete)")
        if not os.access(path, os.W_OK | os.X_OK):
            raise ValueError(f"{what} {path}: not writable")
    return path


class RunDirectory:
    """Where one training run writes its checkpoint (see the module docstring).

    ``save(files, meta, status, reached)`` writes to ``work``: ``out`` itself when ``out`` is new
    or empty, else ``<out>.partial``. ``save(..., status="finished")`` then swaps ``work`` into
    ``out``. An interrupted run over an existing checkpoint stays in ``<out>.partial``."""

    def __init__(self, out, force: bool = True):
        self.out = check_output_dir(out, force)
        self.replacing = self.out.is_dir() and any(self.out.iterdir())
        self.work = self.out.with_name(self.out.name + PARTIAL_SUFFIX) if self.replacing else self.out

    def save(self, files: dict, meta: dict, status: str, reached: dict | None = None) -> dict:
        meta = write_checkpoint(self.work, files, meta, status, reached)
        if status == "finished" and self.work != self.out:
            with _sigint_deferred():
                replace_directory(self.work, self.out)
            self.work = self.out
        return meta

    def where(self) -> str:
        """Where the latest save is, for messages."""
        if self.work == self.out:
            return str(self.out)
        return f"{self.work} (the previous checkpoint in {self.out} is unchanged)"


def replace_directory(src, dst) -> None:
    """Replace the directory ``dst`` by the complete checkpoint directory ``src`` (renames only)."""
    src, dst = Path(src), Path(dst)
    old = dst.parent / f".{dst.name}.old-{os.getpid()}"
    shutil.rmtree(old, ignore_errors=True)
    if dst.exists():
        dst.rename(old)
    try:
        src.rename(dst)
    except BaseException:
        if old.exists() and not dst.exists():
            old.rename(dst)
        raise
    _fsync_dir(dst.parent)
    shutil.rmtree(old, ignore_errors=True)
