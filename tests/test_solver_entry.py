"""One solver entry (``solvers.solve_contact``) and its one table of methods (``solvers.choose``):
the method each kind of problem gets from its static sizes and the law's settings, and the
problems the entry refuses."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import native
from jaxcontact.solvers import DENSE_WORLD_ROWS, SMALL_ROWS, LCPSettings, Method, choose, solve_contact

DEFAULT = LCPSettings()


def test_the_table():
    """Every row of the table in ``solvers/problem.py``'s docstring."""
    # a formed A: dense, unrolled up to SMALL_ROWS rows with its own batching rule, looped above under vmap
    assert choose("dense", 24, DEFAULT) == Method("dense", "unrolled", "unrolled", "tail")
    assert choose("dense", SMALL_ROWS, DEFAULT).sweep == "unrolled"
    assert choose("dense", SMALL_ROWS + 3, DEFAULT) == Method("dense", "looped", "looped", "vmap")
    assert choose("dense", 24, LCPSettings(fixed_iterations=True)).batching == "vmap"
    # a world's rows: small ones, a relaxed gradient or a jointed world's mobility densely
    assert choose("bodies", DENSE_WORLD_ROWS, DEFAULT) == Method("dense", "unrolled", "unrolled", "tail")
    assert choose("bodies", DENSE_WORLD_ROWS + 1, DEFAULT).form == "velocity"  # two boxes on the ground: 60 rows
    assert choose("bodies", SMALL_ROWS, DEFAULT, full_mobility=True) == Method("dense", "unrolled", "unrolled", "tail")
    assert choose("bodies", 300, DEFAULT, gradient=object()).form == "dense"
    assert choose("bodies", 300, DEFAULT, full_mobility=True) == Method("dense", "looped", "looped", "vmap")
    # larger ones in velocity form: the sweeps of LCPSettings.sweeps, colour only with a manifold size
    cpu = "native" if native.available() else "sequential"
    assert choose("bodies", 300, DEFAULT, group=4) == Method("velocity", cpu, "colour", "tail")
    assert choose("bodies", 300, DEFAULT) == Method("velocity", cpu, "sequential", "tail")
    colour = LCPSettings(sweeps="colour")
    assert choose("bodies", 300, colour, group=4) == Method("velocity", "colour", "colour", "tail")
    assert choose("bodies", 300, LCPSettings(sweeps="colour")).sweep == "sequential"
    assert choose("bodies", 300, LCPSettings(sweeps="sequential"), group=4).sweep_elsewhere == "sequential"
    assert choose("bodies", 300, LCPSettings(fixed_iterations=True), group=4).batching == "vmap"
    # forced forms (comparisons), and a relaxed law
    assert choose("bodies", 300, DEFAULT, form="dense").form == "dense"
    assert choose("bodies", 12, DEFAULT, form="velocity").form == "velocity"
    assert choose("dense", 24, DEFAULT, relaxed=True).form == "relaxed"


def test_the_entry_refuses_what_it_cannot_solve():
    with pytest.raises(ValueError, match="velocity form needs a BodyProblem"):
        choose("dense", 24, DEFAULT, form="velocity")
    with pytest.raises(ValueError, match="velocity form needs a BodyProblem"):
        choose("bodies", 300, DEFAULT, full_mobility=True, form="velocity")
    with pytest.raises(ValueError, match="form must be"):
        choose("bodies", 300, DEFAULT, form="sparse")
    with pytest.raises(TypeError, match="expected a ContactProblem or a BodyProblem"):
        solve_contact(jnp.eye(3))


def test_a_body_problem_small_or_forced_dense_is_the_dense_solution():
    """A world's problem up to ``DENSE_WORLD_ROWS`` goes dense: the same impulses as forcing either
    form (two boxes resting on each other, 2 ground contacts each and 4 between them: 8 contacts,
    24 rows)."""
    scene, params, s = jc.worlds.scenes.stack(2)
    model = jc.Model(law=jc.worlds.DEFAULT_LAW, max_contacts=2)
    assert model.max_contacts == 2 and model.num_contacts(params.body) == 2, model

    @jax.jit
    def solve(params, s):  # one compiled program (eagerly, every op would compile on its own)
        con = jc.worlds.collide(model, scene, params, s)
        Minv = jax.vmap(lambda b, x: jc.geometry.mass_matrix_inverse(b, x))(params.body, s)
        v1 = jax.vmap(lambda x: x.generalized_velocity())(s) + jnp.array([0.0, 0.0, -0.02, 0.0, 0.0, 0.0])
        bp = jc.contact.body_problem(con.rows, con.bodies, con.phi, con.valid, Minv, v1, model.dt)
        assert bp.num_contacts * 3 <= DENSE_WORLD_ROWS, (bp.num_contacts, model)  # static
        return [solve_contact(bp, 0.5, model.law.solver, form=f) for f in (None, "dense", "velocity")]

    auto, dense, velocity = solve(params, s)
    np.testing.assert_array_equal(np.asarray(auto.z), np.asarray(dense.z))
    # the contact impulses are not unique (a box's two ground contacts can squeeze each other along
    # the ground; the four between the boxes share three directions): under Coulomb's disc the
    # velocity form's sweeps stop elsewhere in that null space (±2e-3 N s of internal friction, a
    # 2.8e-3 / 0.9e-3 split) while the dense solve's active-set polish lands on the regularised
    # solution. What moves the bodies, the generalised impulse Jᵀz, is the same to the tolerance.
    np.testing.assert_allclose(np.asarray(velocity.impulse), np.asarray(dense.impulse), atol=2e-7)
    for rows in (slice(0, 2), slice(4, 8)):  # the ground's and the boxes' total normal impulse
        assert float(velocity.z[rows, 0].sum()) == pytest.approx(float(dense.z[rows, 0].sum()), abs=1e-7)
    assert float(jnp.sum(dense.z[:, 0])) > 0
