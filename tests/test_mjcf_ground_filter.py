"""Bodies that MuJoCo's contype/conaffinity filter keeps off the floor while others touch it
(``Scene.no_ground``, issue 63 item 4): a box rests on the floor, a second box whose geom does not
collide with the floor rests on the first, a ball that touches neither falls through the floor;
against MuJoCo C, written back by ``to_mjcf``, on the per-body route (no pairs, no joints) and
refused by name where it cannot be."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the MJCF loader needs mujoco (pip install -e '.[mjcf]')")

from jaxcontact import shapes, worlds  # noqa: E402
from jaxcontact.laws import CoulombLCP  # noqa: E402
from jaxcontact.types import Ground, Params, State  # noqa: E402
from jaxcontact.worlds import mjcf  # noqa: E402

STEPS = 100

# 'base' (contype 1, conaffinity 3) rests on the floor (1, 1); 'top' (2, 2) does not touch the floor
# (2 & 1 = 0 both ways) but touches base (2 & 3); 'ghost' (4, 4) touches nothing and falls through.
STACK = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.05"/>
    <body name="base" pos="0 0 0.05"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="1" conaffinity="3"/></body>
    <body name="top" pos="0.02 0 0.14"><freejoint/><geom type="box" size="0.04 0.04 0.04" mass="0.5" contype="2" conaffinity="2"/></body>
    <body name="ghost" pos="0.3 0 0.05"><freejoint/><geom type="sphere" size="0.05" mass="0.2" contype="4" conaffinity="4"/></body>
  </worldbody>
</mujoco>
"""


def test_a_body_kept_off_the_floor_rests_on_another_and_follows_mujoco():
    scene, params, state, model = worlds.from_mjcf(STACK, dtype=jnp.float64)
    assert scene.ground and scene.no_ground == (1, 2) and scene.pairs == ((0, 1),)
    m = mujoco.MjModel.from_xml_string(STACK)
    d = mjcf.mujoco_data(m)
    theirs, _ = mjcf.mujoco_trajectory(m, d, STEPS)
    traj, _ = worlds.rollout(model, scene, params, state, STEPS)
    mine = np.asarray(traj.pos)
    assert np.max(np.linalg.norm(mine - theirs, axis=-1)) < 1e-3  # within 1 mm of MuJoCo C at every step
    assert mine[-1, 0, 2] == pytest.approx(0.05, abs=1e-4)  # base rests on the floor
    assert mine[-1, 1, 2] == pytest.approx(0.14, abs=1e-4)  # top rests on base, not on the floor
    h, n = model.dt, STEPS  # the ghost falls freely through the floor (semi-implicit Euler)
    assert mine[-1, 2, 2] == pytest.approx(0.05 - 9.81 * h * h * n * (n + 1) / 2, abs=1e-9)
    # written back: the floor and the bodies' filter bits make MuJoCo keep the same bodies off it
    xml = worlds.to_mjcf(scene, params, state, model)
    again = worlds.from_mjcf(xml, keyframe="initial", dtype=jnp.float64)[0]
    assert again.no_ground == scene.no_ground and again.pairs == scene.pairs
    back = mujoco.MjModel.from_xml_string(xml)
    dd = mjcf.mujoco_data(back, keyframe=0)
    path, _ = mjcf.mujoco_trajectory(back, dd, STEPS)
    assert np.max(np.linalg.norm(path - theirs, axis=-1)) < 1e-3


def test_the_per_body_route_keeps_a_body_off_the_ground_under_jit():
    """No pairs and no joints (each body's own contact with the ground): body 1, kept off the ground,
    falls through it while body 0 rests; depenetration leaves it where it is."""
    box = shapes.box(0.1, 1.0)
    scene, body = worlds.make_scene([box, box], pairs=[], no_ground=[1])
    assert scene.no_ground == (1,)
    params = Params(body=body, ground=Ground(normal=jnp.array([0.0, 0.0, 1.0]), height=jnp.array(0.0)),
                    law=CoulombLCP.init_params(mu=0.5))
    state = State(pos=jnp.array([[0.0, 0.0, 0.05], [0.5, 0.0, 0.03]]), quat=jnp.tile(jnp.array([1.0, 0, 0, 0]), (2, 1)),
                  vel=jnp.zeros((2, 3)), omega=jnp.zeros((2, 3)))  # body 1 starts 2 cm inside the ground
    model = worlds.model(dt=0.01)
    run = jax.jit(lambda s: worlds.rollout(model, scene, params, s, 50)[0].pos)
    pos = np.asarray(run(state))
    assert pos[-1, 0, 2] == pytest.approx(0.05, abs=1e-5)
    assert pos[-1, 1, 2] == pytest.approx(0.03 - 9.81 * 0.01 ** 2 * 50 * 51 / 2, abs=1e-9)
    np.testing.assert_allclose(pos[:, 1, :2], 0.0 * pos[:, 1, :2] + [0.5, 0.0], atol=1e-12)


def test_no_ground_refused_by_name():
    box = shapes.box(0.1, 1.0)
    with pytest.raises(ValueError, match=r"no_ground: body 2 is out of range for a world of 2 bodies"):
        worlds.make_scene([box, box], no_ground=[2])
    with pytest.raises(ValueError, match=r"Scene.no_ground: body 0 is kept off a ground the world does not have"):
        worlds.make_scene([box, box], ground=False, no_ground=[0])
    with pytest.raises(ValueError, match=r"no_ground: expected the indices of the bodies that do not touch the ground"):
        worlds.make_scene([box, box], no_ground="1")
    scene, params, state, model = worlds.from_mjcf(STACK)
    with pytest.raises(ValueError, match=r"to_mjcf: geom= sets contype/conaffinity, which keep body 'top' \(1\) off the ground"):
        worlds.to_mjcf(scene, params, state, model, geom={"contype": 1})
