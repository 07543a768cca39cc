"""Fused CPU kernels behind ``jax.ffi`` (XLA custom calls), compiled from their C++ source on first use.

- ``pgs.cc``: the projected Gauss–Seidel sweeps of a world's contacts (``solvers.body_lcp``'s
  velocity form) as one loop: the same iterates as the pure-JAX sweeps, at the speed of a compiled
  loop, with the batch of worlds split over threads.
- ``adjoint.cc``: the adjoint of that solve (the linear system of its implicit derivative) by
  block Gauss–Seidel on the active rows, in double precision: what ``solvers.body_lcp`` hands its
  reverse pass on a CPU instead of GMRES on the fixed-point map's products.
- ``narrow.cc``: the narrow phase of body–body contact (``collision.hull_hull``) as one loop over
  pairs: the same choices and values as the pure-JAX reference; ``collision`` recomputes the values
  from the kernel's choices in JAX for their derivatives.
- ``convex.cc``: the general convex method's axis search (``collision.convex_pair``'s
  ``_best_axis``: a cylinder or an ellipsoid against any kind) as one loop over pairs: the same
  candidates and pattern search as the pure-JAX reference; the axis is a choice without gradient,
  from which ``collision`` computes the manifold in JAX; and the whole pair (that search, then
  the manifold at its axis: ``convex_pair``'s candidates and reduction) as one kernel, bound in
  ``native/convex.py``, whose values ``collision`` differentiates in JAX at the kernel's choices.
- ``round.cc``: a sphere's or capsule's contacts against a hull (``collision.round_hull``) as one loop
  over pairs: the same formulas and choices as the pure-JAX reference, to round-off; bound in
  ``native/round.py``; ``collision`` takes the derivatives from the reference.

On first use they are compiled, as one library, with the machine's C++ compiler (``$CXX``, else
``c++``) against the XLA FFI headers that jaxlib ships, into ``$JAXCONTACT_NATIVE_CACHE`` (default
``~/.cache/jaxcontact/native``), keyed by the sources, jaxlib's version and the compiler; later
processes load the cached library. Where no compiler works, or ``JAXCONTACT_NATIVE=0``,
``available()`` is False and the callers take their pure-JAX paths (the references that give the
same answers), after one ``NativeWarning`` saying why. ``JAXCONTACT_THREADS`` caps the kernels'
threads (default: every core). ``bindings`` holds the ``jax.ffi`` calls of the solver's kernels
(``pgs_sweeps``, ``adjoint_solve``)."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import warnings
from pathlib import Path

SOURCES = tuple(Path(__file__).with_name(f) for f in ("pgs.cc", "narrow.cc", "adjoint.cc", "convex.cc", "round.cc"))
HEADERS = tuple(Path(__file__).with_name(f) for f in ("parallel.h", "vec3.h"))  # included by the sources (part of the cache key)
TARGETS = {"float32": ("jaxcontact_pgs_f32", "JaxcontactPgsF32"), "float64": ("jaxcontact_pgs_f64", "JaxcontactPgsF64")}
"""The sweeps' FFI targets (registered name, library symbol) per dtype."""
NARROW_TARGETS = {"float32": ("jaxcontact_narrow_f32", "JaxcontactNarrowF32"),
                  "float64": ("jaxcontact_narrow_f64", "JaxcontactNarrowF64")}
"""The narrow phase's FFI targets per dtype."""
ADJOINT_TARGETS = {"float32": ("jaxcontact_adjoint_f32", "JaxcontactAdjointF32"),
                   "float64": ("jaxcontact_adjoint_f64", "JaxcontactAdjointF64")}
"""The velocity-form solve's adjoint FFI targets per dtype."""
CONVEX_TARGETS = {"float32": ("jaxcontact_convex_f32", "JaxcontactConvexF32"),
                  "float64": ("jaxcontact_convex_f64", "JaxcontactConvexF64")}
"""The convex pairs' axis search FFI targets per dtype."""
CONVEX_PAIR_TARGETS = {"float32": ("jaxcontact_convex_pair_f32", "JaxcontactConvexPairF32"),
                       "float64": ("jaxcontact_convex_pair_f64", "JaxcontactConvexPairF64")}
"""The convex pairs' whole narrow phase (axis and manifold) FFI targets per dtype (binding: ``native.convex``)."""
ROUND_TARGETS = {"float32": ("jaxcontact_round_hull_f32", "JaxcontactRoundHullF32"),
                 "float64": ("jaxcontact_round_hull_f64", "JaxcontactRoundHullF64")}
"""A sphere's or capsule's contacts against a hull (``collision.round_hull``) FFI targets per dtype (binding:
``native.round``)."""
_lock = threading.Lock()
_state: dict = {}


class NativeWarning(UserWarning):
    """The fused CPU kernels could not be built or loaded: the pure-JAX paths run instead (slower)."""


def cache_dir() -> Path:
    return Path(os.environ.get("JAXCONTACT_NATIVE_CACHE") or Path.home() / ".cache" / "jaxcontact" / "native")


def _compiler() -> str | None:
    for c in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if c and shutil.which(c):
            return shutil.which(c)
    return None


def _run(cmds: list[list[str]]) -> None:
    """Run the commands at once (one compiler per source); the first failure raised with its stderr."""
    procs = [(cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)) for cmd in cmds]
    failed = None
    for cmd, proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0 and failed is None:
            failed = f"{' '.join(cmd)} failed: {err.strip()[-600:]}"
    if failed:
        raise RuntimeError(failed)


@contextlib.contextmanager
def _exclusive(path: Path):
    """One builder at a time per library (the others wait, then load its result): a file lock where
    the platform has ``fcntl``; elsewhere builders may overlap, each renaming its own result."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _build() -> Path:
    import jax.ffi
    import jaxlib

    cxx = _compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler found (set CXX, or install g++ or clang++)")
    flags = ["-O3", "-std=c++17", "-fPIC", "-w", "-pthread"]
    key = hashlib.sha256(b"\0".join([*(src.read_bytes() for src in SOURCES + HEADERS), jaxlib.__version__.encode(),
                                     cxx.encode(), " ".join(flags).encode()])).hexdigest()[:16]
    out = cache_dir() / f"kernels-{key}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    # processes that start together (test workers) wait for one build instead of each compiling
    with _exclusive(out.parent / f"{out.name}.lock"):
        if out.exists():
            return out
        with tempfile.TemporaryDirectory(dir=out.parent) as tmp:  # the rename into the cache is atomic
            objs = [Path(tmp) / f"{src.stem}.o" for src in SOURCES]
            _run([[cxx, *flags, f"-I{jax.ffi.include_dir()}", "-c", str(src), "-o", str(obj)]
                  for src, obj in zip(SOURCES, objs)])
            lib = Path(tmp) / out.name
            _run([[cxx, *flags, "-shared", *map(str, objs), "-o", str(lib)]])
            os.replace(lib, out)
    return out


def available() -> bool:
    """Whether the fused kernels are built, loaded and registered with XLA (builds them on first call)."""
    with _lock:
        if "ok" in _state:
            return _state["ok"]
        if os.environ.get("JAXCONTACT_NATIVE", "1") == "0":
            _state["ok"] = False
            return False
        try:
            import jax.ffi

            lib = ctypes.cdll.LoadLibrary(str(_build()))
            for target, symbol in (*TARGETS.values(), *NARROW_TARGETS.values(), *ADJOINT_TARGETS.values(),
                                   *CONVEX_TARGETS.values(), *CONVEX_PAIR_TARGETS.values(), *ROUND_TARGETS.values()):
                jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(getattr(lib, symbol)), platform="cpu")
            _state.update(ok=True, lib=lib)
        except Exception as err:  # noqa: BLE001 - any failure: the pure-JAX path, said once
            warnings.warn(f"jaxcontact's fused CPU kernels are unavailable ({err}); worlds use the pure-JAX sweeps "
                          "and narrow phase, which give the same answers more slowly", NativeWarning, stacklevel=2)
            _state["ok"] = False
        return _state["ok"]


def threads() -> int:
    """The kernel's thread cap (``JAXCONTACT_THREADS``; 0: every core)."""
    try:
        return max(0, int(os.environ.get("JAXCONTACT_THREADS", "0")))
    except ValueError:
        return 0


__all__ = ["ADJOINT_TARGETS", "CONVEX_PAIR_TARGETS", "CONVEX_TARGETS", "NARROW_TARGETS", "NativeWarning", "ROUND_TARGETS", "TARGETS", "available", "cache_dir", "threads"]
