"""One protocol, every law: each contact law runs inside one ``rollout`` under ``jit``, ``vmap``
and ``jax.grad`` with parameters from its own ``init_params``; values finite, ``ContactInfo``
filled with the documented shapes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact.contactnets.functions import ContactFunctions
from jaxcontact.contactnets.laws import ContactNetsLaw, E2ELaw
from jaxcontact.dacm.law import DACMLaw, PDDLaw
from jaxcontact.laws import ContactLaw, CoulombLCP, NoContact, RelaxedCoulomb

SMALL = (16,)  # small networks: the protocol is under test, not the learned models

LAWS = {
    "coulomb": lambda: (CoulombLCP(), dict(mu=0.3, restitution=0.2)),
    "smoothed": lambda: (RelaxedCoulomb(kappa=1e-4, newton_iters=12), dict(mu=0.3, restitution=0.2)),
    "dacm": lambda: (  # the default recipe's law (the paper's inputs run in tests/test_dacm.py)
        DACMLaw(clf_hidden=SMALL, reg_hidden=SMALL, friction_target="ratio", inputs="coulomb",
                friction_head="residual", dissipative=True),
        dict(key=jax.random.PRNGKey(2)),
    ),
    "pdd": lambda: (PDDLaw(hidden=SMALL), dict(key=jax.random.PRNGKey(3))),
    "contactnets_polytope": lambda: (ContactNetsLaw(ContactFunctions("polytope")), dict(mu=0.3)),
    "contactnets_deep": lambda: (ContactNetsLaw(ContactFunctions("deep", hidden=(16, 16))), dict(mu=0.3)),
    "e2e": lambda: (E2ELaw(hidden=(16, 16)), dict(key=jax.random.PRNGKey(4))),
    "none": lambda: (NoContact(), dict()),
}
TOUCHING = {"coulomb", "smoothed", "contactnets_polytope", "contactnets_deep"}  # must push the box up
N_STEPS = 12


def _states():
    """Four boxes within 2 mm of the ground, falling and sliding, one tilted onto an edge."""
    q_tilt = jnp.array([np.cos(0.2), np.sin(0.2), 0.0, 0.0])
    return jc.State(
        pos=jnp.array([[0.0, 0.0, 0.051], [0.1, 0.0, 0.052], [0.0, 0.2, 0.05 * (np.cos(0.4) + np.sin(0.4)) + 1e-3],
                       [0.3, 0.1, 0.051]]),
        quat=jnp.stack([jnp.array([1.0, 0.0, 0.0, 0.0])] * 3 + [q_tilt])[jnp.array([0, 1, 3, 2])],
        vel=jnp.array([[0.0, 0.0, -0.5], [1.0, 0.0, -0.2], [0.5, -0.5, -1.0], [-0.8, 0.3, 0.0]]),
        omega=jnp.array([[0.0, 0.0, 0.0], [0.0, 0.0, 2.0], [1.0, 0.0, 0.0], [0.0, 0.5, 0.0]]),
    )


# the costliest laws' runs (8-24 CPU s each, compile-bound) in the slow tier; their own files test them in the default one
SLOW_LAWS = {"smoothed", "dacm", "pdd", "contactnets_deep"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_LAWS else n for n in LAWS])
def test_law_in_rollout_under_jit_vmap_grad(name):
    law, kw = LAWS[name]()
    assert isinstance(law, ContactLaw)
    model = jc.Model(law=law, dt=0.002)
    params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(**kw))
    if name == "pdd":  # an untrained PDD predicts O(1) N·s wrenches per step: scale them to the box's weight
        params = params.replace(law=jax.tree_util.tree_map_with_path(
            lambda path, x: x * 1e-3 if "y_std" in jax.tree_util.keystr(path) else x, params.law))
    states = _states()
    n = states.pos.shape[0]

    def loss(p):  # one compiled program: jit of grad of a vmapped rollout with its ContactInfo
        traj, info = jax.vmap(lambda s: jc.rollout(model, p, s, N_STEPS, with_info=True))(states)
        value = jnp.sum(traj.pos[:, -1, 2]) + 0.1 * jnp.sum(traj.vel[:, -1] ** 2)
        return value, (traj, info)

    (value, (traj, info)), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
    assert np.isfinite(float(value))
    for leaf in jax.tree_util.tree_leaves(traj):
        assert leaf.shape[:2] == (n, N_STEPS + 1) and np.all(np.isfinite(leaf)), name
    C = model.num_contacts(params.body)
    assert info.phi.shape[:2] == (n, N_STEPS) and info.active.shape == info.phi.shape
    assert info.impulse.shape[:2] == (n, N_STEPS) and info.impulse.shape[-1] in (1, 3)
    if name != "e2e":  # E2E has no contact geometry; every other law reports its C candidates
        assert info.phi.shape[-1] in (C, 8) and info.impulse.shape[-2] == info.phi.shape[-1]
    for field in ("patch_type", "residual", "iterations", "mode"):
        assert getattr(info, field).shape == (n, N_STEPS), field
    assert info.patch_centre.shape == info.patch_normal.shape == (n, N_STEPS, 3)
    for leaf in jax.tree_util.tree_leaves(info):
        assert np.all(np.isfinite(np.asarray(leaf, float))), name
    residual, iterations, flags = (np.asarray(x) for x in (info.residual, info.iterations, info.flags))
    assert not np.any(flags & (int(jc.Flags.INVALID_INPUT) | int(jc.Flags.NONFINITE))), name
    if name in TOUCHING:  # (untrained learned laws let the boxes sink: their start states get projected)
        assert not np.any(flags & int(jc.Flags.PENETRATION)), name
    settings = getattr(law, "solver", None)
    if isinstance(settings, jc.LCPSettings):  # PGS: sweeps until its tolerance, flagged at its cap
        assert 1 <= iterations.max() <= settings.max_iter and residual.max() < 1e-4, (name, residual.max())
        unconverged = (iterations >= settings.max_iter) & (residual > settings.tol)
        assert unconverged.mean() < 0.05, name
        failed = unconverged & (residual > jc.dynamics.SOLVER_ACCURACY)  # flagged only where measurably off
        np.testing.assert_array_equal((flags & int(jc.Flags.SOLVER)) != 0, failed)
    elif name == "smoothed":  # Newton: its fixed step count, the relaxed problem solved
        assert np.all(iterations == law.newton_iters) and residual.max() < 1e-6, residual.max()
        assert not np.any(flags & int(jc.Flags.SOLVER))
    elif name in ("none", "e2e"):  # no solver: nothing to report
        assert not residual.any() and not iterations.any()
    if name in TOUCHING:
        assert np.asarray(info.impulse)[..., 0].max() > 0  # normal impulses push
        assert np.asarray(info.active).any() and (np.asarray(info.patch_type) > 0).any()
        # no body sinks: the end state is within 2 mm of the ground at worst
        pen = jax.vmap(lambda s: jc.penetration(params, s))(jax.tree_util.tree_map(lambda x: x[:, -1], traj))
        assert float(pen.max()) < 2e-3

    leaves = jax.tree_util.tree_leaves(grads)
    assert leaves and all(np.all(np.isfinite(np.asarray(g))) for g in leaves), name
    if name in TOUCHING:  # contact makes the final state depend on the law's geometry or friction
        assert any(np.any(np.asarray(g) != 0) for g in jax.tree_util.tree_leaves(grads.law) + [grads.body.mass])


def test_each_law_names_its_friction_set():
    """``friction_cone`` (an optional member, ``laws.base``): a Coulomb law's solver's ``cone``, the
    smoothed law's own ``cone``, None for a law without Coulomb friction; what sysid's smoothed stages
    read to smooth the same set."""
    from jaxcontact.solvers import LCPSettings

    assert CoulombLCP().friction_cone == "elliptic"
    assert CoulombLCP(solver=LCPSettings(cone="box")).friction_cone == "box"
    assert RelaxedCoulomb(cone="box").friction_cone == "box" and RelaxedCoulomb().friction_cone == "elliptic"
    assert NoContact().friction_cone is None
    for name, make in LAWS.items():
        cone = make()[0].friction_cone
        assert cone in (None, "elliptic", "box"), (name, cone)
