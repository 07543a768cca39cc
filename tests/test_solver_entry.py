"""One solver entry (``solvers.solve_contact(problem, method)``) and its one table (``solvers.choose``,
``solvers.table``): the plan each kind of problem gets from its static sizes and the law's method,
and the problems the entry refuses."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import native
from jaxcontact.solvers import DENSE_WORLD_ROWS, SMALL_ROWS, LCPSettings, Method, Plan, choose, solve_contact, table

DEFAULT = Method()


def test_the_table():
    """Every row of the table in ``solvers/problem.py``'s docstring."""
    # a formed A: dense, unrolled up to SMALL_ROWS rows with its own batching rule, looped above under vmap
    assert table("dense", 24, DEFAULT) == Plan("dense", "unrolled", "unrolled", "tail")
    assert table("dense", SMALL_ROWS, DEFAULT).sweep == "unrolled"
    assert table("dense", SMALL_ROWS + 3, DEFAULT) == Plan("dense", "looped", "looped", "vmap")
    assert table("dense", 24, Method(LCPSettings(fixed_iterations=True))).batching == "vmap"
    # a world's rows: small ones, a relaxed gradient or a jointed world's mobility densely
    assert table("bodies", DENSE_WORLD_ROWS, DEFAULT) == Plan("dense", "unrolled", "unrolled", "tail")
    assert table("bodies", DENSE_WORLD_ROWS + 1, DEFAULT).form == "velocity"  # two boxes on the ground: 60 rows
    assert table("bodies", SMALL_ROWS, DEFAULT, full_mobility=True) == Plan("dense", "unrolled", "unrolled", "tail")
    assert table("bodies", 300, Method(gradient=object())).form == "dense"
    assert table("bodies", 300, DEFAULT, full_mobility=True) == Plan("dense", "looped", "looped", "vmap")
    # larger ones in velocity form: the sweeps of LCPSettings.sweeps, colour only with a manifold size; the
    # fused kernel's adjoint beside its sweeps
    cpu = "native" if native.available() else "sequential"
    adjoint = "native" if cpu == "native" else "reference"
    assert table("bodies", 300, Method(group=4)) == Plan("velocity", cpu, "colour", "tail", adjoint)
    assert table("bodies", 300, DEFAULT) == Plan("velocity", cpu, "sequential", "tail", adjoint)
    colour = LCPSettings(sweeps="colour")
    assert table("bodies", 300, Method(colour, group=4)) == Plan("velocity", "colour", "colour", "tail")
    assert table("bodies", 300, Method(colour)).sweep == "sequential"
    assert table("bodies", 300, Method(LCPSettings(sweeps="sequential"), group=4)).sweep_elsewhere == "sequential"
    assert table("bodies", 300, Method(LCPSettings(fixed_iterations=True), group=4)).batching == "vmap"
    # forced forms (comparisons), and a relaxed law
    assert table("bodies", 300, Method(form="dense")).form == "dense"
    assert table("bodies", 12, Method(form="velocity")).form == "velocity"
    assert table("dense", 24, Method(relaxed=(1e-4, 5))).form == "relaxed"


def test_the_table_asks_for_the_kernel_once_per_choice(monkeypatch):
    """``native.available()`` is asked by the table alone, once per velocity-form choice (not per
    solve of the chosen plan), and a kernel that cannot be built gives the pure-JAX sequential sweeps
    with the reference adjoint."""
    calls = []
    monkeypatch.setattr(native, "available", lambda: calls.append(1) or False)
    assert table("bodies", 300, Method(group=4)) == Plan("velocity", "sequential", "colour", "tail", "reference")
    assert table("dense", 24, DEFAULT).form == "dense" and len(calls) == 1


def _body_problem(C, held=False):
    z = jnp.zeros
    return jc.contact.BodyProblem(rows=z((C, 2, 3, 6)), bodies=jnp.zeros((C, 2), jnp.int32), mobility=z((1, 6, 6)),
                                  v_free=z((1, 6)), phi=z(C), valid=jnp.ones(C, bool), target=z(C),
                                  fixed_normal=jnp.ones(C, bool) if held else None)


def test_choose_reads_the_problem():
    """``choose`` of a problem: its kind and rows (C·d), a held normal (a joint's friction loss) dense."""
    assert choose(_body_problem(100), DEFAULT).form == "velocity"
    assert choose(_body_problem(10), DEFAULT).form == "dense"
    assert choose(_body_problem(100, held=True), DEFAULT).form == "dense"


def test_the_entry_refuses_what_it_cannot_solve():
    with pytest.raises(ValueError, match="velocity form needs a BodyProblem"):
        table("dense", 24, Method(form="velocity"))
    with pytest.raises(ValueError, match="velocity form needs a BodyProblem"):
        table("bodies", 300, Method(form="velocity"), full_mobility=True)
    with pytest.raises(ValueError, match="form must be"):
        table("bodies", 300, Method(form="sparse"))
    with pytest.raises(TypeError, match="expected a ContactProblem or a BodyProblem"):
        solve_contact(jnp.eye(3))
    with pytest.raises(ValueError, match="fixed-normal contacts"):
        solve_contact(_body_problem(100, held=True).replace(mu=0.5), Method(form="velocity"))
    # friction rows without a coefficient: refused eagerly and under jit (a static check), never μ = 1 silently
    with pytest.raises(ValueError, match="no friction coefficient"):
        solve_contact(_body_problem(100))
    with pytest.raises(ValueError, match="no friction coefficient"):
        jax.jit(solve_contact)(_body_problem(100))


def test_a_frictionless_problem_needs_no_mu():
    """Normal rows only (``contact.rigid_body(..., friction=False)``): no coefficient to give. A box
    resting on a face takes, over its four corners, the impulse of its weight m g h in the step."""
    law = jc.CoulombLCP()
    model = jc.Model(law=law, dt=0.01)
    params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params())
    s = jc.make_state(pos=jnp.array([0.0, 0.0, 0.05]))
    v_free = s.generalized_velocity() + jnp.array([0.0, 0.0, -9.81 * 0.01, 0.0, 0.0, 0.0])
    prob, _ = jc.contact.rigid_body(model, params, s, v_free, friction=False)
    assert prob.num_tangents == 0 and prob.mu is None
    sol = jax.jit(solve_contact)(prob)
    assert float(jnp.sum(sol.z[:, 0])) == pytest.approx(0.37 * 9.81 * 0.01, rel=1e-5)
    np.testing.assert_array_equal(np.asarray(sol.z), np.asarray(jax.jit(solve_contact)(prob.replace(mu=0.0)).z))


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
        return [solve_contact(bp.replace(mu=0.5), Method(model.law.solver, form=f)) for f in (None, "dense", "velocity")]

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
