"""Test configuration: float64 everywhere (physics checks need the precision), shared-data paths,
and a persistent JAX compilation cache shared by the workers, the CLI subprocesses and the notebook
kernels of one run (the suite is compile-bound and compiles many programs more than once; the
cache keys on the compiled program, so a code change never reuses a stale entry)."""

import os
from pathlib import Path

import jax
import pytest

REPO = Path(__file__).resolve().parents[1]
# environment variables, so subprocesses (CLI tests, notebook kernels) share the cache too
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(REPO / ".pytest_cache" / "jax-compilation-cache"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.3")
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
jax.config.update("jax_persistent_cache_min_compile_time_secs",
                  float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]))
jax.config.update("jax_enable_x64", True)

SHARED = Path(os.environ.get("JAXCONTACT_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return SHARED
