"""Paired comparison of the learned models with the tuned Coulomb LCP on the same held-out tosses.

    python -m studies.contactnets paired [--work DIR] [--seeds 0,1,2] [--boot 10000]

Reads the checkpoints that ``python -m studies.contactnets study`` left in ``--work`` (default
``work/contactnets``; ``{variant}_{tosses}_s{seed}``),
rolls each one out from the first state of every test toss (the study's fixed 48-toss split) and
keeps the per-toss errors. For every training-set size and every learned variant whose checkpoints
and the LCP's exist for some of ``--seeds``, the per-toss errors of both are averaged over those
seeds (the same seed draws the same training tosses for every variant, so the comparison is paired
in the training data too), and

* ratio = mean over tosses of the learned model's error / the LCP's, position and rotation;
* a 95 % percentile interval of each ratio from a bootstrap over the test tosses (the same
  resampled tosses for both models);
* p_clear = the fraction of bootstrap samples with both ratios <= 0.9 (the study's "clearly below",
  at least 10 % better in both errors), and the per-toss win rate (learned error < LCP error).

The interval covers the sampling of the test tosses only, not of the training seeds (those are
averaged). Writes studies/contactnets/results/contactnets_paired.json and .md (``--out`` to change).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from ..common import command_line
from .common import RESULTS, WORK, cube_test_split, cube_tosses_path, current_command
LEARNED = ("polytope", "polytope_vr", "deep", "deep_p", "deep_zR", "deep_vertex", "e2e")


def paired(learned: np.ndarray, lcp: np.ndarray, boot: int, rng) -> dict:
    """learned, lcp: (tosses, 2) per-toss (position, rotation) errors. Ratios of the means with
    bootstrap intervals over the tosses, p_clear and win rates."""
    n = len(lcp)
    idx = rng.integers(0, n, size=(boot, n))
    lm, cm = learned[idx].mean(axis=1), lcp[idx].mean(axis=1)  # (boot, 2)
    r = lm / cm
    ratio = learned.mean(axis=0) / lcp.mean(axis=0)
    lo, hi = np.percentile(r, [2.5, 97.5], axis=0)
    return {
        "pos_ratio": float(ratio[0]), "rot_ratio": float(ratio[1]),
        "pos_ratio_ci95": [float(lo[0]), float(hi[0])], "rot_ratio_ci95": [float(lo[1]), float(hi[1])],
        "p_clear": float(np.mean((r[:, 0] <= 0.9) & (r[:, 1] <= 0.9))),
        "pos_win_rate": float(np.mean(learned[:, 0] < lcp[:, 0])),
        "rot_win_rate": float(np.mean(learned[:, 1] < lcp[:, 1])),
        "learned_mean": [float(x) for x in learned.mean(axis=0)], "lcp_mean": [float(x) for x in lcp.mean(axis=0)],
    }


def main(argv=None, prog="studies.contactnets paired") -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(cube_tosses_path()))
    ap.add_argument("--work", default=WORK, help="the study's --work directory (default %(default)s)")
    ap.add_argument("--n-test", type=int, default=48)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--sizes", default="4,8,16,32,64,128,256")
    ap.add_argument("--variants", default=",".join(LEARNED))
    ap.add_argument("--boot", type=int, default=10000, help="bootstrap resamples of the test tosses")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)

    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxcontact.contactnets.data import load_tosses
    from jaxcontact.contactnets.evaluate import metrics, rollout_tosses
    from jaxcontact.contactnets.train import load_checkpoint, sim_model_params

    test, _ = cube_test_split(load_tosses(args.data), args.n_test)
    seeds = [int(s) for s in args.seeds.split(",")]
    work = Path(args.work)
    t0 = time.perf_counter()
    cache = {}  # checkpoint directory -> (tosses, 2) per-toss (position, rotation) errors

    def toss_errors(variant, n, seed):
        ck = work / f"{variant}_{n}_s{seed}"
        if ck not in cache:
            meta, theta = load_checkpoint(ck)
            if meta["n_tosses"] != n or meta["variant"] != variant.split("_")[0]:
                raise ValueError(f"{ck}: holds a {meta['variant']} model of {meta['n_tosses']} tosses")
            m = metrics(rollout_tosses(*sim_model_params(meta, theta), test), test)["per_toss"]
            cache[ck] = np.stack([m["pos_error"], m["rot_error_deg"]], axis=1)
        return cache[ck]

    have = lambda v, n, s: (work / f"{v}_{n}_s{s}" / "meta.json").exists()  # noqa: E731
    rng = np.random.default_rng(0)
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        for v in args.variants.split(","):
            # the seeds with both checkpoints: both models averaged over the same training draws
            common = [s for s in seeds if have(v, n, s) and have("lcp", n, s)]
            if not common:
                continue
            e = np.mean([toss_errors(v, n, s) for s in common], axis=0)
            base = np.mean([toss_errors("lcp", n, s) for s in common], axis=0)
            row = dict(variant=v, tosses=n, seeds=common, **paired(e, base, args.boot, rng))
            rows.append(row)
            print(f"{v:12s} N={n:4d} seeds {common}  pos {row['pos_ratio']:.2f} [{row['pos_ratio_ci95'][0]:.2f}, "
                  f"{row['pos_ratio_ci95'][1]:.2f}]  rot {row['rot_ratio']:.2f} [{row['rot_ratio_ci95'][0]:.2f}, "
                  f"{row['rot_ratio_ci95'][1]:.2f}]  p_clear {row['p_clear']:.3f}", flush=True)
    if not rows:
        raise SystemExit(f"no complete (lcp, learned) checkpoint sets for seeds {seeds} in {work}")
    command = command_line(prog, argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    res = {"command": command, "n_test": test.n_tosses, "test_toss_ids": test.toss_ids.tolist(), "seeds": seeds,
           "bootstrap_resamples": args.boot, "seconds": time.perf_counter() - t0, "rows": rows}
    (out / "contactnets_paired.json").write_text(json.dumps(res, indent=1))
    (out / "contactnets_paired.md").write_text(report(res))
    return 0


def summary(rows):
    """(rows with both 95 % upper bounds below 0.9, the ContactNets rows (E2E left out), the ContactNets row
    with the largest p_clear or None) of the paired rows."""
    contenders = [r for r in rows if r["variant"] != "e2e"]
    sure = [r for r in contenders if r["pos_ratio_ci95"][1] < 0.9 and r["rot_ratio_ci95"][1] < 0.9]
    return sure, contenders, max(contenders, key=lambda r: r["p_clear"], default=None)


def report(res) -> str:
    ci = lambda c: f"[{c[0]:.2f}, {c[1]:.2f}]"  # noqa: E731
    lines = [
        "# Learned ContactNets models against the tuned Coulomb LCP, paired on the held-out tosses", "",
        f"Command: `{current_command(res['command'])}` (checkpoints of `python -m studies.contactnets study`). {res['n_test']} held-out "
        f"test tosses; per-toss errors of both models averaged over the training seeds of the row (of "
        f"{', '.join(map(str, res['seeds']))}; each seed draws the same training tosses for every variant); ratio = learned mean error / LCP mean error; 95 % interval of "
        f"the ratio from {res['bootstrap_resamples']} bootstrap resamples of the test tosses (the same tosses for both "
        "models; training-seed variation is averaged, not covered); p_clear = fraction of resamples in which the "
        "learned model is at least 10 % better in both errors; win = fraction of tosses with the smaller error.", "",
        "| variant | training tosses | seeds | pos ratio [95 %] | rot ratio [95 %] | p_clear | pos win | rot win |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in res["rows"]:
        lines.append(f"| {r['variant']} | {r['tosses']} | {','.join(map(str, r['seeds']))} | {r['pos_ratio']:.2f} {ci(r['pos_ratio_ci95'])} | "
                     f"{r['rot_ratio']:.2f} {ci(r['rot_ratio_ci95'])} | {r['p_clear']:.3f} | {r['pos_win_rate']:.2f} | "
                     f"{r['rot_win_rate']:.2f} |")
    sure, contenders, best = summary(res["rows"])
    lines += ["", "Reading: a learned model is clearly (>= 10 %) better than the LCP in both errors with confidence only "
              "where both intervals lie below 0.9."]
    if best is not None:
        lines.append(f"Rows where both upper bounds are below 0.9: {len(sure)} of {len(contenders)} ContactNets rows. "
                     f"Largest p_clear: {best['variant']} with {best['tosses']} tosses, {best['p_clear']:.3f}.")
    return "\n".join(lines) + "\n"

