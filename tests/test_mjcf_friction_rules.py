"""MuJoCo's contact rules for condim and geom priority against jaxcontact's per-body μ: a file with
condim 1 beside condim 3, or with geom priorities, loads (they were refused); where MuJoCo's μ for
a pair that can touch differs from jaxcontact's (√(μ_a μ_b)), ``FrictionRuleWarning`` names the
pair and the rule, as for MuJoCo's max rule; where they agree, nothing is said."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the MJCF loader needs mujoco (pip install -e '.[mjcf]')")

from jaxcontact import worlds  # noqa: E402
from jaxcontact.worlds import mjcf  # noqa: E402

# Two frictionless (condim 1) boxes on a floor of condim 3: each slides on the floor with μ 0.5
# (MuJoCo: the larger condim, max μ), the two against each other without friction.
WORLD = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.05" condim="3" friction="0.5 0.005 0.0001"/>
    <body name="a" pos="0 0 0.05"><freejoint/><geom type="box" size="0.05 0.05 0.05" condim="1" friction="0.5 0 0"/></body>
    <body name="b" pos="0.5 0 0.05"><freejoint/><geom type="box" size="0.05 0.05 0.05" condim="1" friction="0.5 0 0"/></body>
  </worldbody>
  <keyframe><key qpos="0 0 0.05 1 0 0 0  0.5 0 0.05 1 0 0 0" qvel="1 0 0 0 0 0  0 0 0 0 0 0"/></keyframe>
</mujoco>
"""


def test_condim_one_beside_friction_loads_slides_as_mujoco_and_names_the_frictionless_pair():
    with pytest.warns(mjcf.FrictionRuleWarning, match=r"bodies 'a' and 'b': 0.5 here, 0 in MuJoCo \(condim 1"):
        scene, params, state, model = worlds.from_mjcf(WORLD, keyframe=0, dtype=jnp.float64)
    assert scene.pairs == ((0, 1),) and np.allclose(params.law.mu, 0.5)
    m = mujoco.MjModel.from_xml_string(WORLD)
    theirs, _ = mjcf.mujoco_trajectory(m, mjcf.mujoco_data(m, keyframe=0), 100)
    traj, _ = worlds.rollout(model, scene, params, state, 100)
    assert np.max(np.linalg.norm(np.asarray(traj.pos) - theirs, axis=-1)) < 0.01
    # box a slides on the floor with μ 0.5 (not frictionless: the floor's condim 3 wins): stopped
    # after v²/(2 μ g) = 0.102 m
    assert float(traj.pos[-1, 0, 0]) == pytest.approx(1.0 / (2 * 0.5 * 9.81), abs=3e-3)
    assert theirs[-1][0, 0] == pytest.approx(1.0 / (2 * 0.5 * 9.81), abs=3e-3)


@pytest.mark.parametrize("prio, mu_box, words", [
    (1, 0.2, r"body 'a' and the ground: 0.4472 here, 0.2 in MuJoCo \(the higher geom priority's\)"),
    (0, 0.2, r"body 'a' and the ground: 0.4472 here, 1 in MuJoCo \(max\(mu_a, mu_b\)\)"),
    (1, 1.0, None),  # one μ: priorities change nothing
])
def test_geom_priority_loads_and_its_friction_rule_is_compared(prio, mu_box, words):
    xml = (f'<mujoco><worldbody><geom type="plane" size="1 1 1" friction="1 0.005 0.0001"/><body name="a"><freejoint/>'
           f'<geom type="box" size=".05 .05 .05" priority="{prio}" friction="{mu_box} 0.005 0.0001"/></body>'
           '</worldbody></mujoco>')
    if words is None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            mjcf.from_mjcf(xml)
    else:
        with pytest.warns(mjcf.FrictionRuleWarning, match=words):
            mjcf.from_mjcf(xml)
    assert mjcf.mujoco_pair_friction(0.2, 1.0, 3, 3, 1, 0) == (0.2, "the higher geom priority's")
    assert mjcf.mujoco_pair_friction(0.2, 1.0, 1, 3, 1, 0) == (0.0, "condim 1: frictionless")
    assert mjcf.mujoco_pair_friction(0.2, 1.0, 1, 3, 0, 1) == (1.0, "the higher geom priority's")


def test_an_explicit_pair_of_condim_one_is_frictionless_in_mujoco_and_named():
    xml = ('<mujoco><worldbody><geom type="plane" size="1 1 1" friction="0.5 0.005 0.0001"/>'
           '<body name="a"><freejoint/><geom name="ga" type="box" size=".05 .05 .05" friction="0.5 0.005 0.0001"/></body>'
           '<body name="b" pos=".2 0 0"><freejoint/><geom name="gb" type="box" size=".05 .05 .05" friction="0.5 0.005 0.0001"/>'
           '</body></worldbody><contact><pair geom1="ga" geom2="gb" condim="1"/></contact></mujoco>')
    with pytest.warns(mjcf.FrictionRuleWarning, match=r"bodies 'a' and 'b': 0.5 here, 0 in MuJoCo \(its <contact><pair>'s"):
        scene, *_ = mjcf.from_mjcf(xml)
    assert scene.pairs == ((0, 1),)
