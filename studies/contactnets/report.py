"""Write studies/contactnets/results/contactnets_data_efficiency.md (+ .png) from the study's JSON
results (mean over the seeds of each (variant, training tosses) row; per-seed values in brackets).

    python -m studies.contactnets report [--out DIR]

Reads contactnets_data_efficiency.json, contactnets_speed.json and contactnets_paired.json from
studies/contactnets/results/; writes there unless ``--out``. Commands recorded as
``python benchmarks/contactnets_<x>.py`` are shown in today's form, ``python -m studies.contactnets <x>``.
"""

import argparse
import json
from pathlib import Path

import numpy as np

from .common import RESULTS as R
from .common import current_command
from .paired import summary


def _rate_cells(r, key, sizes):
    return [f"{r['batched_transitions_per_s' + key][str(B)]['best']:.0f} / {r['batched_transitions_per_s' + key][str(B)]['median']:.0f} "
            f"({r['speedup_best' + key][str(B)]:.1f}x / {r['speedup_median' + key][str(B)]:.1f}x)" for B in sizes]


def speed_paragraph(sp):
    """The throughput paragraph from contactnets_speed.json (per inner-solver path and dtype)."""
    if "paths" not in sp:  # the older single-path format
        one = sp["one_at_a_time_transitions_per_s"]
        batched = ", ".join(f"batch {B}: {v:.0f} transitions/s ({v / one:.1f}x)" for B, v in sp["batched_transitions_per_s"].items())
        return (f"Loss-and-gradient throughput (polytope, {sp['dtype']}, {sp['device']}, `{current_command(sp['command'])}`): one transition "
                f"per call {one:.0f} transitions/s; {batched}. Inner solver: {sp['inner']}.")
    load = ""
    if "load_average_before" in sp:
        load = (f" Load average (1/5/15 min) before {'/'.join(f'{x:.1f}' for x in sp['load_average_before'])}, after "
                f"{'/'.join(f'{x:.1f}' for x in sp['load_average_after'])}.")
    parts = [f"Loss-and-gradient throughput of the polytope model (`{current_command(sp['command'])}`, {sp['device']} "
             f"({sp.get('device_kind', '?')}), {sp['cpu_threads_visible']} CPU threads shared with other jobs; single and "
             f"batched calls of the same compiled function measured interleaved in {sp['rounds']} rounds, best / median of "
             f"the rounds; speedups best/best and median/median).{load}", ""]
    clocks = [("", "wall clock")] + ([("_cpu", "CPU time (process CPU seconds, all threads)")]
                                     if "one_at_a_time_transitions_per_s_cpu" in next(iter(sp["paths"].values())) else [])
    for key, label in clocks:
        parts += [f"Transitions per second of {label}:", "",
                  "| path | dtype | one at a time | " + " | ".join(f"batch {B}" for B in sp["batch_sizes"]) + " |",
                  "| --- | --- | --- | " + " | ".join("---" for _ in sp["batch_sizes"]) + " |"]
        for name, r in sp["paths"].items():
            one = r["one_at_a_time_transitions_per_s" + key]
            parts.append(f"| {r['inner']} | {r['dtype']} | {one['best']:.0f} / {one['median']:.0f} | "
                         + " | ".join(_rate_cells(r, key, sp["batch_sizes"])) + " |")
        parts.append("")
    ref = sp["boxosqp_form"]
    ag = sp["loss_agreement"]
    parts += [f"For comparison, the (λ, slack) form with {ref['qp']} (float64, wall clock): one at a time "
              f"{ref['one_at_a_time_transitions_per_s']['best']:.0f} / {ref['one_at_a_time_transitions_per_s']['median']:.0f}, "
              f"batch 64 {ref['batched_transitions_per_s']['64']['best']:.0f} / {ref['batched_transitions_per_s']['64']['median']:.0f} "
              "transitions/s. Loss agreement with the float64 jaxopt path on "
              f"{ag['transitions']} transitions (max |Δ| / max loss): fista float64 "
              f"{ag['fista_f64']['max_abs_diff_over_max_loss']:.1e}, fista float32 {ag['fista_f32']['max_abs_diff_over_max_loss']:.1e}."]
    if "loss_accuracy_vs_converged" in sp:
        acc = sp["loss_accuracy_vs_converged"]
        parts[-1] += (" Accuracy of the 100-iteration losses against a converged float64 solve (5000 iterations), max |Δ| / "
                      "max loss and relative error of the mean: " + ", ".join(
                          f"{k} {v['max_abs_diff_over_max_loss']:.1e} / {v['mean_loss_rel_diff']:.1e}" for k, v in acc.items()) + ".")
    return "\n".join(parts)


def _mean(rows, k):
    v = [m[k] for m in rows if np.isfinite(m[k])]
    return float(np.mean(v)) if v else float("nan")


def comparison(d):
    """Mean over seeds per training-set size: the learned polytope(s) against the tuned LCP, and the
    issue's targets evaluated on these means."""
    res = d["results"]
    ns = sorted({int(n) for v in res.values() for n in v})
    cols = [v for v in ("polytope", "polytope_vr", "lcp", "e2e", "deep") if v in res]
    head = "| tosses | " + " | ".join(f"{v} pos / rot (seeds)" for v in cols)
    lines = [head + " | polytope / lcp pos | polytope / lcp rot |", "| --- " * (len(cols) + 3) + "|"]
    for n in ns:
        cells = []
        for v in cols:
            rows = res[v].get(str(n), [])
            cells.append(f"{_mean(rows, 'pos_error'):.3f} / {_mean(rows, 'rot_error_deg'):.1f} ({len(rows)})" if rows else "–")
        rp, rl = res.get("polytope", {}).get(str(n), []), res.get("lcp", {}).get(str(n), [])
        ratio = (f"{_mean(rp, 'pos_error') / _mean(rl, 'pos_error'):.2f} | {_mean(rp, 'rot_error_deg') / _mean(rl, 'rot_error_deg'):.2f}"
                 if rp and rl else "– | –")
        lines.append(f"| {n} | " + " | ".join(cells) + f" | {ratio} |")
    if "polytope_vr" in res and "polytope" in res:  # paired: the same seeds (same training tosses)
        lines += ["", "`polytope_vr` against `polytope` and `lcp` on the same seeds (same training tosses), means:", "",
                  "| tosses | seeds | polytope pos / rot | polytope_vr pos / rot | lcp pos / rot |", "| --- | --- | --- | --- | --- |"]
        for n in ns:
            vr = res["polytope_vr"].get(str(n), [])
            seeds = {m["seed"] for m in vr}
            same = lambda v: [m for m in res.get(v, {}).get(str(n), []) if m["seed"] in seeds]
            if vr:
                cell = lambda rows: f"{_mean(rows, 'pos_error'):.3f} / {_mean(rows, 'rot_error_deg'):.1f}" if rows else "–"
                lines.append(f"| {n} | {','.join(map(str, sorted(seeds)))} | {cell(same('polytope'))} | {cell(vr)} | "
                             f"{cell(same('lcp'))} |")
    return "\n".join(lines)


def targets(d):
    """The issue's three accuracy targets, evaluated on the means over seeds (stated plainly)."""
    res = d["results"]
    poly, lcp, e2e = res.get("polytope", {}), res.get("lcp", {}), res.get("e2e", {})
    out = ["Targets, evaluated on the means over seeds:", ""]
    big = [n for n in sorted(poly, key=int) if int(n) >= 32]
    pen = {n: (_mean(poly[n], "penetration"), max(m["penetration"] for m in poly[n])) for n in big}
    ok = all(v[0] <= 0.02 for v in pen.values())
    out.append(f"- Polytope penetration <= 2 % of the block width from 32 tosses on: {'met' if ok else 'NOT met'} on the means ("
               + ", ".join(f"{n}: {v[0]:.4f}" for n, v in pen.items()) + "); largest single run "
               + f"{max(v[1] for v in pen.values()):.4f}.")
    if "32" in poly and "256" in e2e:
        pp, ep = _mean(poly["32"], "pos_error"), _mean(e2e["256"], "pos_error")
        pr, er = _mean(poly["32"], "rot_error_deg"), _mean(e2e["256"], "rot_error_deg")
        out.append(f"- Polytope with 32 tosses at least as good as E2E with 256: "
                   f"{'met' if pp <= ep and pr <= er else 'NOT met'} (pos {pp:.3f} vs {ep:.3f}, rot {pr:.1f} vs {er:.1f} deg).")
    def against_lcp(rows_by_n):
        """(sizes, {size: (pos ratio, rot ratio)}, sizes at least 10 % better in both) of a learned variant."""
        common = [n for n in sorted(rows_by_n, key=int) if n in lcp]
        r = {n: (_mean(rows_by_n[n], "pos_error") / _mean(lcp[n], "pos_error"),
                 _mean(rows_by_n[n], "rot_error_deg") / _mean(lcp[n], "rot_error_deg")) for n in common}
        return common, r, [n for n in common if r[n][0] <= 0.9 and r[n][1] <= 0.9]

    sizes = lambda ns: f"{', '.join(ns) if ns else 'no'} training-set size{'s' if len(ns) != 1 else ''}"
    ratios = lambda r: "; ".join(f"{n}: {a:.2f}, {b:.2f}" for n, (a, b) in r.items())
    common, r, clear = against_lcp(poly)
    verdict = "met" if len(clear) == len(common) else "NOT met: the learned polytope is not clearly better than the tuned Coulomb LCP"
    out.append(f"- Learned models clearly below the tuned Coulomb LCP: {verdict} (at least 10 % better in both position and "
               f"rotation at {sizes(clear)}; polytope / LCP ratios pos, rot: {ratios(r)}).")
    for v in ["polytope_vr", "deep"] + sorted(k for k in res if k.startswith("deep_")):  # the others, for the record
        if res.get(v):
            _, rv, cv = against_lcp(res[v])
            seeds = sorted({m["seed"] for rows in res[v].values() for m in rows})
            out.append(f"  {v} (seeds {', '.join(map(str, seeds))}): clearly better at {sizes(cv)}; {v} / LCP ratios pos, rot: "
                       f"{ratios(rv)}.")
    paired = R / "contactnets_paired.json"  # python -m studies.contactnets paired: the same rows with intervals
    sure, rows, top = summary(json.loads(paired.read_text())["rows"]) if paired.exists() else ([], [], None)
    if top is not None:
        out.append(f"  Paired on the test tosses with bootstrap intervals ([contactnets_paired.md](contactnets_paired.md)): "
                   f"{len(sure)} of {len(rows)} ContactNets (variant, size) rows have both 95 % upper bounds below 0.9; the "
                   f"most likely to be clearly better is {top['variant']} with {top['tosses']} tosses (pos "
                   f"{top['pos_ratio']:.2f} [{top['pos_ratio_ci95'][0]:.2f}, {top['pos_ratio_ci95'][1]:.2f}], rot "
                   f"{top['rot_ratio']:.2f} [{top['rot_ratio_ci95'][0]:.2f}, {top['rot_ratio_ci95'][1]:.2f}], p_clear "
                   f"{top['p_clear']:.2f}).")
    return "\n".join(out)


def main(argv=None, prog="studies.contactnets report"):
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(R), help="directory of the .md and .png (default %(default)s)")
    out = Path(ap.parse_args(argv).out)
    out.mkdir(parents=True, exist_ok=True)
    from jaxcontact.contactnets.plots import plot_data_efficiency

    d = json.loads((R / "contactnets_data_efficiency.json").read_text())
    sp = json.loads((R / "contactnets_speed.json").read_text())
    cmds = d.get("commands", [d.get("command", "")])
    lines = ["# ContactNets data efficiency on real cube tosses", "",
             "Commands (in order; each re-run replaces only the (variant, tosses, seed) rows it trains): "
             + "; ".join(f"`{current_command(c)}`" for c in cmds) + " (then `python -m studies.contactnets report`). "
             f"Held-out test tosses: {d['n_test']}; caps: {d['caps']}. `polytope_vr`: the polytope with the parameters "
             "chosen among the 8 lowest-validation-loss rounds by the rollouts of the validation tosses "
             "(`TrainConfig(select=\"rollout\")`).", "",
             "Mean over seeds (per-seed values in brackets, seed order as listed):", "",
             "| variant | training tosses | seeds | pos error (block widths) | rot error (deg) | penetration (block widths) | diverged | train time (s) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for v, byn in d["results"].items():
        for n in sorted(byn, key=int):
            rows = byn[n]
            per = lambda k, f: f"{_mean(rows, k):{f}}" + (" [" + ", ".join(f"{m[k]:{f}}" for m in rows) + "]" if len(rows) > 1 else "")
            lines.append(f"| {v} | {n} | {','.join(str(m.get('seed', 0)) for m in rows)} | {per('pos_error', '.3f')} | "
                         f"{per('rot_error_deg', '.1f')} | {per('penetration', '.4f')} | {sum(m['n_diverged'] for m in rows)} | "
                         f"{np.mean([m['train_time_s'] for m in rows]):.0f} |")
    lines += ["", "Means over seeds side by side (pos in block widths / rot in degrees; number of seeds in brackets):", "",
              comparison(d), "", targets(d), "", speed_paragraph(sp)]
    (out / "contactnets_data_efficiency.md").write_text("\n".join(lines) + "\n")
    plot_data_efficiency({k: r for k, r in d["results"].items() if not k.startswith("deep_")}, out / "contactnets_data_efficiency.png")

