"""A joint that starts outside its range (issue 63 item 4): MuJoCo's limits are soft (``solref``,
``solimp``), so a file whose reset state puts a joint past its limit (gym's ant's ankles, 30°;
dm_control's hopper) is eased back at the limit's time constant; jaxcontact's limits are hard rows, and
a row past its limit used to return at the contact's correction cap (0.02 rad/s). With MuJoCo's pace
(``JointParams.limit_soft``, ``joints.soft_limit_speed``) a hinge 0.5 rad past its limit returns as in
MuJoCo C; one inside its range still stops at the limit hard, without bounce."""

import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the MJCF loader needs mujoco (pip install -e '.[mjcf]')")

from jaxcontact import worlds  # noqa: E402
from jaxcontact.worlds import joints as world_joints, mjcf  # noqa: E402

STEPS = 100

# A horizontal hinge (no gravity on its angle: the axis is vertical) whose range starts 0.5 rad above
# its reset angle 0, with MuJoCo's default solref/solimp, or {solref}.
PENDULUM = """<mujoco><compiler angle="radian"/><option timestep="0.01"/><worldbody>
  <body name="arm" pos="0 0 1"><joint name="hinge" type="hinge" axis="0 0 1" limited="true" range="0.5 3"
    {solref} armature="0.01" damping="0.3"/><geom type="capsule" fromto="0 0 0 .3 0 0" size=".02" mass="1"/></body>
</worldbody></mujoco>"""


def _angles(xml, soft=True):
    scene, params, state, model = worlds.from_mjcf(xml, dtype=jnp.float64)
    if not soft:
        params = params.replace(joints=params.joints.replace(limit_soft=None))
    traj, _ = worlds.rollout(model, scene, params, state, STEPS)
    q = [float(world_joints.coordinates(scene.joints, params.joints, traj[k] if hasattr(traj, "__getitem__") else
                                        type(traj)(**{f: getattr(traj, f)[k] for f in ("pos", "quat", "vel", "omega")}))[0][0])
         for k in range(STEPS + 1)]
    m = mujoco.MjModel.from_xml_string(xml)
    d = mjcf.mujoco_data(m)
    _, qpos = mjcf.mujoco_trajectory(m, d, STEPS)
    return np.array(q), qpos[:, 0], params


@pytest.mark.parametrize("solref, tol", [("", 0.12), ('solreflimit="0.05 1"', 0.01)])
def test_a_hinge_past_its_limit_returns_at_mujocos_pace(solref, tol):
    """Kicked back into its range and coasting (damped) to rest inside it, as in MuJoCo C: within 0.095 rad
    at every step at MuJoCo's default time constant (0.02 s, 2 h: MuJoCo's stiffest; here 4 % faster),
    within 0.005 rad at 0.05 s (measured); at the contact's cap alone it had crept 0.02 rad."""
    mine, theirs, params = _angles(PENDULUM.format(solref=solref))
    tau = 0.05 if solref else 0.02
    np.testing.assert_allclose(np.asarray(params.joints.limit_soft)[0], [tau, 1.0])
    assert np.max(np.abs(mine - theirs)) < tol  # rad, at every step
    scene, params, state, model = worlds.from_mjcf(PENDULUM.format(solref=solref))
    again = worlds.from_mjcf(worlds.to_mjcf(scene, params, state, model), keyframe="initial")[1]
    np.testing.assert_allclose(np.asarray(again.joints.limit_soft), np.asarray(params.joints.limit_soft))  # written back
    assert 0.5 - 1e-3 <= mine[-1] <= 3.0  # back in its range
    hard, _, _ = _angles(PENDULUM.format(solref=solref), soft=False)  # the contact's cap alone: 0.02 rad/s
    assert hard[-1] == pytest.approx(0.02 * STEPS * 0.01, abs=2e-3)


@pytest.mark.slow
def test_a_hinge_inside_its_range_still_stops_hard_at_the_limit():
    """Swung into its lower limit from inside the range: it stops at the limit (no penetration beyond
    the drift, no bounce), as without the soft pace; MuJoCo's soft limit lets it pass by some."""
    xml = PENDULUM.format(solref="").replace('range="0.5 3"', 'range="-0.5 3"')
    scene, params, state, model = worlds.from_mjcf(xml, dtype=jnp.float64)
    rate = state.omega.at[0, 2].set(-5.0)  # toward the lower limit at 5 rad/s
    state = state.replace(omega=rate, vel=state.vel.at[0].set(jnp.cross(jnp.array([0.0, 0.0, -5.0]), state.pos[0] - jnp.array([0.0, 0.0, 1.0]))))
    out = {}
    for soft in (True, False):
        p = params if soft else params.replace(joints=params.joints.replace(limit_soft=None))
        traj, _ = worlds.rollout(model, scene, p, state, 30, start="continued")
        out[soft] = np.array([float(world_joints.coordinates(scene.joints, p.joints, type(traj)(
            **{f: getattr(traj, f)[k] for f in ("pos", "quat", "vel", "omega")}))[0][0]) for k in range(31)])
    assert np.min(out[True]) > -0.5 - 1e-3 and out[True][-1] == pytest.approx(-0.5, abs=1e-3)
    np.testing.assert_allclose(out[True], out[False], atol=1e-9)


def test_limit_soft_refused_by_name():
    scene, params, state, model = worlds.from_mjcf(PENDULUM.format(solref=""))
    bad = params.replace(joints=params.joints.replace(limit_soft=jnp.array([[0.02, -1.0]])))
    with pytest.raises(ValueError, match=r"params.joints.limit_soft\[0\]: a time constant > 0 and a damping ratio > 0"):
        worlds.rollout(model, scene, bad, state, 2)
    with pytest.raises(ValueError, match=r"params.joints.limit_soft: expected shape \(1, 2\)"):
        worlds.rollout(model, scene, params.replace(joints=params.joints.replace(limit_soft=jnp.ones((2, 2)))), state, 2)
