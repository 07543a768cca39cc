"""MuJoCo's soft constraints (``Scene.constraints = "mujoco"``, ``worlds.soft``): contacts and range limits
follow MuJoCo's soft law, a_ref = −b v − k d(r) r with R = (1 − d)/d · Â on the row's diagonal, with a
file's compiled values. Checked against closed forms of the law's rest states and against MuJoCo C
(float64), gradients through the soft rows (R among them) against central differences, refusals."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import worlds
from jaxcontact.validation import SOFT, rule_names
from jaxcontact.worlds import joints as world_joints, mjcf, soft
from jaxcontact.worlds.mjcf import FrictionRuleWarning

mujoco = pytest.importorskip("mujoco", reason="the MJCF loader needs mujoco (pip install -e '.[mjcf]')")

BOX = """<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="5 5 .1"/>
<body pos="0 0 {z}"><freejoint/><geom type="box" size=".1 .1 .1" mass="1"/></body></worldbody></mujoco>"""

# A rod on a horizontal hinge (gravity turns it toward +q), at qpos0 on the upper limit 0 of range="-1.5 0".
ROD = """<mujoco><compiler angle="radian"/><option timestep="0.005"/><worldbody>
  <body name="rod" pos="0 0 1"><joint name="hinge" type="hinge" axis="0 1 0" limited="true" range="{range}"
    {solref}/><geom type="capsule" fromto="0 0 0 .4 0 0" size=".02" mass="1"/></body>
</worldbody></mujoco>"""


def _rest_depth(solimp, load):
    """The rest state of one soft row under a steady ``load`` (the row's impulse each step, per unit of
    h k Â (1 − d)/d): R p = h k d(r) |r| at v = 0, i.e. |r| d(r)² / (1 − d(r)) = load, by bisection on |r|
    with MuJoCo's impedance written out (d0 + (d_max − d0) y, y = x²/mid below the midpoint)."""
    d0, dmax, width, mid, _ = solimp

    def d(r):
        x = min(r / width, 1.0)
        y = x * x / mid if x <= mid else 1.0 - (1.0 - x) ** 2 / (1.0 - mid)
        return d0 + (dmax - d0) * y

    lo, hi = 0.0, 1.0
    for _ in range(200):
        r = 0.5 * (lo + hi)
        lo, hi = (r, hi) if r * d(r) ** 2 / (1.0 - d(r)) < load else (lo, r)
    return 0.5 * (lo + hi)


def _mujoco(xml, steps):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    qpos = []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
    return m, np.array(qpos)


@pytest.mark.parametrize("dtype, follow, rest", [(jnp.float64, 1e-7, 5e-9), (jnp.float32, 5e-7, 2e-7)],
                         ids=["float64", "float32"])
def test_a_box_on_the_floor_sinks_to_mujocos_depth(dtype, follow, rest):
    """A 1 kg cube at rest on its four corners: each corner row carries m g h / 4 and rests where
    R p = h k d(r)|r| (Â = 1/m, the pyramid's factor μ²(1 + μ²)/2 = 1 at μ = 1): |r| = 0.1078 mm, the
    closed form to 5e-9 m and MuJoCo C's trajectory within 1e-7 m at every step (the same law in
    float64); the hard rows hold it at 3e-11 m. In float32, where users run, MuJoCo C's float64 run
    within 5e-7 m (measured 1.4e-7) and the closed form within 2e-7 m (4.6e-8)."""
    xml = BOX.format(z=0.1)
    _, qpos = _mujoco(xml, 400)
    scene, params, state, model = worlds.from_mjcf(xml, constraints="mujoco", dtype=dtype)
    assert scene.constraints == "mujoco" and params.soft.invweight[0] == pytest.approx(1.0)
    traj, info = worlds.rollout(model, scene, params, state, 400)
    assert traj.pos.dtype == dtype
    z = np.asarray(traj.pos[1:, 0, 2], np.float64)
    np.testing.assert_allclose(z, qpos[:, 2], atol=follow)
    k = 1.0 / (0.95 ** 2 * 0.02 ** 2)
    depth = _rest_depth(soft.DEFAULT_SOLIMP, 9.81 / 4.0 / k)
    assert depth == pytest.approx(1.0776e-4, rel=1e-3)
    assert 0.1 - z[-1] == pytest.approx(depth, abs=rest)  # float64: the warm-started solve's tolerance (2.0e-9)
    assert int(np.max(np.asarray(info.flags))) == 0  # sunk by design: no penetration flag, no warning


def test_a_sliding_box_hops_as_mujocos_pyramid():
    """The cube launched along the floor at 1 m/s (μ 0.4, h = 2 ms): MuJoCo's pyramidal cone asks each edge
    n ± μ t for −b (v_n ± μ v_t), so the slip lifts the box off the floor (0.5 mm above its rest height here,
    7.9 mm at h = 10 ms: docs/worlds.md); ours follows MuJoCo C's centre within 1e-5 m at every step; this
    engine's cone beside a soft normal row keeps it on the floor."""
    xml = BOX.format(z=0.0999).replace('size="5 5 .1"', 'size="5 5 .1" friction=".4 .1 .1"')
    m = mujoco.MjModel.from_xml_string(xml.replace('mass="1"', 'mass="1" friction=".4 .1 .1"'))
    d = mujoco.MjData(m)
    d.qvel[0] = 1.0
    mujoco.mj_forward(m, d)
    scene, params, state, model = worlds.from_mujoco(m, data=d, constraints="mujoco", dtype=jnp.float64)
    traj, _ = worlds.rollout(model, scene, params, state, 30)
    pos = []
    for _ in range(30):
        mujoco.mj_step(m, d)
        pos.append(d.qpos[:3].copy())
    np.testing.assert_allclose(np.asarray(traj.pos[1:, 0]), np.array(pos), atol=1e-5)
    assert np.max(np.array(pos)[:, 2]) > 0.1003  # it hopped (its rest height: 0.09989 m)


def _hinge_angle(scene, params, traj):
    return np.array([float(world_joints.coordinates(scene.joints, params.joints, jax.tree_util.tree_map(
        lambda x: x[k], traj))[0][0]) for k in range(traj.pos.shape[0])])


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32], ids=["float64", "float32"])
def test_a_loaded_hinge_rests_on_its_limit_at_mujocos_deflection(dtype):
    """A 1 kg rod of 0.4 m held on its upper limit by gravity: MuJoCo's limit yields to the torque, to
    |r| with |r| d² / (1 − d) = τ Â / k (Â = MuJoCo's dof_invweight0): 0.784 mrad. Ours follows MuJoCo C
    within 1e-7 rad at every step (measured 1.2e-8, float32 too) and rests at the closed form within
    5e-8 rad (8e-9)."""
    xml = ROD.format(range="-1.5 0", solref="")
    m, qpos = _mujoco(xml, 200)
    scene, params, state, model = worlds.from_mjcf(xml, constraints="mujoco", dtype=dtype)
    traj, _ = worlds.rollout(model, scene, params, state, 200)
    q = _hinge_angle(scene, params, traj)
    np.testing.assert_allclose(q[1:], qpos[:, 0], atol=1e-7)
    k = 1.0 / (0.95 ** 2 * 0.02 ** 2)
    depth = _rest_depth(soft.DEFAULT_SOLIMP, 1.0 * 9.81 * 0.2 * float(m.dof_invweight0[0]) / k)
    assert depth == pytest.approx(7.8376e-4, rel=1e-4)
    assert q[-1] == pytest.approx(depth, abs=5e-8)


@pytest.mark.parametrize("solref, tol", [("", 1.5e-3), ('solreflimit="0.05 1"', 1e-5)])
def test_a_joint_past_its_limit_returns_at_mujocos_pace(solref, tol):
    """A hinge 0.5 rad past its lower limit (a reset state outside the range) is kicked back in as MuJoCo
    C's: over the first 10 steps within 1e-5 rad at τ = 0.05 s (measured 3.2e-6; the hard rows' soft
    return, ``joints.soft_limit_speed``, 6.8e-4) and 1.5e-3 rad at MuJoCo's default 0.02 s (1.0e-3; hard
    2.7e-3), where the rod then spins at 9.8 rad/s and this engine's joint rows lose 0.08 % of its speed
    a step (their projection onto the turned constraint; MuJoCo's coordinates lose none)."""
    xml = ROD.format(range="0.5 1.5", solref=solref).replace('axis="0 1 0"', 'axis="0 0 1"')
    _, qpos = _mujoco(xml, 10)
    scene, params, state, model = worlds.from_mjcf(xml, constraints="mujoco", dtype=jnp.float64)
    traj, _ = worlds.rollout(model, scene, params, state, 10)
    q = _hinge_angle(scene, params, traj)
    assert np.max(np.abs(q[1:] - qpos[:, 0])) < tol


def test_gradients_through_soft_rows_match_central_differences():
    """d(the box's height after 10 steps)/d(the body's inverse weight Â, which enters through R alone;
    the floor's time constant τ, through a_ref) against central differences (float64), within 1e-3
    (measured 1.3e-4 and 1e-6: the solve's tolerance): the implicit adjoint holds R."""
    scene, params, state, model = worlds.from_mjcf(BOX.format(z=0.0999), constraints="mujoco", dtype=jnp.float64)

    def height(inv, tau):
        sp = params.soft.replace(invweight=params.soft.invweight.at[0].set(inv),
                                 ground_solref=params.soft.ground_solref.at[0].set(tau))
        return worlds.rollout(model, scene, params.replace(soft=sp), state, 10)[0].pos[-1, 0, 2]

    g = jax.grad(height, argnums=(0, 1))(1.0, 0.02)
    for i, (x0, eps) in enumerate(((1.0, 1e-4), (0.02, 1e-6))):
        args = [1.0, 0.02]
        args[i] = x0 + eps
        up = float(height(*args))
        args[i] = x0 - eps
        fd = (up - float(height(*args))) / (2 * eps)
        assert abs(fd) > 1e-6
        assert float(g[i]) == pytest.approx(fd, rel=1e-3)


def test_bad_soft_values_refused_by_name_and_flagged_under_jit():
    scene, params, state, model = worlds.from_mjcf(BOX.format(z=0.1), constraints="mujoco", dtype=jnp.float64)
    bad = params.replace(soft=params.soft.replace(solimp=params.soft.solimp.at[0, 0].set(1.5)))
    with pytest.raises(ValueError, match=r"params.soft.solimp: a solimp is \(d0, d_max in \[0, 1\]"):
        worlds.rollout(model, scene, bad, state, 2)
    badref = params.replace(soft=params.soft.replace(ground_solref=jnp.array([0.02, -1.0])))
    with pytest.raises(ValueError, match=r"params.soft.ground_solref: a solref is"):
        worlds.step(model, scene, badref, state)
    for p in (bad, badref):
        info = jax.jit(lambda p: worlds.step_with_info(model, scene, p, state)[1])(p)
        assert int(info.invalid) >> SOFT & 1 and any(n.startswith("params.soft") for n in rule_names(int(info.invalid)))
    ok = jax.jit(lambda p: worlds.step_with_info(model, scene, p, state)[1])(params)
    assert int(ok.invalid) == 0
    with pytest.raises(ValueError, match=r"Scene.constraints must be one of \('hard', 'mujoco'\)"):
        worlds.from_mjcf(BOX.format(z=0.1), constraints="soft")
    with pytest.raises(ValueError, match=r"Scene.constraints='mujoco' needs params.soft"):
        worlds.rollout(model, scene, params.replace(soft=None), state, 2)
    hard = worlds.from_mjcf(BOX.format(z=0.1), dtype=jnp.float64)
    with pytest.raises(ValueError, match=r"params.soft: MuJoCo's soft-constraint values are given"):
        worlds.rollout(hard[3], hard[0], hard[1].replace(soft=params.soft), hard[2], 2)


def test_impedance_is_mujocos_curve():
    """d(r) at the ends, the midpoint and both branches (MuJoCo's getimpedance, written out)."""
    imp = jnp.asarray([0.5, 0.9, 0.01, 0.3, 3.0])
    r = jnp.asarray([0.0, -0.0015, 0.003, 0.006, 0.02, -0.02])
    x = np.abs(np.asarray(r)) / 0.01
    y = np.where(x <= 0.3, x ** 3 / 0.3 ** 2, 1 - (1 - x) ** 3 / 0.7 ** 2)
    np.testing.assert_allclose(soft.impedance(imp, r), np.where(x >= 1, 0.9, 0.5 + 0.4 * y), rtol=1e-6)
    assert float(soft.impedance(jnp.asarray([0.9, 0.9, 0.01, 0.5, 2.0]), 0.003)) == pytest.approx(0.9)


# every soft value off MuJoCo's defaults: per-geom solref/solimp/solmix/margin, a floor of higher priority,
# impratio, a limited hinge's solreflimit/solimplimit/margin; {friction}: the sphere's own μ (pairs then)
SOFT_WORLD = """<mujoco><option timestep="0.005" impratio="2"/><worldbody>
<geom type="plane" size="2 2 .1" solref="0.03 0.9" solimp="0.8 0.95 0.002 0.4 3" priority="1"/>
<body pos="0 0 0.051"><freejoint/><geom type="box" size=".05 .05 .05" mass="1" solref="0.025 1.1"
  solimp="0.85 0.97 0.001 0.5 2" solmix="2" margin="0.002"/></body>
<body pos="0.3 0 0.0499"><freejoint/><geom type="sphere" size=".05" mass="0.5" solref="0.04 0.8" solmix="0.5"{friction}/></body>
<body pos="-0.4 0 0.6"><joint type="hinge" axis="0 1 0" limited="true" range="-30 30" solreflimit="0.03 1"
  solimplimit="0.8 0.9 0.01 0.5 2" margin="0.01"/><geom type="capsule" fromto="0 0 0 0.2 0 0" size=".02" mass="0.3"/></body>
</worldbody></mujoco>"""


def _contact_values(m, d):
    """MuJoCo's active contacts' values by body pair: solref, solimp, margin, friction's first."""
    out = {}
    for c in d.contact[:d.ncon]:
        key = tuple(sorted(int(m.geom_bodyid[g]) for g in (c.geom1, c.geom2)))
        out[key] = np.concatenate([c.solref, c.solimp, [c.includemargin + 0 * c.dist, c.friction[0]]])
    return out


@pytest.mark.parametrize("friction", ["", ' friction="0.8 0.005 0.0001"'], ids=["one-mu", "per-body-mu"])
def test_to_mjcf_writes_the_soft_values_back(friction):
    """``to_mjcf`` of a world loaded with ``constraints="mujoco"`` writes its soft values back: the file read
    again gives the same ``SoftParams`` (the inverse weights to round-off), and MuJoCo C compiles the same
    contacts from it (each contact's solref, solimp and margin; with per-body μ the ``<pair>``s carry the
    two sides' mix) and, with one μ, steps it as the original file to round-off."""
    xml = SOFT_WORLD.format(friction=friction)
    if friction:  # MuJoCo's max(μ_a, μ_b) is not jaxcontact's √(μ_a μ_b): said on loading
        with pytest.warns(FrictionRuleWarning):
            scene, params, state, model = worlds.from_mjcf(xml, constraints="mujoco")
    else:
        scene, params, state, model = worlds.from_mjcf(xml, constraints="mujoco")
    text = worlds.to_mjcf(scene, params, state, model)
    scene2, params2, _, _ = worlds.from_mjcf(text, constraints="mujoco")
    a, b = params.soft, params2.soft
    for leaf_a, leaf_b in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(leaf_b), np.asarray(leaf_a), rtol=1e-12, atol=1e-12)
    assert (a.priority, a.ground_priority, a.condim, a.cone) == (b.priority, b.ground_priority, b.condim, b.cone)
    assert a.ground_priority == 1 and float(a.impratio) == 2.0
    original, written = mujoco.MjModel.from_xml_string(xml), mujoco.MjModel.from_xml_string(text)
    d1, d2 = mujoco.MjData(original), mujoco.MjData(written)
    mujoco.mj_resetDataKeyframe(written, d2, 0)
    mujoco.mj_forward(original, d1)
    mujoco.mj_forward(written, d2)
    c1, c2 = _contact_values(original, d1), _contact_values(written, d2)
    assert len(c1) == 2 and c1.keys() == c2.keys()  # the box and the sphere on the floor
    for key in c1:
        np.testing.assert_allclose(c2[key][:-1], c1[key][:-1], rtol=1e-12, atol=1e-15)
    if not friction:
        q1, q2 = [], []
        for _ in range(200):
            mujoco.mj_step(original, d1)
            mujoco.mj_step(written, d2)
            q1.append(d1.qpos.copy())
            q2.append(d2.qpos.copy())
        np.testing.assert_allclose(np.array(q2), np.array(q1), atol=1e-12)



def test_a_damped_joint_past_its_limit_is_kicked_back_as_mujocos_euler():
    """MuJoCo's Euler with damping computes the limit's force with M (the damping explicit) and applies it
    with M + hD (``mj_EulerSkip``): a hinge with damping 1 and armature 1 (h = 10 ms) 0.5 rad past its limit
    reaches MuJoCo C's angle after the first step within 1e-6 rad (measured 1.2e-7, the solve's tolerance;
    with the force from M + hD too, 1.1e-3 rad: the kick 0.9 % faster) and after the second within 1e-4
    rad (the rod then spins at 12 rad/s, where the joint rows' projection loses speed: measured 4.1e-5)."""
    xml = ROD.format(range="0.5 1.5", solref='damping="1" armature="1"').replace('axis="0 1 0"', 'axis="0 0 1"')
    xml = xml.replace('timestep="0.005"', 'timestep="0.01"')
    _, qpos = _mujoco(xml, 2)
    scene, params, state, model = worlds.from_mjcf(xml, constraints="mujoco", dtype=jnp.float64)
    q = _hinge_angle(scene, params, worlds.rollout(model, scene, params, state, 2)[0])
    assert abs(q[1] - qpos[0, 0]) < 1e-6
    assert abs(q[2] - qpos[1, 0]) < 1e-4


def thrown(xml: str, velocity, steps: int):
    """One free body of ``xml`` thrown at ``velocity`` (m/s, linear) from its file's pose, run ``steps`` steps
    here (the soft mode, the file's values) and by MuJoCo C: (scene, our trajectory, MuJoCo's centres of mass
    (steps + 1, 1, 3), MuJoCo's data after the run)."""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qvel[:3] = velocity
    mujoco.mj_forward(m, d)
    scene, params, state, model = worlds.from_mujoco(m, data=d, constraints="mujoco")
    traj, _ = worlds.rollout(model, scene, params, state, steps)
    ref, _ = mjcf.mujoco_trajectory(m, d, steps)
    return scene, traj, ref, d


CAPSULE = """<mujoco><option timestep="0.01"/><default><geom margin="{margin}" friction="1 0.5 0.5" solref="0.1 1"/></default>
<worldbody><geom type="plane" size="5 5 .1"/><body pos="0 0 0.3"><freejoint/>
<geom type="capsule" size="0.08" fromto="0 0 0 0.2 0.1 0" density="5"/></body></worldbody></mujoco>"""


@pytest.mark.parametrize("margin", [0.0, 0.01])
def test_a_landing_capsule_rolls_off_at_mujocos_speed(margin):
    """A capsule thrown at (0.3, 0, −1) m/s onto the floor, soft (solref 0.1: it sinks 7 cm at the
    landing), ends rolling: at MuJoCo C's speed (0.1 %) and place (0.1 mm) after 0.6 s, because a soft
    contact acts at MuJoCo's contact point, midway between the two surfaces, also within the margin. At
    the body's surface point the lever arm is off by half the depth and it rolled at 0.0914 m/s, the
    rigid answer whatever the softness, against MuJoCo's 0.0696 (margin 0) and 0.0826 (margin 0.01)."""
    _, traj, ref, d = thrown(CAPSULE.format(margin=margin), (0.3, 0.0, -1.0), 60)
    speed = np.linalg.norm(np.asarray(traj.vel[-1, 0, :2]))
    assert speed < 0.1  # it rolls (the throw's 0.3 m/s mostly gone into the landing and the spin)
    np.testing.assert_allclose(speed, np.linalg.norm(d.qvel[:2]), rtol=1e-3)
    np.testing.assert_allclose(np.asarray(traj.pos[-1, 0]), ref[-1, 0], atol=1e-4)


SLIDING = """<mujoco><option timestep="0.005" cone="{cone}"/><default><geom friction="0.5 0.5 0.5"/></default>
<worldbody><geom type="plane" size="5 5 .1"/><body pos="0 0 0.0795"><freejoint/>
<geom type="capsule" size="0.08" fromto="0 0 0 0.2 0.1 0" density="5"/></body></worldbody></mujoco>"""


def test_a_capsule_slides_on_mujocos_pyramid_turned_with_its_axis():
    """A capsule lying on the floor launched at (1, 0.6) m/s, 31° off its axis: under MuJoCo's pyramidal
    cone its friction is the pyramid of its contact frame, whose first tangent MuJoCo lays along the
    capsule's axis (``mjc_PlaneCapsule``). It ends where MuJoCo C's does (0.1 mm after 0.2 s); with the
    pyramid along the world's x and y it ended 24 mm away (0.227, 0.142 m against 0.210, 0.125)."""
    _, traj, ref, _ = thrown(SLIDING.format(cone="pyramidal"), (1.0, 0.6, 0.0), 40)
    assert np.linalg.norm(ref[-1, 0, :2] - np.asarray(traj.pos[0, 0, :2])) > 0.1  # it slid 13 cm
    np.testing.assert_allclose(np.asarray(traj.pos[-1, 0]), ref[-1, 0], atol=1e-4)


RAMP = """<mujoco><option timestep="0.01"/><default><geom margin="0.01" friction="1 0.5 0.5" solref="0.1 1"/></default>
<worldbody><geom name="ramp" type="plane" size="5 5 .1" euler="0 10 0"/>{floor}<body pos="0 0 0.3"><freejoint/>
<geom type="capsule" size="0.08" fromto="0 0 0 0.2 0.1 0" density="5"/></body></worldbody></mujoco>"""


def test_a_world_whose_only_surface_is_a_tilted_plane_takes_its_soft_values():
    """A soft capsule (solref 0.1) thrown onto a 10° plane, the file's only surface: the plane's own solref,
    solimp and margin (not MuJoCo's defaults) make it sink as in MuJoCo C (within 3 mm over 0.8 s; with the
    defaults' stiffer floor it stayed 19 mm higher at the landing, 31.7 mm apart at worst). A floor beside
    it with other values: a warning that every surface shares the first's."""
    scene, traj, ref, _ = thrown(RAMP.format(floor=""), (0.3, 0.0, -1.0), 80)
    assert scene.planes == 1 and not scene.ground
    worst = float(np.max(np.linalg.norm(np.asarray(traj.pos) - ref, axis=-1)))
    assert worst < 3e-3, worst
    both = mujoco.MjModel.from_xml_string(RAMP.format(floor='<geom name="floor" type="plane" size="5 5 .1" pos="0 0 -1" solref="0.02 1"/>'))
    with pytest.warns(UserWarning, match="differ from those of") as record:
        worlds.from_mujoco(both, constraints="mujoco")
    assert [w.filename for w in record if "differ from those of" in str(w.message)] == [__file__]  # the user's line
