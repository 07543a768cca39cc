"""Test configuration: float64 everywhere (physics checks need the precision), shared-data paths."""

import os
from pathlib import Path

import jax
import pytest

jax.config.update("jax_enable_x64", True)

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("JAXCONTACT_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return SHARED
