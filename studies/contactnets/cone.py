"""A ContactNets checkpoint's rollout metrics under its preset cone (the square) and Coulomb's disc.

    python -m studies.contactnets cone CHECKPOINT [--data TOSSES.npz] [--name contactnets_cone]

The family's rollouts use ``contactnets.laws.LCP_SETTINGS`` (``cone="box"``: the square its
pyramidal loss trains under; docs/worlds.md "Friction cone", "Presets"). This rolls out the
checkpoint (as ``jaxcontact contactnets evaluate``: ``train.sim_model_params``,
``evaluate.rollout_tosses`` from each toss's first state, eq. 18–19 metrics) twice, with the
preset and with the same law's solver at ``cone="elliptic"`` (the engine's default), and reports
both for every toss of the file and for the held-out ones (not used in training or validation,
matched by content). The preset is not changed: the disc is a what-if of the same learned geometry.

Writes studies/contactnets/results/<name>.{json,md}.
"""

from __future__ import annotations

import argparse
import dataclasses

from ..common import command_line
from .common import RESULTS

KEYS = ("pos_error", "rot_error_deg", "penetration", "n_tosses", "n_diverged")


def evaluate(checkpoint: str, data_path: str | None, cone: str | None) -> dict:
    """Metrics (all tosses, and ``held_out``) of the checkpoint's rollouts, its law's solver at
    ``cone`` (None: as the checkpoint loads, the family's preset)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxcontact.contactnets.data import load_tosses
    from jaxcontact.contactnets.evaluate import metrics, rollout_tosses, toss_roles
    from jaxcontact.contactnets.train import check_compatible, load_checkpoint, sim_model_params

    meta, theta = load_checkpoint(checkpoint)
    data = load_tosses(data_path)
    check_compatible(meta, data)
    model, params = sim_model_params(meta, theta)
    if cone is not None:
        law = model.law
        if not hasattr(law, "solver"):
            raise SystemExit(f"variant {meta['variant']!r}: its law has no contact solver (no cone to change)")
        model = dataclasses.replace(model, law=dataclasses.replace(law, solver=dataclasses.replace(law.solver, cone=cone)))
    pred = rollout_tosses(model, params, data)
    m = metrics(pred, data)
    held = toss_roles(meta, data)["held_out_index"]
    out = {k: m[k] for k in KEYS}
    out["cone"] = model.law.solver.cone if hasattr(model.law, "solver") else None
    if held:
        sub = data.subset(held)
        hm = metrics(pred[held][:, : int(sub.lengths.max())], sub)
        out["held_out"] = {k: hm[k] for k in KEYS}
    out["variant"] = meta["variant"]
    return out


def main(argv=None, prog="studies.contactnets cone") -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="checkpoint directory written by `jaxcontact contactnets train`")
    ap.add_argument("--data", default=None, help="toss .npz (default: the bundled subset)")
    ap.add_argument("--name", default="contactnets_cone", help="results file stem under studies/contactnets/results/")
    args = ap.parse_args(argv)
    from experiments.provenance import stamp, write_json

    res = {"preset": evaluate(args.checkpoint, args.data, None), "elliptic": evaluate(args.checkpoint, args.data, "elliptic")}
    res["provenance"] = stamp(command_line(prog, argv))
    write_json(RESULTS / f"{args.name}.json", res)
    rows = []
    for label, r in (("preset (" + str(res["preset"]["cone"]) + ")", res["preset"]), ("disc (elliptic)", res["elliptic"])):
        for part, m in (("all", r), ("held out", r.get("held_out"))):
            if m:
                rows.append(f"| {label} | {part} | {m['n_tosses']} | {m['pos_error']:.4f} | {m['rot_error_deg']:.2f} | "
                            f"{m['penetration']:.4f} | {m['n_diverged']} |")
    md = [f"# ContactNets ({res['preset']['variant']}) under its preset cone and Coulomb's disc", "",
          f"- Command: `{res['provenance'].get('command')}`", f"- Checkpoint: `{args.checkpoint}`",
          f"- Commit: {res['provenance'].get('commit')}", "",
          "| cone | tosses | n | position error (block widths) | rotation error (°) | penetration (block widths) | diverged |",
          "| --- | --- | --- | --- | --- | --- | --- |", *rows, ""]
    (RESULTS / f"{args.name}.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0
