"""Checks the command line makes before it computes: argparse types for counts and physical
values, output paths, and the memory a run will need.

The argparse types (``positive_int``, ``nonnegative_int``, ``seed``, ``positive_float``,
``nonnegative_float``, ``unit_interval``, ``output_file``, ``output_npz``, ``output_figure``,
``output_dir``) run
while the command line is parsed, so a bad value is a one-line error before anything is
loaded or simulated. ``output_file`` and friends check the names against the file system's
length limits and probe the directory that will hold the output by creating and removing an
empty hidden file in it (so a read-only file system or ``/proc`` is refused before the work,
not after it); they create nothing else.

After the work: ``optional_outputs`` writes a command's optional outputs (figures, extra
files) once its primary result is out; a failure there is one line and a non-zero exit status,
the result stays written.
"""

from __future__ import annotations

import argparse
import math
import os
import stat
import tempfile
from pathlib import Path


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return x


def positive_int(text: str) -> int:
    """An integer >= 1 (counts of steps, throws, epochs, windows, ...)."""
    n = _int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer (>= 1), got {text!r}")
    return n


def nonnegative_int(text: str) -> int:
    """An integer >= 0 (seeds, indices, counts where 0 means off)."""
    n = _int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return n


SEED_MAX = 2**32 - 1  # one 32-bit word, taken by numpy and JAX alike (JAX's PRNGKey overflows from 2**63)


def seed(text: str) -> int:
    """A random seed: an integer in [0, 2**32 - 1]."""
    n = _int(text)
    if not 0 <= n <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be a seed in [0, {SEED_MAX}], got {text!r}")
    return n


def positive_float(text: str) -> float:
    """A finite number > 0 (time steps, rates)."""
    x = _float(text)
    if x <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return x


def nonnegative_float(text: str) -> float:
    """A finite number >= 0 (friction coefficients, noise, time limits where 0 means off)."""
    x = _float(text)
    if x < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return x


def unit_interval(text: str) -> float:
    """A finite number in [0, 1] (restitution, fractions)."""
    x = _float(text)
    if not 0.0 <= x <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text!r}")
    return x


# ------------------------------------------------------------------------------------ paths


def _name_max(directory: Path) -> tuple[int, int]:
    """(longest file name in bytes, longest path) the file system of ``directory`` takes."""
    def conf(name, default):
        try:
            return int(os.pathconf(directory, name))
        except (OSError, ValueError, AttributeError):
            return default

    return conf("PC_NAME_MAX", 255), conf("PC_PATH_MAX", 4096)


def check_names(path: Path, existing: Path) -> None:
    """``ValueError`` if a component of ``path`` below the existing directory ``existing`` (the
    names still to be created) or the whole path is longer than the file system takes."""
    name_max, path_max = _name_max(existing)
    full = os.fsencode(str(path.absolute()))
    if len(full) >= path_max:
        raise ValueError(f"the path {str(path)[:60]}... is {len(full)} bytes, longer than the file system's limit "
                         f"of {path_max - 1}")
    for part in path.relative_to(existing).parts if path != existing else ():
        if len(os.fsencode(part)) > name_max:
            raise ValueError(f"the file name {part[:40]}... is {len(os.fsencode(part))} bytes, longer than the "
                             f"file system's limit of {name_max} ({existing})")


def probe_writable(directory: Path) -> None:
    """``ValueError`` unless a file can be created in the existing ``directory``: an empty hidden
    file is created and removed (catches read-only file systems and /proc, where permissions alone
    say writable)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".jaxcontact-probe-", dir=directory)
    except OSError as err:
        raise ValueError(f"cannot create files in {directory} ({err.strerror or type(err).__name__})") from None
    os.close(fd)
    os.unlink(name)


def _stat(path: Path):
    try:
        return os.stat(path)
    except OSError:  # absent, or a name the file system cannot hold (``check_names`` says which)
        return None


def _exists(path: Path) -> bool:
    return _stat(path) is not None


def _is_dir(path: Path) -> bool:
    st = _stat(path)
    return st is not None and stat.S_ISDIR(st.st_mode)


def nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    path = Path(path)
    while not _exists(path) and path != path.parent:
        path = path.parent
    return path


def check_writable_parent(path: Path) -> None:
    """``ValueError`` unless ``path``'s parent is an existing directory files can be created in
    and ``path``'s name fits the file system."""
    parent = path.parent
    if not _is_dir(parent):
        raise ValueError(f"the directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"the directory {parent} is not writable")
    check_names(path, parent)
    probe_writable(parent)


def check_output_file(path, suffix: str | None = None) -> Path:
    """The file path a command will write (``suffix`` appended if missing, as numpy's ``savez``
    does), checked: not a directory, parent exists and takes new files (``probe_writable``), the
    name fits the file system, an existing file writable. ``ValueError`` (one line) otherwise."""
    path = Path(path)
    check_names(path, nearest_existing(path.parent))
    if _is_dir(path):
        raise ValueError(f"{path} is a directory, expected a file name")
    if suffix and path.suffix != suffix:
        path = path.with_name(path.name + suffix)
    if _is_dir(path):
        raise ValueError(f"{path} is a directory, expected a file name")
    check_writable_parent(path)
    if _exists(path) and not os.access(path, os.W_OK):
        raise ValueError(f"{path} exists and is not writable")
    return path


# formats matplotlib's savefig writes; another (or no) suffix gets ".png", which savefig would
# otherwise append itself (no suffix) or refuse after the computation (unknown suffix)
FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp", ".pgf")


def check_output_figure(path) -> Path:
    """``check_output_file`` for a figure: ".png" appended unless the suffix is a figure format."""
    path = Path(path)
    if _is_dir(path):
        raise ValueError(f"{path} is a directory, expected a file name")
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        path = path.with_name(path.name + ".png")
    return check_output_file(path)


def check_creatable_directory(path: Path) -> None:
    """``ValueError`` unless the directory ``path`` (missing parents included, as ``mkdir -p``
    creates them) can be created: its nearest existing ancestor is a writable directory."""
    anc = nearest_existing(path.parent)
    if not _is_dir(anc):
        raise ValueError(f"{anc} is not a directory, so {path} cannot be created")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise ValueError(f"the directory {anc} is not writable, so {path} cannot be created")
    check_names(path, anc)
    try:
        probe_writable(anc)
    except ValueError as err:
        raise ValueError(f"{err}, so {path} cannot be created") from None


def check_output_directory(path) -> Path:
    """A directory a command writes files into: an existing writable directory, or a new one
    that can be created with its missing parents (the writers create them). ``ValueError``
    otherwise."""
    path = Path(path)
    check_names(path, nearest_existing(path))
    if _exists(path):
        if not _is_dir(path):
            raise ValueError(f"{path} exists and is not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise ValueError(f"the directory {path} is not writable")
        check_names(path, path)
        probe_writable(path)
        return path
    check_creatable_directory(path)
    return path


def _argtype(check):
    def convert(text: str):
        try:
            return str(check(text))
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    convert.__name__ = check.__name__
    return convert


output_file = _argtype(check_output_file)
output_file.__doc__ = "argparse type: a writable output file path (``check_output_file``)."
output_npz = _argtype(lambda p: check_output_file(p, ".npz"))
output_npz.__doc__ = "argparse type: a writable .npz output path, '.npz' appended if missing as numpy does."
output_figure = _argtype(check_output_figure)
output_figure.__doc__ = "argparse type: a writable figure path, '.png' appended unless it has a figure suffix."
output_dir = _argtype(check_output_directory)
output_dir.__doc__ = "argparse type: a directory to write files into (``check_output_directory``)."


# ------------------------------------------------------------------------------------ memory


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation: psutil if installed, else /proc/meminfo's
    MemAvailable, else free pages from ``os.sysconf``; None if none of them answers."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # not installed, or no answer on this platform
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 / 10 else f"{n / 2**20:.1f} MiB"


def check_memory(needed: int, what: str, hint: str, available: int | None = None) -> None:
    """``MemoryError`` (one line: needed, available, ``hint``) if ``needed`` bytes exceed the
    memory available (``available_memory()`` unless given); nothing if it cannot be measured."""
    available = available_memory() if available is None else available
    if available is not None and needed > available:
        raise MemoryError(f"{what} needs about {_gib(needed)} of memory but {_gib(available)} is available; {hint}")


def trajectory_bytes(throws: int, steps: int, state_size: int, itemsize: int, copies: int = 2) -> int:
    """Bytes of ``copies`` arrays of throws × (steps + 1) states of ``state_size`` numbers."""
    return int(copies) * int(throws) * (int(steps) + 1) * int(state_size) * int(itemsize)


# ------------------------------------------------------------------------------------ after the result


def error_line(err: BaseException) -> str:
    """The one line printed for an error: an ``OSError`` as "<what> (<path>)"."""
    if isinstance(err, OSError) and err.filename is not None:
        what = err.strerror or type(err).__name__
        paths = " -> ".join(str(f) for f in (err.filename, err.filename2) if f is not None)
        return f"{what} ({paths})"
    return str(err) or type(err).__name__


def optional_outputs(*jobs) -> int:
    """Run ``(option, write)`` jobs that write a command's optional outputs (figures, extra
    files) after its primary result was printed or saved. A failing job is one line on stderr
    naming the option ("jaxcontact: error: --plot: ..."), the others still run; returns 2 if
    any failed, else 0 (the command's exit status, its result already out)."""
    import sys

    failed = 0
    for option, write in jobs:
        try:
            write()
        except Exception as err:  # an optional output never takes the result with it
            failed = 2
            print(f"jaxcontact: error: {option}: {error_line(err)} (the result was written before it)",
                  file=sys.stderr)
    return failed
