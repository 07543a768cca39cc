"""The step's small dense linear algebra (``jaxcontact.linalg``): XLA loops on a CPU, never jaxlib's LAPACK
kernels, whose batched calls block XLA's CPU thread pool (a 1,024-world quadruped batch never returned on a
2-core machine: docs/performance.md, "Robots"). Values and derivatives against jax's own functions, float64;
the batched, differentiated program of a jointed world holds no LAPACK call; the hang's case in the slow tier."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import linalg

ROOT = Path(__file__).resolve().parents[1]


def spd(n, seed):
    a = jax.random.normal(jax.random.key(seed), (n + 3, n))
    return a.T @ a + 0.1 * jnp.eye(n)


def test_values_are_jaxs_in_float64():
    """Cholesky, reduced QR (with R's signs as LAPACK's), the four triangular solves, both
    ``cho_solve`` layouts and a pivoting LU solve (a zero leading pivot) equal jax's to 1e-11."""
    S = spd(7, 0)
    a = jax.random.normal(jax.random.key(1), (11, 7))
    b = jax.random.normal(jax.random.key(2), (7, 3))
    A = jax.random.normal(jax.random.key(3), (7, 7)).at[0, 0].set(0.0)  # elimination without pivoting divides by 0

    def both(lib, tri, cho, S, a, b, A):  # one program per library (compiles once)
        L = lib.cholesky(S)
        out = {"chol": L, "qr": tuple(lib.qr(a)), "solve": (lib.solve(A, b), lib.solve(A, b[:, 0])), "-chol": lib.cholesky(-S)}
        for lower in (True, False):
            T = L if lower else L.T
            out["lower" if lower else "upper"] = (cho((T, lower), b), *(tri(T, rhs, lower, trans) for trans in (False, True) for rhs in (b, b[:, 0])))
        return out

    ours = jax.jit(lambda *x: both(linalg, linalg.solve_triangular, linalg.cho_solve, *x))(S, a, b, A)
    jaxs = jax.jit(lambda *x: both(jnp.linalg, lambda T, r, lo, tr: jax.scipy.linalg.solve_triangular(
        T, r, lower=lo, trans="T" if tr else 0), jax.scipy.linalg.cho_solve, *x))(S, a, b, A)
    assert not np.all(np.isfinite(np.asarray(ours.pop("-chol"))))  # not positive definite: NaN, as LAPACK's
    jaxs.pop("-chol")
    jax.tree_util.tree_map(lambda x, y: np.testing.assert_allclose(x, y, atol=1e-11), ours, jaxs)
    Q = ours["qr"][0]
    np.testing.assert_allclose(Q.T @ Q, np.eye(7), atol=1e-12)


def test_derivatives_are_jaxs_and_central_differences():
    """Reverse mode through each loop equals jax's own rules (Cholesky along a symmetric direction,
    as jax reads one triangle), QR's forward mode too, and QR's reverse mode is central differences."""
    a = jax.random.normal(jax.random.key(4), (9, 5))
    w = jax.random.normal(jax.random.key(5), (9, 5))
    d = jax.random.normal(jax.random.key(6), a.shape)
    S = spd(5, 7)
    sym = jax.random.normal(jax.random.key(8), (5, 5))
    sym = sym + sym.T
    A = jax.random.normal(jax.random.key(9), (5, 5))
    b = jax.random.normal(jax.random.key(10), (5,))

    def derivatives(lib):
        qr_loss = lambda a: jnp.sum(w * lib.qr(a)[0]) + jnp.sum(jnp.sin(lib.qr(a)[1]))
        chol = lambda t: jnp.sum(jnp.cos(lib.cholesky(S + t * sym)))
        lu = lambda A: jnp.sum(jnp.sin(lib.solve(A, b)))
        eps = 1e-6
        return {"qr": jax.grad(qr_loss)(a), "qr_jvp": jax.jvp(qr_loss, (a,), (d,))[1],
                "chol": jax.grad(chol)(0.0), "lu": jax.grad(lu)(A),
                "qr_fd": (qr_loss(a + eps * d) - qr_loss(a - eps * d)) / (2 * eps)}

    ours, jaxs = (jax.jit(lambda lib=lib: derivatives(lib))() for lib in (linalg, jnp.linalg))
    np.testing.assert_allclose(jnp.sum(ours["qr"] * d), ours["qr_fd"], rtol=1e-6)
    jax.tree_util.tree_map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-10), ours, jaxs)


def lapack_lines(text):
    return [line.strip()[:120] for line in text.splitlines() if "lapack" in line]


def test_the_joints_batched_and_differentiated_call_no_lapack_kernel():
    """The joints' stage (``constrained_motion``, ``regularized_motion``: Cholesky, QR, triangular
    solves) and the implicit adjoint's solve (``dense_guarded_solve``), vmapped and reverse-differentiated,
    lower to a program without LAPACK calls on a CPU; the same check finds them in a vmapped
    ``jnp.linalg.qr`` (so it can fail). The whole world's program: the slow test below."""
    from jaxcontact.solvers.implicit import dense_guarded_solve
    from jaxcontact.worlds import joints

    if jax.default_backend() != "cpu":
        pytest.skip("LAPACK is a CPU's")
    assert lapack_lines(jax.jit(jax.vmap(jnp.linalg.qr)).lower(jnp.ones((4, 6, 3))).as_text())

    def f(minv, jb, target, v1):
        vc, W, fac = joints.constrained_motion(minv, jb, target, v1)
        vr, Wr, _ = joints.regularized_motion(minv, jb, target, v1)
        x = dense_guarded_solve(lambda u: W[:3, :3] @ u + u, vc[:3])
        return jnp.sum(vc * vr) + jnp.sum(W * Wr) + jnp.sum(linalg.cho_solve(fac, target)) + jnp.sum(x)

    args = (jnp.ones((4, 12, 12)), jnp.ones((4, 5, 12)), jnp.ones((4, 5)), jnp.ones((4, 12)))
    text = jax.jit(jax.vmap(jax.value_and_grad(f, argnums=(0, 1)))).lower(*args).as_text()
    assert not lapack_lines(text), lapack_lines(text)[:3]


@pytest.mark.slow
def test_a_batched_differentiated_jointed_world_holds_no_lapack_call():
    """The program of a vmapped, reverse-differentiated rollout of a jointed world (a 3-link chain on
    the ground, worlds' stall polish on) calls no LAPACK kernel on a CPU."""
    import dataclasses

    from jaxcontact import chains as C
    from jaxcontact import worlds

    if jax.default_backend() != "cpu":
        pytest.skip("LAPACK is a CPU's")
    chain = C.make_chain(pin=(0.0, 0.0, 0.3))
    model, scene, params = C.as_world(dataclasses.replace(C.ChainModel(), law=worlds.DEFAULT_LAW), chain)
    s0 = C.planar_state(chain, jnp.array([0.3, 0.2, -0.1]), jnp.array([1.0, 0.0, 0.0]))
    states = jax.tree_util.tree_map(lambda x: jnp.stack([x] * 4), s0)

    def loss(params):
        final = worlds.batch_rollout(model, scene, params, states, 3, output="final")[0]
        return jnp.sum(final.pos[:, -1, 2])

    text = jax.jit(jax.value_and_grad(loss)).lower(params).as_text()
    assert not lapack_lines(text), lapack_lines(text)[:3]


@pytest.mark.slow
def test_the_1024_world_quadruped_returns_on_two_cores():
    """The hang's case: 1,024 quadrupeds (``data/scenes/quadruped.xml``, float32, 4 kept pairs) × 2 steps
    by ``worlds.batch_rollout``, in a process held to 2 cores (XLA's CPU pool then has 2 threads) and
    a 300 s limit: it returns, finite. With jaxlib's LAPACK kernels it never returned (every thread in
    a futex wait after compiling in ~40 s)."""
    pytest.importorskip("mujoco")
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 cores to pin to")
    code = textwrap.dedent("""
        import os
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])
        import jax, jax.numpy as jnp, numpy as np
        from jaxcontact import worlds
        f = os.path.join("jaxcontact", "data", "scenes", "quadruped.xml")
        scene, params, state, model = worlds.from_mjcf(f, keyframe="stand", dtype=jnp.float32, max_pairs=4)
        W = 1024
        states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (W,) + x.shape), state)
        u = 0.5 * jnp.sin(jnp.linspace(0, 6, W * 2 * 8)).reshape(W, 2, 8).astype(jnp.float32)
        final, _ = jax.jit(lambda p, s, c: worlds.batch_rollout(model, scene, p, s, 2, c, output="final"))(params, states, u)
        print("finite", bool(np.all(np.isfinite(np.asarray(final.pos)))))
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "finite True" in out.stdout
