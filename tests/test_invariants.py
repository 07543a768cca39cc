"""Physics invariants where bugs hide, each from a derivation independent of the engine's code
(float64): a tumbling box with three different principal moments (world angular momentum,
energy, the Dzhanibekov flip against Euler's equations integrated by scipy), both sweep paths of
the LCP solver (unrolled ≤ 64 rows, ``fori_loop`` above) against the complementarity conditions
checked by hand and against each other, a many-vertex prism sliding at μg through the large
path, the restitution targets against their formulas, ``energy`` by hand, controls (force,
torque, planar) against constant-acceleration kinematics, polygon and prism mass properties
against textbook formulas, ``fixed_iterations``, ``gyroscopic=False`` and ``NonFiniteWarning``."""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import contact, solvers
from jaxcontact.laws.coulomb import normal_target
from jaxcontact.rotations import quat_to_mat

G = 9.81


def _no_contact(dt, gravity=0.0, gyroscopic=True):
    model = jc.Model(law=jc.NoContact(), dt=dt, gravity=gravity, gyroscopic=gyroscopic)
    return model


def _params(body, law=None, **kw):
    law = jc.NoContact() if law is None else law
    return jc.Params(body=body, ground=jc.Ground.flat(body.vertices.shape[-1]), law=law.init_params(**kw))


# ---------------------------------------------------------------- tumbling bodies (gyroscopic term)

TUMBLER = (0.1, 0.2, 0.3)  # box edges (m): principal moments m/12 (b²+c², a²+c², a²+b²), all different


def _world_angular_momentum(body, traj):
    R = np.asarray(quat_to_mat(traj.quat))
    I = np.asarray(body.inertia)
    return np.einsum("tij,jk,tk->ti", R, I, np.asarray(traj.omega))


def _rotational_energy(body, traj):
    w = np.asarray(traj.omega)
    return 0.5 * np.einsum("ti,ij,tj->t", w, np.asarray(body.inertia), w)


def test_box_tumbling_near_its_intermediate_axis_keeps_world_angular_momentum_and_energy():
    # Free flight: no torque about the centre of mass, so L = R I ω (world) is constant and the
    # rotational energy ½ ωᵀIω too (Euler's equations). Spun at 2 rad/s about the intermediate
    # axis, perturbed by 1 %, at 2 ms for 2 s: the implicit gyroscopic step keeps L within 6.7e-5
    # (relative) and loses 7e-6 of the energy; a sign error in ω × Iω drifts L by tens of percent.
    body = jc.shapes.box(TUMBLER, 1.0)
    I = np.diag(np.asarray(body.inertia))
    assert I[0] > I[1] > I[2]  # y is the intermediate axis
    model = _no_contact(0.002, gravity=G)  # gravity acts on the centre of mass only
    params = _params(body)
    s0 = jc.make_state(pos=[0, 0, 5.0], omega=[0.02, 2.0, 0.02])
    traj = jc.rollout(model, params, s0, 1000)
    L = _world_angular_momentum(body, traj)
    drift = np.abs(L - L[0]).max() / np.linalg.norm(L[0])
    assert drift < 1e-3, drift
    E = _rotational_energy(body, traj)
    assert np.all(np.diff(E) <= 1e-15 * E[0])  # the implicit step never adds energy
    assert (E[0] - E[-1]) / E[0] < 1e-4
    # and the body does tumble: its body-frame ω moved off the intermediate axis
    assert np.abs(np.asarray(traj.omega[:, 0])).max() > 0.1

    # Model(gyroscopic=False) drops ω × Iω: body-frame ω then stays exactly constant (what the
    # option documents) and world angular momentum is no longer conserved
    flat = _no_contact(0.002, gravity=G, gyroscopic=False)
    traj0 = jc.rollout(flat, params, s0, 1000)
    np.testing.assert_allclose(np.asarray(traj0.omega), np.broadcast_to(np.asarray(s0.omega), traj0.omega.shape),
                               rtol=0, atol=1e-14)
    L0 = _world_angular_momentum(body, traj0)
    assert np.abs(L0 - L0[0]).max() / np.linalg.norm(L0[0]) > 1e-2


def test_dzhanibekov_flip_matches_eulers_equations():
    # Spun fast (8 rad/s) near the intermediate axis the body flips (the Dzhanibekov effect): the
    # body y axis turns from +L to −L. Reference: Euler's equations I ω̇ = (Iω) × ω integrated by
    # scipy (RK45, rtol 1e-10), no code shared with the engine. At 1 ms the engine's body-frame ω
    # stays within 0.53 % of |ω| of it over 2 s, the first flip (ω_y changes sign) comes 2 ms before
    # the reference's (1.025 s), and world L drifts 3.9e-3 (relative) through the flip.
    from scipy.integrate import solve_ivp

    body = jc.shapes.box(TUMBLER, 1.0)
    I = np.diag(np.asarray(body.inertia))
    dt, n = 0.001, 2000
    w0 = np.array([0.24, 8.0, 0.24])
    traj = jc.rollout(_no_contact(dt), _params(body), jc.make_state(omega=w0), n)
    t = dt * np.arange(n + 1)

    def euler(_, w):
        return [(I[1] - I[2]) * w[1] * w[2] / I[0], (I[2] - I[0]) * w[2] * w[0] / I[1],
                (I[0] - I[1]) * w[0] * w[1] / I[2]]

    ref = solve_ivp(euler, (0.0, t[-1]), w0, t_eval=t, rtol=1e-10, atol=1e-12).y.T
    omega = np.asarray(traj.omega)
    assert np.abs(omega - ref).max() < 0.015 * np.linalg.norm(w0)
    flip, flip_ref = t[np.argmax(omega[:, 1] < 0)], t[np.argmax(ref[:, 1] < 0)]
    assert 0.5 < flip_ref < 1.9 and abs(flip - flip_ref) < 0.005, (flip, flip_ref)
    # in the world: the body y axis ends the flip pointing against the (conserved) L
    L = _world_angular_momentum(body, traj)
    y_along_L = np.asarray(quat_to_mat(traj.quat))[:, :, 1] @ (L[0] / np.linalg.norm(L[0]))
    assert y_along_L[0] > 0.99 and y_along_L.min() < -0.98
    assert np.abs(L - L[0]).max() / np.linalg.norm(L[0]) < 5e-3


# ---------------------------------------------------------------- energy, controls, mass properties

def test_energy_by_hand():
    body = jc.shapes.box((0.1, 0.2, 0.3), 2.0)  # I = diag(2/12·0.13, 2/12·0.10, 2/12·0.05)
    model = jc.Model(law=jc.NoContact(), dt=0.002, gravity=9.81)
    params = _params(body)
    s = jc.make_state(pos=[0.3, -0.1, 0.7], quat=[0.6, 0.8, 0.0, 0.0], vel=[1.0, -2.0, 0.5], omega=[3.0, -1.0, 2.0])
    kinetic = 0.5 * 2.0 * (1.0 + 4.0 + 0.25)
    rotational = 0.5 * (2 / 12 * 0.13 * 9.0 + 2 / 12 * 0.10 * 1.0 + 2 / 12 * 0.05 * 4.0)
    potential = 2.0 * 9.81 * 0.7
    assert float(jc.energy(model, params, s)) == pytest.approx(kinetic + rotational + potential, rel=1e-14)
    # planar: ½ m |v|² + ½ I ω² + m g y; square of side 0.1 m, I = m (a² + b²)/12
    pbody = jc.shapes.box2d((0.1, 0.1), 0.5)
    ps = jc.make_planar_state(pos=[2.0, 0.3], angle=0.4, vel=[1.0, 2.0], omega=-4.0)
    expected = 0.5 * 0.5 * 5.0 + 0.5 * (0.5 * 0.02 / 12) * 16.0 + 0.5 * 9.81 * 0.3
    assert float(jc.energy(model, _params(pbody), ps)) == pytest.approx(expected, rel=1e-14)


def test_force_and_torque_controls_give_constant_accelerations():
    # semi-implicit Euler under constant generalised force: v_k = v_0 + k h a, x_k = x_0 + h Σ v_j
    h, n = 0.002, 50
    k = np.arange(n + 1)
    body = jc.shapes.box(TUMBLER, 1.5)
    I = np.diag(np.asarray(body.inertia))
    model = jc.Model(law=jc.NoContact(), dt=h, gravity=G)
    # a world force: gravity cancelled along z, 3 N along x; a body torque about the principal z
    # axis (ω ∥ Iω, so no gyroscopic term): ω_z = k h τ / I_z, the angle h Σ ω
    u = jnp.broadcast_to(jnp.array([3.0, 0.0, 1.5 * G, 0.0, 0.0, 0.02]), (n, 6))
    traj = jc.rollout(model, _params(body), jc.make_state(pos=[0, 0, 1.0]), controls=u)
    np.testing.assert_allclose(traj.vel[:, 0], k * h * 3.0 / 1.5, rtol=0, atol=1e-12)
    np.testing.assert_allclose(traj.pos[:, 0], h * h * (3.0 / 1.5) * k * (k + 1) / 2, rtol=0, atol=1e-12)
    np.testing.assert_allclose(traj.pos[:, 2], 1.0, rtol=0, atol=1e-12)  # hovers
    np.testing.assert_allclose(traj.omega[:, 2], k * h * 0.02 / I[2], rtol=1e-12, atol=0)
    angle = h * h * (0.02 / I[2]) * k[-1] * (k[-1] + 1) / 2
    q = np.asarray(traj.quat[-1])
    np.testing.assert_allclose(q, [np.cos(angle / 2), 0, 0, np.sin(angle / 2)], atol=1e-12)

    # planar controls (f_x, f_y, τ): the same kinematics in the plane
    pbody = jc.shapes.box2d((0.1, 0.2), 0.5)
    Ip = float(pbody.inertia)
    assert Ip == pytest.approx(0.5 * (0.01 + 0.04) / 12, rel=1e-12)
    pu = jnp.broadcast_to(jnp.array([-1.0, 0.5 * G + 0.25, 0.003]), (n, 3))
    pt = jc.rollout(model, _params(pbody), jc.make_planar_state(pos=[0.0, 1.0]), controls=pu)
    np.testing.assert_allclose(pt.vel[:, 0], -k * h * 2.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(pt.vel[:, 1], k * h * 0.5, rtol=0, atol=1e-12)
    np.testing.assert_allclose(pt.omega, k * h * 0.003 / Ip, rtol=1e-12, atol=0)
    np.testing.assert_allclose(pt.angle, h * h * (0.003 / Ip) * k * (k + 1) / 2, rtol=1e-12, atol=1e-15)


def test_polygon_and_prism_mass_properties_match_textbook_formulas():
    m = 2.0
    # right triangle with legs a, b: centroid (a/3, b/3); polar moment about it m (a² + b²)/18
    a, b = 0.3, 0.1
    tri = jc.shapes.polygon([[0, 0], [a, 0], [0, b]], m)
    assert float(tri.inertia) == pytest.approx(m * (a * a + b * b) / 18, rel=1e-12)
    v = np.asarray(tri.vertices)
    np.testing.assert_allclose(v.mean(0), 0.0, atol=1e-15)  # vertices re-centred on the centroid
    np.testing.assert_allclose(sorted(map(tuple, v + [a / 3, b / 3])), sorted([(0, 0), (a, 0), (0, b)]), atol=1e-15)
    # rectangle: m (a² + b²)/12, whatever the vertex order, interior points dropped
    rect = jc.shapes.polygon([[a, b], [0, 0], [a, 0], [a / 2, b / 2], [0, b]], m)
    assert float(rect.inertia) == pytest.approx(m * (a * a + b * b) / 12, rel=1e-12)
    assert int(rect.vertex_mask.sum()) == 4
    # regular n-gon of circumradius R: polar moment m R² (1 + 2 cos²(π/n)) / 6 (hexagon: 5/12 m R²)
    R = 0.07
    for n in (3, 6, 12):
        ang = 2 * np.pi * np.arange(n) / n + 0.3
        ngon = jc.shapes.polygon(np.c_[R * np.cos(ang), R * np.sin(ang)] + [0.5, -0.2], m)
        J = m * R * R * (1 + 2 * np.cos(np.pi / n) ** 2) / 6
        assert float(ngon.inertia) == pytest.approx(J, rel=1e-12), n
        # the prism over it (height H, axis z): I_zz = J, I_xx = I_yy = J/2 + m H²/12
        H = 0.1
        prism = jc.shapes.regular_prism(n, R, H, m)
        np.testing.assert_allclose(np.asarray(prism.inertia), np.diag([J / 2 + m * H * H / 12] * 2 + [J]),
                                   rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------- the LCP solver's two sweep paths

def _check_box_lcp(A, b, mu, z, tol):
    """The box-friction LCP conditions checked by hand (rows: normal, t1, t2 per contact)."""
    w = A @ z + b
    zn, wn = z[0::3], w[0::3]
    assert zn.min() > -tol and wn.min() > -tol
    assert np.abs(zn * wn).max() < tol * max(1.0, np.abs(zn).max())
    for t in (1, 2):
        zt, wt, bound = z[t::3], w[t::3], mu[t::3] * zn
        assert np.all(np.abs(zt) <= bound + tol)
        interior = np.abs(zt) < bound - 1e-6
        assert np.abs(wt[interior]).max(initial=0.0) < tol  # sticking: no slip
        pushed = bound > 1e-6  # a separated contact (z_n = 0) leaves its tangent velocities free
        upper, lower = pushed & (zt > bound - 1e-6), pushed & (zt < -bound + 1e-6)
        assert np.all(wt[upper & ~interior] < tol) and np.all(wt[lower & ~interior] > -tol)  # slip opposed


def _random_box_lcp(seed, contacts):
    rng = np.random.default_rng(seed)
    m = 3 * contacts
    B = rng.normal(size=(m, m))
    A = B @ B.T / m + 0.5 * np.eye(m)
    b = rng.normal(size=m)
    b[0::3] = rng.uniform(-1.0, 0.5, contacts)  # most contacts pushed in, some separating
    mu = np.zeros(m)
    mu[1::3] = mu[2::3] = rng.uniform(0.1, 0.8, contacts)
    return A, b, mu


@functools.lru_cache(maxsize=None)
def _lcp_solver(contacts, settings):
    rows = solvers.RowStructure.contacts(contacts, 2)  # numpy arrays: closed over, not hashed
    return jax.jit(lambda A, b, mu: solvers.solve_lcp(A, b, mu, rows, settings))


def test_both_sweep_paths_solve_the_same_lcp():
    # Three independent problems of 8 contacts (24 rows each: the unrolled sweep) and the same
    # three as one block-diagonal problem of 72 rows (> 64: the fori_loop sweep). Gauss–Seidel on
    # a block-diagonal matrix sweeps each block on its own, so both paths must give the same z,
    # and every solution must satisfy the complementarity conditions, checked here by hand. The box
    # preset's (each tangent on its own); the disc's: tests/test_friction_cone.py.
    settings = jc.LCPSettings(tol=1e-13, max_iter=2000, regularization=0.0, cone="box")
    blocks = [_random_box_lcp(seed, 8) for seed in (0, 1, 2)]
    small = [np.asarray(_lcp_solver(8, settings)(*map(jnp.asarray, blk)).z) for blk in blocks]
    A = np.zeros((72, 72))
    for i, blk in enumerate(blocks):
        A[24 * i:24 * (i + 1), 24 * i:24 * (i + 1)] = blk[0]
    b = np.concatenate([blk[1] for blk in blocks])
    mu = np.concatenate([blk[2] for blk in blocks])
    z_big = np.asarray(_lcp_solver(24, settings)(jnp.asarray(A), jnp.asarray(b), jnp.asarray(mu)).z)
    for blk, z in zip(blocks, small):
        _check_box_lcp(*blk, z, 1e-9)
    _check_box_lcp(A, b, mu, z_big, 1e-9)
    np.testing.assert_allclose(z_big, np.concatenate(small), rtol=0, atol=1e-9)
    zn = z_big[0::3]
    zt = np.abs(z_big[1::3]) + np.abs(z_big[2::3])
    # the problem exercises every mode: separated, sticking and sliding contacts
    assert (zn < 1e-9).any() and (zn > 1e-3).any()
    assert (zt > 1e-3).any() and np.isclose(np.abs(z_big[1::3]), mu[1::3] * zn, atol=1e-9)[zn > 1e-3].any()
    # fixed_iterations: exactly max_iter sweeps (no data-dependent exit), the same solution
    fixed = jc.LCPSettings(tol=1e-13, max_iter=400, regularization=0.0, fixed_iterations=True, cone="box")
    sol = _lcp_solver(24, fixed)(jnp.asarray(A), jnp.asarray(b), jnp.asarray(mu))
    assert int(sol.iterations) == 400
    np.testing.assert_allclose(np.asarray(sol.z), z_big, rtol=0, atol=1e-9)


def test_many_vertex_prism_slides_at_mu_g_through_the_large_solver_path():
    # A 12-gon prism on its cap with max_contacts=None: 24 candidates, 72 rows (> 64), the
    # fori_loop sweep. Sliding along a friction direction (the disc, the default, and the box agree
    # there) it decelerates at μg, in a straight line, and stops where semi-implicit Euler
    # says (v_k = v_0 − k μ g h).
    # (PGS stalls at the 1e-6 regularisation's floor on the 12 redundant normals: 30 sweeps a step
    # give the same trajectory as 300, to 1e-11 m)
    mu, v0, h = 0.3, (0.6, 0.0), 0.002
    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-8, max_iter=30))
    model = jc.Model(law=law, dt=h, max_contacts=None)
    body = jc.shapes.regular_prism(12, 0.06, 0.1, 0.37)  # 24 vertices, 12 on the bottom face
    params = jc.Params(body=body, ground=jc.Ground.flat(), law=law.init_params(mu=mu))
    traj, info = jc.rollout(model, params, jc.make_state(pos=[0, 0, 0.05], vel=[*v0, 0]), 110, with_info=True)
    assert info.phi.shape[-1] == 24 and int(info.active[0].sum()) == 12
    assert float(jnp.max(info.residual)) < 1e-7
    speed = np.linalg.norm(np.asarray(traj.vel[:, :2]), axis=1)
    sliding = speed[1:] > 0.05
    assert sliding.sum() > 50
    np.testing.assert_allclose(np.diff(speed)[sliding] / h, -mu * G, rtol=1e-5)
    k = np.arange(1, 1000)
    dist = h * np.maximum(np.hypot(*v0) - k * mu * G * h, 0.0).sum()
    assert speed[-1] < 1e-8 and abs(float(np.linalg.norm(traj.pos[-1, :2])) - dist) < 1e-6
    assert np.abs(np.asarray(traj.pos[:, 2]) - 0.05).max() < 1e-6
    assert np.abs(np.asarray(traj.pos[:, 1])).max() < 1e-9  # a straight line


# ---------------------------------------------------------------- restitution targets

def _vertex_kinematics(body, state):
    """World heights and normal velocities of every vertex, by hand (v + ω_world × R r)."""
    R = np.asarray(quat_to_mat(state.quat))
    r = np.asarray(body.vertices) @ R.T
    w = R @ np.asarray(state.omega)
    phi = np.asarray(state.pos)[2] + r[:, 2]
    vn = np.asarray(state.vel)[2] + np.cross(w, r)[:, 2]
    return phi, vn


@pytest.mark.parametrize("form", ["velocity", "position"])
def test_restitution_targets_match_their_formulas(form):
    # A tilted, spinning box falling fast: its vertices approach at different speeds and from
    # different heights: one reaches the ground within the step (φ + h v_n ≤ 0), one comes within
    # patch_tol of it (the velocity form's window only), six stay clear.
    h, eps, thr, tol = 0.002, 0.6, 0.05, 1e-3
    body = jc.shapes.box(0.1, 0.37)
    a = 0.03
    q = [np.cos(a / 2), np.sin(a / 2) * 0.6, np.sin(a / 2) * 0.8, 0.0]
    R = np.asarray(quat_to_mat(jnp.asarray(q)))
    zmin = (np.asarray(body.vertices) @ R.T)[:, 2].min()
    state = jc.make_state(pos=[0, 0, -zmin + 0.0015], quat=q, vel=[0.2, 0.0, -1.2], omega=[4.0, -3.0, 1.0])
    phi, vn = _vertex_kinematics(body, state)
    reach = phi + h * vn
    assert (reach <= 0).sum() == 1 and ((reach > 0) & (reach <= tol)).sum() == 1 and (vn < -thr).all()
    base = np.minimum(-phi / h, 0.02)  # −φ/h, capped at Model.max_correction_speed
    if form == "velocity":  # Newton: leave at ε |v⁻| if the vertex closes within the step (patch_tol)
        closing = (vn < -thr) & (phi + h * vn <= tol)
        bounce = -eps * vn
    else:  # reach the ground within the step, leave at ε|v⁻| for the rest of it
        closing = (vn < -thr) & (phi + h * vn <= 0.0)
        bounce = -eps * vn - (1 + eps) * phi / h
    expected = np.where(closing, np.maximum(base, bounce), base)
    assert closing.any() and (~closing).any() and (bounce[closing] > base[closing]).any()
    for gradient in ("exact", "relaxed"):  # the relaxed mode changes derivatives, never the value
        law = jc.CoulombLCP(restitution_target=form, restitution_threshold=thr, gradient=gradient)
        model = jc.Model(law=law, dt=h, patch_tol=tol, max_contacts=None)
        params = jc.Params(body=body, ground=jc.Ground.flat(), law=law.init_params(mu=0.3, restitution=eps))

        @jax.jit
        def targets(params, state):
            prob, con = contact.rigid_body(model, params, state, jc.free_velocity(model, params, state))
            return normal_target(law, model, params, state, prob, con), con.index

        target, index = targets(params, state)
        np.testing.assert_allclose(np.asarray(target), expected[np.asarray(index)], rtol=1e-12, atol=1e-12)


def test_relaxed_law_bounces_at_eps_times_approach_speed():
    # the relaxed law's blended bounce switch: far from the switch (approach 1.4 m/s ≫ √κ) it is
    # Newton restitution, ε times the pre-step approach speed, to the relaxation's accuracy
    eps, h = 0.5, 0.002
    law = jc.RelaxedCoulomb(kappa=1e-6, newton_iters=30)
    model = jc.Model(law=law, dt=h)
    params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(0.3, eps))
    traj = jc.rollout(model, params, jc.make_state(pos=[0, 0, 0.05 + 0.01], vel=[0, 0, -1.4]), 10)
    vz = np.asarray(traj.vel[:, 2])
    k = int(np.argmax(vz > 0))
    assert k > 1
    assert abs(vz[k] + eps * vz[k - 1]) < 0.01 * abs(vz[k - 1]), (vz[k - 1], vz[k])


# ---------------------------------------------------------------- NonFiniteWarning

def test_nonfinite_warning_names_the_body():
    # valid but extreme input: a spin of 1e160 rad/s overflows ω × Iω to inf, then NaN
    model = _no_contact(0.002, gravity=G)
    params = _params(jc.shapes.box(TUMBLER, 1.0))
    bad = jc.make_state(pos=[0, 0, 1.0], omega=[1e160, 2e160, 3e160])
    with pytest.warns(jc.NonFiniteWarning, match="the body went non-finite"):
        jc.rollout(model, params, bad, 1000)  # the program of the tumbling test
    good = jc.make_state(pos=[0, 0, 1.0], omega=[1.0, 2.0, 3.0])
    states = jax.tree_util.tree_map(lambda *x: jnp.stack(x), good, bad, good)
    with pytest.warns(jc.NonFiniteWarning, match="1 of 3 bodies went non-finite \\(first: body 1\\)"):
        jc.batch_rollout(model, params, states, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jc.rollout(model, params, good, 1000)  # a finite rollout is silent
