"""Bodies whose centre of mass lies outside their geoms (issue 63 item 4): a round body or a compound
is refused by ``from_mjcf`` with the file's body names, every such body in one line, before any
simulation (as a single hull always was, not first by the rollout); the same compound built by hand
is flagged by the traced rule under ``jit``. A jointless body welded to a moving one whose centre of
mass lies outside its own geoms (Metaworld's near-massless Sawyer hand) is folded into that body
(``mjcf.FoldedModel``: exact, MuJoCo moves the two rigidly) and follows MuJoCo C; a body welded to a
mocap body by an equality holds to it as to the world."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the MJCF loader needs mujoco (pip install -e '.[mjcf]')")

from jaxcontact import validation, worlds  # noqa: E402
from jaxcontact.worlds import mjcf  # noqa: E402

STEPS = 100

# 'dumbbell': two spheres (a compound), 'ball': one sphere; each with an <inertial> pos {x} m off
# its geoms' middle along x.
OFF = """<mujoco><worldbody><geom type="plane" size="0 0 .05"/>
  <body name="dumbbell" pos="0 0 .1"><freejoint/><inertial pos="{x} 0 0" mass="1" diaginertia=".01 .01 .01"/>
    <geom type="sphere" size=".05" pos="0 .1 0"/><geom type="sphere" size=".05" pos="0 -.1 0"/></body>
  <body name="ball" pos="1 0 .1"><freejoint/><inertial pos="{x} 0 0" mass="1" diaginertia=".01 .01 .01"/>
    <geom type="sphere" size=".05"/></body>
</worldbody></mujoco>"""


def test_round_and_compound_bodies_with_the_centre_of_mass_outside_are_refused_at_load():
    with pytest.raises(ValueError, match="unsupported in a jaxcontact world: the centre of mass of body 'dumbbell'") as e:
        worlds.from_mjcf(OFF.format(x=0.3))
    text = str(e.value)
    assert "body 'ball'" in text and "0.25 m outside" in text and "\n" not in text  # both, in one line
    scene, params, state, _ = worlds.from_mjcf(OFF.format(x=0.04))  # just inside: loads, the frame at the <inertial>
    assert scene.shapes == ("compound", "sphere")
    np.testing.assert_allclose(np.asarray(state.pos), [[0.04, 0.0, 0.1], [1.04, 0.0, 0.1]], atol=1e-12)


def test_the_same_compound_is_flagged_under_jit():
    """The refused dumbbell built by hand (``mjcf.compound_body``, MuJoCo's mass properties at the
    <inertial>): the traced rule a rollout under ``jit`` reports (``validation.broken_rules``, bit of
    ``body.vertices``), and the eager check a rollout makes first."""
    m = mujoco.MjModel.from_xml_string(OFF.format(x=0.3))
    body = mjcf.compound_body(mujoco, m, 1, [1, 2], fixed=False)
    inside = mjcf.compound_body(mujoco, mujoco.MjModel.from_xml_string(OFF.format(x=0.04)), 1, [1, 2], fixed=False)
    from jaxcontact.laws import CoulombLCP
    from jaxcontact.types import Ground, Params
    from jaxcontact.states import make_state

    ground = Ground(normal=jnp.array([0.0, 0.0, 1.0]), height=jnp.array(0.0))
    rules = jax.jit(lambda b: validation.broken_rules(Params(body=b, ground=ground, law=CoulombLCP.init_params()),
                                                      make_state((0.0, 0.0, 0.3))))
    assert "body.vertices" in " ".join(validation.rule_names(rules(body)))
    assert int(rules(inside)) == 0
    with pytest.raises(validation.ComOutsideError, match="centre of mass") as e:
        validation.validate_body(body)
    assert 0.2 < e.value.distance < 0.3  # the number from_mjcf reports in its own terms


# A hinged arm whose jointless 'hand' (0.01 kg, a mesh-like box) carries an <inertial> 0.2 m off its
# geom: folded into the arm (one compound), it follows MuJoCo C; without the offset it stays a welded body.
ARM = """<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="0 0 .05"/>
  <body name="arm" pos="0 0 .5"><joint name="shoulder" type="hinge" axis="0 1 0"/>
    <geom type="capsule" fromto="0 0 0 .3 0 0" size=".02" mass="1"/>
    <body name="hand" pos=".3 0 0"><inertial pos="{x} 0 0" mass=".01" diaginertia="1e-5 1e-5 1e-5"/>
      <geom type="box" size=".03 .03 .03" mass="0"/></body></body>
</worldbody></mujoco>"""


@pytest.mark.parametrize("x, folded", [(0.2, True), (0.0, False)])
def test_a_welded_body_with_its_centre_of_mass_outside_folds_into_its_host(x, folded):
    xml = ARM.format(x=x)
    scene, params, state, model = worlds.from_mjcf(xml, dtype=jnp.float64)
    assert scene.names == (("arm",) if folded else ("arm", "hand"))
    m = mujoco.MjModel.from_xml_string(xml)
    d = mjcf.mujoco_data(m)
    theirs, _ = mjcf.mujoco_trajectory(m, d, STEPS)
    traj, _ = worlds.rollout(model, scene, params, state, STEPS)
    mine = np.asarray(traj.pos)
    com = (theirs * m.body_mass[1:, None]).sum(1) / m.body_mass[1:].sum()  # the arm and hand together
    here = mine[:, 0] if folded else (mine * np.asarray(params.body.mass)[:, None]).sum(1) / float(params.body.mass.sum())
    assert np.max(np.linalg.norm(here - com, axis=-1)) < 3e-4  # measured 0.11 mm folded, 0.12 mm welded


# A box held by a weld equality to a mocap body (Metaworld's Sawyer hand on its mocap): the mocap body
# is fixed scenery, so the weld is to the world at the mocap's pose; the box stays where MuJoCo keeps it.
MOCAP = """<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="0 0 .05"/>
  <body name="mocap" mocap="true" pos="0 0 .3"><geom type="box" size=".01 .01 .01" contype="0" conaffinity="0"/></body>
  <body name="box" pos="0 0 .3"><freejoint/><geom type="box" size=".05 .05 .05" mass=".5"/></body>
</worldbody><equality><weld body1="mocap" body2="box"/></equality></mujoco>"""


def test_a_weld_to_a_mocap_body_holds_to_the_world_there():
    scene, params, state, model = worlds.from_mjcf(MOCAP, dtype=jnp.float64)
    assert scene.fixed == (0,) and scene.joints.parent == (-1,) and scene.joints.kinds == ("weld",)
    m = mujoco.MjModel.from_xml_string(MOCAP)
    d = mjcf.mujoco_data(m)
    theirs, _ = mjcf.mujoco_trajectory(m, d, STEPS)
    traj, _ = worlds.rollout(model, scene, params, state, STEPS)
    np.testing.assert_allclose(np.asarray(traj.pos)[-1, 1], [0.0, 0.0, 0.3], atol=1e-6)
    assert np.max(np.linalg.norm(np.asarray(traj.pos)[:, 1] - theirs[:, 1], axis=-1)) < 1e-3  # MuJoCo's soft weld sags
