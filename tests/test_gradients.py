"""Gradients of rollout losses: implicit differentiation through the LCP versus central
finite differences on smooth cases, and finiteness everywhere."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact.states import random_throws

H = 0.002
# the sliding-box tests' rollout length: one n_steps (a static argument) for all three, so their
# eager forward rollouts share one compiled program (the suite is compile-bound)
N_SLIDE = 120


def sliding_setup():
    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-12, max_iter=300))
    model = jc.Model(law=law, dt=H)
    base = jc.shapes.box(0.1, 0.37)
    return model, base, law


def central_fd(f, x, eps):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def rel_err(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def test_grad_wrt_friction_matches_finite_differences():
    model, body, law = sliding_setup()
    s0 = jc.make_state(pos=[0, 0, 0.05], vel=[1.2, 0.3, 0])

    def loss(mu):
        params = jc.Params(body=body, ground=jc.Ground.flat(), law=law.init_params(mu=mu))
        final = jc.rollout(model, params, s0, N_SLIDE, output="final")
        return final.pos[0] + 2.0 * final.pos[1]

    mu = 0.25
    g = float(jax.grad(loss)(mu))
    fd = float(central_fd(loss, mu, 1e-5))
    assert rel_err(g, fd) < 1e-3, (g, fd)
    assert g < 0  # more friction, shorter slide


@pytest.mark.slow
def test_grad_wrt_anisotropic_friction_and_initial_velocity():
    model, body, law = sliding_setup()

    def loss(mu_vec, v0):
        params = jc.Params(
            body=body, ground=jc.Ground.flat(), law=jc.CoulombParams(mu=mu_vec, restitution=jnp.asarray(0.0))
        )
        s0 = jc.make_state(pos=[0, 0, 0.05]).replace(vel=v0)
        final = jc.rollout(model, params, s0, N_SLIDE, output="final")
        return jnp.sum(final.pos[:2] ** 2) + final.vel[0]

    mu = jnp.array([0.2, 0.35])
    v0 = jnp.array([1.0, 0.8, 0.0])
    gmu, gv = jax.grad(loss, argnums=(0, 1))(mu, v0)
    for i in range(2):
        e = jnp.zeros(2).at[i].set(1e-5)
        fd = float((loss(mu + e, v0) - loss(mu - e, v0)) / 2e-5)
        assert rel_err(float(gmu[i]), fd) < 1e-3, (i, gmu, fd)
    for i in range(2):  # horizontal components (a vertical kick would change the mode)
        e = jnp.zeros(3).at[i].set(1e-5)
        fd = float((loss(mu, v0 + e) - loss(mu, v0 - e)) / 2e-5)
        assert rel_err(float(gv[i]), fd) < 1e-3, (i, gv, fd)


def test_grad_wrt_vertex_positions_matches_finite_differences():
    model, body, law = sliding_setup()
    s0 = jc.make_state(pos=[0, 0, 0.05], vel=[0.8, 0, 0])
    direction = np.asarray(body.vertices) * np.array([0.3, 1.0, 1.0])  # stretch, keep bottom face flat

    def loss(vertices):
        params = jc.Params(body=body.replace(vertices=vertices), ground=jc.Ground.flat(), law=law.init_params(0.3))
        final = jc.rollout(model, params, s0, N_SLIDE, output="final")
        return final.pos[2] + 0.1 * final.pos[0]

    V = body.vertices
    g = jax.grad(loss)(V)
    assert np.all(np.isfinite(np.asarray(g)))
    eps = 1e-6
    fd = float((loss(V + eps * direction) - loss(V - eps * direction)) / (2 * eps))
    ad = float(jnp.sum(g * direction))
    assert rel_err(ad, fd) < 1e-3, (ad, fd)
    # the resting height follows the bottom face: lowering the bottom vertices raises the box
    assert float(jnp.sum(g[:, 2] * (np.asarray(V)[:, 2] < 0))) < 0


@pytest.mark.slow
def test_gradients_are_finite_through_impacts_liftoff_and_sticking():
    law = jc.CoulombLCP()
    model = jc.Model(law=law, dt=H, max_contacts=4)
    body = jc.shapes.box(0.1, 0.37)
    states = random_throws(jax.random.PRNGKey(7), 256, ranges={"height": (0.0, 0.15)})

    def loss(mu, eps, vertices, states):
        params = jc.Params(
            body=body.replace(vertices=vertices),
            ground=jc.Ground.flat(),
            law=jc.CoulombParams(mu=jnp.stack([mu, mu]), restitution=eps),
        )
        final = jax.vmap(lambda s: jc.rollout(model, params, s, 200, output="final"))(states)
        return jnp.mean(final.pos**2) + jnp.mean(final.quat[:, 1:] ** 2) + jnp.mean(final.vel**2)

    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(
        jnp.asarray(0.3), jnp.asarray(0.2), body.vertices, states
    )
    leaves = jax.tree_util.tree_leaves(grads)
    for leaf in leaves:
        assert np.all(np.isfinite(np.asarray(leaf)))
    assert float(jnp.abs(grads[0])) > 0 and float(jnp.abs(grads[2]).sum()) > 0


def _contact_adjoint(dtype, seed=0, N=8, C=100):
    """The transposed adjoint operator (T' − I)ᵀ of a projected-Jacobi map on C random contacts
    between N bodies (3 rows each, 3C > 6N: redundant, as a heap's are), with 30 % of the rows
    clipped and their tangents following the normal (slope ±μ), and the 1e-6 relative diagonal of
    ``LCPSettings.regularization``: condition ~10⁷. Returned both as a product through J and W
    (nothing n×n formed) and as the formed matrix, with a right-hand side in the range of J (a
    cotangent coming from the bodies' velocities)."""
    rng = np.random.default_rng(seed)
    L = rng.normal(size=(N, 6, 6))
    W = np.zeros((6 * N, 6 * N))
    for b in range(N):
        W[6 * b:6 * b + 6, 6 * b:6 * b + 6] = L[b] @ L[b].T + 0.1 * np.eye(6)
    J = np.zeros((3 * C, 6 * N))
    for c in range(C):
        a, b = rng.choice(N, 2, replace=False)
        R = rng.normal(size=(3, 6))
        J[3 * c:3 * c + 3, 6 * a:6 * a + 6], J[3 * c:3 * c + 3, 6 * b:6 * b + 6] = R, -R
    dA = np.einsum("ij,jk,ik->i", J, W, J)
    Dr = dA * (1 + 1e-6)
    free = rng.random(3 * C) < 0.7
    Q = np.zeros((3 * C, 3 * C))
    for c in range(C):
        for k in (1, 2):
            if not free[3 * c + k]:
                Q[3 * c + k, 3 * c] = rng.choice([-0.5, 0.5])
    dT = np.where(free[:, None], np.eye(3 * C) - (J @ W @ J.T + np.diag(Dr - dA)) / Dr[:, None], 0.0) + Q
    Mt = (dT - np.eye(3 * C)).T
    r = J @ rng.normal(size=6 * N)
    Jj, Wj, Drj, dAj, Pj = (jnp.asarray(x, dtype) for x in (J, W, Dr, dA, free))
    qi, qj = np.nonzero(Q)
    qv = jnp.asarray(Q[qi, qj], dtype)

    def matvec(u):  # (P(I − D⁻¹Ã) + Q − I)ᵀ u, through J and W
        pu = Pj * u / Drj
        At_pu = Jj @ (Wj @ (Jj.T @ pu)) + (Drj - dAj) * pu
        return Pj * u - At_pu + jnp.zeros_like(u).at[qj].add(qv * u[qi]) - u

    return matvec, Mt, r


def test_matrix_free_adjoint_solve_matches_the_dense_one_without_forming_a_matrix():
    """``solvers.krylov_guarded_solve`` (the adjoint of ``solve_body_lcp``, the velocity form of
    every world's contact problem) on a heap-like adjoint system of condition ~10⁷: in float64 the
    dense solve's answer to 1e-8; in float32 finite (the batched-GMRES form broke down to NaN on
    heap adjoints) and no less accurate than the dense LU in float32; and its compiled program
    needs less scratch memory than one n×n matrix, where the dense solve's needs more."""
    from jaxcontact.solvers import dense_guarded_solve, krylov_guarded_solve

    matvec, Mt, r = _contact_adjoint(jnp.float64)
    n = r.shape[0]
    truth = np.linalg.solve(Mt + 1e-10 * np.eye(n), r)
    assert np.linalg.cond(Mt) > 1e6
    err = lambda x: np.linalg.norm(np.asarray(x, np.float64) - truth) / np.linalg.norm(truth)
    x64 = jax.jit(lambda r: krylov_guarded_solve(matvec, r))(jnp.asarray(r))
    assert err(x64) < 1e-8
    np.testing.assert_allclose(np.asarray(matvec(jnp.asarray(truth))), Mt @ truth, rtol=1e-9, atol=1e-9)

    matvec32, Mt32, _ = _contact_adjoint(jnp.float32)
    r32 = jnp.asarray(r, jnp.float32)
    x32 = jax.jit(lambda r: krylov_guarded_solve(matvec32, r))(r32)
    lu32 = dense_guarded_solve(lambda u: jnp.asarray(Mt32, jnp.float32) @ u, r32)
    assert x32.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(x32)))
    assert err(x32) < 0.2 and err(x32) <= max(err(lu32), 1e-3), (err(x32), err(lu32))

    matvec, _, r = _contact_adjoint(jnp.float64, C=400)  # 1,200 rows
    matrix_bytes = r.shape[0] ** 2 * 8
    scratch = {name: jax.jit(lambda r, f=f: f(matvec, r)).lower(jnp.asarray(r)).compile().memory_analysis().temp_size_in_bytes
               for name, f in (("krylov", krylov_guarded_solve), ("dense", dense_guarded_solve))}
    assert scratch["krylov"] < matrix_bytes / 4 < matrix_bytes < scratch["dense"], scratch
