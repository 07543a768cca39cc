"""The published data's conventions that docs/impacts.md quotes, measured (float64, seconds).

    python -m studies.impacts.conventions     # writes studies/impacts/results/conventions.{json,md}

* Mirtich's published impulses (``impulse_models[:, 3]``) against the Coulomb form
  (``models.mirtich_coulomb``): the convention (μ, ε, normal-velocity offset a) fitted to the
  training impacts as ``study.fit_published_convention`` does for the six models, and the median
  relative difference on the test impacts (the study's split: seed 0, test fraction 0.3). The
  viscous form's is the study's own row (``impacts.json``: Mirtich ``published_median_rel_diff``).
* ``impulse_best``: the median relative difference between the published column and
  ``sysid.target_impulses(data, "best")`` (the feasible impulse minimising the velocity error),
  over all impacts.
* eq. 7's impulses (``target="eq7"``, unconstrained momentum least squares): the share outside the
  feasible set (``ellipse.feasibility``: energy, non-penetration, P_n ≥ 0), over all impacts.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

from jaxcontact.impacts import sysid  # noqa: E402
from jaxcontact.impacts.data import default_data_path, load_impacts, split_impacts  # noqa: E402
from jaxcontact.impacts.ellipse import feasibility  # noqa: E402
from jaxcontact.impacts.models import MODEL_NAMES, batched, mirtich_coulomb  # noqa: E402
from jaxcontact.impacts.study import fit_published_convention, rel_diff  # noqa: E402

from ..common import write_results  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "conventions"


def measure(data_path, seed: int = 0, test_fraction: float = 0.3) -> dict:
    full = load_impacts(data_path)
    with tempfile.TemporaryDirectory() as tmp:
        tr, te = split_impacts(data_path, test_fraction, seed, tmp)
        train, test = load_impacts(tr), load_impacts(te)
    k = MODEL_NAMES.index("Mirtich")
    mu, eps, a = fit_published_convention(mirtich_coulomb, train, k)
    P = np.asarray(batched(mirtich_coulomb)(test.u0 - np.array([0.0, a]), test.W, mu, eps))
    coulomb = float(np.median(rel_diff(P, test.raw["impulse_models"][:, k])))
    best = sysid.target_impulses(full, "best")
    best_diff = float(np.median(rel_diff(best, full.raw["impulse_best"])))
    eq7 = sysid.target_impulses(full, "eq7")
    ok = np.asarray(jax.vmap(feasibility)(eq7, full.u0, full.W))
    return {"data": str(data_path), "impacts": int(full.n), "split": {"seed": seed, "test_fraction": test_fraction,
            "train": int(train.n), "test": int(test.n)},
            "mirtich_coulomb_convention": {"mu": mu, "eps": eps, "normal_velocity_offset": a},
            "mirtich_coulomb_median_rel_diff": coulomb,
            "impulse_best_median_rel_diff": best_diff,
            "eq7_infeasible_fraction": float(1.0 - ok.mean())}


def render(d: dict) -> str:
    c = d["mirtich_coulomb_convention"]
    return "\n".join([
        "# Planar impacts: the published data's conventions", "",
        f"Reproduce: `{d['provenance']['command']}` (commit {str(d['provenance']['commit'])[:10]}); "
        f"{d['impacts']} impacts, split seed {d['split']['seed']} ({d['split']['train']} train / {d['split']['test']} test).", "",
        "| quantity | value |", "|---|---|",
        f"| Mirtich, Coulomb form (`mirtich_coulomb`), fitted convention μ {c['mu']:.4f}, ε {c['eps']:.4f}, "
        f"a {c['normal_velocity_offset']:.4f} m/s: median relative difference to the published impulses (test) "
        f"| {d['mirtich_coulomb_median_rel_diff']:.2e} |",
        f"| `impulse_best` vs the feasible velocity-error minimiser (all impacts), median relative difference "
        f"| {d['impulse_best_median_rel_diff']:.2e} |",
        f"| eq. 7 impulses outside the feasible set (all impacts) | {100 * d['eq7_infeasible_fraction']:.1f} % |",
        "", "The viscous form's median (the `Mirtich` model) is the study's: `impacts.md`, published-impulse table.", ""])


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m studies.impacts.conventions", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(default_data_path()))
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    doc = measure(args.data)
    write_results(args.out, doc, render)
    print(render(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
