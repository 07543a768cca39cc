"""Write benchmarks/results/contactnets_data_efficiency.md (+ .png) from the study's JSON results."""

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
R = REPO / "benchmarks" / "results"


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
    one = sp["one_at_a_time_transitions_per_s"]
    batched = ", ".join(f"batch {B}: {v:.0f} transitions/s ({v / one:.1f}x)" for B, v in sp["batched_transitions_per_s"].items())
    ref = sp["boxosqp_form"]
    lines += ["", f"Loss-and-gradient throughput (polytope, {sp['dtype']}, {sp['device']}, one run: `{sp['command']}`): "
              f"one transition per call in a Python loop {one:.0f} transitions/s; {batched}. Inner solver: {sp['inner']}. "
              f"For comparison, the (λ, slack) form with {ref['qp']}: batch 64 {ref['batched_transitions_per_s']:.0f}, "
              f"one at a time {ref['one_at_a_time_transitions_per_s']:.0f} transitions/s."]
    (R / "contactnets_data_efficiency.md").write_text("\n".join(lines) + "\n")
    plot_data_efficiency(d["results"], R / "contactnets_data_efficiency.png")


if __name__ == "__main__":
    main()
