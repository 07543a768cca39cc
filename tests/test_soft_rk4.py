"""MuJoCo's RK4 in the soft mode (``Scene.integrator = "rk4"``, ``pipeline.rk4_stages``): a pendulum's period
and energy against the closed form, its trajectory against MuJoCo C's RK4 run, a tumbling box's stages against
MuJoCo's tableau driven by MuJoCo C's own accelerations, gradients through RK4 steps against central
differences (float64), and the refusals."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import ellipk

from jaxcontact import worlds
from jaxcontact.worlds import mjcf, soft

mujoco = pytest.importorskip("mujoco", reason="the MJCF loader needs mujoco (pip install -e '.[mjcf]')")

# A 1 kg rod of 0.3 m on a horizontal hinge, at qpos0 horizontal (90° from hanging): it swings freely.
ROD = """<mujoco><option timestep="0.01" integrator="{integrator}"/><worldbody>
  <body pos="0 0 1"><joint type="hinge" axis="0 1 0" {extra}/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/></body>
</worldbody></mujoco>"""

# A free box spun about its unstable middle axis (x) with z and y components: it tumbles.
BOX = """<mujoco><option timestep="0.01" integrator="RK4"/><worldbody>
  <body pos="0 0 1"><freejoint/><geom type="box" size="0.1 0.2 0.05" mass="1"/></body>
</worldbody></mujoco>"""


def _load(xml, qvel=None):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    if qvel is not None:
        d.qvel[:] = qvel
    mujoco.mj_forward(m, d)
    return m, d, worlds.from_mujoco(m, data=d, constraints="mujoco", dtype=jnp.float64)


def test_a_pendulum_swings_at_the_closed_form_period_and_follows_mujocos_rk4():
    """Released horizontal, the rod's half period is T/2 = 2 √(I/(m g l)) K(sin² 45°) (I about the hinge,
    MuJoCo's M; l the pivot–centre distance) = 0.55026 s: ours within 1e-6 s (the zero crossing of ω,
    interpolated; measured 2.2e-8 s; the Euler step's 1.2e-3 s), its energy kept to 1e-5 of m g l over 60
    steps (measured 1.9e-6; the Euler step's drifts by 5.1e-2), and its centre of mass within 1e-6 m of
    MuJoCo C's RK4 run over 100 steps (measured 1.9e-7 m: the same method on maximal coordinates, apart by
    O(h⁴): 1.2e-8 m at h/2; 8.3 mm with the Euler step against MuJoCo's Euler run)."""
    m, d, (scene, params, state, model) = _load(ROD.format(integrator="RK4", extra=""))
    assert scene.integrator == "rk4"
    ref, _ = mjcf.mujoco_trajectory(m, d, 100)
    traj = worlds.rollout(model, scene, params, state, 100)[0]
    assert np.max(np.linalg.norm(np.asarray(traj.pos) - ref, axis=-1)) < 1e-6
    mujoco.mj_resetData(m, d)
    mujoco.mj_forward(m, d)
    unit = np.zeros(1)
    mujoco.mj_mulM(m, d, unit, np.ones(1))  # the hinge's inertia, M's one entry
    inertia, mass, arm, g = float(unit[0]), float(m.body_mass[1]), float(np.linalg.norm(m.body_ipos[1])), 9.81
    half = 2.0 * np.sqrt(inertia / (mass * g * arm)) * ellipk(0.5)
    w = np.asarray(traj.omega[:, 0, 1])
    k = int(np.argmax((w[1:] < 0) & (w[:-1] >= 0) & (np.arange(1, w.size) > 10)))  # ω back through zero
    crossing = 0.01 * (k + w[k] / (w[k] - w[k + 1]))
    assert abs(crossing - half) < 1e-6
    energy = 0.5 * inertia * w ** 2 + mass * g * np.asarray(traj.pos[:, 0, 2])
    assert np.max(np.abs(energy[:60] - energy[0])) < 1e-5 * mass * g * arm
    _, _, euler = _load(ROD.format(integrator="Euler", extra=""))
    assert euler[0].integrator == "euler"
    te = worlds.rollout(euler[3], euler[0], euler[1], euler[2], 60)[0]
    e_euler = 0.5 * inertia * np.asarray(te.omega[:, 0, 1]) ** 2 + mass * g * np.asarray(te.pos[:, 0, 2])
    assert np.max(np.abs(e_euler - e_euler[0])) > 1e-2 * mass * g * arm


def _mujoco_tableau(m, d, steps):
    """MuJoCo's RK4 tableau (``mj_RungeKutta``: stages X₀ ⊕ h A (v, a), the update X₀ ⊕ h Σ B (v, a)) written
    out over MuJoCo C's own stage accelerations (``mj_forward``) and its ``mj_integratePos``: (qpos, qvel)."""
    h = m.opt.timestep
    out_q, out_v = [d.qpos.copy()], [d.qvel.copy()]
    q0, v0 = d.qpos.copy(), d.qvel.copy()
    t = mujoco.MjData(m)
    for _ in range(steps):
        t.qpos[:], t.qvel[:] = q0, v0
        mujoco.mj_forward(m, t)
        vs, fs = [v0], [t.qacc.copy()]
        for a in (0.5, 0.5, 1.0):  # MuJoCo's RK4_A, written out
            q = q0.copy()
            mujoco.mj_integratePos(m, q, a * vs[-1], h)
            t.qpos[:], t.qvel[:] = q, v0 + h * a * fs[-1]
            mujoco.mj_forward(m, t)
            vs.append(t.qvel.copy())
            fs.append(t.qacc.copy())
        q0 = q0.copy()
        weights = (1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0)  # MuJoCo's RK4_B
        mujoco.mj_integratePos(m, q0, sum(b * v for b, v in zip(weights, vs)), h)
        v0 = v0 + h * sum(b * f for b, f in zip(weights, fs))
        out_q.append(q0.copy())
        out_v.append(v0.copy())
    return np.array(out_q), np.array(out_v)


def test_a_tumbling_box_follows_mujocos_tableau_to_round_off():
    """A free box tumbling about its unstable middle axis at 7.6 rad/s (the gyroscopic term explicit in
    every stage): its angular velocity within 1e-11 rad/s and its pose within 1e-12 of MuJoCo's tableau
    over MuJoCo C's own stage accelerations at every one of 100 steps (round-off); against MuJoCo C's
    ``mj_step`` (4.0) the angular velocity agrees to round-off and the quaternion within 1e-4 (measured
    8.1e-5: its RK4 turns the quaternion otherwise than the tableau of its source at a725507, not modelled)."""
    m, d, (scene, params, state, model) = _load(BOX, qvel=[0, 0, 0, 3.0, 0.5, 7.0])
    q_ref, v_ref = _mujoco_tableau(m, d, 100)
    traj = worlds.rollout(model, scene, params, state, 100)[0]
    np.testing.assert_allclose(np.asarray(traj.omega[:, 0]), v_ref[:, 3:], atol=1e-11)
    np.testing.assert_allclose(np.asarray(traj.quat[:, 0]), q_ref[:, 3:7], atol=1e-12)
    np.testing.assert_allclose(np.asarray(traj.pos[:, 0]), q_ref[:, :3], atol=1e-12)
    _, qpos = mjcf.mujoco_trajectory(m, d, 100)
    assert np.max(np.abs(np.asarray(traj.quat[:, 0]) - qpos[:, 3:7])) < 1e-4


LIMITED = 'damping="0.3" armature="0.05" limited="true" range="0.2 1.5"'


def test_a_damped_rod_past_its_limit_follows_mujocos_rk4():
    """A rod with damping and armature 0.2 rad past its lower limit, kicked back by the soft limit: within
    1e-6 m of MuJoCo C's RK4 run over 30 steps (its damping explicit in each stage; measured 2e-8)."""
    m, d, (scene, params, state, model) = _load(ROD.format(integrator="RK4", extra=LIMITED))
    ref, _ = mjcf.mujoco_trajectory(m, d, 30)
    traj = worlds.rollout(model, scene, params, state, 30)[0]
    assert np.max(np.linalg.norm(np.asarray(traj.pos) - ref, axis=-1)) < 1e-6


def _central_differences(f, point, steps):
    """(f's gradient at ``point`` by ``jax.grad``, by central differences of the given steps)."""
    g = jax.grad(f, argnums=tuple(range(len(point))))(*point)
    fd = []
    for i, eps in enumerate(steps):
        up, down = list(point), list(point)
        up[i] += eps
        down[i] -= eps
        fd.append((float(f(*up)) - float(f(*down))) / (2 * eps))
    return [float(x) for x in g], fd


def test_gradients_through_rk4_stages_match_central_differences():
    """d(the tumbling box's quaternion after 5 RK4 steps)/d(its initial spin about x, its inertia about z)
    against central differences within 1e-6 relative (float64; the stages' explicit gyroscopic term, the
    tableau, the update on the manifold)."""
    _, _, (scene, params, state, model) = _load(BOX, qvel=[0, 0, 0, 3.0, 0.5, 7.0])

    def turn(wx, izz):
        body = params.body.replace(inertia=params.body.inertia.at[0, 2, 2].set(izz))
        s = state.replace(omega=state.omega.at[0, 0].set(wx))
        return worlds.rollout(model, scene, params.replace(body=body), s, 5)[0].quat[-1, 0, 1]

    g, fd = _central_differences(turn, [3.0, float(params.body.inertia[0, 2, 2])], [1e-6, 1e-8])
    for a, b in zip(g, fd):
        assert abs(b) > 1e-4 and a == pytest.approx(b, rel=1e-6)


@pytest.mark.slow
def test_gradients_through_damped_rk4_steps_match_central_differences():
    """d(a damped, swinging rod's centre x after 5 RK4 steps)/d(damping, armature) against central
    differences within 1e-6 relative (float64; the stages' explicit damping and armature's mass). Slow:
    12 s (measured, mostly compiling)."""
    _, _, (scene, params, state, model) = _load(ROD.format(integrator="RK4", extra='damping="0.3" armature="0.05"'))

    def x_after(damping, armature):
        jp = params.joints.replace(damping=params.joints.damping.at[0].set(damping),
                                   armature=params.joints.armature.at[0].set(armature))
        return worlds.rollout(model, scene, params.replace(joints=jp), state, 5)[0].pos[-1, 0, 0]

    g, fd = _central_differences(x_after, [0.3, 0.05], [1e-5, 1e-6])
    for a, b in zip(g, fd):
        assert abs(b) > 1e-6 and a == pytest.approx(b, rel=1e-6)


@pytest.mark.slow
def test_gradients_through_rk4_limit_rows_match_central_differences():
    """The rod 0.2 rad past its limit: d(its centre x after 10 RK4 steps)/d(damping, the limit's time
    constant) against central differences within 1e-5 relative (float64; the soft rows' adjoint in every
    stage). Slow: 18 s (measured, mostly compiling)."""
    _, _, (scene, params, state, model) = _load(ROD.format(integrator="RK4", extra=LIMITED))

    def x_after(damping, tau):
        jp = params.joints.replace(damping=params.joints.damping.at[0].set(damping),
                                   limit_soft=params.joints.limit_soft.at[0, 0].set(tau))
        return worlds.rollout(model, scene, params.replace(joints=jp), state, 10)[0].pos[-1, 0, 0]

    g, fd = _central_differences(x_after, [0.3, 0.02], [1e-5, 1e-7])
    for a, b in zip(g, fd):
        assert abs(b) > 1e-6 and a == pytest.approx(b, rel=1e-5)


def test_rk4_refused_beside_the_hard_rows_and_by_name():
    scene, *_ = worlds.from_mjcf(ROD.format(integrator="RK4", extra=""), dtype=jnp.float64)
    assert scene.integrator == "euler"  # the hard rows step as Euler whatever the file says
    with pytest.raises(ValueError, match=r"Scene.integrator='rk4' needs constraints='mujoco'"):
        dataclasses.replace(scene, integrator="rk4")
    with pytest.raises(ValueError, match=r"Scene.integrator must be one of \('euler', 'rk4'\)"):
        soft.check_integrator("RK4")
