"""Helpers shared by the ContactNets study's commands: the fixed test split, the lowest corner of
the cube, the results directory, and today's form of a recorded command."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..common import cube_tosses_path, default_work  # noqa: F401  (re-exported for the commands)

RESULTS = Path(__file__).resolve().parent / "results"
WORK = default_work("contactnets")

# the scripts these commands were before they became sub-commands of `python -m studies.contactnets`
_OLD = {"contactnets_study": "study", "contactnets_paired": "paired", "contactnets_report": "report",
        "contactnets_sensitivity": "sensitivity", "contactnets_rollout_finetune": "finetune",
        "contactnets_friction_scale": "friction-scale"}


def current_command(cmd: str) -> str:
    """A command recorded as ``python benchmarks/contactnets_<x>.py ...`` in today's form,
    ``python -m studies.contactnets <sub-command> ...`` (the options are the same)."""
    return re.sub(r"python benchmarks/(contactnets_\w+)\.py",
                  lambda m: f"python -m studies.contactnets {_OLD.get(m.group(1), m.group(1))}", cmd)


def cube_test_split(data, n_test: int = 48, seed: int = 12345):
    """(test, pool) of the ContactNets studies: a fixed random set of ``n_test`` held-out tosses of
    ``data`` (a ``TossData``), never used for training or model selection, and the remaining pool."""
    perm = np.random.default_rng(seed).permutation(data.n_tosses)
    return data.subset(np.sort(perm[:n_test])), data.subset(np.sort(perm[n_test:]))


