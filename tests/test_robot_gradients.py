"""Issue 63 items 6–7 (robots2): a world's stalled contact solve polished in the forward
(``LCPSettings.stall_active_set``, on in ``worlds.DEFAULT_LAW``) so that reverse mode follows the plain
rollout through an arm's strike of a box, and the looped dense sweeps visiting only coupled rows
(``lcp.visited_rows``: the same iterates)."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import worlds
from jaxcontact.solvers import LCPSettings
from jaxcontact.solvers import lcp
from jaxcontact.solvers import problem as P
from jaxcontact.solvers.lcp import RowStructure, solve_lcp

SCENES = Path(__file__).resolve().parents[1] / "jaxcontact" / "data" / "scenes"


def padded_lcp(seed: int, contacts: int = 24, padded: int = 6, bodies: int = 5):
    """A random contact LCP (A = J W Jᵀ of ``contacts`` contacts on ``bodies`` bodies, 3 rows each,
    μ = 0.5) whose last ``padded`` contacts are decoupled as ``entry.solve_contact`` decouples padding:
    their rows and columns zero but the diagonal, b = 0 there."""
    rng = np.random.default_rng(seed)
    m, n = 3 * contacts, 6 * bodies
    J = np.zeros((m, n))
    for c in range(contacts):
        for k in rng.choice(bodies, 2, replace=False):
            J[3 * c:3 * c + 3, 6 * k:6 * k + 6] = rng.normal(size=(3, 6))
    A = J @ J.T / n
    b = rng.normal(size=m) * 0.3
    b[0::3] -= 0.2  # most normals approaching
    pad = np.zeros(m, bool)
    pad[3 * (contacts - padded):] = True
    keep = (~pad[:, None] & ~pad[None, :]) | np.eye(m, dtype=bool)
    A = np.where(keep, A, 0.0)
    b = np.where(pad, 0.0, b)
    coupling = np.tile([0.0, 0.5, 0.5], contacts)
    return jnp.asarray(A), jnp.asarray(b), jnp.asarray(coupling), RowStructure.contacts(contacts, 2), pad


@pytest.mark.parametrize("cone", ["elliptic", "box"])
def test_looped_sweeps_visiting_coupled_rows_only_give_the_same_iterates(cone):
    """72 rows (> ``SMALL_ROWS``: the looped sweeps) of which 18 padded: visiting only the 54 coupled
    rows gives the same z, sweeps and residual bit for bit as visiting all 72, and the visited rows are
    exactly the coupled ones, in their order."""
    A, b, coupling, rows, pad = padded_lcp(0)
    s = LCPSettings(cone=cone, tol=1e-9, max_iter=300, forward_active_set=0)
    method = P.Plan("dense", "looped", "looped", "vmap")
    order, count = lcp.visited_rows(lcp.regularized(A, s.regularization), b, jnp.zeros_like(b))
    assert int(count) == int(np.sum(~pad))
    np.testing.assert_array_equal(np.asarray(order[:int(count)]), np.flatnonzero(~pad))
    out = {}
    saved = lcp.VISIT_COUPLED_ROWS
    try:
        for flag in (False, True):
            lcp.VISIT_COUPLED_ROWS = flag
            out[flag] = solve_lcp(A, b, coupling, rows, s, method=method)
    finally:
        lcp.VISIT_COUPLED_ROWS = saved
    assert int(out[True].iterations) > 3  # a real solve, not one sweep
    for field in ("z", "iterations", "residual"):
        np.testing.assert_array_equal(np.asarray(getattr(out[False], field)), np.asarray(getattr(out[True], field)))
    assert np.all(np.asarray(out[True].z)[pad] == 0)


def test_a_stalled_solve_is_polished_and_only_where_it_stalled_also_under_vmap():
    """A problem stopped at a cap of 5 sweeps (residual far above tol) is moved onto the LCP's
    solution by ``stall_active_set`` (natural-map residual below 1e-10; the same z as the sweeps run
    to convergence, to 1e-8), in a plain call and under ``vmap`` beside a problem that converged
    before the cap, which is left bit for bit as it was; a fixed trip count is never polished."""
    A, b, coupling, rows, _ = padded_lcp(1, contacts=8, padded=0, bodies=3)
    capped = LCPSettings(cone="elliptic", tol=1e-12, max_iter=5, forward_active_set=0)
    polished = LCPSettings(cone="elliptic", tol=1e-12, max_iter=5, forward_active_set=0, stall_active_set=3)
    full = solve_lcp(A, b, coupling, rows, LCPSettings(cone="elliptic", tol=1e-13, max_iter=20000,
                                                          forward_active_set=0))
    raw = solve_lcp(A, b, coupling, rows, capped)
    pol = solve_lcp(A, b, coupling, rows, polished)
    assert int(raw.iterations) == 5 and float(raw.residual) > 1e-4
    assert float(pol.residual) < 1e-10, float(pol.residual)
    np.testing.assert_allclose(np.asarray(pol.z), np.asarray(full.z), atol=1e-8)
    fixed = solve_lcp(A, b, coupling, rows, LCPSettings(cone="elliptic", max_iter=5, fixed_iterations=True,
                                                           forward_active_set=0, stall_active_set=3))
    np.testing.assert_array_equal(np.asarray(fixed.z), np.asarray(raw.z))
    # a batch of the stalled problem and an easy one (every contact separating: z = 0 within two sweeps)
    easy = jnp.abs(b) + 0.1
    batch = jax.vmap(lambda bb: solve_lcp(A, bb, coupling, rows, polished))(jnp.stack([b, easy]))
    alone = solve_lcp(A, easy, coupling, rows, capped)
    assert int(alone.iterations) < 5 and int(batch.iterations[1]) < 5
    np.testing.assert_array_equal(np.asarray(batch.z[1]), np.asarray(alone.z))
    np.testing.assert_allclose(np.asarray(batch.z[0]), np.asarray(pol.z), atol=1e-12)


def test_arm_strike_gradient_follows_central_differences_at_the_defaults():
    """The arm of ``arm_push.xml`` strikes its box at step 31 and swings it flat against its link;
    there PGS stalls at the sweep cap. d(box's x, y after 45 steps)/d(shoulder target at step 5) by
    reverse mode at the defaults against central differences (1e-5): within 10 % (the former defaults,
    which polished only the differentiated run, were 131 % off in the 100-step run of
    ``benchmarks.arm_push_gradient``), and at least one step stalled (the case is exercised)."""
    pytest.importorskip("mujoco")
    scene, params, state, model = worlds.from_mjcf(str(SCENES / "arm_push.xml"))
    steps, k, eps = 45, 5, 1e-5
    u0 = jnp.tile(jnp.array([[0.6, 0.0]]), (steps, 1))

    def final(u):
        traj, info = worlds.rollout(model, scene, params, state, steps, u)
        return traj.pos[-1, 2, :2], info.iterations

    jac_of = jax.jit(jax.jacrev(final, has_aux=True))
    value = jax.jit(final)
    jac, sweeps = jac_of(u0)
    assert np.any(np.asarray(sweeps) >= model.law.solver.max_iter)  # a stalled solve on the way
    bump = jnp.zeros_like(u0).at[k, 0].set(eps)
    fd = (np.asarray(value(u0 + bump)[0]) - np.asarray(value(u0 - bump)[0])) / (2 * eps)
    ad = np.asarray(jac)[:, k, 0]
    assert np.linalg.norm(fd) > 1e-3  # the strike moved the box: a derivative worth checking
    assert np.linalg.norm(ad - fd) < 0.1 * np.linalg.norm(fd), (ad, fd)
