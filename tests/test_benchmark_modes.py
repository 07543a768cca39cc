"""The mode grammar of ``benchmarks.sysid_random_starts`` (pure Python: no compilation), through its
command line (tests do not import benchmark modules): ``--check-grammar`` runs the benchmark's
``check_grammar`` (recipes parse into their stages, bad modes and start lists are refused with
their message, ``--continue-from`` finds the mode a longer continuation extends)."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(*args, timeout=120):
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, "-m", "benchmarks.sysid_random_starts", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_mode_grammar_checks_pass():
    r = run("--check-grammar")
    assert r.returncode == 0, r.stderr[-3000:]
    n = int(r.stdout.split("mode grammar: ")[1].split()[0])
    assert n >= 30, r.stdout  # every case ran


def test_a_bad_mode_is_refused_with_its_message():
    r = run("--modes", "exact+polishX", "--starts", "1", "--throws", "1", "--steps", "10", "--out", os.devnull)
    assert r.returncode != 0 and "bad mode 'exact+polishX'" in r.stderr, r.stderr[-3000:]
