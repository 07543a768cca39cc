"""CPU seconds of each test, the measure by which the default tier is trimmed (docs/testing.md).

The 2-core machine is shared, so wall times swing with the other processes' load; the CPU seconds a
test costs (this process's threads, compiling included, plus its finished subprocesses) do not.
As a pytest plugin it appends one JSON line per test as the test ends, so a run killed by a crash
keeps what it measured, and ``TIER_CPU_RESUME=1`` deselects the tests already in the log:

    PYTHONPATH=$PWD TIER_CPU_LOG=cpu.jsonl python -m pytest -q -n 2 -p benchmarks.tier_cpu
    # (-p no:xdist for one process; the tests run without a persistent compilation cache unless
    # JAXCONTACT_TEST_CACHE=1, tests/conftest.py: then give it an empty JAX_COMPILATION_CACHE_DIR)
    python -m benchmarks tier_cpu cpu.jsonl --top 30      # the table: per file and the top tests

A module- or session-scoped fixture is charged to the first test that uses it.

With ``TIER_CPU_PROGRAMS=1`` (and the persistent compilation cache on: ``JAXCONTACT_TEST_CACHE=1``) each line also lists the
programs the test compiled (``miss``: module name and cache key) and those it found already compiled
by an earlier test or worker (``hit``: name, key, compile seconds saved): a program that several
tests compile is one to share (``--programs`` prints them, the most compile seconds first):

    python -m benchmarks tier_cpu cpu.jsonl --programs 20
"""

from __future__ import annotations

import collections
import json
import os
import resource
import sys
import time

import pytest

LOG = os.environ.get("TIER_CPU_LOG", "tier_cpu.jsonl")
_programs: dict = {"miss": [], "hit": []}


def _watch_programs() -> None:
    """Record each compile request's cache key (JAX's own log calls of a persistent-cache hit or
    miss) and the compile seconds a hit saved (its monitoring event)."""
    import jax
    from jax._src import compiler

    hit, miss = compiler.log_persistent_cache_hit, compiler.log_persistent_cache_miss

    def log_hit(name, key):
        _programs["hit"].append([name, key, None])
        return hit(name, key)

    def log_miss(name, key):
        _programs["miss"].append([name, key])
        return miss(name, key)

    def saved(event, seconds, **_):
        if event == "/jax/compilation_cache/compile_time_saved_sec" and _programs["hit"]:
            _programs["hit"][-1][2] = round(seconds, 3)

    compiler.log_persistent_cache_hit, compiler.log_persistent_cache_miss = log_hit, log_miss
    jax.monitoring.register_event_duration_secs_listener(saved)


if os.environ.get("TIER_CPU_PROGRAMS") == "1":
    _watch_programs()


def _cpu() -> tuple[float, float]:
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), c.ru_utime + c.ru_stime


def pytest_collection_modifyitems(config, items):
    if os.environ.get("TIER_CPU_RESUME") == "1" and os.path.exists(LOG):
        with open(LOG) as f:
            done = {json.loads(line)["id"] for line in f if line.strip()}
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid in done])
        items[:] = [i for i in items if i.nodeid not in done]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    w0, (s0, c0) = time.perf_counter(), _cpu()
    yield
    (s1, c1), w1 = _cpu(), time.perf_counter()
    row = {"id": item.nodeid, "wall": w1 - w0, "cpu": s1 - s0, "child": c1 - c0, "t": time.time()}
    if os.environ.get("TIER_CPU_PROGRAMS") == "1":
        row.update(miss=_programs["miss"], hit=_programs["hit"], worker=os.environ.get("PYTEST_XDIST_WORKER"))
        _programs.update(miss=[], hit=[])
    with open(LOG, "a") as f:
        f.write(json.dumps(row) + "\n")


def table(rows: list[dict], top: int = 30) -> str:
    """Markdown: the total, CPU seconds per file, and the ``top`` tests by CPU seconds."""
    cost = lambda r: r["cpu"] + r["child"]
    files = collections.Counter()
    for r in rows:
        files[r["id"].split("::")[0]] += cost(r)
    out = [f"{len(rows)} tests, {sum(map(cost, rows)):.0f} CPU s (wall {sum(r['wall'] for r in rows):.0f} s)", "",
           "| file | CPU s |", "| --- | --- |"]
    out += [f"| `{k}` | {v:.1f} |" for k, v in files.most_common()]
    out += ["", "| test | CPU s |", "| --- | --- |"]
    out += [f"| `{r['id']}` | {cost(r):.1f} |" for r in sorted(rows, key=cost, reverse=True)[:top]]
    return "\n".join(out)


def programs(rows: list[dict], top: int = 20) -> str:
    """Markdown: the programs compiled by more than one test (from ``TIER_CPU_PROGRAMS=1`` lines),
    by the compile seconds their repeats cost, each with the tests that needed it."""
    tests, saved = collections.defaultdict(list), collections.Counter()
    for r in rows:
        for name, key in r.get("miss", []):
            tests[key].append(r["id"])
        for name, key, s in r.get("hit", []):
            tests[key].append(r["id"])
            saved[key] += s or 0.0
    out = ["| program (cache key) | repeats | compile s of the repeats | tests |", "| --- | --- | --- | --- |"]
    for key, s in saved.most_common(top):
        ids = sorted(set(tests[key]))
        out.append(f"| `{key[:40]}` | {len(tests[key]) - 1} | {s:.1f} | {'<br>'.join(ids[:6])}"
                   f"{' …' if len(ids) > 6 else ''} |")
    return "\n".join(out)


def arguments(ap):
    ap.add_argument("log", help="the JSON lines the plugin wrote")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--programs", type=int, default=0, help="also the N programs most compiled again")


def run(a, out) -> None:
    """``python -m benchmarks tier_cpu LOG``: the tables, printed (``out`` is None)."""
    with open(a.log) as f:
        rows = list({r["id"]: r for r in map(json.loads, filter(str.strip, f))}.values())
    print(table(rows, a.top))
    if a.programs:
        print("\n" + programs(rows, a.programs))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
