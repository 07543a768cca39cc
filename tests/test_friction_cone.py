"""Coulomb's cone (issue 61): the default friction set is the disc |z_t| ≤ μ z_n (``LCPSettings.cone =
"elliptic"``), so a slide does not depend on how the scene is turned in the plane; ``"box"`` keeps the
square of each tangent clipped on its own (today's iterates, the paper setups that used it).

The slide checks compare with the exact answer of the engine's integrator: semi-implicit Euler with a
constant deceleration μ g stops after N = ⌊v₀/(μ g h)⌋ steps having moved h Σ_{k=1..N} (v₀ − k μ g h)
≈ v₀²/(2 μ g) − v₀ h/2 (at h = 2 ms and 1.58 m/s that is 0.62 % short of Coulomb's v₀²/(2μg), the
integrator's error, not the cone's: MuJoCo C's elliptic cone slides 0.51 % short on the same box)."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import worlds
from jaxcontact.solvers import LCPSettings, RowStructure, solve_body_lcp, solve_lcp
from jaxcontact.solvers import problem as P
from jaxcontact.solvers.lcp import regularized

jax.config.update("jax_enable_x64", True)

MU, V0, SIZE, MASS, G, H = 0.5, 1.58, 0.1, 0.37, 9.81, 0.002
HEADINGS = np.radians(np.arange(0.0, 90.1, 5.0))


def discrete_slide(v0=V0, mu=MU, h=H):
    """The distance semi-implicit Euler slides at a constant deceleration μ g (module docstring)."""
    n = math.floor(v0 / (mu * G * h))
    return h * sum(v0 - k * mu * G * h for k in range(1, n + 1))


def law(cone="elliptic", **solver):
    return jc.CoulombLCP(solver=LCPSettings(cone=cone, **solver))


def launched(theta, dtype, v0=V0, omega_z=0.0):
    """Flat boxes resting on the ground, launched at ``v0`` along each heading of ``theta``."""
    n = len(theta)
    f = lambda x: jnp.asarray(x, dtype)
    return jc.State(pos=f(np.stack([0 * theta, 0 * theta, np.full(n, SIZE / 2)], -1)),
                    quat=f(np.tile([1.0, 0, 0, 0], (n, 1))),
                    vel=f(np.stack([v0 * np.cos(theta), v0 * np.sin(theta), 0 * theta], -1)),
                    omega=f(np.stack([0 * theta, 0 * theta, np.full(n, omega_z)], -1)))


def body_params(lw, dtype, mu=MU):
    params = jc.Params(body=jc.shapes.box(SIZE, MASS), ground=jc.Ground.flat(), law=lw.init_params(mu=mu))
    return jax.tree_util.tree_map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, params)


def slide_ends(pos, theta):
    """(distance, heading change in degrees) of final positions (…, 3) started at the origin."""
    p = np.asarray(pos, np.float64)
    d = np.hypot(p[..., 0], p[..., 1])
    turn = np.degrees(np.arctan2(p[..., 1], p[..., 0])) - np.degrees(theta)
    return d, turn


# float32: the sweeps stop at a tolerance floored at round-off (1e-5 m/s at these speeds), so each
# step's deceleration carries a relative error of ~1e-5/(μ g h) ≈ 1e-3 that does not cancel exactly
def friction_angles(vel):
    """(degrees between each step's friction impulse, the horizontal change of velocity (gravity is
    vertical), and the reverse of the sliding velocity before it; whether it was sliding (> 5 cm/s))."""
    v = np.asarray(vel[..., :2], np.float64)
    dv = v[..., 1:, :] - v[..., :-1, :]
    cos = -np.sum(dv * v[..., :-1, :], -1) / (np.linalg.norm(dv, axis=-1) * np.linalg.norm(v[..., :-1, :], axis=-1) + 1e-300)
    return np.degrees(np.arccos(np.clip(cos, -1, 1))), np.linalg.norm(v[..., 1:, :], axis=-1) > 0.05


@pytest.mark.parametrize("dtype,rtol", [(jnp.float64, 2e-4), (jnp.float32, 2e-3)])
def test_a_box_slides_the_same_distance_straight_at_every_heading(dtype, rtol):
    """A 0.1 m box launched flat at 1.58 m/s, μ 0.5, at headings 0°…90° in 5° steps (one vmapped
    program): the distance of the integrator's exact slide at every heading, the path straight
    (heading change < 0.1°), and every step's friction opposite to the slip (< 0.1°) and of size
    μ g h while sliding."""
    model = jc.Model(law=law())
    params = body_params(model.law, dtype)
    traj = jax.jit(jax.vmap(lambda s: jc.rollout(model, params, s, 170)))(launched(HEADINGS, dtype))
    d, turn = slide_ends(traj.pos[:, -1], HEADINGS)
    np.testing.assert_allclose(d, discrete_slide(), rtol=rtol)
    assert np.max(np.abs(turn)) < 0.1, turn
    assert np.max(np.abs(d / (V0**2 / (2 * MU * G)) - 1)) < 0.0065  # Coulomb's, less the integrator's v₀h/2
    assert float(jnp.max(jnp.abs(traj.vel[:, -1]))) < (1e-6 if dtype == jnp.float64 else 1e-4)  # stopped
    angle, sliding = friction_angles(traj.vel)
    assert sliding.sum() > 19 * 100
    assert np.max(angle[sliding]) < (0.1 if dtype == jnp.float64 else 0.5), np.max(angle[sliding])
    dv = np.linalg.norm(np.diff(np.asarray(traj.vel[..., :2], np.float64), axis=1), axis=-1)
    # to the solver's tolerance (1e-6 m/s of a 9.8 mm/s change per step in float64, round-off in float32)
    np.testing.assert_allclose(dv[sliding], MU * G * H, rtol=2e-4 if dtype == jnp.float64 else 5e-3)


def test_box_preset_keeps_the_square():
    """``cone="box"``: each tangent clipped on its own, as before the disc existed: at 45° the
    friction is √2 μ m g along the slide (0.1784 m, 30 % short), at 0° the same as the disc; at 30°
    the first steps' friction is 15° off the slip (the square's corner pulls the path toward 45°)."""
    model = jc.Model(law=law("box"))
    theta = np.radians([0.0, 45.0, 30.0])
    params = body_params(model.law, jnp.float64)
    traj = jax.jit(jax.vmap(lambda s: jc.rollout(model, params, s, 170)))(launched(theta, jnp.float64))
    d, turn = slide_ends(traj.pos[:, -1], theta)
    np.testing.assert_allclose(d[:2], [discrete_slide(), 0.1784], atol=1e-4)
    assert abs(d[1] - discrete_slide(mu=MU * np.sqrt(2))) < 2e-4  # the 45° slide meets √2 μ
    angle, _ = friction_angles(traj.vel[2])
    np.testing.assert_allclose(angle[0], 15.0, atol=0.01)
    assert abs(turn[2]) > 5


@pytest.mark.slow
@pytest.mark.parametrize("dtype,rtol", [(jnp.float64, 2e-4), (jnp.float32, 2e-3)])
def test_a_one_body_world_slides_the_same_distance_straight_at_every_heading(dtype, rtol):
    """The same slides in a world of one box (``worlds.make_scene``): the same answer."""
    scene, body = worlds.make_scene([jc.shapes.box(SIZE, MASS)])
    model = worlds.model(law=law())
    params = body_params(model.law, dtype).replace(body=body)
    params = jax.tree_util.tree_map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, params)
    states = jax.tree_util.tree_map(lambda x: x[:, None], launched(HEADINGS, dtype))
    fin, _ = worlds.batch_rollout(model, scene, params, states, 170, output="final")
    d, turn = slide_ends(fin.pos[:, 0], HEADINGS)
    np.testing.assert_allclose(d, discrete_slide(), rtol=rtol)
    assert np.max(np.abs(turn)) < 0.1, turn


def test_stick_and_slip_at_the_same_push_in_every_direction():
    """A resting box pushed sideways by a constant horizontal force F at headings 0°, 20°, 45°, 70°:
    at F = 0.95 μ m g it sticks (moves < 1 µm in 0.2 s), at 1.05 μ m g it slides with acceleration
    (F − μ m g)/m along the push (the box preset would hold a 45° push up to √2 μ m g)."""
    theta = np.radians([0.0, 20.0, 45.0, 70.0])
    model = jc.Model(law=law())
    params = body_params(model.law, jnp.float64)
    rest = jax.tree_util.tree_map(lambda x: x[0], launched(np.zeros(1), jnp.float64, v0=0.0))
    T = 100

    def run(th, k, cone):
        m = jc.Model(law=law(cone))
        f = k * MU * MASS * G * jnp.stack([jnp.cos(th), jnp.sin(th), 0.0])
        controls = jnp.tile(jnp.concatenate([f, jnp.zeros(3)]), (T, 1))
        return jc.rollout(m, params, rest, controls=controls, output="final")

    th = jnp.asarray(np.repeat(theta, 2))
    k = jnp.asarray(np.tile([0.95, 1.05], len(theta)))
    fin = jax.jit(jax.vmap(lambda a, b: run(a, b, "elliptic")))(th, k)  # one program
    moved = np.asarray(fin.pos[:, :2] - rest.pos[:2])
    stick, slip = moved[0::2], moved[1::2]
    assert np.max(np.abs(stick)) < 1e-6, stick
    v = np.asarray(fin.vel[1::2, :2])
    expect = 0.05 * MU * G * T * H
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), expect, rtol=1e-3)
    u = np.stack([np.cos(theta), np.sin(theta)], -1)
    np.testing.assert_allclose(np.sum(v * u, axis=1), expect, rtol=1e-3)


@pytest.mark.slow
def test_a_sliding_spinning_box_stops_both_when_a_ten_times_finer_step_does():
    """A box launched at 1 m/s along 30° and spun at 10 rad/s about the vertical: friction couples
    the two, and both stop at once. The stop times (|v| < 1 mm/s, |ω| < 0.01 rad/s) at h = 2 ms equal
    those at h = 0.2 ms within 3 coarse steps (6 ms of a 0.15 s slide: the coarse step's own error
    is of order h per phase of the motion; the box preset, whose friction bends toward the axes,
    is not the check here)."""
    theta = np.radians([30.0])
    out = {}
    for h, n in ((H, 150), (H / 10, 1500)):
        model = jc.Model(law=law(), dt=h)
        s = jax.tree_util.tree_map(lambda x: x[0], launched(theta, jnp.float64, v0=1.0, omega_z=10.0))
        traj = jc.rollout(model, body_params(model.law, jnp.float64), s, n)
        t = np.arange(n + 1) * h
        v = np.linalg.norm(np.asarray(traj.vel[:, :2]), axis=1)
        w = np.abs(np.asarray(traj.omega[:, 2]))
        out[h] = (t[np.argmax(v < 1e-3)], t[np.argmax(w < 1e-2)], v, w)
    (tv, tw, v, w), (fv, fw, _, _) = out[H], out[H / 10]
    assert v[0] > 0.9 and w[0] > 9 and fv > 0.05 and fw > 0.05  # both moved, both stopped in the window
    assert abs(tv - fv) <= 3 * H and abs(tw - fw) <= 3 * H, (tv, fv, tw, fw)
    assert abs(fv - fw) <= 3 * H / 10 + 1e-12  # together


def test_a_box_dragged_across_another_at_45_degrees():
    """Body–body friction: a 0.1 m box launched at 1 m/s along 45° on top of a heavy 0.6 m box that
    rests on the ground (whose friction holds it): the top box's friction, from the pair's contacts,
    opposes its slip (path straight within 0.1°) and it slides the integrator's exact distance."""
    top = jc.shapes.box(SIZE, MASS)
    base = jc.shapes.box((0.6, 0.6, 0.1), 20.0)
    scene, body = worlds.make_scene([base, top])
    model = worlds.model(law=law())
    params = jc.Params(body=body, ground=jc.Ground.flat(), law=model.law.init_params(mu=MU))
    v0 = 1.0
    c = np.cos(np.radians(45.0)) * v0
    s = jc.State(pos=jnp.asarray([[0.0, 0.0, 0.05], [-0.15, -0.15, 0.15]]), quat=jnp.tile(jnp.asarray([1.0, 0, 0, 0]), (2, 1)),
                 vel=jnp.asarray([[0.0, 0.0, 0.0], [c, c, 0.0]]), omega=jnp.zeros((2, 3)))
    traj, info = worlds.rollout(model, scene, params, s, 150)
    p = np.asarray(traj.pos[-1, 1, :2] - s.pos[1, :2])
    d = np.hypot(*p)
    assert abs(np.degrees(np.arctan2(p[1], p[0])) - 45.0) < 0.1
    np.testing.assert_allclose(d, discrete_slide(v0), rtol=2e-3)
    assert float(jnp.max(jnp.abs(traj.pos[:, 0, :2]))) < 1e-5  # the base held
    assert not np.any(np.asarray(info.flags))


def random_body_problem(seed, C=16, N=5, anisotropic=False):
    """C contacts between N free bodies and the ground, random rows and masses, pushed together
    and sideways (normals active and separating, friction sticking and sliding)."""
    rng = np.random.default_rng(seed)
    bodies = np.stack([rng.integers(-1, N, C), rng.integers(0, N, C)], axis=1)
    bodies[:, 0] = np.where(bodies[:, 0] == bodies[:, 1], -1, bodies[:, 0])
    rows = rng.normal(size=(C, 2, 3, 6))
    rows[:, 0] *= (bodies[:, 0] >= 0)[:, None, None]
    L = rng.normal(size=(N, 6, 6)) * 0.3 + 2 * np.eye(6)
    Minv = np.einsum("nij,nkj->nik", L, L) / 6
    mu = np.broadcast_to(rng.uniform(0.2, 0.9, size=(C, 1)), (C, 2)).copy()
    if anisotropic:
        mu[:, 1] = rng.uniform(0.1, 0.9, size=C)
    target = rng.normal(size=C) * 0.3 + 0.2
    bp = P.BodyProblem(rows=jnp.asarray(rows), bodies=jnp.asarray(bodies, jnp.int32), mobility=jnp.asarray(Minv),
                       v_free=jnp.asarray(rng.normal(size=(N, 6)) * 0.5), phi=jnp.zeros(C), valid=jnp.ones(C, bool),
                       target=jnp.asarray(target))
    return bp, jnp.asarray(mu)


def solve_paths(bp, mu, s):
    """The solution of one ``BodyProblem`` by every sweep path: the velocity form's sequential sweeps,
    the fused kernel and the coloured ones, the dense sweeps unrolled and in a fori_loop; and (A, b)."""
    C = bp.num_contacts
    coupling = jnp.concatenate([jnp.zeros((C, 1)), mu], axis=1)
    bias = jnp.zeros((C, 3)).at[:, 0].set(-bp.target)
    zs = {how: solve_body_lcp(bp.rows, bp.bodies, bp.mobility, bp.v_free, bias, coupling, bp.valid,
                              settings=dataclasses.replace(s, sweeps=how), group=1).z
          for how in ("sequential", "native", "colour")}
    dense = P.dense(bp)
    A, b = dense.A, (dense.free_velocity.at[:, 0].add(-bp.target)).reshape(-1)
    rows = RowStructure.contacts(C, 2)
    for sweep in ("unrolled", "looped"):
        method = P.Plan("dense", sweep, sweep, "vmap")
        zs[sweep] = solve_lcp(A, b, coupling.reshape(-1), rows, s, method=method).z.reshape(C, 3)
    return zs, A, b


@pytest.mark.parametrize("seed,anisotropic", [(0, False), (1, True)])
def test_every_sweep_path_solves_the_disc_and_its_complementarity_holds(seed, anisotropic):
    """The same random problem (16 contacts, 5 bodies; seed 1: μ₁ ≠ μ₂, an ellipse) by the dense
    sweeps (unrolled and in a fori_loop), the velocity form's sequential sweeps, the fused kernel and
    the coloured sweeps: one solution, and it is Coulomb's by hand: Σ(z_tk/μ_k)² ≤ z_n², a sliding
    contact's friction opposite its slip in the scaled metric (z_t ∥ −M² w_t, M = diag μ; for μ₁ = μ₂
    exactly opposite), a sticking one's slip zero, the normal complementary."""
    bp, mu = random_body_problem(seed, anisotropic=anisotropic)
    C = bp.num_contacts
    s = LCPSettings(tol=1e-13, max_iter=20000, cone="elliptic")
    zs, A, b = solve_paths(bp, mu, s)
    ref = zs["sequential"]
    for how, z in zs.items():
        np.testing.assert_allclose(z, ref, atol=1e-8, err_msg=how)
    w = (regularized(A, s.regularization) @ ref.reshape(-1) + b).reshape(C, 3)
    z = np.asarray(ref)
    w = np.asarray(w)
    scaled = np.hypot(z[:, 1] / mu[:, 0], z[:, 2] / mu[:, 1])
    assert np.all(z[:, 0] >= 0) and np.all(w[:, 0] > -1e-9) and np.all(np.abs(z[:, 0] * w[:, 0]) < 1e-9)
    assert np.all(scaled <= z[:, 0] * (1 + 1e-9) + 1e-12)
    active = z[:, 0] > 1e-8
    slides = active & (scaled > z[:, 0] * (1 - 1e-7))
    sticks = active & ~slides
    assert slides.sum() >= 2 and (~active).sum() >= 1 and (sticks.sum() >= 1 or anisotropic), (slides.sum(), sticks.sum())
    assert np.all(np.abs(w[sticks, 1:]) < 1e-7)
    m2 = np.asarray(mu) ** 2
    push = -m2[slides] * w[slides, 1:]  # the direction maximal dissipation on the ellipse picks
    cos = np.sum(push * z[slides, 1:], axis=1) / (np.linalg.norm(push, axis=1) * np.linalg.norm(z[slides, 1:], axis=1))
    assert np.max(np.degrees(np.arccos(np.clip(cos, -1, 1)))) < 0.1


def test_every_sweep_path_keeps_the_box_preset():
    """``cone="box"`` through every path: one solution, each tangent within its own bound, a row
    strictly inside it without slip, a row at its bound slipping against it (the square's complementarity)."""
    bp, mu = random_body_problem(2, anisotropic=True)
    C = bp.num_contacts
    s = LCPSettings(tol=1e-13, max_iter=20000, cone="box")
    zs, A, b = solve_paths(bp, mu, s)
    ref = zs["sequential"]
    for how, z in zs.items():
        np.testing.assert_allclose(z, ref, atol=1e-8, err_msg=how)
    z = np.asarray(ref)
    w = np.asarray((regularized(A, s.regularization) @ ref.reshape(-1) + b).reshape(C, 3))
    bound = np.asarray(mu) * z[:, :1]
    t, wt = z[:, 1:], w[:, 1:]
    assert np.all(np.abs(t) <= bound + 1e-12)
    inside = np.abs(t) < bound - 1e-7
    at = (np.abs(t) > bound - 1e-9) & (bound > 1e-8)
    assert inside.sum() >= 1 and np.any(at.all(axis=1))  # a contact at the square's corner: outside the ellipse
    assert np.all(np.abs(wt[inside]) < 1e-7)
    assert np.all(t[at] * wt[at] <= 1e-12)


@pytest.mark.parametrize("sweeps", ["native", "sequential"])
def test_velocity_form_derivatives_of_the_disc_match_finite_differences(sweeps):
    """The implicit derivative of the disc in velocity form: the fused adjoint kernel's ("native")
    and GMRES on the matrix-free map's products ("sequential"): g · dz along a random direction of
    (bias, μ) against central differences of the solves (step 1e-6, tolerance 1e-13), on a random
    problem with sliding, sticking and separated contacts, μ₁ ≠ μ₂."""
    bp, mu = random_body_problem(1, anisotropic=True)
    C = bp.num_contacts
    s = LCPSettings(tol=1e-13, max_iter=20000, sweeps=sweeps, cone="elliptic")
    rng = np.random.default_rng(5)
    g, db, dm = (jnp.asarray(rng.normal(size=sh)) for sh in ((C, 3), (C, 3), (C, 2)))
    bias0 = jnp.zeros((C, 3)).at[:, 0].set(-bp.target)

    def f(bias, mu):
        coupling = jnp.concatenate([jnp.zeros((C, 1)), mu], axis=1)
        z = solve_body_lcp(bp.rows, bp.bodies, bp.mobility, bp.v_free, bias, coupling, bp.valid, settings=s).z
        return jnp.sum(g * z)

    gb, gm = jax.jit(jax.grad(f, argnums=(0, 1)))(bias0, mu)
    ff = jax.jit(f)
    eps = 1e-6
    fd = (ff(bias0 + eps * db, mu + eps * dm) - ff(bias0 - eps * db, mu - eps * dm)) / (2 * eps)
    exact = float(jnp.sum(gb * db) + jnp.sum(gm * dm))
    assert abs(float(fd)) > 1e-2
    assert abs(exact - float(fd)) < 1e-5 * max(1.0, abs(float(fd))), (exact, float(fd))


def disc_map_jacobians(A, b, mu, z):
    """∂T/∂z and ∂T/∂b of the disc's projected-Jacobi map T (``solve_lcp``'s fixed-point map), written
    out per contact (numpy, rows [n, t₁, t₂] per contact; A with its regularisation): the normal
    z_n − w_n/A_nn where positive; the tangent pair y_k = z_k − α μ_k² w_k (α = 1/max_k μ_k² A_kk),
    kept inside the ellipse, and on its rim μ_k z_n l_k/r (l = y/μ, r = |l|), whose derivative is
    μ_k (l_k/r ∂z_n + (z_n/r)(δ_kj − l_k l_j/r²) ∂l_j): the reference the implicit derivative is
    checked against (not the code it checks)."""
    A, b, z, mu = (np.asarray(x, np.float64) for x in (A, b, z, mu))
    m = len(b)
    d, w, eye = np.diagonal(A), A @ z + b, np.eye(m)
    Jz, Jb = np.zeros((m, m)), np.zeros((m, m))
    for c in range(m // 3):
        n, t = 3 * c, np.array([3 * c + 1, 3 * c + 2])
        if z[n] - w[n] / d[n] > 0:
            Jz[n], Jb[n, n] = eye[n] - A[n] / d[n], -1.0 / d[n]
        alpha = 1.0 / np.max(mu[c] ** 2 * d[t])
        step = alpha * mu[c] ** 2
        y = z[t] - step * w[t]
        dy_z, dy_b = eye[t] - step[:, None] * A[t], -step[:, None] * eye[t]
        lam = y / mu[c]
        r = np.linalg.norm(lam)
        if r <= z[n]:
            Jz[t], Jb[t] = dy_z, dy_b
            continue
        P = (np.eye(2) - np.outer(lam, lam) / r**2) * z[n] / r
        Jz[t] = mu[c][:, None] * (np.outer(lam / r, eye[n]) + P @ (dy_z / mu[c][:, None]))
        Jb[t] = mu[c][:, None] * (P @ (dy_b / mu[c][:, None]))
    return Jz, Jb


def face_lcp(v0, omega_z):
    """The LCP of the 0.1 m box resting flat on its face (four corners, float64), launched at ``v0``
    along 30° and spinning at ``omega_z`` about the vertical: (A, b, μ (C, 2), the contacts' J)."""
    lw = law()
    model = jc.Model(law=lw, max_contacts=4)
    params = body_params(lw, jnp.float64)
    th = np.radians(30.0)
    s = jc.State(pos=jnp.asarray([0.0, 0.0, SIZE / 2]), quat=jnp.asarray([1.0, 0, 0, 0]),
                 vel=jnp.asarray([v0 * np.cos(th), v0 * np.sin(th), 0.0]), omega=jnp.asarray([0.0, 0.0, omega_z]))
    prob, _ = jc.contact.rigid_body(model, params, s, jc.stages.free_velocity(model, params, s))
    assert bool(jnp.all(prob.valid))
    b = prob.free_velocity.at[:, 0].add(-prob.target).reshape(-1)
    return prob.A, b, jnp.broadcast_to(params.law.mu[:2], (prob.num_contacts, 2)), prob.J


def adjoint_error(A_reg, b, mu, z, dz_db):
    """How far the implicit derivative dz/db misses the dense reference's linear system
    (I − ∂T/∂z) X = ∂T/∂b at the solver's z, relative to ∂T/∂b (the adjoint solve's ridge, 1e-10
    against the redundant normals' eigenvalue 1e-6, leaves ~1e-4); and the reference's active rows."""
    Jz, Jb = disc_map_jacobians(A_reg, b, mu, z)
    X = np.asarray(dz_db)
    return np.abs((np.eye(len(b)) - Jz) @ X - Jb).max() / np.abs(Jb).max(), Jz


@pytest.mark.parametrize("v0,omega_z", [(1.58, 6.0), (0.004, 0.0)], ids=["sliding-spinning", "sticking"])
def test_dense_disc_derivative_solves_the_reference_system(v0, omega_z):
    """The dense form's implicit derivative dz/db (``solve_lcp``, the disc) at a face sliding and
    spinning (every corner slips in its own direction: the projection's Jacobian in both z_t and z_n)
    and at one that sticks, against the hand-written Jacobian of the disc's map (``disc_map_jacobians``)."""
    A, b, mu, _ = face_lcp(v0, omega_z)
    C = mu.shape[0]
    s = LCPSettings(cone="elliptic", tol=1e-12, max_iter=20000)
    rows = RowStructure.contacts(C, 2)
    coupling = jnp.concatenate([jnp.zeros((C, 1)), mu], axis=1).reshape(-1)
    solve = lambda bb: solve_lcp(A, bb, coupling, rows, s).z
    z = jax.vjp(solve, b)[0]  # the point the derivative is taken at (differentiated: the polished one)
    err, Jz = adjoint_error(regularized(A, s.regularization), b, mu, z, jax.jacrev(solve)(b))
    zt = np.asarray(z).reshape(C, 3)
    on_rim = np.hypot(zt[:, 1], zt[:, 2]) > (1 - 1e-9) * MU * zt[:, 0]
    assert np.all(zt[:, 0] > 0) and (np.all(on_rim) if v0 > 1 else not np.any(on_rim))
    assert err < 1e-3, err


@pytest.mark.parametrize("sweeps", ["native", "sequential"])
def test_velocity_form_disc_derivative_solves_the_reference_system(sweeps):
    """The velocity form's implicit derivative (the fused adjoint kernel, "native"; GMRES on the
    map's products, "sequential") of a random problem with sliding, sticking and separated contacts,
    μ₁ ≠ μ₂, against the hand-written Jacobian of the disc's map on its dense (A, b)."""
    bp, mu = random_body_problem(1, anisotropic=True)
    C = bp.num_contacts
    s = LCPSettings(tol=1e-13, max_iter=20000, sweeps=sweeps, cone="elliptic")
    coupling = jnp.concatenate([jnp.zeros((C, 1)), mu], axis=1)
    bias0 = jnp.zeros((C, 3)).at[:, 0].set(-bp.target)
    solve = lambda bias: solve_body_lcp(bp.rows, bp.bodies, bp.mobility, bp.v_free, bias.reshape(C, 3), coupling,
                                        bp.valid, settings=s).z.reshape(-1)
    z = solve(bias0.reshape(-1))
    dense = P.dense(bp)
    b = dense.free_velocity.at[:, 0].add(-bp.target).reshape(-1)
    err, Jz = adjoint_error(regularized(dense.A, s.regularization), b, mu, z, jax.jacrev(solve)(bias0.reshape(-1)))
    assert err < 1e-6, err


def test_relaxed_law_slides_on_the_smoothed_disc():
    """``RelaxedCoulomb`` (κ = 1e-6 (m/s)²): its friction is the smoothed disc, so a slide at 45°
    goes as far as one at 0° (to 1e-4) and straight, within 0.5 % of the hard law's; its box
    preset's 45° slide meets the square (√2 μ: 25 % shorter)."""
    theta = np.radians([0.0, 45.0])
    out = {}
    for cone in ("elliptic", "box"):
        lw = jc.RelaxedCoulomb(kappa=1e-6, cone=cone)
        model = jc.Model(law=lw, max_contacts=4)
        fin = jc.batch_rollout(model, body_params(lw, jnp.float64), launched(theta, jnp.float64, v0=1.0), 60)
        out[cone] = slide_ends(fin.pos, theta)
    (d, turn), (db, _) = out["elliptic"], out["box"]
    assert abs(d[1] / d[0] - 1) < 1e-4 and np.max(np.abs(turn)) < 0.1
    hard = 60 * H * 1.0 - MU * G * H * H * 60 * 61 / 2  # semi-implicit Euler, still sliding at the end
    np.testing.assert_allclose(d, hard, rtol=5e-3)
    assert abs(db[0] / d[0] - 1) < 1e-4 and db[1] < d[1] * 0.97


@pytest.mark.parametrize("cone", ["elliptic", "box"])
def test_slide_gradients_match_central_differences(cone):
    """d(distance slid in 0.2 s)/d(μ, v₀) through 100 steps of a sliding box at headings 0°, 30°,
    45° (one vmapped program), at the defaults (the disc, float64; and the box preset), against
    central differences (step 1e-6): within 1e-3 relative, and (the disc) the integrator's analytic slopes;
    along the mass scale (mass and inertia × s, a direction the slide does not depend on) zero."""
    model = jc.Model(law=law(cone))

    def dist(mu, v0, th, sc=1.0):
        u = jnp.stack([jnp.cos(th), jnp.sin(th), 0.0])
        body = jc.shapes.box(SIZE, MASS)
        body = body.replace(mass=body.mass * sc, inertia=body.inertia * sc)
        params = jc.Params(body=body, ground=jc.Ground.flat(), law=model.law.init_params(mu=mu))
        s = jc.State(pos=jnp.asarray([0.0, 0.0, SIZE / 2]), quat=jnp.asarray([1.0, 0, 0, 0]), vel=v0 * u, omega=jnp.zeros(3))
        fin = jc.rollout(model, params, s, 100, output="final")
        return jnp.dot(fin.pos, u)

    th = jnp.radians(jnp.asarray([0.0, 30.0, 45.0]))
    mu, v0 = jnp.full(3, MU), jnp.full(3, V0)
    *grad, gs = jax.jit(jax.vmap(jax.grad(dist, argnums=(0, 1, 3))))(mu, v0, th, jnp.ones(3))
    assert np.all(np.abs(np.asarray(gs)) < 1e-8), gs
    eps = 1e-6
    f = jax.jit(jax.vmap(dist))
    x = jnp.stack([mu + eps, mu - eps, mu, mu]), jnp.stack([v0, v0, v0 + eps, v0 - eps])
    vals = f(x[0].ravel(), x[1].ravel(), jnp.tile(th, 4)).reshape(4, 3)
    fd = [(vals[0] - vals[1]) / (2 * eps), (vals[2] - vals[3]) / (2 * eps)]
    for g, d in zip(grad, fd):
        assert np.all(np.abs(np.asarray(d)) > 1e-3)
        np.testing.assert_allclose(g, d, rtol=1e-3)
    # the analytic slopes: x(T) = v₀ T − μ g (T² + hT)/2 (semi-implicit Euler), ∂x/∂μ = −g(T² + hT)/2, ∂x/∂v₀ = T
    T = 100 * H
    if cone == "box":  # along the x axis the square is the disc; at 45° it is √2 μ
        np.testing.assert_allclose(np.asarray(grad[0])[[0, 2]], -G * (T * T + H * T) / 2 * np.asarray([1.0, np.sqrt(2)]), rtol=1e-3)
        return
    np.testing.assert_allclose(grad[0], -G * (T * T + H * T) / 2, rtol=1e-3)
    np.testing.assert_allclose(grad[1], T, rtol=1e-3)


def spinning_slide(model, mu, v0, sc, n_steps):
    """The distance slid along 30° in ``n_steps``: the box launched at ``v0`` spinning at 6 rad/s about
    the vertical, its mass and inertia × ``sc`` (a direction the forward is invariant along)."""
    th = np.radians(30.0)
    u = jnp.asarray([np.cos(th), np.sin(th), 0.0])
    body = jc.shapes.box(SIZE, MASS)
    body = body.replace(mass=body.mass * sc, inertia=body.inertia * sc)
    params = jc.Params(body=body, ground=jc.Ground.flat(), law=model.law.init_params(mu=mu))
    s = jc.State(pos=jnp.asarray([0.0, 0.0, SIZE / 2]), quat=jnp.asarray([1.0, 0, 0, 0]), vel=v0 * u,
                 omega=jnp.asarray([0.0, 0.0, 6.0]))
    return jnp.dot(jc.rollout(model, params, s, n_steps, output="final").pos, u)


@pytest.mark.slow  # ~50 s a cone (the default tier's time, issue 60); the default tier checks 50 steps below
@pytest.mark.parametrize("cone", ["elliptic", pytest.param("box", marks=pytest.mark.xfail(strict=True, reason=(
    "the square preset: a face that slides and spins has a normal split the sweeps leave unconverged (I − ∂T/∂z "
    "has the regularisation's eigenvalue 1e-6 along it) that moves the body once its corners slip in different "
    "quadrants; the one-round active-set polish does not land the square there (1.2e-5; docs/worlds.md "
    "'Friction cone')")))])
def test_a_sliding_spinning_box_s_derivative_along_the_mass_scale_is_zero(cone):
    """d(distance slid in 0.2 s along 30°)/ds with mass and inertia × s, the box launched at 1.58 m/s
    and spinning at 6 rad/s about the vertical: the forward is invariant (impulses scale with s), so
    the derivative must be 0 (straight slides: ``test_slide_gradients_match_central_differences``).
    At the defaults (the disc, the forward's active-set polish) −7.7e-12; without the polish 9.8e-6
    (the square 1.3e-4 without, 1.2e-5 with): ``python -m benchmarks.cone_designs``."""
    model = jc.Model(law=law(cone))
    dist = lambda sc: spinning_slide(model, MU, V0, sc, 100)
    assert abs(float(jax.jit(jax.grad(dist))(1.0))) < 1e-8


@pytest.mark.parametrize("cone", ["elliptic", "box"])
def test_forward_newton_makes_a_sliding_spinning_box_s_derivative_exact(cone):
    """With the split of the face's normal force converged in the forward (``forward_newton``),
    the slide along 30° spinning at 6 rad/s (50 steps) has d/ds = 0 along the mass scale (at the
    defaults 9.8e-6 with the disc: the strict xfail above) and d/dμ, d/dv₀ equal to central
    differences; ``python -m benchmarks.cone_designs`` measures it."""
    model = jc.Model(law=law(cone, forward_newton=10))
    dist = lambda mu, v0, sc: spinning_slide(model, mu, v0, sc, 50)

    g = [float(x) for x in jax.jit(jax.grad(dist, argnums=(0, 1, 2)))(MU, V0, 1.0)]
    assert abs(g[2]) < 1e-8, g
    f, e = jax.jit(jax.vmap(dist)), 1e-6
    vals = np.asarray(f(jnp.asarray([MU + e, MU - e, MU, MU]), jnp.asarray([V0, V0, V0 + e, V0 - e]), jnp.ones(4)))
    fd = [(vals[0] - vals[1]) / (2 * e), (vals[2] - vals[3]) / (2 * e)]
    assert min(abs(x) for x in fd) > 1e-2
    np.testing.assert_allclose(g[:2], fd, rtol=1e-5)


def test_forward_newton_is_checked():
    with pytest.raises(ValueError, match="forward_newton"):
        LCPSettings(forward_newton=-1)
    z = jnp.zeros((1, 3))
    with pytest.raises(ValueError, match="forward_newton"):
        solve_body_lcp(jnp.zeros((1, 2, 3, 6)), jnp.asarray([[0, -1]]), jnp.eye(6)[None], jnp.zeros((1, 6)), z, z,
                       jnp.asarray([True]), settings=LCPSettings(forward_newton=1))


def test_cone_setting_is_checked():
    with pytest.raises(ValueError, match="cone"):
        LCPSettings(cone="pyramid")
    with pytest.raises(ValueError, match="cone"):
        jc.RelaxedCoulomb(cone="disc")


def _throw_lcp(k):
    """The contact LCP of step ``k`` of ``tests/test_sysid.py``'s 800-step throw (a box dropped flat,
    sliding and spinning: its four corners share three directions): (A, b, coupling, rows)."""
    from jaxcontact.laws.coulomb import normal_target

    law_ = jc.CoulombLCP(solver=LCPSettings(tol=1e-13, max_iter=500, cone="elliptic"))
    model = jc.Model(law=law_, dt=0.002, max_contacts=4)
    s0 = jc.make_state(pos=[0, 0, 0.08], vel=[0.8, 0.3, -0.5], omega=[0, 0, 6.0])
    p = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(3, 0.01), law=law_.init_params(0.3, 0.2))
    s = jax.tree_util.tree_map(lambda x: x[k], jc.rollout(model, p, s0, k))
    prob, con = jc.contact.rigid_body(model, p, s, jc.stages.free_velocity(model, p, s))
    target = normal_target(law_, model, p, s, prob, con)
    C = prob.num_contacts
    b = prob.free_velocity.at[:, 0].add(-target).reshape(-1)
    mu = jnp.broadcast_to(jnp.asarray(p.law.mu), (C, 2))
    return prob.A, b, jnp.concatenate([jnp.zeros((C, 1)), mu], 1).reshape(-1), RowStructure.contacts(C, 2)


def test_active_set_polish_lands_the_throws_stuck_steps_on_the_fixed_point():
    """Issue 61 design (c): at steps 14 and 33 of the 800-step throw under the disc the sweeps stop
    3e-8 m/s off the fixed point even at tol 1e-13 (the split of the face's normal force); the disc's
    active-set polish lands there (natural-map residual at round-off), at the default tolerance too —
    in every solve with ``forward_active_set=1``, by default where the solve is differentiated (the
    value under ``jax.vjp``) —, and the polished point solves the LCP: normals ≥ 0 with w_n ≥ 0 and
    z_n w_n = 0, friction on the disc, opposite the slip where it slides."""
    for k in (14, 33):
        A, b, coupling, rows = _throw_lcp(k)
        solve = jax.jit(lambda A, b, c, st: solve_lcp(A, b, c, rows, st), static_argnums=3)
        fine = LCPSettings(tol=1e-13, max_iter=500, cone="elliptic")
        assert float(solve(A, b, coupling, dataclasses.replace(fine, forward_active_set=0)).residual) > 1e-9
        default = LCPSettings(cone="elliptic")
        assert float(solve(A, b, coupling, default).residual) > 1e-9  # undifferentiated: the sweeps' point
        differentiated = jax.vjp(lambda b_: solve(A, b_, coupling, default), b)[0]
        assert float(differentiated.residual) < 1e-14, (k, float(differentiated.residual))
        for st in (dataclasses.replace(fine, forward_active_set=1), dataclasses.replace(default, forward_active_set=1)):
            sol = solve(A, b, coupling, st)
            assert float(sol.residual) < 1e-14, (k, st.tol, float(sol.residual))
        np.testing.assert_array_equal(np.asarray(sol.z), np.asarray(differentiated.z))  # the same point
        z = np.asarray(sol.z).reshape(-1, 3)
        w = (np.asarray(regularized(A, 1e-6)) @ np.asarray(sol.z) + np.asarray(b)).reshape(-1, 3)
        assert z[:, 0].min() >= 0 and w[:, 0].min() > -1e-12 and np.abs(z[:, 0] * w[:, 0]).max() < 1e-14
        zt, wt = z[:, 1:], w[:, 1:]
        assert np.all(np.linalg.norm(zt, axis=1) <= 0.3 * z[:, 0] * (1 + 1e-12))
        slip = np.linalg.norm(wt, axis=1) > 1e-9
        assert slip.any()
        cos = np.sum(zt[slip] * wt[slip], 1) / (np.linalg.norm(zt[slip], axis=1) * np.linalg.norm(wt[slip], axis=1))
        np.testing.assert_allclose(cos, -1.0, atol=1e-9)


def test_the_disc_slides_with_exact_derivatives_at_its_defaults():
    """``LCPSettings(cone="elliptic")`` with nothing else named: at 45° the box slides the integrator's exact
    distance (the square would fall 30 % short), and, launched spinning at 6 rad/s along 30° for 50
    steps, its derivative along the mass scale is 0 and d/dμ, d/dv₀ match central differences."""
    model = jc.Model(law=law())
    assert model.law.solver.forward_active_set is None
    params = body_params(model.law, jnp.float64)
    final = jax.jit(jax.vmap(lambda s: jc.rollout(model, params, s, 170, output="final")))(
        launched(np.radians([45.0]), jnp.float64))
    d, turn = slide_ends(final.pos, np.radians([45.0]))
    np.testing.assert_allclose(d, discrete_slide(), rtol=2e-4)
    dist = lambda mu, v0, sc: spinning_slide(model, mu, v0, sc, 50)
    g = [float(x) for x in jax.jit(jax.grad(dist, argnums=(0, 1, 2)))(MU, V0, 1.0)]
    assert abs(g[2]) < 1e-9, g
    # central differences of the forward the gradient runs (the polish in every solve: by default it
    # runs only where differentiated)
    polished = jc.Model(law=law(forward_active_set=1))
    f, e = jax.jit(jax.vmap(lambda mu, v0, sc: spinning_slide(polished, mu, v0, sc, 50))), 1e-6
    vals = np.asarray(f(jnp.asarray([MU + e, MU - e, MU, MU]), jnp.asarray([V0, V0, V0 + e, V0 - e]), jnp.ones(4)))
    fd = [(vals[0] - vals[1]) / (2 * e), (vals[2] - vals[3]) / (2 * e)]
    np.testing.assert_allclose(g[:2], fd, rtol=1e-5)


def test_forward_active_set_is_checked():
    for bad in (-1, 1.5, "1"):
        with pytest.raises(ValueError, match="forward_active_set"):
            LCPSettings(forward_active_set=bad)
    z = jnp.zeros((1, 3))
    with pytest.raises(ValueError, match="forward_active_set"):
        solve_body_lcp(jnp.zeros((1, 2, 3, 6)), jnp.asarray([[0, -1]]), jnp.eye(6)[None], jnp.zeros((1, 6)), z, z,
                       jnp.asarray([True]), settings=LCPSettings(forward_active_set=1))


def test_box_preset_keeps_the_square_bit_for_bit_without_the_polish():
    """The square's default runs no active-set polish (its iterates as before the disc existed): the
    spinning slide's 50 steps are bitwise those of ``forward_active_set=0``, differentiated too (where
    the disc's default polishes); one round moves them."""
    runs = [jax.value_and_grad(lambda mu, m=jc.Model(law=law("box", **kw)): spinning_slide(m, mu, V0, 1.0, 50))(MU)
            for kw in ({}, {"forward_active_set": 0}, {"forward_active_set": 1})]
    assert float(runs[0][0]) == float(runs[1][0]) and float(runs[0][1]) == float(runs[1][1])
    assert float(runs[2][0]) != float(runs[1][0])
