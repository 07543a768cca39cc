"""Analytic checks of the core engine with the Coulomb LCP law (float64)."""

import dataclasses
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact.rotations import quat_angle_between
from jaxcontact.states import random_throws

G = 9.81
H = 0.002


def setup(body=None, mu=0.18, mu2=None, restitution=0.0, ground=None, **model_kw):
    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-10, max_iter=200))
    body = jc.shapes.box(0.1, 0.37) if body is None else body
    dim = body.vertices.shape[-1]
    model = jc.Model(law=law, dt=H, gravity=G, **model_kw)
    params = jc.Params(
        body=body,
        ground=jc.Ground.flat(dim) if ground is None else ground,
        law=law.init_params(mu=mu, mu2=mu2, restitution=restitution),
    )
    return model, params


def test_free_fall_is_exact():
    model, params = setup()
    s0 = jc.make_state(pos=[0.1, -0.2, 2.0], vel=[0.3, 0.1, 1.5], omega=[0.0, 0.0, 2.0])
    n = 200
    traj = jc.rollout(model, params, s0, n)
    k = np.arange(n + 1)
    z = 2.0 + k * H * 1.5 - G * H**2 * k * (k + 1) / 2
    np.testing.assert_allclose(traj.pos[:, 2], z, rtol=0, atol=1e-12)
    np.testing.assert_allclose(traj.pos[:, 0], 0.1 + 0.3 * H * k, atol=1e-12)
    np.testing.assert_allclose(traj.vel[:, 2], 1.5 - G * H * k, atol=1e-12)
    # spin about a principal axis is constant and integrates exactly: angle = ω t
    np.testing.assert_allclose(traj.omega[-1], [0, 0, 2.0], atol=1e-12)
    ang = quat_angle_between(traj.quat[0], traj.quat[-1])
    assert abs(float(ang) - 2.0 * n * H) < 1e-9


def test_planar_free_fall_is_exact():
    model, params = setup(body=jc.shapes.box2d((0.1, 0.05), 0.2))
    s0 = jc.make_planar_state(pos=[0.0, 1.0], angle=0.3, vel=[0.5, 0.0], omega=1.0)
    traj = jc.rollout(model, params, s0, 100)
    k = np.arange(101)
    np.testing.assert_allclose(traj.pos[:, 1], 1.0 - G * H**2 * k * (k + 1) / 2, atol=1e-12)
    np.testing.assert_allclose(traj.angle, 0.3 + H * k, atol=1e-12)


@pytest.mark.parametrize("shape", ["box", "pentagon_cap", "pentagon_side", "box2d"])
def test_resting_body_stays_at_rest(shape):
    if shape == "box":
        model, params = setup()
        s0 = jc.make_state(pos=[0, 0, 0.05])
    elif shape.startswith("pentagon"):
        body = jc.shapes.regular_prism(5, 0.06, 0.1, 0.37)
        model, params = setup(body=body)
        if shape == "pentagon_cap":
            s0 = jc.make_state(pos=[0, 0, 0.05])
        else:  # lie on a side face: rotate a side-face normal onto −z
            s0 = state_on_face(body, side=True)
    else:
        model, params = setup(body=jc.shapes.box2d((0.1, 0.1), 0.37))
        s0 = jc.make_planar_state(pos=[0, 0.05])
    traj, info = jc.rollout(model, params, s0, 1000, with_info=True)
    drift = np.abs(np.asarray(traj.pos[-1] - traj.pos[0])).max()
    assert drift < 1e-6, drift
    if shape != "box2d":
        assert float(quat_angle_between(traj.quat[0], traj.quat[-1])) < 1e-6
        assert int(info.patch_type[-1]) == int(jc.PatchType.FACE)
    assert float(jnp.max(info.residual)) < 1e-6


def quat_from_to(a, b):
    """Quaternion rotating unit vector a onto unit vector b (not antiparallel)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    axis = np.cross(a, b)
    s = np.linalg.norm(axis)
    ang = np.arctan2(s, np.dot(a, b))
    axis = axis / s if s > 1e-12 else np.array([1.0, 0, 0])
    return np.r_[np.cos(ang / 2), np.sin(ang / 2) * axis]


def state_on_face(body, side=True):
    """A state resting exactly on a side face (normal ⟂ body z) of a prism."""
    from scipy.spatial import ConvexHull

    v = np.asarray(body.vertices)
    eq = ConvexHull(v).equations
    n = next(e[:3] for e in eq if abs(e[2]) < 1e-9) if side else np.array([0, 0, -1.0])
    q = quat_from_to(n, [0, 0, -1.0])
    R = np.asarray(jc.rotations.quat_to_mat(jnp.asarray(q)))
    return jc.make_state(pos=[0, 0, -(v @ R.T)[:, 2].min()], quat=q)


def sliding_distance_closed_form(v0, mu, n_max=100000):
    """Semi-implicit Euler: v_k = v0 − kμgh until it stops; x = h Σ v_k."""
    k = np.arange(1, n_max)
    v = np.maximum(v0 - k * mu * G * H, 0.0)
    return H * v.sum()


@pytest.mark.parametrize("mu", [0.18, 0.6])
def test_sliding_box_decelerates_at_mu_g_and_stops_where_predicted(mu):
    model, params = setup(mu=mu)
    v0 = 1.2
    s0 = jc.make_state(pos=[0, 0, 0.05], vel=[v0, 0, 0])
    n = int(v0 / (mu * G * H)) + 100
    traj = jc.rollout(model, params, s0, n)
    vx = np.asarray(traj.vel[:, 0])
    sliding = vx[1:] > 0.05
    acc = np.diff(vx)[sliding] / H
    np.testing.assert_allclose(acc, -mu * G, rtol=1e-5)
    x_stop = float(traj.pos[-1, 0])
    assert abs(x_stop - sliding_distance_closed_form(v0, mu)) < 1e-5
    assert abs(x_stop - v0**2 / (2 * mu * G)) < v0 * H  # continuous-time closed form
    assert abs(float(traj.vel[-1, 0])) < 1e-8
    assert np.abs(np.asarray(traj.pos[:, 2]) - 0.05).max() < 1e-6  # no hop, no sink


def test_planar_box_slides_at_mu_g():
    mu = 0.3
    model, params = setup(body=jc.shapes.box2d((0.1, 0.1), 0.37), mu=mu)
    traj = jc.rollout(model, params, jc.make_planar_state(pos=[0, 0.05], vel=[1.0, 0]), 300)
    vx = np.asarray(traj.vel[:, 0])
    acc = np.diff(vx)[vx[1:] > 0.05] / H
    np.testing.assert_allclose(acc, -mu * G, rtol=1e-5)
    assert abs(float(traj.pos[-1, 0]) - sliding_distance_closed_form(1.0, mu)) < 1e-5


def test_anisotropic_friction_distance_ratio():
    mu1, mu2 = 0.3, 0.6  # along world x and y (μ > 1 would tip a sliding cube over)
    model, params = setup(mu=mu1, mu2=mu2)
    v0 = 1.5
    tx = jc.rollout(model, params, jc.make_state(pos=[0, 0, 0.05], vel=[v0, 0, 0]), 400)
    ty = jc.rollout(model, params, jc.make_state(pos=[0, 0, 0.05], vel=[0, v0, 0]), 400)
    dx, dy = float(tx.pos[-1, 0]), float(ty.pos[-1, 1])
    assert abs(dx - sliding_distance_closed_form(v0, mu1)) < 1e-5
    assert abs(dy - sliding_distance_closed_form(v0, mu2)) < 1e-5
    # closed-form ratio μ2/μ1 (continuous time), up to the O(h) discretisation
    assert abs(dx / dy - mu2 / mu1) < 0.02
    assert abs(float(tx.pos[-1, 1])) < 1e-6 and abs(float(ty.pos[-1, 0])) < 1e-6  # no sideways drift


def test_tipped_box_falls_onto_a_face_and_rests():
    model, params = setup(mu=0.5)
    a = np.deg2rad(30.0)
    q = [np.cos(a / 2), np.sin(a / 2), 0, 0]
    R = np.asarray(jc.rotations.quat_to_mat(jnp.asarray(q)))
    zmin = (np.asarray(params.body.vertices) @ R.T)[:, 2].min()
    s0 = jc.make_state(pos=[0, 0, -zmin + 1e-4], quat=q)
    traj, info = jc.rollout(model, params, s0, 1500, with_info=True)
    final = jax.tree_util.tree_map(lambda x: x[-1], traj)
    assert int(info.patch_type[-1]) == int(jc.PatchType.FACE)
    assert abs(float(final.pos[2]) - 0.05) < 1e-4
    assert float(jnp.linalg.norm(final.vel)) < 1e-6 and float(jnp.linalg.norm(final.omega)) < 1e-5
    # tilted 30° about x (less than 45°) its centre of mass is over the face it came from: it
    # falls back onto it, turning 30° back to flat, not 60° over the edge
    tilt = np.rad2deg(float(quat_angle_between(traj.quat[0], final.quat)))
    assert abs(tilt - 30) < 0.5, tilt
    assert np.rad2deg(float(quat_angle_between(jnp.array([1.0, 0, 0, 0]), final.quat))) < 0.5


DROP = 0.1  # m: the box's bottom face starts exactly this high, at rest


def _drop(restitution, form="velocity"):
    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-10, max_iter=200), restitution_target=form)
    model = jc.Model(law=law, dt=H, gravity=G)
    params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(),
                       law=law.init_params(mu=0.18, restitution=restitution))
    traj = jc.rollout(model, params, jc.make_state(pos=[0, 0, 0.05 + DROP]), 400)  # 400: shares a program
    return model, np.asarray(traj.pos[:, 2]) - 0.05, np.asarray(traj.vel[:, 2])


@pytest.mark.parametrize("form", [
    "velocity",
    pytest.param("position", marks=pytest.mark.xfail(strict=True, reason=(
        "known bug: the position-level target leaves a vertex that lands late in a step with the "
        "step's mean velocity, still downward, and the next step bounces it again: from 10 cm "
        "with eps = 0.5 it rebounds at 0.49 m/s (not 0.70) to 13 mm (not 25 mm)"))),
])
def test_drop_from_10_cm_bounces_at_the_closed_form_time_speed_and_apex(form):
    # Free fall from rest at height h: impact at t = √(2h/g) at speed √(2gh); Newton restitution
    # sends it back at ε√(2gh), to the apex ε²h. Discretisation: semi-implicit Euler's free fall is
    # exact (z_k = h − g h² k(k+1)/2); the velocity-level bounce uses the pre-step speed (up to
    # one step of gravity, g·dt, below the impact speed) and fires when the vertex closes within
    # the step, up to patch_tol + dt·√(2gh) above the ground (the fall that much shorter).
    eps = 0.5
    model, z, vz = _drop(eps, form)
    k = int(np.argmax(vz > 0))  # the bounce step
    free = np.arange(k)
    np.testing.assert_allclose(z[free], DROP - G * H**2 * free * (free + 1) / 2, rtol=0, atol=1e-12)
    assert abs(k * H - np.sqrt(2 * DROP / G)) <= H
    v_impact = np.sqrt(2 * G * DROP)
    early = model.patch_tol + H * v_impact  # the highest a bounce can fire
    tol_v = eps * (G * H + G * early / v_impact)  # 0.023 m/s: one step of gravity, the shorter fall
    assert abs(vz[k] - eps * v_impact) <= tol_v, (vz[k], eps * v_impact, tol_v)
    assert z[: k + 1].min() >= -1e-9  # the box never sinks
    apex = z[k:].max()
    assert abs(apex - eps**2 * DROP) <= early + eps * v_impact * H, (apex, eps**2 * DROP)
    if form == "velocity":  # the target's own formula: ε times the pre-step approach speed
        assert abs(vz[k] + eps * vz[k - 1]) < 1e-5  # (the 1e-6 regularisation of 4 redundant normals)


def test_drop_without_restitution_lands_and_rests():
    _, z, vz = _drop(0.0)
    k = int(np.argmax(z < 1e-3))
    assert abs(k * H - np.sqrt(2 * DROP / G)) <= 2 * H
    assert vz.max() < 1e-5  # no bounce (micro-depenetration from the regularisation only)
    np.testing.assert_allclose(z[k + 2:], 0.0, atol=1e-6)  # on the ground from the next step on


def test_incline_stick_and_slip():
    alpha = np.deg2rad(20.0)
    n = jnp.array([-np.sin(alpha), 0.0, np.cos(alpha)])
    ground = jc.Ground(normal=n, height=jnp.asarray(0.0))
    q = [np.cos(-alpha / 2), 0, np.sin(-alpha / 2), 0]  # box face aligned with the incline
    R = np.asarray(jc.rotations.quat_to_mat(jnp.asarray(q)))
    assert np.allclose(R[:, 2], n)
    s0 = jc.make_state(pos=0.05 * np.asarray(n), quat=q)
    # μ > tan α: sticks
    model, params = setup(mu=0.5, ground=ground)
    traj = jc.rollout(model, params, s0, 500)
    assert np.abs(np.asarray(traj.pos[-1] - traj.pos[0])).max() < 1e-6
    # μ < tan α: slides with a = g (sin α − μ cos α) along the slope
    mu = 0.2
    model, params = setup(mu=mu, ground=ground)
    traj = jc.rollout(model, params, s0, 300)
    down = jnp.array([-np.cos(alpha), 0.0, -np.sin(alpha)])
    speed = np.asarray(traj.vel @ down)
    acc = np.diff(speed)[50:] / H
    np.testing.assert_allclose(acc, G * (np.sin(alpha) - mu * np.cos(alpha)), rtol=1e-4)


def test_contact_patch_types():
    body = jc.shapes.box(0.1, 0.37)
    ground = jc.Ground.flat()
    tol = 1e-3
    face = jc.geometry.contact_patch(body, ground, jc.make_state(pos=[0.2, 0.1, 0.05]), tol)
    assert int(face.kind) == jc.PatchType.FACE
    np.testing.assert_allclose(face.centre, [0.2, 0.1, 0.0], atol=1e-12)
    a = np.pi / 4
    q = [np.cos(a / 2), np.sin(a / 2), 0, 0]  # 45° about x: an edge down
    line = jc.geometry.contact_patch(body, ground, jc.make_state(pos=[0, 0, 0.05 * np.sqrt(2)], quat=q), tol)
    assert int(line.kind) == jc.PatchType.LINE
    np.testing.assert_allclose(line.centre, [0, 0, 0], atol=1e-12)
    # corner down: rotate so the (1,1,1) diagonal points down
    d = np.array([1.0, 1.0, 1.0]) / np.sqrt(3)
    axis = np.cross(d, [0, 0, -1.0])
    ang = np.arccos(np.dot(d, [0, 0, -1.0]))
    axis = axis / np.linalg.norm(axis)
    q = np.r_[np.cos(ang / 2), np.sin(ang / 2) * axis]
    pt = jc.geometry.contact_patch(body, ground, jc.make_state(pos=[0, 0, 0.05 * np.sqrt(3)], quat=q), tol)
    assert int(pt.kind) == jc.PatchType.POINT
    air = jc.geometry.contact_patch(body, ground, jc.make_state(pos=[0, 0, 1.0]), tol)
    assert int(air.kind) == jc.PatchType.NONE and np.all(np.isfinite(air.centre))


def _random_rollouts(n, steps, seed=0, restitution=0.0, body=None, planar=False):
    model, params = setup(body=body, mu=0.4, restitution=restitution)
    model = jc.Model(law=jc.CoulombLCP(), dt=H, max_contacts=model.max_contacts)
    states = random_throws(jax.random.PRNGKey(seed), n, planar=planar, ranges={"height": (0.0, 0.3)})
    traj = jc.batch_rollout(model, params, states, steps, output="trajectory")
    return model, params, traj


@pytest.mark.parametrize("kind", ["box", "pentagon", "box2d"])
def test_inelastic_throws_never_gain_energy_and_barely_penetrate(kind):
    body = {
        "box": jc.shapes.box(0.1, 0.37),
        "pentagon": jc.shapes.regular_prism(5, 0.06, 0.1, 0.37),
        "box2d": jc.shapes.box2d((0.1, 0.1), 0.37),
    }[kind]
    model, params, traj = _random_rollouts(24, 400, body=body, planar=kind == "box2d")
    _check_energy_and_penetration(model, params, traj)


def test_throws_with_restitution_bounce_without_real_energy_gain():
    model, params, traj = _random_rollouts(24, 400, seed=3, restitution=0.6)
    # Newton restitution applied per contact is not exactly energy-consistent when several
    # contacts bounce at once (a known property of velocity-level restitution); the gain
    # stays below 1e-4 of the energy scale, against the O(1) energy the bounces return.
    _check_energy_and_penetration(model, params, traj, rel_tol=1e-4)
    # the bodies do bounce: the same throws without restitution (the same compiled program: ε is
    # a parameter) keep less energy through their first landing, counted above a cube resting on a
    # face (every body keeps more with ε = 0.6; x1.67 in all when written)
    _, _, traj0 = _random_rollouts(24, 400, seed=3, restitution=0.0)
    lowest = jax.vmap(jax.vmap(lambda s: jc.geometry.world_points(s, params.body.vertices)[:, 2].min()))(traj0)
    k = np.argmax(np.asarray(lowest) < 1e-3, axis=1)  # first touch without restitution
    assert np.all(k > 0) and np.all(k < 380)
    rows = np.arange(len(k))
    rest = float(params.body.mass) * model.gravity * 0.05
    E = lambda t: np.asarray(jax.vmap(jax.vmap(lambda s: jc.energy(model, params, s)))(t))[rows, k + 10] - rest
    kept, kept0 = E(traj), E(traj0)
    assert np.mean(kept > kept0) > 0.9 and kept.sum() > 1.4 * kept0.sum(), (kept.sum(), kept0.sum())


def _check_energy_and_penetration(model, params, traj, rel_tol=1e-6):
    E = jax.vmap(jax.vmap(lambda s: jc.energy(model, params, s)))(traj)
    dE = np.diff(np.asarray(E), axis=1)
    scale = float(np.abs(np.asarray(E[:, 0])).max())
    assert dE.max() < rel_tol * scale, dE.max()
    pen = jax.vmap(jax.vmap(lambda s: jc.penetration(params, s)))(traj)
    size = float(jc.geometry.body_size(params.body))
    assert float(pen.max()) < 0.01 * size


def test_python_loop_of_step_equals_rollout():
    # ``step`` starts every solve from zero, as a rollout does by default; with the opt-in warm
    # start (each step from the previous impulses) the rollout agrees to the solver's tolerance
    # (1e-10 m/s here) in fewer sweeps.
    model, params = setup(mu=0.3)
    assert not model.law.solver.warm_start
    warm = dataclasses.replace(model, law=jc.CoulombLCP(solver=dataclasses.replace(model.law.solver, warm_start=True)))
    s0 = jc.make_state(pos=[0, 0, 0.08], quat=[0.96, 0.2, 0.1, 0.15] / np.linalg.norm([0.96, 0.2, 0.1, 0.15]), vel=[0.6, -0.2, 0], omega=[2.0, 0, 1.0])
    traj_cold, info_cold = jc.rollout(model, params, s0, 60, with_info=True)
    traj, info_warm = jc.rollout(warm, params, s0, 60, with_info=True)
    s = s0
    for _ in range(60):
        s, info = jc.step_with_info(model, params, s)
    last = lambda t: jax.tree_util.tree_map(lambda x: x[-1], t)
    for a, b, w in zip(*(jax.tree_util.tree_leaves(x) for x in (s, last(traj_cold), last(traj)))):
        np.testing.assert_allclose(a, b, atol=1e-12)
        np.testing.assert_allclose(a, w, atol=1e-8)
    assert np.isfinite(float(info.residual))
    assert int(info_warm.iterations.sum()) < int(info_cold.iterations.sum())


def test_batched_solver_equals_single_body():
    # the PGS batching rule (batch-last sweeps, the unconverged tail gathered into sub-batches of
    # B/8) gives every body exactly its own sweeps: the batched rollout is the single-body one
    model, params = setup(mu=0.3)
    model = dataclasses.replace(model, law=jc.CoulombLCP(solver=jc.LCPSettings()))
    states = random_throws(jax.random.PRNGKey(4), 24)
    batched, info = jc.batch_rollout(model, params, states, 150, chunk_size=None, output="trajectory", with_info=True)
    assert int(jnp.max(info.iterations)) > 2  # real contact solves, with different sweep counts
    assert len(np.unique(np.asarray(info.iterations))) > 3
    for i in (0, 7, 23):
        one = jc.rollout(model, params, jax.tree_util.tree_map(lambda x: x[i], states), 150)
        for a, b in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(batched)):
            np.testing.assert_allclose(a, b[i], atol=1e-12)
