"""Write benchmarks/results/contactnets_data_efficiency.md (+ .png) from the study's JSON results."""

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
R = REPO / "benchmarks" / "results"


def speed_paragraph(sp):
    """The throughput paragraph from contactnets_speed.json (per inner-solver path and dtype)."""
    if "paths" not in sp:  # the older single-path format
        one = sp["one_at_a_time_transitions_per_s"]
        batched = ", ".join(f"batch {B}: {v:.0f} transitions/s ({v / one:.1f}x)" for B, v in sp["batched_transitions_per_s"].items())
        return (f"Loss-and-gradient throughput (polytope, {sp['dtype']}, {sp['device']}, `{sp['command']}`): one transition "
                f"per call {one:.0f} transitions/s; {batched}. Inner solver: {sp['inner']}.")
    parts = [f"Loss-and-gradient throughput of the polytope model (`{sp['command']}`, {sp['device']} "
             f"({sp.get('device_kind', '?')}), {sp['cpu_threads_visible']} CPU threads shared with other jobs; single and "
             f"batched calls of the same compiled function measured interleaved in {sp['rounds']} rounds, best / median of "
             f"the rounds; speedups best/best and median/median):", ""]
    parts += ["| path | dtype | one at a time (transitions/s) | " + " | ".join(f"batch {B}" for B in sp["batch_sizes"]) + " |",
              "| --- | --- | --- | " + " | ".join("---" for _ in sp["batch_sizes"]) + " |"]
    for name, r in sp["paths"].items():
        one = r["one_at_a_time_transitions_per_s"]
        cells = [f"{r['batched_transitions_per_s'][str(B)]['best']:.0f} / {r['batched_transitions_per_s'][str(B)]['median']:.0f} "
                 f"({r['speedup_best'][str(B)]:.1f}x / {r['speedup_median'][str(B)]:.1f}x)" for B in sp["batch_sizes"]]
        parts.append(f"| {r['inner']} | {r['dtype']} | {one['best']:.0f} / {one['median']:.0f} | " + " | ".join(cells) + " |")
    ref = sp["boxosqp_form"]
    ag = sp["loss_agreement"]
    parts += ["", f"For comparison, the (λ, slack) form with {ref['qp']} (float64): one at a time "
              f"{ref['one_at_a_time_transitions_per_s']['best']:.0f} / {ref['one_at_a_time_transitions_per_s']['median']:.0f}, "
              f"batch 64 {ref['batched_transitions_per_s']['64']['best']:.0f} / {ref['batched_transitions_per_s']['64']['median']:.0f} "
              "transitions/s. Loss agreement with the float64 jaxopt path on "
              f"{ag['transitions']} transitions (max |Δ| / max loss): fista float64 "
              f"{ag['fista_f64']['max_abs_diff_over_max_loss']:.1e}, fista float32 {ag['fista_f32']['max_abs_diff_over_max_loss']:.1e}."]
    return "\n".join(parts)


def main():
    from jaxcontact.contactnets.plots import plot_data_efficiency

    d = json.loads((R / "contactnets_data_efficiency.json").read_text())
    sp = json.loads((R / "contactnets_speed.json").read_text())
    lines = ["# ContactNets data efficiency on real cube tosses", "",
             f"Command: `{d['command']}` (then `python benchmarks/contactnets_report.py`). "
             f"Held-out test tosses: {d['n_test']}; one seed ({d['seed']}); caps: {d['caps']}.", "",
             "| variant | training tosses | pos error (block widths) | rot error (deg) | penetration (block widths) | diverged | train time (s) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for v, byn in d["results"].items():
        for n in sorted(byn, key=int):
            for m in byn[n]:
                lines.append(f"| {v} | {n} | {m['pos_error']:.3f} | {m['rot_error_deg']:.1f} | {m['penetration']:.4f} | "
                             f"{m['n_diverged']} | {m['train_time_s']:.0f} |")
    lines += ["", speed_paragraph(sp)]
    (R / "contactnets_data_efficiency.md").write_text("\n".join(lines) + "\n")
    plot_data_efficiency(d["results"], R / "contactnets_data_efficiency.png")


if __name__ == "__main__":
    main()
