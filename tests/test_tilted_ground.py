"""A tilted plane as the world's ground (issue 62, item 3): a ramp from MJCF (``Ground.normal``
at any tilt), against the closed forms, MuJoCo C and central differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import worlds
from jaxcontact.types import Ground

mujoco = pytest.importorskip("mujoco", reason="the ramps are MJCF files (pip install -e '.[mjcf]')")
from jaxcontact.worlds import mjcf  # noqa: E402

G, H, T = 9.81, 0.002, 200


def ramp(theta, mu, body):
    """MJCF of a plane tilted by ``theta`` about y (downhill along +x) and one body resting on it."""
    n = (np.sin(theta), 0.0, np.cos(theta))
    return (f'<mujoco><option timestep="{H}"/><default><geom friction="{mu} 0.005 0.0001"/></default><worldbody>'
            f'<geom type="plane" size="0 0 .05" zaxis="{n[0]} 0 {n[2]}"/>'
            f'<body name="b" pos="{0.05 * n[0]} 0 {0.05 * n[2]}" euler="0 {np.degrees(theta)} 0"><freejoint/>{body}'
            '</body></worldbody></mujoco>')


BALL = '<geom type="sphere" size="0.05" mass="1"/>'
BOX = '<geom type="box" size="0.05 0.05 0.05" mass="1"/>'


def down(theta):
    return np.array([np.cos(theta), 0.0, -np.sin(theta)])


def slid(traj, theta):
    return (np.asarray(traj.pos[:, 0], float) - np.asarray(traj.pos[0, 0], float)) @ down(theta)


@pytest.mark.parametrize("dtype,rtol", [(jnp.float64, 1e-6), (jnp.float32, 2e-3)])
def test_a_ball_rolls_down_a_tilted_ground_at_five_sevenths_g_sin_theta(dtype, rtol):
    """Rolling without slipping (μ 0.2 > (2/7) tan 0.3): d = a t²/2 (1 + 1/T) with a = (5/7) g sin θ,
    semi-implicit Euler's sum; it stays on the plane (its centre 0.05 m above it)."""
    theta = 0.3
    scene, params, state, model = mjcf.from_mjcf(ramp(theta, 0.2, BALL), dtype=dtype)
    np.testing.assert_allclose(np.asarray(params.ground.normal, float), [np.sin(theta), 0, np.cos(theta)], atol=1e-7)
    traj, info = worlds.rollout(model, scene, params, state, T)
    a = 5 / 7 * G * np.sin(theta)
    assert slid(traj, theta)[-1] == pytest.approx(0.5 * a * (T * H) ** 2 * (1 + 1 / T), rel=rtol)
    n = np.asarray(params.ground.normal, float)
    np.testing.assert_allclose(np.asarray(traj.pos[:, 0], float) @ n, 0.05, atol=1e-6 if dtype == jnp.float64 else 1e-4)
    assert int(np.bitwise_or.reduce(np.asarray(info.flags))) == 0


def test_a_box_slides_down_at_g_sin_minus_mu_cos_or_sticks_and_mujoco_agrees():
    """θ 0.4, μ 0.2: a = g (sin θ − μ cos θ) (1e-6); θ 0.3, μ 0.4 (tan θ < μ): it stays (1e-8 m).
    MuJoCo C on ``to_mjcf``'s file of the sliding world (its soft contact, pyramidal cone): the
    same distance within 3 %."""
    theta, mu = 0.4, 0.2
    scene, params, state, model = mjcf.from_mjcf(ramp(theta, mu, BOX))
    traj, _ = worlds.rollout(model, scene, params, state, T)
    a = G * (np.sin(theta) - mu * np.cos(theta))
    d = slid(traj, theta)[-1]
    assert d == pytest.approx(0.5 * a * (T * H) ** 2 * (1 + 1 / T), rel=1e-6)
    xml = mjcf.to_mjcf(scene, params, state, model)
    m = mujoco.MjModel.from_xml_string(xml)
    dm = mujoco.MjData(m)
    mujoco.mj_forward(m, dm)
    x0 = dm.xipos[1].copy()
    for _ in range(T):
        mujoco.mj_step(m, dm)
    assert float((dm.xipos[1] - x0) @ down(theta)) == pytest.approx(d, rel=0.03)
    scene, params, state, model = mjcf.from_mjcf(ramp(0.3, 0.4, BOX))
    traj, _ = worlds.rollout(model, scene, params, state, T)
    assert abs(slid(traj, 0.3)[-1]) < 1e-8  # the solver tolerance's creep: 2e-9 m


def test_the_slide_s_gradient_with_respect_to_the_ramp_s_angle_matches_central_differences():
    """d(distance slid in 0.2 s)/dθ through the ground's traced normal (sin θ, 0, cos θ), float64,
    against central differences (1e-4), and the closed form's a'(θ) t²/2 (1 + 1/T) (1 %: the
    start pose is fixed, so the closed form's derivative is the body's along the slope)."""
    mu, steps = 0.2, 100
    scene, params, state, model = mjcf.from_mjcf(ramp(0.4, mu, BOX))

    def distance(theta):
        n = jnp.stack([jnp.sin(theta), 0.0 * theta, jnp.cos(theta)])
        p = params.replace(ground=Ground(normal=n, height=params.ground.height))
        final, _ = worlds.rollout(model, scene, p, state, steps, output="final")
        return (final.pos[0] - state.pos[0]) @ jnp.stack([jnp.cos(theta), 0.0 * theta, -jnp.sin(theta)])

    g = float(jax.grad(distance)(jnp.asarray(0.4)))
    e = 1e-5
    fd = (float(distance(jnp.asarray(0.4 + e))) - float(distance(jnp.asarray(0.4 - e)))) / (2 * e)
    assert g == pytest.approx(fd, rel=1e-4)
    closed = G * (np.cos(0.4) + mu * np.sin(0.4)) * 0.5 * (steps * H) ** 2 * (1 + 1 / steps)
    assert g == pytest.approx(closed, rel=1e-2)
