"""Training of the four variants, checkpoints, and the simulation model of a checkpoint.

Variants: ``polytope`` and ``deep`` (ContactNets loss, eq. 16 + A.3 regularisers), ``e2e``
(eq. 21), ``lcp`` (Coulomb LCP with μ, restitution and ground height identified by
``jaxcontact.sysid`` on the same training tosses).

Optimisation (appendix A.2, scaled to a CPU budget): optax AdamW; ContactNets geometry
learning rate ``lr`` (default 5e-3, the paper's 5e-4 needs ~10× more steps than our budget),
network weights of ``deep`` at the paper's 5e-4; E2E at 1e-3 with weight decay 1e-3 (the paper's
3e-5 needs far more epochs). Mini-batches of transitions; after every epoch the validation loss
(same loss, validation tosses) decides early stopping (``patience`` epochs without improvement)
and the best parameters are checkpointed. ``max_steps`` caps the total gradient steps.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path

import numpy as np

VARIANTS = ("polytope", "deep", "e2e", "lcp")
DEEP_FEATURES = ("pR", "zR", "p", "vertex")  # deep's network inputs (functions.ContactFunctions.features)
FORMAT = "jaxcontact.contactnets/2"  # /2: checksums of every file, training status
FORMAT_V1 = "jaxcontact.contactnets/1"  # params_sha256 only; still loaded


@dataclasses.dataclass
class TrainConfig:
    batch_size: int = 64
    max_epochs: int = 200
    max_steps: int = 600
    patience: int = 12
    eval_every: int = 40  # steps per validation round (patience counts rounds)
    lr: float | None = None  # default per variant (see module docstring)
    weight_decay: float | None = None
    val_fraction: float = 0.3
    max_val: int = 2048  # validation transitions used (fixed random subset; fewer make early stopping noisy)
    noise: float = 0.4
    inner_iters: int = 100  # accelerated projected-gradient iterations of the inner program
    schedule: str = "cosine"  # learning rate: "cosine" (decay to lr_floor·lr over max_steps) | "constant"
    lr_floor: float = 0.05
    sysid_iters: int = 15  # Levenberg–Marquardt iterations of the lcp variant
    # which parameters are kept: "loss" — those of the lowest validation loss; "rollout" — of the
    # ``select_candidates`` validation rounds with the lowest validation loss, the one whose rollouts
    # of the validation tosses (from each toss's first state) have the lowest position error (block
    # widths) + rotation error (radians). Validation tosses only; the test set is never seen.
    select: str = "loss"
    select_candidates: int = 8
    deep_features: str = "pR"  # deep's network input, one of DEEP_FEATURES; "pR" is the paper's
    # lcp variant only (the one variant that differentiates through the engine's LCP): the derivative
    # of the Coulomb LCP its Levenberg–Marquardt fit uses (CoulombLCP.gradient, docs/gradients.md);
    # "relaxed" needs smoothing_length ℓ in the toss file's length unit (nothing is converted: the
    # shared tosses' unit is the cube half-width, 0.0524 m, so 1 mm is 0.019). Forward values are the same.
    gradient: str = "exact"
    smoothing_length: float | None = None

    def __post_init__(self):
        try:
            self.engine_law()  # CoulombLCP's own checks of gradient and smoothing_length
        except ValueError as err:
            raise ValueError(f"TrainConfig: {err}") from None
        if self.gradient == "relaxed" and self.smoothing_length is None:
            raise ValueError("TrainConfig.gradient='relaxed' needs smoothing_length in the toss file's length unit "
                             "(e.g. 0.019 = 1 mm for the shared tosses, whose unit is the 0.0524 m half-width)")
        if self.schedule not in ("cosine", "constant"):
            raise ValueError(f"TrainConfig.schedule must be 'cosine' or 'constant', got {self.schedule!r}")
        if self.select not in ("loss", "rollout"):
            raise ValueError(f"TrainConfig.select must be 'loss' or 'rollout', got {self.select!r}")
        if self.select_candidates < 1:
            raise ValueError("TrainConfig.select_candidates must be >= 1")
        if self.deep_features not in DEEP_FEATURES:
            raise ValueError(f"TrainConfig.deep_features must be one of {DEEP_FEATURES}, got {self.deep_features!r}")
        if self.max_steps < 1 or self.batch_size < 1:
            raise ValueError("TrainConfig.max_steps and batch_size must be >= 1")

    def engine_law(self, law=None):
        """``law`` (default ``CoulombLCP`` with the family's ``laws.LCP_SETTINGS``) with this config's gradient mode and smoothing length
        (when set): the law the lcp variant's fit differentiates through."""
        from ..laws import CoulombLCP
        from .laws import LCP_SETTINGS

        law = CoulombLCP(solver=LCP_SETTINGS) if law is None else law  # the family's square (laws.LCP_SETTINGS)
        ell = {} if self.smoothing_length is None else {"smoothing_length": self.smoothing_length}
        return dataclasses.replace(law, gradient=self.gradient, **ell)


# ---------------------------------------------------------------------------------------------
# bodies, models and parameter templates


def body_of(meta_or_data):
    import jax.numpy as jnp

    from ..types import Body

    g = (lambda k: meta_or_data[k]) if isinstance(meta_or_data, dict) else (lambda k: getattr(meta_or_data, k))
    V = np.asarray(g("vertices"), float)
    return Body(mass=jnp.asarray(float(g("mass"))), inertia=jnp.asarray(np.asarray(g("inertia"), float)),
                vertices=jnp.asarray(V), vertex_mask=jnp.ones(len(V)))


def _fns(meta):
    from .functions import ContactFunctions

    return ContactFunctions(meta["variant"], num_contacts=len(meta["vertices"]), hidden=tuple(meta["hidden"]),
                            features=meta.get("features") or "pR")  # None: not a deep model


def init_theta(meta, key):
    import jax
    import jax.numpy as jnp

    from .functions import init_deep, init_polytope
    from .laws import E2EParams, ImpulseMLP

    v = meta["variant"]
    if v == "polytope":
        return init_polytope(key, meta["vertices"], meta["mu_nominal"], meta["noise"])
    if v == "deep":
        return init_deep(key, _fns(meta), meta["vertices"], meta["mu_nominal"], meta["noise"])
    if v == "e2e":
        net = ImpulseMLP(hidden=tuple(meta["hidden"])).init(key, jnp.zeros(18))
        net = jax.tree_util.tree_map(lambda a: a.astype(jnp.result_type(float)), net)
        f = lambda k: jnp.asarray(meta.get(k, np.ones(18 if k != "out_scale" else 6)), jnp.result_type(float))
        return E2EParams(net=net, in_mean=f("in_mean"), in_std=f("in_std"), out_scale=f("out_scale"))
    raise ValueError(f"no learned parameters for variant {v!r}")


def sim_model_params(meta, theta):
    """(Model, Params) that roll out the checkpoint's model with the core engine."""
    import jax.numpy as jnp

    from ..laws import CoulombLCP
    from ..types import Ground, Model, Params
    from .laws import LCP_SETTINGS, ContactNetsLaw, E2ELaw

    body = body_of(meta)
    v = meta["variant"]
    if v in ("polytope", "deep"):
        law = ContactNetsLaw(fns=_fns(meta))
        return Model(law=law, dt=meta["dt"], gravity=meta["gravity"], max_contacts=None), Params(
            body=body, ground=Ground.flat(3), law=theta)
    if v == "e2e":
        return Model(law=E2ELaw(hidden=tuple(meta["hidden"])), dt=meta["dt"], gravity=meta["gravity"]), Params(
            body=body, ground=Ground.flat(3), law=theta)
    lv = meta["lcp"]
    law = CoulombLCP(solver=LCP_SETTINGS)
    ground = Ground(normal=jnp.array([0.0, 0.0, 1.0]), height=jnp.asarray(float(lv["ground"])))
    lp = law.init_params(mu=float(lv["mu"]), restitution=float(lv["restitution"]))
    return Model(law=law, dt=meta["dt"], gravity=meta["gravity"], max_contacts=4), Params(body=body, ground=ground, law=lp)


# ---------------------------------------------------------------------------------------------
# checkpoints


PARAMS_FILE = "params.msgpack"


def _payload(theta) -> dict:
    from flax import serialization

    return {PARAMS_FILE: b"" if theta is None else serialization.to_bytes(theta)}


def save_checkpoint(out: Path, meta: dict, theta, status: str = "finished", reached: dict | None = None) -> dict:
    """Write the checkpoint directory ``out`` atomically (``jaxcontact.checkpoint``): parameters,
    their SHA-256 and the training ``status``; returns the meta as written."""
    from ..checkpoint import write_checkpoint

    return write_checkpoint(out, _payload(theta), dict(meta, format=FORMAT), status, reached)


def load_checkpoint(path):
    """(meta, theta) of a checkpoint directory; ``ValueError`` if corrupt or mismatched.

    Every file is checked against the SHA-256 recorded in meta.json. Checkpoints of the first
    format (``jaxcontact.contactnets/1``, without a training status) load if their parameters'
    recorded SHA-256 verifies; their ``status`` is None (``checkpoint.status_warning``)."""
    import jax

    from flax import serialization

    from ..checkpoint import read_meta, sha256_bytes, verified_files

    path = Path(path)
    if not (path / "meta.json").exists():
        raise FileNotFoundError(f"checkpoint {path}: no meta.json (not a contactnets checkpoint directory)")
    meta = read_meta(path)
    if meta.get("format") == FORMAT_V1:
        f = path / PARAMS_FILE
        blob = f.read_bytes() if f.is_file() else None
        if blob is None or sha256_bytes(blob) != meta.get("params_sha256"):
            raise ValueError(f"{f}: missing, or its SHA-256 does not match meta.json (corrupt checkpoint)")
        meta.setdefault("status", None)
    elif meta.get("format") == FORMAT:
        blob = verified_files(path, meta, [PARAMS_FILE])[PARAMS_FILE]
    else:
        raise ValueError(f"checkpoint {path}: format {meta.get('format')!r}, expected {FORMAT!r}")
    if meta.get("variant") not in VARIANTS:
        raise ValueError(f"checkpoint {path}: unknown variant {meta.get('variant')!r}")
    if meta["variant"] == "lcp":
        return meta, None
    # the parameters' structure and shapes only (jax.eval_shape: no random draws compiled and run)
    template = jax.eval_shape(lambda: init_theta(meta, jax.random.PRNGKey(0)))
    try:
        theta = serialization.from_bytes(template, blob)
    except Exception as err:
        raise ValueError(f"checkpoint {path}: parameters do not match a {meta['variant']} model ({err})") from None
    shapes_ok = jax.tree_util.tree_all(jax.tree_util.tree_map(lambda a, b: np.shape(a) == np.shape(b), template, theta))
    if not shapes_ok:
        raise ValueError(f"checkpoint {path}: parameter shapes do not match a {meta['variant']} model")
    return meta, theta


def check_compatible(meta, data) -> None:
    """A checkpoint is only evaluated on data with the same time step, gravity and body."""
    for k in ("dt", "gravity", "mass"):
        if not np.isclose(meta[k], getattr(data, k), rtol=1e-6):
            raise ValueError(f"checkpoint was trained with {k}={meta[k]} but the toss file has {k}={getattr(data, k)}")
    if np.shape(meta["vertices"]) != np.shape(data.vertices):
        raise ValueError("checkpoint body vertices do not match the toss file's vertices")


# ---------------------------------------------------------------------------------------------
# training


def _meta(variant, data, n_tosses, seed, cfg, tr, va):
    ids = data.content_ids()
    hidden = {"deep": (256, 256), "e2e": (256, 256, 256, 256)}.get(variant, ())
    return {
        "variant": variant, "seed": int(seed), "n_tosses": int(n_tosses), "hidden": list(hidden),
        "features": cfg.deep_features if variant == "deep" else None,
        "dt": data.dt, "gravity": data.gravity, "mass": data.mass, "inertia": np.asarray(data.inertia).tolist(),
        "vertices": np.asarray(data.vertices).tolist(), "mu_nominal": data.mu_nominal, "noise": cfg.noise,
        "train_toss_ids": np.asarray(data.toss_ids)[tr].tolist(), "val_toss_ids": np.asarray(data.toss_ids)[va].tolist(),
        # tosses are identified by content, never by path: evaluate matches these hashes
        # (data.toss_hash) in whatever file it is given; the file itself by name and SHA-256 only
        "train_toss_hashes": [ids[i] for i in tr], "val_toss_hashes": [ids[i] for i in va],
        "data_file": Path(data.source).name if data.source else None, "data_sha256": data.file_sha256 or None,
        "config": dataclasses.asdict(cfg),
    }


def train(variant: str, data, n_tosses: int, seed: int, out, cfg: TrainConfig | None = None,
          progress: bool = True, log=print, force: bool = True) -> dict:
    """Train one model and write its checkpoint to ``out``; returns the checkpoint's meta.

    During training the best-so-far parameters are checkpointed (status ``in_progress``) into
    ``out``, or into ``<out>.partial`` if ``out`` already holds a checkpoint (which is replaced
    only when training finishes; ``force=False`` refuses a non-empty ``out`` instead). Ctrl-C
    saves the best-so-far checkpoint marked ``interrupted`` and raises
    ``checkpoint.TrainingInterrupted`` whose message says where it is."""
    if variant not in VARIANTS:
        raise ValueError(f"--variant must be one of {VARIANTS}, got {variant!r}")
    cfg = cfg or TrainConfig()
    if variant != "lcp" and cfg.gradient != "exact":
        raise ValueError(f"gradient={cfg.gradient!r} applies to the lcp variant only: {variant} does not differentiate "
                         "through the engine's LCP (docs/gradients.md)")
    from ..checkpoint import RunDirectory
    from .data import split_train_val

    run = RunDirectory(out, force)
    tr, va = split_train_val(data.n_tosses, n_tosses, seed, cfg.val_fraction)
    meta = _meta(variant, data, n_tosses, seed, cfg, tr, va)
    t0 = time.perf_counter()
    if variant == "lcp":
        meta = _train_lcp(meta, data.subset(tr), cfg, progress)
        meta["train_time_s"] = time.perf_counter() - t0
        meta = run.save(_payload(None), dict(meta, format=FORMAT), "finished", {"sysid_iterations": cfg.sysid_iters})
        log(f"lcp: identified {meta['lcp']} in {meta['train_time_s']:.1f} s -> {run.out}")
        return meta
    meta, theta = _train_gradient(meta, data.subset(tr), data.subset(va), cfg, seed, run, progress)
    meta["train_time_s"] = time.perf_counter() - t0
    meta = run.save(_payload(theta), dict(meta, format=FORMAT), "finished",
                    {"epoch": meta["epochs"], "step": meta["steps"], "stopped": meta["stopped"]})
    log(f"{variant}: best validation loss {meta['best_val']:.4g} at epoch {meta['best_epoch']} "
        f"({meta['steps']} steps, {meta['train_time_s']:.0f} s) -> {run.out}")
    return meta


def lcp_problem(train_d, cfg: TrainConfig):
    """(problem, window stride) of the lcp variant on the training tosses: the ``sysid.Problem`` of
    μ, restitution and ground height on windows of 4 samples, simulated with sysid's Coulomb law in
    ``cfg``'s gradient mode."""
    from .. import sysid

    traj = sysid.Trajectories(trajs=list(train_d.states), dt=train_d.dt, gravity=train_d.gravity, mass=train_d.mass,
                              inertia=train_d.inertia, vertices=train_d.vertices, source=train_d.source)
    # windows of 4 samples; on big sets every k-th window only (k grows with the toss count) so
    # the Levenberg–Marquardt Jacobian stays affordable
    stride = 4 * max(1, int(np.ceil(len(train_d.states) / 16)))
    # one engine step per sample (the ContactNets setup: the engine steps at the tosses' sample period)
    prob = sysid.Problem.build(traj, names="mu,restitution,ground", window=4, stride=stride, substeps=1)
    return prob.with_law(cfg.engine_law(prob.loss_def.model.law)), stride


def _train_lcp(meta, train_d, cfg, progress):
    from .. import sysid

    prob, stride = lcp_problem(train_d, cfg)
    meta["sysid_stride"] = stride
    res = sysid.fit(prob, method="lm", max_iter=cfg.sysid_iters, progress=progress)
    vals = {k: float(np.asarray(v).reshape(-1)[0]) for k, v in res.values.items()}
    meta["lcp"] = {"mu": vals["mu"], "restitution": vals["restitution"], "ground": vals["ground"]}
    meta["sysid"] = {k: v for k, v in res.summary().items() if k != "values"}
    return meta


def _train_gradient(meta, train_d, val_d, cfg: TrainConfig, seed, run, progress):
    """(meta, parameters kept) of gradient training; best-so-far checkpoints go to ``run``
    (``checkpoint.RunDirectory``) as ``in_progress``, or ``interrupted`` on Ctrl-C."""
    import jax
    import jax.numpy as jnp
    import optax
    from tqdm.auto import tqdm

    from ..solvers import NonnegSettings
    from .laws import e2e_apply
    from .loss import LossConfig, batch_loss, e2e_batch_loss, transition_impulse, e2e_features
    from ..types import Model
    from ..laws import CoulombLCP

    variant = meta["variant"]
    rng = np.random.default_rng(seed)

    def sched(lr):
        if cfg.schedule == "constant":
            return lr
        return optax.cosine_decay_schedule(lr, cfg.max_steps, alpha=cfg.lr_floor)

    xs, xns = train_d.transitions()
    vx, vxn = val_d.transitions()
    bs = int(cfg.batch_size)
    n_val = min(cfg.max_val, max(bs, int(np.ceil(len(vx) / bs)) * bs))
    n_val = int(np.ceil(n_val / bs)) * bs
    vi = rng.choice(len(vx), n_val, replace=n_val > len(vx))
    vx, vxn = jnp.asarray(vx[vi]), jnp.asarray(vxn[vi])
    body = body_of(meta)
    model = Model(law=CoulombLCP(), dt=meta["dt"], gravity=meta["gravity"])
    key = jax.random.PRNGKey(seed)

    if variant == "e2e":
        feats = np.asarray(jax.vmap(e2e_features)(jnp.asarray(xs)))
        F = np.asarray(jax.vmap(lambda a, b: transition_impulse(model, body, a, b)[-1])(jnp.asarray(xs), jnp.asarray(xns)))
        meta["in_mean"] = feats.mean(0).tolist()
        meta["in_std"] = np.maximum(feats.std(0), 1e-6).tolist()
        meta["out_scale"] = np.maximum(F.std(0), 1e-6).tolist()
        theta = init_theta(meta, key)
        hidden = tuple(meta["hidden"])
        loss = lambda th, a, b: e2e_batch_loss(lambda t, x: e2e_apply(hidden, t, x), th, model, body, a, b)
        lr = cfg.lr or 1e-3
        wd = 1e-3 if cfg.weight_decay is None else cfg.weight_decay
        labels = lambda p: p.replace(net=jax.tree_util.tree_map(lambda _: "net", p.net), in_mean="fixed",
                                     in_std="fixed", out_scale="fixed")
        tx = optax.multi_transform({"net": optax.adamw(sched(lr), weight_decay=wd), "fixed": optax.set_to_zero()}, labels)
    else:
        theta = init_theta(meta, key)
        fns = _fns(meta)
        lcfg = LossConfig(inner=NonnegSettings(max_iter=cfg.inner_iters))
        loss = lambda th, a, b: batch_loss(fns, th, model, body, a, b, lcfg)
        lr = cfg.lr or 5e-3
        wd = 0.0 if cfg.weight_decay is None else cfg.weight_decay
        if variant == "deep":
            labels = lambda p: type(p)(poly=jax.tree_util.tree_map(lambda _: "poly", p.poly),
                                       net=jax.tree_util.tree_map(lambda _: "net", p.net))
            tx = optax.multi_transform({"poly": optax.adamw(sched(lr), weight_decay=wd),
                                        "net": optax.adamw(sched(5e-4), weight_decay=wd)}, labels)
        else:
            tx = optax.adamw(sched(lr), weight_decay=wd)
    meta["lr"] = lr
    opt_state = tx.init(theta)

    @jax.jit
    def train_step(th, st, a, b):
        (val, parts), g = jax.value_and_grad(loss, has_aux=True)(th, a, b)
        upd, st = tx.update(g, st, th)
        return optax.apply_updates(th, upd), st, val, parts

    eval_loss = jax.jit(lambda th, a, b: loss(th, a, b)[0])

    def val_loss(th):
        return float(np.mean([eval_loss(th, vx[i:i + bs], vxn[i:i + bs]) for i in range(0, n_val, bs)]))

    n = len(xs)
    # one "epoch" below is a validation round of ``eval_every`` steps, whatever the data size, so
    # small training sets are not stopped after a few hundred steps (the paper likewise gave
    # smaller datasets additional epochs)
    steps_per_epoch = max(1, cfg.eval_every)
    best, best_epoch, bad, steps, history = np.inf, 0, 0, 0, []
    v0 = val_loss(theta)
    history.append({"epoch": 0, "step": 0, "train": None, "val": v0})
    best, best_theta = v0, theta

    def save(status, epoch):
        run.save(_payload(best_theta), dict(meta, format=FORMAT, history=history, best_val=best,
                                            best_epoch=best_epoch, steps=steps),
                 status, {"epoch": epoch, "step": steps, "best_epoch": best_epoch})

    save("in_progress", 0)
    total = min(cfg.max_steps, cfg.max_epochs * steps_per_epoch)
    bar = tqdm(total=total, desc=f"train {variant}", unit="step", disable=not progress)
    epoch = 0
    order, ptr = rng.permutation(n), 0
    snapshots = [(v0, 0, 0, theta)]  # (val loss, epoch, steps, params): candidates of select="rollout"
    try:
        while epoch < cfg.max_epochs and steps < cfg.max_steps and bad < cfg.patience:
            epoch += 1
            tl = []
            for k in range(steps_per_epoch):
                if ptr + bs > n:
                    order, ptr = (rng.permutation(n) if n >= bs else rng.choice(n, bs)), 0
                idx = order[ptr:ptr + bs]
                ptr += bs
                theta, opt_state, val, parts = train_step(theta, opt_state, jnp.asarray(xs[idx]), jnp.asarray(xns[idx]))
                tl.append(float(val))
                steps += 1
                bar.update(1)
                bar.set_postfix(train=f"{np.mean(tl):.4g}", val=f"{history[-1]['val']:.4g}", best=f"{best:.4g}", refresh=False)
                if steps >= cfg.max_steps:
                    break
            if not np.all(np.isfinite(tl)):
                raise FloatingPointError(f"{variant}: non-finite training loss at epoch {epoch}")
            v = val_loss(theta)
            history.append({"epoch": epoch, "step": steps, "train": float(np.mean(tl)), "val": v})
            if cfg.select == "rollout":
                snapshots.append((v, epoch, steps, theta))
                snapshots = sorted(snapshots, key=lambda r: r[0])[: cfg.select_candidates]
            bar.set_postfix(train=f"{np.mean(tl):.4g}", val=f"{v:.4g}", best=f"{min(best, v):.4g}")
            if v < best:
                best, best_epoch, bad, best_theta = v, epoch, 0, theta
                save("in_progress", epoch)
            else:
                bad += 1
    except KeyboardInterrupt:
        bar.close()
        with contextlib.suppress(Exception):  # let the step in flight finish: exiting under it can crash XLA
            jax.block_until_ready((theta, opt_state))
        save("interrupted", epoch)
        from ..checkpoint import TrainingInterrupted

        raise TrainingInterrupted(
            f"interrupted: saved best-so-far checkpoint (epoch {best_epoch}, val loss {best:.4g}; stopped during "
            f"epoch {epoch}) to {run.where()}") from None
    finally:
        bar.close()
    meta.update(history=history, best_val=best, best_epoch=best_epoch, steps=steps, epochs=epoch,
                stopped="early" if bad >= cfg.patience else "budget")
    if cfg.select == "rollout":
        sel, best_theta = _select_by_rollout(meta, snapshots, val_d)
        meta.update(sel)
    return meta, best_theta


def _select_by_rollout(meta, snapshots, val_d):
    """Among the candidate parameters (lowest validation losses), those whose rollouts of the
    validation tosses have the lowest position error (block widths) + rotation error (radians):
    (selection record, parameters)."""
    from .evaluate import metrics, rollout_tosses

    scored = []
    for v, epoch, steps, th in snapshots:
        model, params = sim_model_params(meta, th)
        m = metrics(rollout_tosses(model, params, val_d), val_d)
        score = m["pos_error"] + np.radians(m["rot_error_deg"])
        score = score if np.isfinite(score) and m["n_diverged"] == 0 else np.inf
        scored.append({"epoch": epoch, "step": steps, "val": v, "val_pos_error": m["pos_error"],
                       "val_rot_error_deg": m["rot_error_deg"], "score": float(score), "theta": th})
    best = min(scored, key=lambda r: (r["score"], r["val"]))
    sel = {"select": "rollout", "selected_epoch": best["epoch"], "selected_step": best["step"],
           "selected_val": best["val"], "candidates": [{k: r[k] for k in r if k != "theta"} for r in scored]}
    return sel, best["theta"]
