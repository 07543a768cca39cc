"""How well each gradient mode describes the loss at the scale of real data (issue 23).

100 random throws in float64 of the synthetic sysid body (``sysid.synthetic``: 0.1 m, 0.37 kg box,
vertex set 10 % off the cube, μ = 0.27, ε = 0.1, ground 13 mm, position-consistent restitution
target, h = 2 ms, PGS at the default tolerance 1e-6 m/s), thrown from 0.1–0.2 m above the ground (``states.random_throws`` with
height U(0, 0.1) + 0.1 m clearance, its default velocities and spins). Loss: the sum of the final
position coordinates after ``--steps`` steps. Parameters θ (27): the 24 vertex coordinates, μ, ε
and the ground height.

Reference: the gradient of the Gaussian-smoothed loss L_σ(θ) = E[L(θ + σ⊙ε)] at σ = 0.1 mm and
1 mm (lengths — vertices, ground — perturbed by σ; μ and ε by σ / 0.1 m, i.e. the same fraction
of the body size), estimated by the antithetic Stein estimator with ``--ref-pairs`` pairs
(``jaxcontact.randomized_smoothing.randomized_value_and_grad``); its own noise is reported as the cosine
between two independent halves of the pairs. Compared: the exact implicit gradient, the relaxed
one (``CoulombLCP(gradient="relaxed", smoothing_length=ℓ)``) at each ℓ of ``--relaxed``, and the
randomized-smoothing estimator with ``--rs-pairs`` pairs at the reference's σ.

    python -m benchmarks gradient_quality --throws 100 --ref-pairs 512
"""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np


GROUPS = {"vertices": slice(0, 24), "mu": slice(24, 25), "restitution": slice(25, 26), "ground": slice(26, 27)}


def setup(n_throws, seed):
    import jax
    import jax.numpy as jnp

    from jaxcontact import shapes
    from jaxcontact.solvers import LCPSettings
    from jaxcontact.states import random_throws
    from jaxcontact.sysid.synthetic import BOX, MASS, TRUTH, synthetic_law, true_vertices

    body = shapes.box(BOX, MASS)
    theta0 = np.concatenate([true_vertices(0).ravel(), [TRUTH["mu"], TRUTH["restitution"], TRUTH["ground"]]])
    s0 = random_throws(jax.random.PRNGKey(seed), n_throws, ranges={"height": (0.0, 0.1)}, clearance=0.1)
    s0 = s0.replace(pos=s0.pos + jnp.array([0.0, 0.0, TRUTH["ground"]]))
    # the default PGS tolerance (1e-6 m/s, 100 sweeps) rather than the sysid fits' 1e-9: a vmapped
    # while loop runs every body of a batch to the slowest one's count, and the losses compared here
    # are smoothed at 0.1 mm and more
    return body, jnp.asarray(theta0), s0, dataclasses.replace(synthetic_law(), solver=LCPSettings())


def make_loss(body, law, steps):
    import jax.numpy as jnp

    from jaxcontact import rollout
    from jaxcontact.types import Ground, Model, Params

    model = Model(law=law, dt=0.002, max_contacts=4, max_correction_speed=None)

    def loss(theta, s0):
        p = Params(body=body.replace(vertices=theta[:24].reshape(8, 3)), ground=Ground.flat(3, theta[26]),
                   law=law.init_params(mu=theta[24], restitution=theta[25]))
        return jnp.sum(rollout(model, p, s0, steps, output="final").pos)

    return loss


def metrics(G, R):
    """G, R: (n, 27) gradients and references -> per-group statistics."""
    out = {}
    for name, sl in list(GROUPS.items()) + [("all", slice(0, 27))]:
        g, r = G[:, sl], R[:, sl]
        ng, nr = np.linalg.norm(g, axis=1), np.linalg.norm(r, axis=1)
        # throws whose reference is exactly 0 here (no contact touches this group) are left out
        use = nr > 0
        g, r, ng, nr = g[use], r[use], ng[use], nr[use]
        cos = np.sum(g * r, axis=1) / np.maximum(ng * nr, 1e-300)
        rel = np.linalg.norm(g - r, axis=1) / nr
        q = lambda x, p: float(np.percentile(x, p)) if len(x) else float("nan")
        out[name] = {"cosine_median": q(cos, 50), "cosine_p10": q(cos, 10),
                     "cosine_mean": float(np.mean(cos)) if len(cos) else float("nan"),
                     "rel_err_median": q(rel, 50), "rel_err_p90": q(rel, 90), "n_throws": int(use.sum())}
        if sl.stop - sl.start == 1:
            out[name]["sign_agreement"] = float(np.mean(np.sign(g[:, 0]) == np.sign(r[:, 0]))) if len(g) else float("nan")
    return out


def norms(G):
    out = {}
    for name, sl in list(GROUPS.items()) + [("all", slice(0, 27))]:
        n = np.linalg.norm(G[:, sl], axis=1)
        out[name] = {"median": float(np.median(n)), "p90": float(np.percentile(n, 90)), "max": float(n.max())}
    return out


def arguments(ap):
    ap.add_argument("--throws", type=int, default=100)
    ap.add_argument("--sigmas", default="1e-4,1e-3", help="smoothing lengths of the references (m)")
    ap.add_argument("--relaxed", default="1e-5,1e-4,1e-3", help="relaxed-mode smoothing lengths (m)")
    ap.add_argument("--ref-pairs", type=int, default=512)
    ap.add_argument("--rs-pairs", type=int, default=16)
    ap.add_argument("--rerender", action="store_true",
                    help="recompute the comparisons and tables from the --out JSON and its .npz (no simulation)")


def run(a, out):
    """``python -m benchmarks gradient_quality``: ``out`` (JSON, Markdown) and the gradients beside it (.npz)."""
    if a.rerender:
        doc = out.load()
        raw = np.load(out.path(".npz"))
        grads = {k[5:]: raw[k] for k in raw.files if k.startswith("grad_")}
        refs = {k[4:]: raw[k] for k in raw.files if k.startswith("ref_")}
        doc["norms"] = {k: norms(v) for k, v in grads.items()}
        doc["reference_norms"] = {s: norms(v) for s, v in refs.items()}
        doc["against_reference"] = {s: {k: metrics(v, refs[s]) for k, v in grads.items()} for s in refs}
        out.write(doc, render(doc))
        print(render(doc))
        return

    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    from jaxcontact.randomized_smoothing import randomized_value_and_grad

    body, theta0, s0, law = setup(a.throws, a.seed)
    L = 0.1
    grads, timing = {}, {}

    def per_throw_grad(law_):
        f = make_loss(body, law_, a.steps)
        return jax.jit(jax.vmap(jax.grad(f), in_axes=(None, 0)))

    for name, law_ in [("exact", law)] + [(f"relaxed:{float(ell):g}", dataclasses.replace(law, gradient="relaxed",
                                                                                            smoothing_length=float(ell)))
                                          for ell in a.relaxed.split(",")]:
        t = time.perf_counter()
        grads[name] = np.asarray(per_throw_grad(law_)(theta0, s0))
        timing[name] = time.perf_counter() - t
        print(name, f"{timing[name]:.1f} s", flush=True)

    f = make_loss(body, law, a.steps)

    def smoothed_grads(sigma, pairs, seed):
        """(throws, 27) randomized-smoothing estimates, one key per throw."""
        def one(s, k):
            return randomized_value_and_grad(lambda th: f(th, s), sigma, pairs, batch_size=min(pairs, 64))(theta0, k)[1]

        return np.asarray(jax.jit(jax.vmap(one))(s0, jax.random.split(jax.random.PRNGKey(seed), a.throws)))

    refs, halves = {}, {}
    for sig in [float(s) for s in a.sigmas.split(",")]:
        sigma = jnp.concatenate([jnp.full(24, sig), jnp.full(2, sig / L), jnp.full(1, sig)])
        # the reference: two independent halves of its pairs (their mean is the reference, their
        # agreement its own noise)
        t = time.perf_counter()
        h1, h2 = smoothed_grads(sigma, a.ref_pairs // 2, 21), smoothed_grads(sigma, a.ref_pairs // 2, 22)
        refs[sig] = 0.5 * (h1 + h2)
        timing[f"ref@{sig:g}"] = time.perf_counter() - t
        print(f"ref@{sig:g}", f"{timing[f'ref@{sig:g}']:.1f} s", flush=True)
        t = time.perf_counter()
        grads[f"randomized:{sig:g}:{a.rs_pairs}"] = smoothed_grads(sigma, a.rs_pairs, 12)
        timing[f"randomized@{sig:g}"] = time.perf_counter() - t
        halves[sig] = metrics(h1, h2)

    doc = {"command": a.command,
           "setup": {"throws": a.throws, "steps": a.steps, "dt": 0.002, "seed": a.seed, "ref_pairs": a.ref_pairs,
                     "rs_pairs": a.rs_pairs, "loss": "sum of final position coordinates",
                     "sigma_units": "vertices and ground: sigma (m); mu and restitution: sigma / 0.1 m"},
           "timing_s": timing, "norms": {k: norms(v) for k, v in grads.items()},
           "reference_norms": {f"{s:g}": norms(v) for s, v in refs.items()},
           "reference_half_vs_half": {f"{s:g}": v for s, v in halves.items()},
           "against_reference": {f"{s:g}": {k: metrics(v, refs[s]) for k, v in grads.items()} for s in refs}}
    out.write(doc, render(doc))
    np.savez_compressed(out.path(".npz"), **{f"grad_{k}": v for k, v in grads.items()},
                        **{f"ref_{s:g}": v for s, v in refs.items()})
    print(render(doc))


def render(doc) -> str:
    """The results as markdown tables (from the JSON)."""
    st = doc["setup"]
    lines = [f"# Gradient quality per mode ({st['throws']} random throws, float64)", "",
             f"Command: `{doc['command']}`", "",
             f"Loss: {st['loss']} after {st['steps']} steps of {st['dt']} s. Reference: the antithetic Stein "
             f"estimate of the gradient of the Gaussian-smoothed loss, {st['ref_pairs']} pairs per throw "
             f"({st['sigma_units']}). Randomized mode: {st['rs_pairs']} pairs.", ""]
    for sig, per in doc["against_reference"].items():
        hv = doc["reference_half_vs_half"][sig]
        lines += [f"## Against the loss smoothed at σ = {float(sig) * 1e3:g} mm", "",
                  f"Reference noise (half against half, {st['ref_pairs'] // 2} pairs each): cosine median "
                  f"{hv['all']['cosine_median']:.3f} (all 27), {hv['vertices']['cosine_median']:.3f} (vertices); "
                  f"sign agreement μ {hv['mu']['sign_agreement']:.2f}, ε {hv['restitution']['sign_agreement']:.2f}, "
                  f"ground {hv['ground']['sign_agreement']:.2f}.", "",
                  "| mode | cos all (median / p10) | cos vertices (median) | rel err all (median / p90) | "
                  "sign μ | sign ε | sign ground | rel err μ (median) | rel err ε (median) | rel err ground (median) |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for mode, m in per.items():
            lines.append(
                f"| {mode} | {m['all']['cosine_median']:.3f} / {m['all']['cosine_p10']:.3f} | "
                f"{m['vertices']['cosine_median']:.3f} | {m['all']['rel_err_median']:.3g} / {m['all']['rel_err_p90']:.3g} | "
                f"{m['mu']['sign_agreement']:.2f} | {m['restitution']['sign_agreement']:.2f} | "
                f"{m['ground']['sign_agreement']:.2f} | {m['mu']['rel_err_median']:.3g} | "
                f"{m['restitution']['rel_err_median']:.3g} | {m['ground']['rel_err_median']:.3g} |")
        lines.append("")
    lines += ["## Gradient norms (median / 90th percentile / max over throws)", "",
              "| gradient | vertices | μ | ε | ground |", "| --- | --- | --- | --- | --- |"]
    rows = list(doc["norms"].items()) + [(f"reference σ = {float(s) * 1e3:g} mm", v)
                                          for s, v in doc["reference_norms"].items()]
    for mode, n in rows:
        cell = lambda g: f"{n[g]['median']:.3g} / {n[g]['p90']:.3g} / {n[g]['max']:.3g}"
        lines.append(f"| {mode} | {cell('vertices')} | {cell('mu')} | {cell('restitution')} | {cell('ground')} |")
    lines += ["", "Wall times (s, 2 shared cores, nice 19): " +
              ", ".join(f"{k} {v:.0f}" for k, v in doc["timing_s"].items()), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
