"""Test configuration: float64 everywhere (physics checks need the precision), shared-data paths,
a lower LLVM optimisation level for the compiled CPU programs, and a persistent JAX compilation
cache for the CLI subprocesses and notebook kernels of one run, not for the test processes
(``JAXCONTACT_TEST_CACHE=1``: for them too; ``=0``: none)."""

import os
from pathlib import Path

# LLVM's optimisation level for the CPU programs the tests compile: 0 instead of XLA's default 2.
# The suite is compile-bound (hundreds of small programs, most run a few times), and the XLA-level
# passes (fusion, simplification) still run, so the programs compute the same operations; measured
# in docs/testing.md. Set before jax starts its backend; subprocesses and notebook kernels inherit
# it. A user's XLA_FLAGS that already names the level wins.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

import jax  # noqa: E402
import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# The persistent cache serves the subprocesses (the CLI tests' commands, notebook kernels), not the
# test processes themselves (JAXCONTACT_TEST_CACHE=1: them too; =0: none). Writing an entry serialises
# the freshly compiled executable (jax's compilation_cache.put_executable_and_time ->
# executable.serialize()), and that call segfaulted a worker in each whole-tier run of 2026-11-28 (a
# different program each time, also in single-process runs; never reproduced alone): a crash only a
# cache write reaches. In the workers it paid little (their programs are nearly all distinct: 80 hits in
# 1,095 compile requests saved 2.6 s net, first 146 tests, benchmarks.tier_cpu TIER_CPU_PROGRAMS);
# the commands start cold and compile what earlier commands did (the family CLIs' train/evaluate), and
# keep it. Measured in docs/testing.md.
CACHE = os.environ.get("JAXCONTACT_TEST_CACHE", "subprocesses")
if CACHE != "0":
    # environment variables, so subprocesses (CLI tests, notebook kernels) share the cache
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(REPO / ".pytest_cache" / "jax-compilation-cache"))
    # programs that compile in 0.1 s or more are written to the cache: the subprocesses compile many of
    # the same mid-sized programs (0.1-0.3 s each); measured in docs/testing.md
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.1")
    # Readers and writers of the shared cache take its file lock. Without a size limit JAX writes an
    # entry in place and unlocked, so a process could read another's half-written executable: two
    # workers compiling the same program at once (the cradle and inelastic-pair tests share one) crashed
    # a worker in CI. With a limit (far above what a run writes) every get/put holds the lock.
    os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(16 * 2**30))
if CACHE == "1":
    jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
    jax.config.update("jax_compilation_cache_max_size", int(os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"]))
    jax.config.update("jax_persistent_cache_min_compile_time_secs",
                      float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]))
else:  # this process neither reads nor writes it, whatever JAX read from the environment
    jax.config.update("jax_enable_compilation_cache", False)
jax.config.update("jax_enable_x64", True)

SHARED = Path(os.environ.get("JAXCONTACT_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return SHARED


@pytest.fixture(scope="session")
def fake_dacm_data():
    """Writer of a small dacm data file that ``dacm.data.load`` accepts (random values, no
    simulation): ``fake_dacm_data(path, **arrays_to_change)``."""
    import numpy as np

    def write(path, n=40, **change):
        rng = np.random.default_rng(0)
        d = {"format": np.array("jaxcontact.dacm.data/1"), "shape": np.array("box"), "dim": np.array(3),
             "x": rng.normal(size=(n, 23)), "kind": rng.integers(1, 4, n), "label": rng.integers(0, 3, n),
             "wrench": rng.normal(size=(n, 6)), "throw": rng.integers(0, 6, n), "step": np.arange(n),
             "mu": np.array([0.18, 0.18]), "anisotropic": np.array(False), "n_throws": np.array(6),
             "seed": np.array(0), "steps": np.array(800), "dt": np.array(0.002)}
        d.update(change)
        np.savez(path, **d)
        return path

    return write


# ---------------------------------------------------------------------------- crashed workers
# CI has twice lost an xdist worker to a fatal signal inside XLA (a different test each time, each
# passing alone and on rerun; docs/testing.md). A crashed test is rescheduled once on a fresh
# worker and reported as "rerun" in the summary line; a second crash fails it. Each worker writes
# its fatal-signal traceback to .pytest_cache/worker-crash-<id>-<pid>.log, and the summary prints
# the head of any that is not empty (the signal and the crashing thread), which the CI excerpt
# otherwise cuts off.
CRASH_DIR = REPO / ".pytest_cache"
_crashes: dict = {}


@pytest.hookimpl(trylast=True)  # after pytest's faulthandler plugin, which points it at stderr
def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        import faulthandler

        CRASH_DIR.mkdir(exist_ok=True)
        config._crash_log = open(CRASH_DIR / f"worker-crash-{worker}-{os.getpid()}.log", "w")
        faulthandler.enable(file=config._crash_log, all_threads=True)


def pytest_sessionstart(session):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        for old in CRASH_DIR.glob("worker-crash-*.log"):
            old.unlink()


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem, report, sched):
    _crashes[crashitem] = _crashes.get(crashitem, 0) + 1
    if _crashes[crashitem] == 1:
        sched.mark_test_pending(crashitem)
        report.outcome = "rerun"
        report.longrepr = f"{report.longrepr}: rescheduled once on a fresh worker"


def pytest_report_teststatus(report):
    if report.outcome == "rerun":
        return "rerun", "R", ("RERUN", {"yellow": True})


def pytest_terminal_summary(terminalreporter):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for name, n in _crashes.items():
        terminalreporter.write_line(f"worker crash: {name} crashed a worker {n} time(s)"
                                    f"{'' if n > 1 else ', then was rerun on a fresh worker'}", yellow=True)
    for log in sorted(CRASH_DIR.glob("worker-crash-*.log")):
        text = log.read_text(errors="replace").strip()
        if text:
            lines = text.splitlines()
            at = next((i for i, line in enumerate(lines) if line.startswith("Current thread")), 1)
            terminalreporter.write_line(f"{log.name}: {lines[0]}; the crashing thread, innermost first:", red=True)
            for line in lines[at:at + 20]:
                terminalreporter.write_line("  " + line)


# A worker keeps every program it compiled (JAX's in-memory caches): by the end of the default tier
# about 6 GB resident each (2026-11-28), which the machine's out-of-memory killer ended once, and
# the tier's two crashes inside XLA's compiler (test_world_sweeps' kernel gradient, both times late
# in a worker's life) came with workers that large. Programs are rarely shared across files (80
# cache hits in 1,095 compiles), so each file's programs are dropped when the worker moves on.
def pytest_runtest_teardown(item, nextitem):
    if nextitem is None or nextitem.module is not item.module:
        import gc

        jax.clear_caches()
        gc.collect()
