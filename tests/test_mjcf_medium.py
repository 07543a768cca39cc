"""A fluid medium from MJCF (``opt.density``, ``opt.viscosity``, ``opt.wind``): MuJoCo's inertia-box
fluid model (``worlds.medium``) against MuJoCo C's own ``qfrc_fluid`` and trajectories; its ellipsoid
model refused by name; a bad medium refused eagerly and flagged under ``jit``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import worlds
from jaxcontact.types import Flags
from jaxcontact.validation import MEDIUM
from jaxcontact.worlds import medium as fluid

mujoco = pytest.importorskip("mujoco")
from jaxcontact.worlds import mjcf  # noqa: E402

# three free bodies in a wind: a turned plate (three different sides), a capsule whose principal frame is
# turned in its body (two equal moments: the quadratic drag depends on which axes), a ball; no floor
XML = """<mujoco><option timestep="0.002" density="1000" viscosity="0.5" wind="0.3 -0.2 0.1"/>
  <worldbody>
    <body name="plate" pos="0 0 1" euler="20 30 40"><freejoint/><geom type="box" size=".2 .1 .02" mass="2"/></body>
    <body name="rod" pos="1 0 1"><freejoint/><geom type="capsule" size=".03 .2" mass=".5" euler="0 40 10"/></body>
    <body name="ball" pos="2 0 1"><freejoint/><geom type="sphere" size=".05" mass=".2"/></body>
  </worldbody>
  <keyframe><key qvel="1 -2 0.5 3 -1 2  -1 0.5 2 -2 4 1  0 0 0 5 0 -3"/></keyframe></mujoco>"""


def test_the_drag_is_mujocos_qfrc_fluid_and_a_rollout_follows_mujoco_c():
    """At the keyframe, each body's fluid force (world) and torque (body frame) are MuJoCo C's
    ``qfrc_fluid`` of its free joint (1e-10 relative); over 100 steps the bodies' centres of mass follow
    MuJoCo C within 0.1 mm, where without the medium they end more than 10 mm from where it puts them."""
    m = mujoco.MjModel.from_xml_string(XML)
    d = mjcf.mujoco_data(m, keyframe=0)
    scene, params, state, model = mjcf.from_mujoco(m, keyframe=0)
    assert float(params.medium.density) == 1000.0 and float(params.medium.viscosity) == 0.5
    got = np.asarray(fluid.fluid_wrench(params.body, params.medium, state))
    want = np.asarray(d.qfrc_fluid).reshape(3, 6)
    assert np.max(np.abs(want)) > 1.0
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * np.max(np.abs(want)))
    ref, _ = mjcf.mujoco_trajectory(m, d, 100)
    traj, info = worlds.rollout(model, scene, params, state, 100)
    assert not np.any(np.asarray(info.flags))
    assert np.max(np.linalg.norm(np.asarray(traj.pos) - ref, axis=-1)) < 1e-4
    still, _ = worlds.rollout(model, scene, params.replace(medium=None), state, 100)
    assert np.max(np.linalg.norm(np.asarray(still.pos[-1]) - ref[-1], axis=-1)) > 1e-2


def test_the_medium_writes_back_and_the_ellipsoid_model_is_refused_by_name():
    """``to_mjcf`` writes the density, viscosity and wind as MuJoCo options; a body of
    ``fluidshape="ellipsoid"`` (MuJoCo's other fluid model) is refused by name, and so is a massive
    jointless body folded into its host (MuJoCo drags each body's own box)."""
    scene, params, state, model = mjcf.from_mjcf(XML, keyframe=0)
    back = mujoco.MjModel.from_xml_string(mjcf.to_mjcf(scene, params, state, model))
    assert back.opt.density == 1000.0 and back.opt.viscosity == 0.5
    np.testing.assert_array_equal(back.opt.wind, [0.3, -0.2, 0.1])
    with pytest.raises(ValueError, match="body 'ball': the ellipsoid fluid model") as e:
        mjcf.from_mjcf(XML.replace('size=".05" mass=".2"', 'size=".05" mass=".2" fluidshape="ellipsoid"'))
    assert "\n" not in str(e.value)
    folded = XML.replace('</worldbody>', '<body name="holder" pos="3 0 1"><freejoint/><body name="bob" pos="0 0 .1">'
                         '<geom type="sphere" size=".02" mass=".1"/></body></body></worldbody>').replace(' 5 0 -3"', ' 5 0 -3 0 0 0 0 0 0"')
    with pytest.raises(ValueError, match="body 'bob': a jointless body with a mass of its own folded"):
        mjcf.from_mjcf(folded)
    assert mjcf.from_mjcf(folded.replace('density="1000" viscosity="0.5"', ""))[0].num_bodies == 4


def test_a_bad_medium_is_refused_eagerly_and_flagged_under_jit():
    """A negative density or a non-finite viscosity: ``make_medium`` and the rollout's checks refuse it
    by name; under ``jit`` the step flags ``Flags.INVALID_INPUT`` with the medium's rule."""
    scene, params, state, model = mjcf.from_mjcf(XML, keyframe=0)
    with pytest.raises(ValueError, match="params.medium.density: must be >= 0"):
        fluid.make_medium(-1.0, 0.0, num_bodies=3)
    bad = params.replace(medium=params.medium.replace(viscosity=jnp.asarray(np.nan)))
    with pytest.raises(ValueError, match="params.medium.viscosity: must be finite"):
        worlds.rollout(model, scene, bad, state, 2)
    step = jax.jit(lambda p: worlds.step_with_info(model, scene, p, state)[1])
    for medium in (params.medium.replace(density=jnp.asarray(-1.0)), params.medium.replace(viscosity=jnp.asarray(np.nan))):
        info = step(params.replace(medium=medium))
        assert int(info.flags) & int(Flags.INVALID_INPUT) and int(info.invalid) >> MEDIUM & 1
    assert not int(step(params).flags)
