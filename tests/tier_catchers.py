"""How far the default tier could shrink by moving tests to the slow tier without losing a planted bug.

    python -m pytest -q -n 2 -p no:cacheprovider --durations=0 > tier.log      # a whole default-tier run
    python tests/tier_catchers.py tier.log --out benchmarks/results/tier_catchers

Reads the run's per-test seconds (pytest's ``--durations=0``: setup, call and teardown summed per test
id) and the planted bugs of ``tests/mutations.py``, each naming the default-tier tests that catch it.
Then, heaviest test first, a test is *movable* when every planted bug that names it is still named by
some test that stays (a name without parameters covers every parametrisation; a bug named only by a
whole file keeps that file's tests); otherwise it is a *catcher* that must stay. The catchers' share of
the test-seconds is the least the default tier can cost with every catcher kept as it is: the design
"move the rest to the slow tier" can reach at best that share of today's wall time. Seconds under load
are inflated, but nearly uniformly across tests, so the shares are what to read. Not part of any tier.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mutations  # noqa: E402  (tests/mutations.py, beside this file)


def durations(log: str) -> dict[str, float]:
    out: collections.Counter = collections.Counter()
    for m in re.finditer(r"^([\d.]+)s (setup|call|teardown)\s+(\S+)", log, re.M):
        out[m.group(3)] += float(m.group(1))
    return dict(out)


def covers(name: str, test_id: str) -> bool:
    return test_id == name or test_id.split("[")[0] == name or test_id.split("::")[0] == name


def split(dur: dict[str, float]) -> tuple[list[str], list[str]]:
    """(movable, catchers), heaviest first."""
    bugs = [m.tests for m in mutations.MUTATIONS]
    files_named = {t for names in bugs for t in names if "::" not in t}
    moved: set[str] = set()

    def still_caught(names, moved):
        for t in names:
            hits = [k for k in dur if covers(t, k)]
            if not hits or any(k not in moved for k in hits):
                return True  # a test too quick to be listed, or one that stays
        return False

    movable, catchers = [], []
    for k in sorted(dur, key=lambda k: -dur[k]):
        if k.split("::")[0] in files_named:
            catchers.append(k)
            continue
        trial = moved | {k}
        if all(still_caught(names, trial) for names in bugs if any(covers(t, k) for t in names)):
            moved.add(k)
            movable.append(k)
        else:
            catchers.append(k)
    return movable, catchers


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", help="output of a default-tier pytest run with --durations=0")
    ap.add_argument("--out", default=None, help="write <out>.json and <out>.md")
    ap.add_argument("--wall", type=float, default=None, help="that run's wall seconds, for the projection")
    a = ap.parse_args(argv)
    dur = durations(Path(a.log).read_text())
    movable, catchers = split(dur)
    total = sum(dur.values())
    c = sum(dur[k] for k in catchers)
    files: collections.Counter = collections.Counter()
    for k in catchers:
        files[k.split("::")[0]] += dur[k]
    res = {"log": a.log, "tests": len(dur), "test_seconds": round(total, 1), "catchers": len(catchers),
           "catcher_seconds": round(c, 1), "catcher_share": round(c / total, 4), "movable": len(movable),
           "movable_seconds": round(total - c, 1), "planted_bugs": len(mutations.MUTATIONS),
           "catchers_by_file": {f: round(v, 1) for f, v in files.most_common()},
           "heaviest_catchers": [[k, round(dur[k], 1)] for k in catchers[:40]]}
    lines = [f"- tests timed: {len(dur)}, {total:.0f} test-seconds; planted bugs: {len(mutations.MUTATIONS)}",
             f"- catchers (a planted bug is named by no other staying test): {len(catchers)} tests, "
             f"{c:.0f} test-seconds = **{c / total:.0%}**",
             f"- movable: {len(movable)} tests, {total - c:.0f} test-seconds"]
    if a.wall:
        lines.append(f"- that run's wall {a.wall:.0f} s; the catchers alone at the same rate: about "
                     f"{a.wall * c / total:.0f} s")
    lines += ["", "| catcher file | test-seconds |", "|---|---|"]
    lines += [f"| {f} | {v:.1f} |" for f, v in files.most_common(25)]
    lines += ["", "| heaviest catchers | test-seconds |", "|---|---|"]
    lines += [f"| {k} | {dur[k]:.1f} |" for k in catchers[:25]]
    print("\n".join(lines[:4]))
    if a.out:
        Path(a.out + ".json").write_text(json.dumps(res, indent=1) + "\n")
        Path(a.out + ".md").write_text("# The default tier's catchers of planted bugs\n\n- Command: `python tests/"
                                       f"tier_catchers.py {a.log} --out {a.out}`\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
