"""dacm oracle diagnosis: which learned part of Algorithm 1 causes the trajectory error?

Rolls out a trained dacm checkpoint on fresh test throws with parts of the law replaced by the
ground truth *at the rollout's own state*: the Coulomb LCP (the GT law) is solved at every step,
its impulse written in the patch frame, and for the chosen patch types

* ``class``: the classifier's output is replaced by the GT label of that step
  (``features.label`` of the GT impulse: static / dynamic / detach),
* ``friction``: the regressor's friction wrench is replaced by the GT friction wrench
  (no dissipative scaling of it).

Everything else (patch detector, static branch, frictionless LCP for the normal impulse) stays
dacm's. "all oracle" (GT classes and GT friction on every patch type) measures what the
decomposition itself costs; the single replacements say which network dominates the error.

    python -m studies.dacm oracle --checkpoint box_plus_ckpt --throws 100 --dissipative --label box_plus

(a checkpoint name is looked up in ``--work``, default ``work/dacm``, the study's work directory;
results are merged into ``--out``, default studies/dacm/results/dacm_oracle.json, under ``--label``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontact import geometry
from jaxcontact.dacm import data as D
from jaxcontact.dacm import evaluate as E
from jaxcontact.dacm import features as F
from jaxcontact.dacm import train as T
from jaxcontact.dacm.law import DACMLaw
from jaxcontact.dacm.data import GROUND_TRUTH_LAW
from jaxcontact.laws import CoulombLCP
from jaxcontact.types import Params

from ..common import command_line, default_work, in_work

RESULTS = Path(__file__).resolve().parent / "results"


@dataclasses.dataclass(frozen=True)
class OracleDACM(DACMLaw):
    """DACMLaw with GT classes / GT friction for the patch types listed (params.law["gt"]:
    the GT law's parameters)."""

    oracle_class: tuple[int, ...] = ()
    oracle_friction: tuple[int, ...] = ()
    gt_law: CoulombLCP = GROUND_TRUTH_LAW

    def __call__(self, model, params, state, v_free):
        body, ground = params.body, params.ground
        patch, _, logits, wf = self.predict(model, params, state, v_free)
        cls = jnp.argmax(logits).astype(jnp.int32)
        p_gt, _ = self.gt_law(model, Params(body=body, ground=ground, law=params.law["gt"]), state, v_free)
        Minv = geometry.mass_matrix_inverse(body, state)
        lab = F.label(body, ground, state, v_free + Minv @ p_gt, p_gt, patch, model.dt)
        w_gt = F.to_patch_frame(ground, state, patch.centre, p_gt)
        nf = F.NF[self.dim]
        wf_gt = jnp.zeros_like(wf).at[:nf].set(w_gt[:nf])
        use_c = jnp.isin(patch.kind, jnp.asarray(self.oracle_class or (-9,)))
        use_f = jnp.isin(patch.kind, jnp.asarray(self.oracle_friction or (-9,)))
        cls = jnp.where(use_c, lab, cls)
        wf = jnp.where(use_f, wf_gt, wf)
        return self.impulse(model, params, state, v_free, patch, cls, wf, keep_friction=use_f)


VARIANTS = {
    "learned": ((), ()),
    "gt_class_all": ((1, 2, 3), ()),
    "gt_friction_point": ((), (1,)),
    "gt_friction_line": ((), (2,)),
    "gt_friction_face": ((), (3,)),
    "gt_friction_all": ((), (1, 2, 3)),
    "gt_class_and_friction_all": ((1, 2, 3), (1, 2, 3)),
}


def main(argv=None, prog="studies.dacm oracle"):
    jax.config.update("jax_enable_x64", True)
    p = argparse.ArgumentParser(prog=f"python -m {prog}", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True, help="a dacm checkpoint (a name is looked up in --work)")
    p.add_argument("--work", default=default_work("dacm"), help="the dacm study's work directory (default %(default)s)")
    p.add_argument("--throws", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--steps", type=int, default=E.STEPS)
    p.add_argument("--dissipative", action="store_true")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--directions", action="store_true",
                   help="also roll out the Fig. 7 direction throws (evaluate.direction_throws): distance per direction")
    p.add_argument("--out", default=str(RESULTS / "dacm_oracle.json"),
                   help="JSON file; results are merged into it under --label (default %(default)s)")
    p.add_argument("--label", default=None, help="key in --out (default: checkpoint path, +dissipative)")
    a = p.parse_args(argv)
    a.checkpoint = str(in_work(a.checkpoint, a.work))
    dl, dp, _, _, meta = T.load_checkpoint(a.checkpoint)
    gt_model, gt_params = D.ground_truth_setup(meta["shape"], bool(meta.get("anisotropic")))
    s0 = D.throws(meta["shape"], a.throws, a.seed)
    t0 = time.perf_counter()
    gt = D.simulate(gt_model, gt_params, s0, a.steps)
    trajs, setups = {}, {}
    res = {"command": command_line(prog, argv),
           "checkpoint": a.checkpoint, "throws": a.throws, "seed": a.seed, "dissipative": a.dissipative,
           "seconds": {}}
    for name in a.variants.split(","):
        oc, of = VARIANTS[name]
        law = OracleDACM(**{f.name: getattr(dl, f.name) for f in dataclasses.fields(DACMLaw)},
                         oracle_class=oc, oracle_friction=of)
        law = dataclasses.replace(law, dissipative=a.dissipative)
        lp = dict(dp, gt=gt_params.law)
        m, prm = E.learned_setup(gt_model, gt_params, law, lp)
        setups[name] = (m, prm)
        t1 = time.perf_counter()
        trajs[name] = D.simulate(m, prm, s0, a.steps)
        res["seconds"][name] = round(time.perf_counter() - t1, 1)
        print(name, res["seconds"][name], file=sys.stderr, flush=True)
    tm = E.trajectory_metrics(gt, trajs, gt_model, gt_params)
    res["trajectory"] = tm
    if a.directions:
        sd, deg = E.direction_throws(dtype=gt_params.body.mass.dtype)
        dist = lambda tr: np.linalg.norm(np.asarray(tr.pos[:, -1, :2] - tr.pos[:, 0, :2]), axis=1)
        g = dist(D.simulate(gt_model, gt_params, sd, a.steps))
        res["directions"] = {"directions_deg": deg.round(1).tolist(), "gt": g.tolist()}
        for name, (m, prm) in setups.items():
            dd = dist(D.simulate(m, prm, sd, a.steps))
            rel = np.abs(dd - g) / g
            res["directions"][name] = {"distance": dd.tolist(), "relative_error": rel.tolist(),
                                       "max_relative_error": float(rel.max())}
            print(f"directions {name:<26} max {rel.max():.1%}  " + " ".join(f"{x:.1%}" for x in rel))
    res["seconds"]["total"] = round(time.perf_counter() - t0, 1)
    keys = ("final_position", "final_orientation", "first_impulse")
    print(f"{'variant':<28}" + "".join(f"{k:>20}" for k in keys))
    print(f"{'GT mean':<28}" + "".join(f"{tm['gt_mean'][k]:>20.3f}" for k in keys))
    for name in trajs:
        print(f"{name:<28}" + "".join(f"{tm[name][k]:>20.3f}" for k in keys))
    if a.out:
        out = Path(a.out)
        allres = json.loads(out.read_text()) if out.exists() else {}
        allres[a.label or (a.checkpoint + (" dissipative" if a.dissipative else ""))] = res
        out.write_text(json.dumps(allres, indent=1))

