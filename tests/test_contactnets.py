"""ContactNets: QP optimality, zero loss at the true geometry, gradients vs finite differences,
the learned-geometry law against CoulombLCP, metrics, CLI end to end, bad inputs."""

import dataclasses
import json

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact.contactnets import (
    ContactFunctions,
    ContactNetsLaw,
    LossConfig,
    batch_loss,
    init_polytope,
    load_tosses,
    sharded_batch_loss,
    transition_loss,
    true_polytope,
)
from jaxcontact.contactnets.data import TossData
from jaxcontact.contactnets.evaluate import metrics
from jaxcontact.contactnets.loss import reference_transition_loss
from jaxcontact.solvers import NonnegSettings, QPSettings, minimize_nonneg, minimize_nonneg_qp, solve_qp

VERTS = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)])
G, DT, MASS, INERTIA, MU = 187.2, 1 / 148, 0.37, 0.295, 0.3


def _body():
    return jc.Body(mass=jnp.asarray(MASS), inertia=INERTIA * jnp.eye(3), vertices=jnp.asarray(VERTS),
                   vertex_mask=jnp.ones(8))


@pytest.fixture(scope="module")
def sim():
    """Noise-free tosses from the core engine (Coulomb LCP, μ = 0.3, no restitution), with the square
    (``cone="box"``) that the family's pyramidal loss describes (``contactnets.laws.LCP_SETTINGS``)."""
    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-12, max_iter=500, regularization=1e-10, cone="box"))
    model = jc.Model(law=law, dt=DT, gravity=G, max_contacts=8)
    params = jc.Params(body=_body(), ground=jc.Ground.flat(), law=law.init_params(mu=MU))
    q = jc.rotations.quat_normalize(jnp.array([1.0, 0.3, 0.2, 0.1]))
    s0 = jc.make_state(pos=[0, 0, 2.2], quat=q, vel=[3.0, 1.0, -2.0], omega=[2.0, -3.0, 1.0])
    traj = np.asarray(jc.rollout(model, params, s0, 50).to_array())
    assert traj[:, 2].min() < np.sqrt(3.0)  # it reaches the ground
    return model, params, traj


def test_qp_solution_satisfies_kkt():
    rng = np.random.default_rng(0)
    n, m = 6, 9
    A = rng.normal(size=(n, n))
    Q = A @ A.T + 0.1 * np.eye(n)
    c = rng.normal(size=n)
    Gm = rng.normal(size=(m, n))
    h = rng.uniform(-0.5, 1.0, size=m)
    h = np.where(np.arange(m) < 3, np.abs(h) + 0.1, h)  # feasible at x = 0 for some rows
    x0 = np.linalg.lstsq(Gm, np.minimum(h, 0) - 1.0, rcond=None)[0]  # make sure it is feasible
    h = np.maximum(h, Gm @ x0 + 0.1)
    sol = solve_qp(jnp.asarray(Q), jnp.asarray(c), jnp.asarray(Gm), jnp.asarray(h),
                   QPSettings(tol=1e-10, max_iter=20000, linear_solver="lu"))
    x, y = np.asarray(sol.x), np.asarray(sol.dual)
    slack = h - Gm @ x
    assert slack.min() > -1e-6  # primal feasible
    assert y.min() > -1e-6  # dual feasible
    assert np.max(np.abs(y * slack)) < 1e-6  # complementarity
    assert np.max(np.abs(Q @ x + c + Gm.T @ y)) < 1e-5  # stationarity
    assert np.any(y > 1e-3)  # some constraint active: a real test of the inequality handling


def test_nonneg_solver_satisfies_kkt_and_differentiates_implicitly():
    rng = np.random.default_rng(1)
    n = 12
    A = rng.normal(size=(n, n))
    Q = A @ A.T / n + np.diag(rng.uniform(1e-3, 10.0, n))  # badly scaled: the Jacobi scaling matters
    c = rng.normal(size=n)
    f = lambda x, Q, c: 0.5 * x @ Q @ x + c @ x
    st = NonnegSettings(max_iter=2000, tol=1e-13, method="jaxopt")
    x = np.asarray(minimize_nonneg(f, Q, (jnp.asarray(Q), jnp.asarray(c)), st).x)
    g = Q @ x + c
    assert x.min() >= 0 and g.min() > -1e-8  # primal and dual feasible
    assert np.max(np.abs(x * g)) < 1e-8  # complementarity
    assert 0 < np.sum(x > 1e-6) < n  # a real mix of active and free coordinates
    # implicit derivative of the solution vs central differences
    d = rng.normal(size=n)
    sol = lambda t: minimize_nonneg(f, Q, (jnp.asarray(Q), jnp.asarray(c + t * d)), st).x
    jv = np.asarray(jax.jacrev(sol)(0.0))
    fd = (np.asarray(sol(1e-6)) - np.asarray(sol(-1e-6))) / 2e-6
    assert np.allclose(jv, fd, atol=1e-5), (jv, fd)


def _hinge_qp(seed, n=12, m=4):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n))
    Q = A @ A.T / n + np.diag(rng.uniform(1e-3, 10.0, n))  # badly scaled
    c = rng.normal(size=n)
    P = rng.normal(size=(m, n))
    a = rng.normal(size=m)
    return Q, c, P, a


def test_fixed_iteration_fista_matches_jaxopt_and_differentiates():
    Q, c, P, a = _hinge_qp(4)
    w = 0.7
    f = lambda x, Q, c, P, a: 0.5 * x @ Q @ x + c @ x + w * jnp.sum(jnp.minimum(a + P @ x, 0.0) ** 2)
    H = Q + 2 * w * P.T @ P
    args = tuple(map(jnp.asarray, (Q, c, P, a)))
    # same iterates: 40 iterations of each path (jaxopt's stopping test cannot trigger at tol 1e-30)
    k = 40
    ref = np.asarray(minimize_nonneg(f, H, args, NonnegSettings(max_iter=k, tol=1e-30, method="jaxopt")).x)
    gen = np.asarray(minimize_nonneg(f, H, args, NonnegSettings(max_iter=k, method="fista")).x)
    qp = minimize_nonneg_qp(*args, weight=w, settings=NonnegSettings(max_iter=k, method="fista"))
    assert np.abs(ref).max() > 0.1
    assert np.allclose(gen, ref, rtol=1e-11, atol=1e-12), np.abs(gen - ref).max()
    assert np.allclose(np.asarray(qp.x), ref, rtol=1e-10, atol=1e-11), np.abs(np.asarray(qp.x) - ref).max()
    x_prev = np.asarray(minimize_nonneg_qp(*args, weight=w, settings=NonnegSettings(max_iter=k - 1, method="fista")).x)
    # error = the last step's length in the Jacobi-scaled variables (jaxopt's definition)
    step = np.linalg.norm((np.asarray(qp.x) - x_prev) * np.sqrt(np.diag(H)))
    assert int(qp.iterations) == k and step > 0
    assert np.isclose(float(qp.error), step, rtol=1e-6), (float(qp.error), step)
    deleg = minimize_nonneg_qp(*args, weight=w, settings=NonnegSettings(max_iter=k, tol=1e-30, method="jaxopt"))
    assert np.allclose(np.asarray(deleg.x), ref, rtol=1e-12, atol=1e-13)
    # converged: KKT of the hinge QP
    st = NonnegSettings(max_iter=4000, method="fista")
    x = np.asarray(minimize_nonneg_qp(*args, weight=w, settings=st).x)
    g = Q @ x + c + 2 * w * P.T @ np.minimum(a + P @ x, 0.0)
    assert x.min() >= 0 and g.min() > -1e-8 and np.max(np.abs(x * g)) < 1e-8
    assert 0 < np.sum(x > 1e-6) < len(x) and np.any(a + P @ x < -1e-3)  # active bounds and an active hinge
    # implicit derivatives of the solution (with respect to c and to P) vs central differences
    rng = np.random.default_rng(5)
    dc, dP = rng.normal(size=c.shape), rng.normal(size=P.shape)
    for name, sol in (
        ("qp c", lambda t: minimize_nonneg_qp(args[0], args[1] + t * dc, args[2], args[3], w, st).x),
        ("qp P", lambda t: minimize_nonneg_qp(args[0], args[1], args[2] + t * dP, args[3], w, st).x),
        ("generic c", lambda t: minimize_nonneg(f, H, (args[0], args[1] + t * dc, args[2], args[3]), st).x),
    ):
        jv = np.asarray(jax.jacrev(sol)(0.0))
        fd = (np.asarray(sol(1e-6)) - np.asarray(sol(-1e-6))) / 2e-6
        assert np.abs(jv).max() > 1e-3 and np.allclose(jv, fd, atol=1e-5), (name, jv, fd)
    with pytest.raises(ValueError, match="method"):
        NonnegSettings(method="newton")


@pytest.mark.slow
def test_fista_loss_matches_jaxopt_loss_and_gradient(sim):
    model, params, traj = sim
    fns = ContactFunctions("polytope")
    xs, xns = jnp.asarray(traj[:-1]), jnp.asarray(traj[1:])
    th = init_polytope(jax.random.PRNGKey(2), VERTS, MU)
    old = LossConfig(inner=NonnegSettings(max_iter=100, tol=1e-30, method="jaxopt"))
    new = LossConfig(inner=NonnegSettings(max_iter=100, method="fista"))
    per = lambda cfg, th, a, b: jax.vmap(lambda x, xn: transition_loss(fns, th, model, params.body, x, xn, cfg)[0])(a, b)
    lo, ln = (np.asarray(jax.jit(lambda a, b, c=c: per(c, th, a, b))(xs, xns)) for c in (old, new))
    assert lo.max() > 1.0
    assert np.max(np.abs(ln - lo)) <= 1e-10 * lo.max(), np.max(np.abs(ln - lo))
    # float32 evaluation of the same path: loss within 1e-4 of the float64 one (relative to the largest)
    f32 = lambda t: jax.tree_util.tree_map(lambda x: x.astype(jnp.float32), t)
    body32 = f32(params.body)
    l32 = jax.jit(jax.vmap(lambda x, xn: transition_loss(fns, f32(th), model, body32, x, xn, new)[0]))(
        xs.astype(jnp.float32), xns.astype(jnp.float32))
    assert l32.dtype == jnp.float32
    assert np.max(np.abs(np.asarray(l32, np.float64) - lo)) <= 1e-4 * lo.max()
    # loss gradients: fista (envelope) = jaxopt (envelope), and fista's implicit mode agrees
    flat, unravel = jax.flatten_util.ravel_pytree(th)
    grad = lambda cfg: np.asarray(jax.jit(jax.grad(lambda p: batch_loss(fns, unravel(p), model, params.body,
                                                                       xs, xns, cfg)[0]))(flat))
    g_old, g_new = grad(old), grad(new)
    g_imp = grad(dataclasses.replace(new, gradient="implicit"))
    assert np.linalg.norm(g_old) > 1e-3
    assert np.allclose(g_new, g_old, rtol=1e-9, atol=1e-10 * np.abs(g_old).max())
    assert np.allclose(g_imp, g_new, rtol=1e-3, atol=1e-4 * np.abs(g_new).max())


def test_chunked_batch_loss_equals_plain_vmap(sim):
    model, params, traj = sim
    fns = ContactFunctions("polytope")
    xs, xns = jnp.asarray(traj[:24]), jnp.asarray(traj[1:25])
    th = init_polytope(jax.random.PRNGKey(4), VERTS, MU)
    vg = lambda cfg: jax.jit(jax.value_and_grad(lambda t: batch_loss(fns, t, model, params.body, xs, xns, cfg)[0]))(th)
    (v0, g0), (v1, g1) = vg(LossConfig(chunk=0)), vg(LossConfig(chunk=8))  # 24 = 3 chunks of 8
    assert float(v0) > 0 and np.isclose(float(v1), float(v0), rtol=1e-12)
    for a, b in zip(jax.tree_util.tree_leaves(g0), jax.tree_util.tree_leaves(g1)):
        assert np.allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12 * np.abs(np.asarray(a)).max())
    for bad in (-1, "all", 2.0, True):
        with pytest.raises(ValueError, match="chunk"):
            LossConfig(chunk=bad)
    assert LossConfig().chunk == "auto" and LossConfig().chunk_size() == (256 if jax.default_backend() == "cpu" else 0)


def test_jaxopt_path_loss_gradient_matches_finite_differences(sim):
    model, params, traj = sim
    fns = ContactFunctions("polytope")
    idx = np.flatnonzero(traj[:-1, 2] < np.sqrt(3.0) + 0.3)[:4]  # transitions near/in contact
    xs, xns = jnp.asarray(traj[idx]), jnp.asarray(traj[idx + 1])
    flat, unravel = jax.flatten_util.ravel_pytree(init_polytope(jax.random.PRNGKey(3), VERTS, MU, noise=0.1))
    cfg = LossConfig(inner=NonnegSettings(max_iter=1500, tol=1e-13, method="jaxopt"))  # the default is "fista"
    L = jax.jit(lambda p: batch_loss(fns, unravel(p), model, params.body, xs, xns, cfg)[0])
    g = np.asarray(jax.grad(L)(flat))
    assert np.linalg.norm(g) > 1e-3
    rng = np.random.default_rng(1)
    for _ in range(2):
        d = rng.normal(size=flat.shape)
        d /= np.linalg.norm(d)
        fd = (float(L(flat + 1e-5 * d)) - float(L(flat - 1e-5 * d))) / 2e-5
        assert abs(fd - g @ d) <= 2e-3 * max(1.0, abs(fd)), (fd, g @ d)


def test_fast_inner_solver_matches_boxosqp_reference(sim):
    model, params, traj = sim
    fns = ContactFunctions("polytope")
    idx = np.arange(0, len(traj) - 1, 2)  # every other transition: free flight, impact, sliding
    xs, xns = jnp.asarray(traj[idx]), jnp.asarray(traj[idx + 1])
    th = init_polytope(jax.random.PRNGKey(2), VERTS, MU)
    ref_cfg = LossConfig(qp=QPSettings(tol=1e-9, max_iter=8000, linear_solver="lu"))
    ref = np.asarray(jax.jit(jax.vmap(lambda a, b: reference_transition_loss(fns, th, model, params.body, a, b,
                                                                               ref_cfg)[0]))(xs, xns))
    fast = np.asarray(jax.jit(jax.vmap(lambda a, b: transition_loss(fns, th, model, params.body, a, b,
                                                                    LossConfig())[0]))(xs, xns))
    assert ref.max() > 1.0  # the noisy geometry has a real loss to match
    assert np.max(np.abs(fast - ref)) <= 1e-3 * ref.max() + 1e-8, np.max(np.abs(fast - ref))
    assert abs(fast.mean() - ref.mean()) <= 1e-4 * ref.mean()


def test_loss_zero_for_true_geometry_on_engine_data(sim):
    model, params, traj = sim
    fns = ContactFunctions("polytope")
    cfg = LossConfig(inner=NonnegSettings(max_iter=3000, tol=1e-13))
    xs, xns = jnp.asarray(traj[:-1]), jnp.asarray(traj[1:])
    f = jax.jit(jax.vmap(lambda th, a, b: transition_loss(fns, th, model, params.body, a, b, cfg)[0],
                         in_axes=(None, 0, 0)))
    true = np.asarray(f(true_polytope(VERTS, MU), xs, xns))
    noisy = np.asarray(f(init_polytope(jax.random.PRNGKey(1), VERTS, MU), xs, xns))
    # zero up to the O(h²) linearisation of φ over a step (φ(q') of a rotating contact vertex)
    assert true.max() < 1e-3 * noisy.max(), (true.max(), noisy.max())
    assert true.mean() < 1e-5 and noisy.mean() > 1e3 * true.mean()
    assert np.sum(true < 1e-12) >= 5  # free-flight steps: exactly 0
    # regularisers vanish at the true geometry
    from jaxcontact.contactnets import regularizers

    r1, r2 = regularizers(fns, true_polytope(VERTS, MU), xs[0])
    assert float(r1) < 1e-20 and float(r2) < 1e-20


def test_loss_gradient_matches_finite_differences(sim):
    model, params, traj = sim
    fns = ContactFunctions("polytope")
    phi_low = traj[:, 2] < np.sqrt(3.0) + 0.3
    idx = np.flatnonzero(phi_low[:-1])[:4]  # transitions near/in contact
    xs, xns = jnp.asarray(traj[idx]), jnp.asarray(traj[idx + 1])
    th0 = init_polytope(jax.random.PRNGKey(3), VERTS, MU, noise=0.1)
    flat, unravel = jax.flatten_util.ravel_pytree(th0)
    inner = NonnegSettings(max_iter=1500, tol=1e-13)
    grads = {}
    for mode in ("envelope", "implicit"):  # value derivative at the solution vs jaxopt implicit diff of β*
        cfg = LossConfig(inner=inner, gradient=mode)
        L = jax.jit(lambda p: batch_loss(fns, unravel(p), model, params.body, xs, xns, cfg)[0])
        g = grads[mode] = np.asarray(jax.grad(L)(flat))
        assert np.linalg.norm(g) > 1e-3
        rng = np.random.default_rng(0)
        for _ in range(2):
            d = rng.normal(size=flat.shape)
            d /= np.linalg.norm(d)
            eps = 1e-5
            fd = (float(L(flat + eps * d)) - float(L(flat - eps * d))) / (2 * eps)
            assert abs(fd - g @ d) <= 2e-3 * max(1.0, abs(fd)), (mode, fd, g @ d)
    assert np.allclose(grads["envelope"], grads["implicit"], rtol=1e-4, atol=1e-6 * np.abs(grads["implicit"]).max())


def test_contactnets_law_with_true_geometry_reproduces_coulomb_lcp(sim):
    model, params, traj = sim
    law = ContactNetsLaw(solver=model.law.solver)
    m2 = jc.Model(law=law, dt=DT, gravity=G, max_contacts=None)
    p2 = jc.Params(body=params.body, ground=jc.Ground.flat(), law=true_polytope(VERTS, MU))
    traj2 = np.asarray(jc.rollout(m2, p2, jc.State.from_array(jnp.asarray(traj[0])), len(traj) - 1).to_array())
    assert np.max(np.abs(traj2[:, :3] - traj[:, :3])) < 1e-6


def _toss_file(tmp_path, traj, n=3, name="tiny.npz"):
    states = [traj[i * 4:] for i in range(n)]  # overlapping tosses from the simulation
    d = TossData(states=states, dt=DT, gravity=G, mass=MASS, inertia=INERTIA * np.eye(3), vertices=VERTS,
                 toss_ids=np.arange(n), mu_nominal=MU)
    p = tmp_path / name
    d.save(p)
    return p


def test_metrics_trivial_cases(sim, tmp_path):
    _, _, traj = sim
    d = load_tosses(_toss_file(tmp_path, traj))
    true, _ = d.padded()
    m = metrics(true.copy(), d)
    assert m["pos_error"] == 0 and m["rot_error_deg"] < 1e-5 and m["n_tosses"] == 3
    shifted = true.copy()
    shifted[..., 0] += 0.1
    assert np.isclose(metrics(shifted, d)["pos_error"], 0.1 / 2.0)  # width 2 half-widths
    sunk = true.copy()
    sunk[..., 2] = 0.9  # a face 0.1 below the table, no rotation
    sunk[..., 3:7] = [1, 0, 0, 0]
    assert np.isclose(metrics(sunk, d)["penetration"], 0.05)
    rot = true.copy()
    rot[..., 3:7] = [np.cos(np.pi / 8), 0, 0, np.sin(np.pi / 8)]  # 45° about z
    true_id = true.copy()
    true_id[..., 3:7] = [1, 0, 0, 0]
    d.states = [s.copy() for s in d.states]
    for s in d.states:
        s[:, 3:7] = [1, 0, 0, 0]
    assert np.isclose(metrics(rot, d)["rot_error_deg"], 45.0)


@pytest.mark.slow
def test_cli_train_and_evaluate_end_to_end(sim, tmp_path, capsys):
    from jaxcontact.cli import main

    _, _, traj = sim
    f = _toss_file(tmp_path, traj)
    for variant in ("polytope", "e2e", "deep", "lcp"):
        out = tmp_path / variant
        rc = main(["contactnets", "train", "--variant", variant, "--data", str(f), "--tosses", "3", "--seed", "0",
                   "--out", str(out), "--max-steps", "2", "--batch-size", "16", "--no-progress"])
        assert rc == 0
        capsys.readouterr()
        rc = main(["contactnets", "evaluate", "--checkpoint", str(out), "--data", str(f), "--json"])
        assert rc == 0
        res = json.loads(capsys.readouterr().out)
        assert res["n_tosses"] == 3 and res["variant"] == variant
        for k in ("pos_error", "rot_error_deg", "penetration"):
            assert np.isfinite(res[k]) and res[k] >= 0
    # a corrupt checkpoint is refused, never silently loaded
    blob = (tmp_path / "polytope" / "params.msgpack").read_bytes()
    (tmp_path / "polytope" / "params.msgpack").write_bytes(blob[:-3] + b"abc")
    assert main(["contactnets", "evaluate", "--checkpoint", str(tmp_path / "polytope"), "--data", str(f)]) == 2
    assert "corrupt" in capsys.readouterr().err
    # a mismatched checkpoint (e2e meta claiming polytope parameters) is refused: an edited meta.json
    # by its own checksum, and one whose checksum was recomputed by the parameters' shapes
    from jaxcontact.checkpoint import META_SUM, meta_checksum

    meta = json.loads((tmp_path / "e2e" / "meta.json").read_text())
    meta["variant"] = "polytope"
    (tmp_path / "e2e" / "meta.json").write_text(json.dumps(meta))
    assert main(["contactnets", "evaluate", "--checkpoint", str(tmp_path / "e2e"), "--data", str(f)]) == 2
    assert "meta.json: checksum mismatch" in capsys.readouterr().err
    meta[META_SUM] = meta_checksum(meta)
    (tmp_path / "e2e" / "meta.json").write_text(json.dumps(meta))
    assert main(["contactnets", "evaluate", "--checkpoint", str(tmp_path / "e2e"), "--data", str(f)]) == 2
    assert "do not match" in capsys.readouterr().err


def test_bad_toss_files_raise_clear_errors(sim, tmp_path):
    _, _, traj = sim
    good = dict(np.load(_toss_file(tmp_path, traj)))

    def write(**change):
        d = {k: v for k, v in {**good, **change}.items() if v is not None}
        p = tmp_path / "bad.npz"
        np.savez(p, **d)
        return p

    with pytest.raises(ValueError, match="missing keys"):
        load_tosses(write(gravity=None))
    with pytest.raises(ValueError, match="13"):
        load_tosses(write(states=good["states"][:, :12]))
    s = good["states"].copy()
    s[5, 8] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        load_tosses(write(states=s))
    L = good["lengths"].copy()
    L[0], L[1] = 1, L[1] + L[0] - 1
    with pytest.raises(ValueError, match="at least 2"):
        load_tosses(write(lengths=L))
    with pytest.raises(FileNotFoundError):
        load_tosses(tmp_path / "nope.npz")


def test_bundled_subset_loads():
    d = load_tosses()
    assert d.n_tosses >= 16 and np.isclose(d.dt, 1 / 148) and np.isclose(d.width, 2.0)


def test_deep_variant_starts_as_its_polytope_and_is_differentiable(sim):
    """Eq. 20: the deep model is the polytope plus a network whose last layer starts at zero, so at
    initialisation its φ, Jacobians, loss and rollout equal the polytope's; its loss gradient reaches
    the network weights."""
    from jaxcontact.contactnets import init_deep

    model, params, traj = sim
    deep = ContactFunctions("deep", hidden=(32, 32))
    th = init_deep(jax.random.PRNGKey(4), deep, VERTS, MU, noise=0.1)
    poly = ContactFunctions("polytope")
    xs, xns = jnp.asarray(traj[:-1:3]), jnp.asarray(traj[1::3])
    cfg = LossConfig()
    ld, gd = jax.jit(jax.value_and_grad(lambda t: batch_loss(deep, t, model, params.body, xs, xns, cfg)[0]))(th)
    lp = jax.jit(lambda t: batch_loss(poly, t, model, params.body, xs, xns, cfg)[0])(th.poly)
    assert abs(float(ld) - float(lp)) <= 1e-9 * max(1.0, float(lp))
    net_grad = jax.flatten_util.ravel_pytree(gd.net)[0]
    assert np.all(np.isfinite(net_grad)) and np.linalg.norm(net_grad) > 0
    # same φ and Jacobians, hence the same ContactNetsLaw impulses and rollouts
    def terms(fns, theta, x):
        s = jc.State.from_array(x)
        return fns.terms(theta, s.pos, jc.rotations.quat_to_mat(s.quat))

    X = jnp.asarray(traj[::10])
    td = jax.jit(jax.vmap(lambda x: terms(deep, th, x)))(X)
    tp = jax.jit(jax.vmap(lambda x: terms(poly, th.poly, x)))(X)
    for a, b in zip(td, tp):
        assert np.max(np.abs(np.asarray(a) - np.asarray(b))) < 1e-12


@pytest.mark.slow
def test_deep_network_inputs_have_their_structure(sim, tmp_path):
    """The ablation inputs of deep's network (ContactFunctions.features): each starts as its polytope,
    its gradient reaches the network, and the correction has the structure its inputs imply once the
    last layer is non-zero — zR: invariant to horizontal translation; p: independent of the rotation;
    vertex: contact i's correction is the shared network at contact i's world point."""
    from jaxcontact.contactnets import init_deep
    from jaxcontact.contactnets.train import TrainConfig

    model, params, traj = sim
    poly = ContactFunctions("polytope")
    xs, xns = jnp.asarray(traj[:-1:6]), jnp.asarray(traj[1::6])
    R0 = jc.rotations.quat_to_mat(jc.rotations.quat_normalize(jnp.array([1.0, 0.3, 0.2, 0.1])))
    R1 = jc.rotations.quat_to_mat(jc.rotations.quat_normalize(jnp.array([0.4, -0.5, 0.7, 0.2])))
    p0 = jnp.array([0.3, -0.2, 1.5])
    for feats in ("zR", "p", "vertex"):
        fns = ContactFunctions("deep", hidden=(16, 16), features=feats)
        th = init_deep(jax.random.PRNGKey(5), fns, VERTS, MU, noise=0.1)
        # jitted: eagerly, each of the loss's hundreds of small operations is compiled on its own
        ld, gd = jax.jit(jax.value_and_grad(lambda t: batch_loss(fns, t, model, params.body, xs, xns, LossConfig())[0]))(th)
        lp = jax.jit(lambda t: batch_loss(poly, t, model, params.body, xs, xns, LossConfig())[0])(th.poly)
        assert abs(float(ld) - float(lp)) <= 1e-9 * max(1.0, float(lp)), feats
        assert np.linalg.norm(jax.flatten_util.ravel_pytree(gd.net)[0]) > 0, feats
        flat, unravel = jax.flatten_util.ravel_pytree(th.net)
        th = th.replace(net=unravel(flat + 0.3 * jax.random.normal(jax.random.PRNGKey(6), flat.shape)))
        corr = jax.jit(lambda pos, R, th=th, fns=fns: [a - b for a, b in zip(fns.phi(th, pos, R), poly.phi(th.poly, pos, R))])
        base = corr(p0, R0)
        assert float(jnp.max(jnp.abs(base[0]))) > 1e-3, feats  # the perturbed network does correct
        if feats == "zR":
            moved = corr(p0 + jnp.array([2.0, -1.0, 0.0]), R0)
            assert all(float(jnp.max(jnp.abs(a - b))) < 1e-12 for a, b in zip(base, moved))
            assert float(jnp.max(jnp.abs(corr(p0 + jnp.array([0.0, 0.0, 0.5]), R0)[0] - base[0]))) > 1e-6
        if feats == "p":
            rotated = corr(p0, R1)
            assert all(float(jnp.max(jnp.abs(a - b))) < 1e-12 for a, b in zip(base, rotated))
        if feats == "vertex":
            pts = p0 + th.poly.vertices @ R0.T
            dn, dt = jax.vmap(lambda x: fns.mlp().apply(th.net, x))(pts)
            assert float(jnp.max(jnp.abs(dn[:, 0] - base[0]))) < 1e-12
            assert float(jnp.max(jnp.abs(dt[:, 0] - base[1]))) < 1e-12
        # the checkpoint records the inputs; a checkpoint read with other inputs is refused
        from jaxcontact.contactnets.train import load_checkpoint, save_checkpoint

        meta = dict(variant="deep", hidden=[16, 16], vertices=VERTS.tolist(), mu_nominal=MU, noise=0.1, features=feats)
        ck = tmp_path / feats
        save_checkpoint(ck, meta, th)
        _, back = load_checkpoint(ck)
        assert np.array_equal(jax.flatten_util.ravel_pytree(back)[0], jax.flatten_util.ravel_pytree(th)[0])
        save_checkpoint(ck, dict(meta, features="pR"), th)
        with pytest.raises(ValueError, match="do not match"):
            load_checkpoint(ck)
    with pytest.raises(ValueError, match="features"):
        ContactFunctions("deep", features="xyz")
    with pytest.raises(ValueError, match="deep_features"):
        TrainConfig(deep_features="R")
    from jaxcontact.contactnets.functions import FEATURES
    from jaxcontact.contactnets.train import DEEP_FEATURES

    assert set(DEEP_FEATURES) == set(FEATURES)


@pytest.mark.slow
def test_training_recovers_geometry_from_engine_data(sim, tmp_path):
    """Polytope training on noise-free engine tosses from a 40 %-noise start moves the vertices, the
    normal and the friction-scaled tangents towards the truth and lowers the validation loss."""
    from jaxcontact.contactnets.train import TrainConfig, load_checkpoint, train

    _, _, traj = sim
    d = TossData(states=[traj[i * 3:] for i in range(6)], dt=DT, gravity=G, mass=MASS, inertia=INERTIA * np.eye(3),
                 vertices=VERTS, toss_ids=np.arange(6), mu_nominal=MU)
    meta = train("polytope", d, 6, 0, tmp_path / "ck", TrainConfig(max_steps=600, batch_size=32, patience=100),
                 progress=False, log=lambda *a: None)
    _, th = load_checkpoint(tmp_path / "ck")
    th0 = init_polytope(jax.random.PRNGKey(0), VERTS, MU)  # the seed-0 start train() used
    hist = meta["history"]
    assert meta["best_val"] < 0.2 * hist[0]["val"], (meta["best_val"], hist[0]["val"])
    # only vertices that come near the ground in these tosses are identifiable
    R = np.asarray(jax.vmap(jc.rotations.quat_to_mat)(jnp.asarray(traj[:, 3:7])))
    z = traj[:, None, 2] + np.einsum("tk,vk->tv", R[:, 2, :], VERTS)
    seen = z.min(axis=0) < 0.05
    assert 1 <= seen.sum() < 8
    err = lambda t: np.abs(np.asarray(t.vertices)[seen] - VERTS[seen]).max()
    assert err(th) < 0.5 * err(th0), (err(th), err(th0))
    n = np.asarray(th.normal) / np.linalg.norm(np.asarray(th.normal))
    n0 = np.asarray(th0.normal) / np.linalg.norm(np.asarray(th0.normal))
    assert 1.0 - n[2] < 0.25 * (1.0 - n0[2]), (n, n0)  # the ground normal tilts back towards +z


@pytest.mark.slow
def test_rollout_selection_keeps_the_candidate_with_the_best_validation_rollouts(sim, tmp_path):
    """TrainConfig(select="rollout"): among the lowest-validation-loss rounds, the checkpoint holds the
    parameters whose validation-toss rollouts score best (position error + rotation error in radians)."""
    from jaxcontact.contactnets.data import split_train_val
    from jaxcontact.contactnets.evaluate import rollout_tosses
    from jaxcontact.contactnets.train import TrainConfig, load_checkpoint, sim_model_params, train

    _, _, traj = sim
    d = TossData(states=[traj[i * 3:] for i in range(6)], dt=DT, gravity=G, mass=MASS, inertia=INERTIA * np.eye(3),
                 vertices=VERTS, toss_ids=np.arange(6), mu_nominal=MU)
    cfg = TrainConfig(max_steps=160, batch_size=32, eval_every=20, patience=100, select="rollout", select_candidates=3)
    meta = train("polytope", d, 6, 0, tmp_path / "ck", cfg, progress=False, log=lambda *a: None)
    cands = meta["candidates"]
    assert meta["select"] == "rollout" and len(cands) == 3
    vals = sorted(h["val"] for h in meta["history"])
    assert sorted(c["val"] for c in cands) == vals[:3]  # the three lowest validation losses
    best = min(cands, key=lambda c: c["score"])
    assert meta["selected_epoch"] == best["epoch"] and np.isfinite(best["score"])
    # the checkpoint's parameters reproduce the selected candidate's validation rollouts
    meta2, th = load_checkpoint(tmp_path / "ck")
    _, va = split_train_val(d.n_tosses, 6, 0, cfg.val_fraction)
    val_d = d.subset(va)
    m = metrics(rollout_tosses(*sim_model_params(meta2, th), val_d), val_d)
    assert np.isclose(m["pos_error"], best["val_pos_error"], rtol=1e-9)
    assert np.isclose(m["pos_error"] + np.radians(m["rot_error_deg"]), best["score"], rtol=1e-9)
    with pytest.raises(ValueError, match="select"):
        TrainConfig(select="test")


@pytest.mark.slow
def test_lcp_variant_fits_through_the_chosen_gradient_mode(sim, tmp_path, capsys):
    """TrainConfig(gradient=...) reaches the Coulomb law the lcp variant's fit differentiates through:
    same loss, another gradient where contact is active; the default is the law used before; the
    choice is saved with the config; bad values and the variants that do not use it are refused."""
    from jaxcontact.cli import main
    from jaxcontact.contactnets.train import TrainConfig, _meta, lcp_problem, train

    _, _, traj = sim
    d = TossData(states=[traj], dt=DT, gravity=G, mass=MASS, inertia=INERTIA * np.eye(3), vertices=VERTS,
                 toss_ids=np.arange(1), mu_nominal=MU)
    exact, _ = lcp_problem(d, TrainConfig())
    relaxed, _ = lcp_problem(d, TrainConfig(gradient="relaxed", smoothing_length=0.02))
    # the default is sysid's own law, as before this option existed
    assert exact.loss_def.model.law == jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-9, max_iter=200))
    law = relaxed.loss_def.model.law
    assert (law.gradient, law.smoothing_length, law.solver) == ("relaxed", 0.02, exact.loss_def.model.law.solver)

    # the fit's loss on one step of a window with the cube on the ground, through each problem's own
    # model and parameter map (the whole windowed loss: two ~15 s compilations on 2 shared cores)
    def loss_and_grad(prob):
        wl, win = prob.loss_def, prob.windows[4]
        assert prob.where[4, 1] == 16 and traj[16:21, 2].max() < np.sqrt(2.0) + 1e-3  # resting on an edge

        def f(x):
            s1 = jc.step(wl.model, prob.spec.unpack(x), wl.start_state(win[0], jnp.zeros(0)))
            return jnp.sum((s1.to_array() - win[1]) ** 2)
        return jax.jit(jax.value_and_grad(f))(jnp.asarray(prob.x0()))

    (fe, ge), (fr, gr) = loss_and_grad(exact), loss_and_grad(relaxed)
    assert fe > 0 and fe == fr
    assert np.all(np.isfinite(np.asarray(gr))) and not np.allclose(ge, gr, rtol=0.05), (ge, gr)
    meta = _meta("lcp", d, 1, 0, TrainConfig(gradient="relaxed", smoothing_length=0.02), [0], [])
    assert (meta["config"]["gradient"], meta["config"]["smoothing_length"]) == ("relaxed", 0.02)
    with pytest.raises(ValueError, match="TrainConfig: CoulombLCP.gradient must be one of .*'bogus'"):
        TrainConfig(gradient="bogus")
    with pytest.raises(ValueError, match="needs smoothing_length"):
        TrainConfig(gradient="relaxed")
    with pytest.raises(ValueError, match="smoothing_length must be positive"):
        TrainConfig(gradient="relaxed", smoothing_length=0.0)
    with pytest.raises(ValueError, match="lcp variant only"):
        train("polytope", d, 1, 0, tmp_path / "ck", TrainConfig(gradient="relaxed", smoothing_length=0.02))
    assert not (tmp_path / "ck").exists()
    assert main(["contactnets", "train", "--gradient", "bogus", "--out", str(tmp_path / "c2")]) == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err


@pytest.mark.slow
def test_rollout_tosses_substeps(sim, tmp_path):
    """``rollout_tosses``: the engine's own model reproduces its tosses; with ``substeps`` it steps
    at dt / k and returns every k-th state (same shape, close to the one-step rollout)."""
    from jaxcontact.contactnets.evaluate import rollout_tosses

    model, params, traj = sim
    d = load_tosses(_toss_file(tmp_path, traj))
    one = rollout_tosses(model, params, d)
    assert metrics(one, d)["pos_error"] < 1e-9
    two = rollout_tosses(model, params, d, substeps=2)
    assert two.shape == one.shape
    np.testing.assert_allclose(two[:, 0], one[:, 0])  # the same first states
    m2 = metrics(two, d)
    assert 1e-6 < m2["pos_error"] < 0.05 and m2["n_diverged"] == 0  # a finer step: close, not identical
    with pytest.raises(ValueError, match="substeps"):
        rollout_tosses(model, params, d, substeps=0)


SHARDED_LOSS_SCRIPT = """
import jax, numpy as np, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
import jaxcontact as jc
from jaxcontact.contactnets import ContactFunctions, LossConfig, batch_loss, init_polytope, sharded_batch_loss
from jaxcontact.solvers import NonnegSettings
assert len(jax.devices()) == 4, jax.devices()
V = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)])
law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-12, max_iter=500))
model = jc.Model(law=law, dt=1 / 148, gravity=187.2, max_contacts=8)
body = jc.Body(mass=jnp.asarray(0.37), inertia=0.295 * jnp.eye(3), vertices=jnp.asarray(V), vertex_mask=jnp.ones(8))
params = jc.Params(body=body, ground=jc.Ground.flat(), law=law.init_params(mu=0.3))
q = jc.rotations.quat_normalize(jnp.array([1.0, 0.3, 0.2, 0.1]))
s0 = jc.make_state(pos=[0, 0, 1.9], quat=q, vel=[3.0, 1.0, -2.0], omega=[2.0, -3.0, 1.0])
traj = jnp.asarray(jc.rollout(model, params, s0, 40).to_array())
fns = ContactFunctions("polytope")
th = init_polytope(jax.random.PRNGKey(4), V, 0.3)
worst = 0.0
for B, cfg in ((23, LossConfig(chunk=8)), (32, LossConfig(chunk=4)), (20, LossConfig(inner=NonnegSettings(max_iter=60)))):
    xs, xns = traj[:B], traj[1:B + 1]
    v0, g0 = jax.jit(jax.value_and_grad(lambda t: batch_loss(fns, t, model, body, xs, xns, cfg)[0]))(th)
    v1, g1 = jax.jit(jax.value_and_grad(lambda t: sharded_batch_loss(fns, t, model, body, xs, xns, cfg)[0]))(th)
    assert float(v0) > 1e-3, float(v0)
    worst = max(worst, abs(float(v1) - float(v0)) / float(v0))
    for a, b in zip(jax.tree_util.tree_leaves(g0), jax.tree_util.tree_leaves(g1)):
        worst = max(worst, float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) / float(np.max(np.abs(np.asarray(a)))))
print("RESULT", worst)
"""


@pytest.mark.slow
def test_sharded_batch_loss_equals_single_device_loss_and_gradient(sim):
    """Four CPU devices: the shard_map loss (uneven batch padded, chunked local batches) has the
    single-device value and gradient; the inner paths that cannot run sharded are refused."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip(), JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", SHARDED_LOSS_SCRIPT], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    worst = float([ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")][0].split()[1])
    assert worst < 1e-10, worst
    model, params, traj = sim
    th = init_polytope(jax.random.PRNGKey(4), VERTS, MU)
    xs, xns = jnp.asarray(traj[:4]), jnp.asarray(traj[1:5])
    for cfg in (LossConfig(inner=NonnegSettings(method="jaxopt")), LossConfig(gradient="implicit")):
        with pytest.raises(ValueError, match="shard_map"):
            sharded_batch_loss(ContactFunctions("polytope"), th, model, params.body, xs, xns, cfg)
