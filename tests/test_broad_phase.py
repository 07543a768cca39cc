"""The broad phase across the groups of pairs (``Scene.max_slots``, ``contacts.keep_slots``): one cap on
the contact problem's pair slots, whatever the pairs' kinds. A cap that holds every pair within reach
gives the answer and the gradient of every slot; one that does not flags ``CAPACITY``, eagerly and
under ``jit``; the slots kept are those with a contact within reach, the nearest first, in the
table's order."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import shapes, worlds
from jaxcontact.geometry import FAR
from jaxcontact.types import Flags
from jaxcontact.worlds import contacts
from jaxcontact.worlds.scenes import heap_broad_phase

MODEL = worlds.model()
I4 = (1.0, 0.0, 0.0, 0.0)


def _collide(scene):
    return jax.jit(lambda p, x: worlds.collide(MODEL, scene, p, x))


def _three(max_slots=None, dtype=jnp.float64):
    """A box on the ground, a sphere resting on it and a capsule lying along its side (0.5 mm off), all sliding
    at 0.3 m/s: three pairs of three kinds (three groups), two of them touching."""
    bodies = [shapes.box(0.1, 1.0), shapes.sphere(0.03, 0.2), shapes.capsule(0.02, 0.08, 0.3)]
    scene, body = worlds.make_scene(bodies, max_slots=max_slots)
    params = jc.Params(body=body, ground=jc.Ground.flat(3), law=jc.CoulombLCP.init_params(mu=0.5))
    pos = [[0.0, 0.0, 0.05], [0.01, 0.0, 0.13], [0.0, 0.0705, 0.02]]
    state = jc.State(pos=jnp.asarray(pos), quat=jnp.asarray([I4, I4, (0.7071068, 0.0, 0.7071068, 0.0)]),
                     vel=jnp.tile(jnp.asarray([0.3, 0.0, 0.0]), (3, 1)), omega=jnp.zeros((3, 3)))
    cast = lambda t: jax.tree_util.tree_map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, t)
    return scene, cast(params), cast(state)


def test_keep_slots_prefers_slots_within_reach_nearest_first_in_table_order():
    """Five slots of two contacts: the three with a valid contact are kept before any without, the
    nearest first when not all fit, returned in the table's order; one more touching slot than the
    cap is reported, a cap holding every touching slot is not."""
    phi = jnp.asarray([[0.5, 0.5], [0.004, 0.001], [0.3, 0.3], [-0.002, 0.01], [0.003, 0.2]], jnp.float32)
    valid = jnp.asarray([[False, False], [True, True], [False, False], [True, False], [True, False]])
    keep, over = contacts.keep_slots(3, phi, valid)
    assert keep.tolist() == [1, 3, 4] and not bool(over)
    keep, over = contacts.keep_slots(2, phi, valid)
    assert keep.tolist() == [1, 3] and bool(over)  # slot 4 (0.003 m) is the farthest touching: left out
    keep, over = contacts.keep_slots(4, phi, valid)
    assert sorted(keep.tolist()) == keep.tolist() and {1, 3, 4} <= set(keep.tolist()) and not bool(over)


def test_slots_across_groups_keep_the_touching_pairs_and_flag_an_overflow():
    """Two slots for three pairs of three kinds, two touching: the collision stage keeps those two,
    their contacts bitwise those of every slot, and no flag; one slot flags CAPACITY (the step's
    flag, under jit as eagerly: the rollout's, in the slow tier)."""
    scene, params, s = _three()
    assert len(scene.pair_groups()) == 3 and scene.num_pair_slots == 3
    every = _collide(scene)(params, s)
    n, G = scene.slot_contacts, every.num_ground
    touching = np.flatnonzero(np.asarray(every.valid[G:]).reshape(3, n).any(axis=1))
    assert touching.tolist() == [0, 1]  # box–sphere, box–capsule
    capped_scene = dataclasses.replace(scene, max_slots=2)
    assert capped_scene.num_pair_slots == 2
    capped = _collide(capped_scene)(params, s)
    assert capped.slot_pair.tolist() == [0, 1] and not bool(capped.capacity) and not bool(every.capacity)
    for name in ("rows", "phi", "valid", "bodies"):
        a, b = np.asarray(getattr(capped, name)), np.asarray(getattr(every, name))
        np.testing.assert_array_equal(a, b[:G + 2 * n], err_msg=name)
    np.testing.assert_array_equal(np.asarray(capped.pair_phi), np.asarray(every.pair_phi))
    # the eager rollout's start check (every pair, whatever the caps) sees all three pairs
    np.testing.assert_array_equal(np.asarray(contacts.start_overlaps(MODEL, capped_scene, params, s)),
                                  np.asarray(contacts.start_overlaps(MODEL, scene, params, s)))
    over = dataclasses.replace(scene, max_slots=1)
    one = _collide(over)(params, s)
    assert bool(one.capacity) and one.slot_pair.tolist() == [0]  # the sphere rests on the box: nearest


@pytest.mark.slow
def test_slots_across_groups_keep_the_gradient_float32():
    """float32, as users run: the gradient of the valid contacts' summed φ with respect to the
    bodies' positions is the same with two slots as with every slot (the choice has no gradient)."""
    scene, params, s = _three(dtype=jnp.float32)

    def grad(sc):
        def f(pos):
            con = worlds.collide(MODEL, sc, params, s.replace(pos=pos))
            return jnp.sum(jnp.where(con.valid, con.phi, 0.0)[con.num_ground:])
        return np.asarray(jax.jit(jax.grad(f))(s.pos))

    every, capped = grad(scene), grad(dataclasses.replace(scene, max_slots=2))
    assert np.all(np.isfinite(every)) and np.abs(every).max() > 0.5
    np.testing.assert_allclose(capped, every, rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_slots_across_groups_keep_the_rollout():
    """40 steps of the sliding three (float64) with two slots give every slot's answer to round-off
    and the same flags; one slot flags CAPACITY on the rollout, eagerly and under jit."""
    scene, params, s = _three()
    every, sum_every = worlds.rollout(MODEL, scene, params, s, 40, output="final")
    capped, sum_capped = worlds.rollout(MODEL, dataclasses.replace(scene, max_slots=2), params, s, 40, output="final")
    np.testing.assert_allclose(np.asarray(capped.pos), np.asarray(every.pos), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(capped.vel), np.asarray(every.vel), rtol=0, atol=1e-10)
    assert int(sum_every.flags) == int(sum_capped.flags) and not int(sum_capped.flags) & int(Flags.CAPACITY)
    assert float(every.pos[1, 2]) > 0.12 and float(every.pos[2, 2]) < 0.03  # the sphere stayed on the box
    over = dataclasses.replace(scene, max_slots=1)
    _, summary = worlds.rollout(MODEL, over, params, s, 2, output="final")
    assert int(summary.flags) & int(Flags.CAPACITY)
    jitted = jax.jit(lambda p, x: worlds.rollout(MODEL, over, p, x, 2, output="final")[1].flags)
    assert int(jitted(params, s)) & int(Flags.CAPACITY)


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "2"])
def test_max_slots_refuses_what_is_not_a_count(bad):
    with pytest.raises(ValueError, match="Scene.max_slots"):
        worlds.make_scene([shapes.box(0.1), shapes.sphere(0.05)], max_slots=bad)


def test_heap_broad_phase_caps_the_slots_of_a_heap_of_several_kinds():
    """A heap of four kinds whose groups are each under 3N pairs but hold more than 3N together gets
    3N slots across them; a heap of one kind keeps max_pairs alone (its one group is capped by it)."""
    kinds = [shapes.box(0.05), shapes.sphere(0.025), shapes.capsule(0.02, 0.04), shapes.cylinder(0.025, 0.05)]
    mixed, _ = worlds.make_scene(kinds * 4)
    assert mixed.num_pairs == 120 and max(len(k) for *_, k in mixed.pair_groups()) <= 10
    heap = heap_broad_phase(mixed)
    assert (heap.max_pairs, heap.max_slots, heap.num_narrow_slots, heap.num_pair_slots) == (48, 48, 120, 48)
    boxes, _ = worlds.make_scene([shapes.box(0.05)] * 16)
    assert heap_broad_phase(boxes).max_slots is None and heap_broad_phase(boxes).num_pair_slots == 48


def _spheres(dtype):
    """Three spheres in a row on the ground, the middle one 0.5 mm into the first and 1 mm off the third,
    rolling at 0.3 m/s: pairs of one contact each (sphere–sphere)."""
    scene, body = worlds.make_scene([shapes.sphere(0.03, 0.2)] * 3)
    params = jc.Params(body=body, ground=jc.Ground.flat(3), law=jc.CoulombLCP.init_params(mu=0.5))
    state = jc.State(pos=jnp.asarray([[0.0, 0.0, 0.03], [0.0595, 0.0, 0.03], [0.1205, 0.0, 0.03]], dtype),
                     quat=jnp.tile(jnp.asarray(I4, dtype), (3, 1)),
                     vel=jnp.tile(jnp.asarray([0.3, 0.0, 0.0], dtype), (3, 1)), omega=jnp.zeros((3, 3), dtype))
    cast = lambda t: jax.tree_util.tree_map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, t)
    return scene, cast(params), state


def _both_layouts(scene, params, s, steps):
    """The collision stage (and ``steps`` steps' final state and gradient of the final x positions in the
    velocities, when ``steps``) with the pair slots as wide as their kinds need and as ``pair_contacts``."""
    from jaxcontact.worlds import pipeline
    from jaxcontact.worlds import scene as scene_module

    out = {}
    for how in ("kinds", "pair_contacts"):
        scene_module.SLOT_CONTACTS = how
        try:
            con = jax.jit(lambda p, x: worlds.collide(MODEL, scene, p, x))(params, s)
            run = lambda v, p=params: pipeline.run(pipeline.RolloutSpec(MODEL, scene, steps, "final", False), p, s.replace(vel=v), None)
            out[how] = (con, jax.jit(run)(s.vel), jax.jit(jax.grad(lambda v: jnp.sum(run(v).pos[:, 0])))(s.vel)) if steps \
                else (con,)
        finally:
            scene_module.SLOT_CONTACTS = "kinds"
    return jax.tree_util.tree_map(np.asarray, (out["kinds"], out["pair_contacts"]))


def _capsules(dtype):
    """A box on the ground, a capsule lying across its top and another on that one, each 0.5 mm off, sliding
    at 0.3 m/s: the two capsules touch at two points (along each other), the box and a capsule at one."""
    lying = (0.7071068, 0.0, 0.7071068, 0.0)
    scene, body = worlds.make_scene([shapes.box(0.1, 1.0), shapes.capsule(0.02, 0.08, 0.3), shapes.capsule(0.02, 0.08, 0.3)])
    params = jc.Params(body=body, ground=jc.Ground.flat(3), law=jc.CoulombLCP.init_params(mu=0.5))
    state = jc.State(pos=jnp.asarray([[0.0, 0.0, 0.05], [0.0, 0.0, 0.1205], [0.0, 0.0, 0.161]]),
                     quat=jnp.asarray([I4, lying, lying]), vel=jnp.tile(jnp.asarray([0.3, 0.0, 0.0]), (3, 1)),
                     omega=jnp.zeros((3, 3)))
    cast = lambda t: jax.tree_util.tree_map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, t)
    return scene, cast(params), cast(state)


@pytest.mark.parametrize("dtype", [jnp.float64, pytest.param(jnp.float32, marks=pytest.mark.slow)])
def test_pair_slots_hold_the_contacts_their_kinds_can_have(dtype):
    """``Scene.slot_contacts``: the contact problem's pair slots hold as many contacts as the scene's pairs
    of kinds can have (spheres 1, capsules and boxes 2, two boxes ``pair_contacts``), and the
    collision stage gives what it gave with ``pair_contacts`` in every slot (``worlds.scene.SLOT_CONTACTS``,
    the design before): the same valid contacts in the same order, the same ``pair_phi``/``pair_kind``
    (4 columns, FAR where empty)."""
    boxes, _ = worlds.make_scene([shapes.box(0.05)] * 2 + [shapes.sphere(0.02)])
    assert boxes.slot_contacts == boxes.pair_contacts == 4
    for (scene, params, s), want, touching in ((_spheres(dtype), 1, 2), (_capsules(dtype), 2, 3)):
        assert scene.slot_contacts == want and scene.pair_contacts == 4
        (c,), (c0,) = _both_layouts(scene, params, s, 0)
        G = c.num_ground
        assert c.phi.shape[0] - G == 3 * want and c0.phi.shape[0] - G == 3 * 4  # the switch took
        assert c.valid[G:].sum() == c0.valid[G:].sum() >= touching  # the capsules' two
        for name in ("rows", "phi", "bodies"):
            np.testing.assert_array_equal(getattr(c, name)[c.valid], getattr(c0, name)[c0.valid])
        np.testing.assert_array_equal(c.pair_phi, c0.pair_phi)
        np.testing.assert_array_equal(c.pair_kind, c0.pair_kind)
        assert c.pair_phi.shape == (3, 4) and np.all(c.pair_phi[:, want:] == FAR)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_pair_slots_as_wide_as_their_kinds_keep_the_rollout(dtype):
    """20 steps of the rolling spheres and of the sliding box and capsules with the pair slots as wide as their kinds
    need: the final state and the gradient of the final x positions in the velocities those of
    ``pair_contacts`` in every slot to round-off (a small world's dense solve sums in another order; the
    heaps' rollouts were bitwise, docs/worlds.md)."""
    tol, gtol = (1e-12, 1e-9) if dtype == jnp.float64 else (1e-6, 1e-4)
    for scene, params, s in (_spheres(dtype), _capsules(dtype)):
        (_, f, g), (_, f0, g0) = _both_layouts(scene, params, s, 20)
        for name in ("pos", "quat", "vel", "omega"):
            np.testing.assert_allclose(getattr(f, name), getattr(f0, name), rtol=0, atol=tol)
        np.testing.assert_allclose(g, g0, rtol=gtol, atol=gtol)
        assert np.all(np.isfinite(g)) and np.abs(g).max() > 1e-3
