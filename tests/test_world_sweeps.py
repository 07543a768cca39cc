"""The world solver's three ways of sweeping one velocity-form contact problem
(``LCPSettings.sweeps``): the fused CPU kernel (``jaxcontact.native``, the default on a CPU), the
pure-JAX sequential sweeps (the reference) and the graph-coloured sweeps (vectorised; the default
on accelerators). The kernel must give the reference's iterates; the coloured sweeps visit the
contacts in another order and must reach the same solution; all three under ``jit``, ``vmap`` and
``grad``, in float64 and float32."""

import dataclasses
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import worlds
from jaxcontact import native
from jaxcontact.worlds import scenes


def with_sweeps(how, **solver):
    """The world's default model sweeping ``how``, with other ``LCPSettings`` given by name."""
    law = worlds.DEFAULT_LAW
    return worlds.model(law=dataclasses.replace(law, solver=dataclasses.replace(law.solver, **solver)), sweeps=how)


def kicked_stack(dtype=jnp.float64):
    """Four stacked boxes, each kicked sideways and spun (84 rows: the velocity form), so that
    normals, sticking and sliding friction all act in the first steps."""
    scene, params, s = scenes.stack(4)
    rng = np.random.default_rng(0)
    s = s.replace(vel=jnp.asarray(rng.uniform(-0.6, 0.6, (4, 3)) * [1, 1, 0.2]),
                  omega=jnp.asarray(rng.uniform(-3, 3, (4, 3))))
    cast = lambda t: jax.tree_util.tree_map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, t)
    return scene, cast(params), cast(s)


def test_the_kernel_builds_here():
    """CI machines have a C++ compiler: the default path must be the kernel, not the fallback."""
    assert native.available()


# float32: the sweeps stop within the solver's tolerance (1e-5 m/s), and round-off may end them a
# sweep sooner or later, so impulses agree to that accuracy (~1e-3 of their scale) and positions to 1e-5 m
@pytest.mark.parametrize("dtype,atol,pos_atol", [(jnp.float64, 1e-11, 1e-11), (jnp.float32, 2e-3, 1e-5)])
def test_kernel_gives_the_sequential_sweeps_iterates(dtype, atol, pos_atol):
    scene, params, s = kicked_stack(dtype)
    out = {}
    for how in ("native", "sequential"):
        traj, info = jax.jit(lambda st, m=with_sweeps(how): worlds.rollout(m, scene, params, st, 25))(s)
        out[how] = (traj, info)
    (ta, ia), (tb, ib) = out["native"], out["sequential"]
    assert int(jnp.max(ia.iterations)) > 5  # the sweeps had work to do
    if dtype == jnp.float64:  # in float32 round-off may end a sweep sooner or later
        np.testing.assert_array_equal(ia.iterations, ib.iterations)
    scale = float(jnp.max(jnp.abs(ib.impulse)))
    np.testing.assert_allclose(ia.impulse, ib.impulse, atol=atol * max(scale, 1.0))
    np.testing.assert_allclose(ta.pos, tb.pos, atol=pos_atol)
    # nothing flagged but, under Coulomb's disc, the first step's stick/slip event (Flags.DEGENERATE:
    # a manifold at its disc's bound with no slip), the same in both sweeps
    assert not np.any(np.asarray(ia.flags) & ~int(jc.Flags.DEGENERATE))
    np.testing.assert_array_equal(ia.flags, ib.flags)


def test_coloured_sweeps_reach_the_same_solution():
    """Another visiting order, the same fixed point: given many sweeps the impulses agree with the
    sequential sweeps'. (On this kicked stack every order stalls at a residual of 4e-7 m/s: the
    redundant corner contacts trade impulse among themselves; the bodies' motion is settled far
    sooner.)"""
    scene, params, s = kicked_stack()
    res = {}
    for how in ("colour", "sequential"):
        m = with_sweeps(how, tol=1e-9, max_iter=3000)
        res[how] = jax.jit(lambda st, m=m: worlds.step_with_info(m, scene, params, st))(s)
    (sa, ia), (sb, ib) = res["colour"], res["sequential"]
    assert int(ia.iterations) > 5 and float(ia.residual) < 1e-6
    np.testing.assert_allclose(ia.impulse, ib.impulse, atol=1e-6)
    np.testing.assert_allclose(sa.vel, sb.vel, atol=1e-5)
    np.testing.assert_allclose(sa.omega, sb.omega, atol=1e-4)


@pytest.mark.parametrize("how", ["native", "colour"])
def test_a_batch_is_each_world_on_its_own(how):
    """``vmap`` (batch_rollout): each world gets exactly its own sweeps, whatever its neighbours need."""
    scene, params, s = kicked_stack()
    model = with_sweeps(how)
    states = jax.tree_util.tree_map(lambda x: jnp.stack([x, x * 0.5, x]), s)
    states = states.replace(pos=states.pos.at[1].set(s.pos), quat=states.quat.at[1].set(s.quat))  # world 1: half the kick
    final, summ = worlds.batch_rollout(model, scene, params, states, 15, output="final")
    for w in range(3):
        one = jax.tree_util.tree_map(lambda x: x[w], states)
        traj, _ = worlds.rollout(model, scene, params, one, 15)
        np.testing.assert_allclose(final.pos[w], traj.pos[-1], atol=1e-12)
        np.testing.assert_allclose(final.vel[w], traj.vel[-1], atol=1e-10)
    np.testing.assert_array_equal(final.pos[0], final.pos[2])


@pytest.mark.slow
def test_gradient_through_the_kernel_is_the_sequential_sweeps_gradient():
    """The derivative is implicit (at the solution), the same map for every way of sweeping: the
    kernel's gradient equals the reference's and finite differences'."""
    scene, params, s = kicked_stack()

    def loss(v0, how):
        traj, _ = worlds.rollout(with_sweeps(how), scene, params, s.replace(vel=s.vel.at[3, 0].set(v0)), 10)
        return traj.pos[-1, 3, 0] + traj.pos[-1, 2, 1]

    g_native = jax.jit(jax.grad(lambda v: loss(v, "native")))(0.3)
    g_seq = jax.jit(jax.grad(lambda v: loss(v, "sequential")))(0.3)
    f = jax.jit(lambda v: loss(v, "native"))
    eps = 1e-6
    fd = (f(0.3 + eps) - f(0.3 - eps)) / (2 * eps)
    assert np.isfinite(float(g_native)) and abs(float(g_native)) > 1e-3
    np.testing.assert_allclose(g_native, g_seq, rtol=1e-8)
    np.testing.assert_allclose(g_native, fd, rtol=2e-2)


def test_without_a_compiler_the_sequential_sweeps_run_and_say_so(tmp_path):
    """No kernel (here: a compiler that fails, an empty cache): one NativeWarning naming the
    cause, then the same answers from the pure-JAX sweeps."""
    code = textwrap.dedent("""
        import warnings, jax, jax.numpy as jnp, numpy as np
        jax.config.update("jax_enable_x64", True)
        from jaxcontact import worlds
        from jaxcontact import native
        from jaxcontact.worlds import scenes
        scene, params, s = scenes.stack(4)
        s = s.replace(vel=s.vel.at[:, 0].set(0.3))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            traj, info = worlds.rollout(worlds.model(), scene, params, s, 5)
        kinds = [x for x in w if issubclass(x.category, native.NativeWarning)]
        assert len(kinds) == 1 and "failed" in str(kinds[0].message), [str(x.message) for x in w]
        assert not native.available()
        print(repr(float(traj.pos[-1, 3, 0])))
    """)
    env = {**os.environ, "CXX": "false", "JAXCONTACT_NATIVE_CACHE": str(tmp_path)}  # $CXX is tried first
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    scene, params, s = scenes.stack(4)
    traj, _ = worlds.rollout(worlds.model(), scene, params, s.replace(vel=s.vel.at[:, 0].set(0.3)), 5)
    np.testing.assert_allclose(float(r.stdout.strip().splitlines()[-1]), float(traj.pos[-1, 3, 0]), atol=1e-12)


def test_colouring_never_puts_two_manifolds_on_one_body_in_a_colour():
    """The coloured sweeps are Gauss–Seidel only if a colour's manifolds share no body (the ground
    excepted): on random contact graphs, every colour is a matching, invalid manifolds get none,
    and ranks number each colour's manifolds 0, 1, 2, ..."""
    from jaxcontact.solvers.body_lcp import _colouring

    rng = np.random.default_rng(1)
    N = 9
    for trial in range(20):
        M = int(rng.integers(5, 40))
        a = rng.integers(0, N + 1, M)  # N: the ground
        b = rng.integers(0, N, M)
        b = np.where(b == a, (b + 1) % N, b)
        mb = np.stack([a, b], 1).astype(np.int32)
        valid = rng.random(M) < 0.8
        colour, rank = map(np.asarray, jax.jit(_colouring, static_argnums=2)(jnp.asarray(mb), jnp.asarray(valid), N))
        assert np.all(colour[~valid] == M) and np.all(colour[valid] < M)
        for c in np.unique(colour[valid]):
            members = np.flatnonzero(colour == c)
            bodies = mb[members].reshape(-1)
            bodies = bodies[bodies != N]
            assert len(bodies) == len(set(bodies.tolist())), (trial, c, mb[members])
            assert sorted(rank[members].tolist()) == list(range(len(members)))
