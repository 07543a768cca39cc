"""Box-friction LCP of contacts between free bodies, in velocity form (matrix-free).

The same problem as ``lcp.solve_lcp`` for a world of N free bodies (and the ground): contact c
has d rows (normal, tangents) on its two bodies, ``rows`` (C, 2, d, 6), and the Delassus matrix
is A = J W Jᵀ with W block-diagonal (every body's M⁻¹). ``solve_lcp`` forms A, (C·d)² entries, and
sweeps every row of it: on a heap of 16 boxes 768 rows, most of them slots of pairs that do not
touch. Here A is never formed. Projected Gauss–Seidel runs in *velocity form* (the sequential
impulse of Catto's Box2D and of Bullet's solver, exactly PGS on A): each body's velocity
v = v_free + M⁻¹Jᵀz is kept up to date, a row's constraint velocity is read from its two bodies
(w_i = J_i v + b_i + extra_i z_i), and a change Δz_i of its impulse moves the two bodies by
M⁻¹J_iᵀΔz_i. A sweep visits the *valid* contacts only, in their index order (the padding, a
static number of slots, is skipped), so a sweep costs O(valid contacts) and memory is O(C), not
O(C²). In exact arithmetic the iterates are those of ``solve_lcp`` on the same rows in the same
order (Gauss–Seidel is defined by the order), with the same stopping rule and tolerance.

The derivative is implicit, as ``solve_lcp``'s: jaxopt's ``custom_fixed_point`` on the
projected-Jacobi map T(z) = clip(z − (A z + b)/diag A, lo, hi), here applied matrix-free (A z
through the bodies' velocities). Its adjoint system is solved matrix-free as well
(``implicit.krylov_guarded_solve``: restarted GMRES on vector–Jacobian products of T), so the
backward pass, too, costs O(C) memory per solve rather than the (C·d)² of a formed matrix
(docs/worlds.md).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from ..native import bindings
from .implicit import fixed_point_adjoint_matvec, implicit_fixed_point, krylov_guarded_solve, newton_polish
from .batching import MIN_TAIL_BODIES, tail_sweeps, with_batching_rule
from .lcp import LCPSettings, LCPSolution, Method, diagonal_floor, disc_step, project_disc
from .problem import Plan, table


def _prepare(rows, index, Minv, soft, reg, valid):
    """(M⁻¹Jᵀ per row (C, 2, d, 6), the regularised diagonal of A (C, d), the added diagonal
    (C, d)). ``index`` (C, 2): body indices with the ground at N (zero mobility). A padded
    contact (``valid`` false: its rows are zero) gets the diagonal 1, so that no quotient by
    its zero diagonal reaches a derivative (a world with no contact at all has no scale)."""
    # M⁻¹Jᵀ as six products added in turn, not a batched 6×6 dot nor a reduction: XLA's CPU backend
    # runs (C, 2) tiny dots one by one and its reduction fusions of a 6-long axis are as slow
    # (17–25 ms a call on 64 heaps, against one fused loop here)
    Mi = with_ground(Minv)[index]
    WJ = sum(Mi[:, :, None, :, j] * rows[:, :, :, j, None] for j in range(6))
    D = _rows_times(rows, WJ)
    Ds = D + soft * D  # the caller's softness (problem.soften's relative diagonal)
    scale = jnp.maximum(jnp.max(jnp.abs(Ds)), jnp.finfo(Ds.dtype).tiny)
    Dr = jnp.where(valid[:, None], Ds + reg * Ds + 1e-12 * scale + diagonal_floor(Ds, scale), 1.0)  # lcp.regularized, row by row
    return WJ, Dr, Dr - D


def _rows_times(rows, x):
    """(C, d) Σ over both sides s and the 6 velocity components j of rows[c, s, i, j] · x[c, s, i, j]
    (x (C, 2, d, 6)) or, for x (C, 2, 6) per side, of rows[c, s, i, j] · x[c, s, j]. Written as twelve
    products added in turn, like M⁻¹Jᵀ in ``_prepare``: XLA's CPU backend runs the einsum's batched
    tiny dots one by one, and a reduction over the short axes as slowly."""
    per_row = x.ndim == rows.ndim
    return sum(rows[:, s, :, j] * (x[:, s, :, j] if per_row else x[:, s, None, j]) for s in range(2) for j in range(6))


def _velocities(WJ, index, v_free, z):
    """(N + 1, 6) every body's velocity v_free + M⁻¹Jᵀz (the last row: the ground, 0)."""
    N = v_free.shape[0]
    dv = sum(WJ[:, :, k, :] * z[:, None, k, None] for k in range(WJ.shape[2]))  # (C, 2, 6), as _rows_times
    return with_ground(v_free).at[index.reshape(-1)].add(dv.reshape(-1, 6)).at[N].set(0.0)


def ground_index(bodies, N: int):
    """``bodies`` (C, 2) with the ground's −1 mapped to N: the zero row that ``with_ground``
    appends to every per-body array (the ground neither moves nor is moved)."""
    return jnp.where(bodies < 0, N, bodies)


def with_ground(x):
    """x (N, ...) per body with the ground appended as a zero row N (``ground_index``)."""
    return jnp.concatenate([x, jnp.zeros((1,) + x.shape[1:], x.dtype)])


def _index(bodies_f, N):
    return ground_index(jax.lax.stop_gradient(bodies_f).astype(jnp.int32), N)


class Sweeping(NamedTuple):
    """One problem as the sweeps and the projected-Jacobi map read it (``_prepare``'s arrays given):
    rows (C, 2, d, 6), index (C, 2) (the ground N), WJ = M⁻¹Jᵀ per row, extra (C, d) the added
    diagonal, v_free (N, 6), bias (C, d), coupling (C, d), valid (C,) bool."""

    rows: Any
    index: Any
    WJ: Any
    extra: Any
    v_free: Any
    bias: Any
    coupling: Any
    valid: Any


def _fixed_point_map(reg, cone: str = "box"):
    def T(z, *args):
        """The projected-Jacobi map on the flat impulses z (C·d,) (the adjoint solve wants a vector)
        at ``args`` = (rows, bodies_f, Minv, v_free, bias, soft, coupling, valid_f)."""
        rows, bodies_f, Minv, v_free, bias, soft, coupling, valid_f = args
        N = Minv.shape[0]
        z = z.reshape(bias.shape)
        index = _index(bodies_f, N)
        WJ, Dr, extra = _prepare(rows, index, Minv, soft, reg, valid_f > 0)
        return _jacobi(z, Sweeping(rows, index, WJ, extra, v_free, bias, coupling, valid_f > 0), Dr, cone).reshape(-1)

    return T


def _disc(cone: str, d: int) -> bool:
    """Whether contacts of ``d`` rows project their tangent pair onto the disc (``LCPSettings.cone``)."""
    return cone == "elliptic" and d == 3


def _steps(Dr, coupling, cone: str):
    """(C, d) each row's projected step: 1/D (``_jacobi`` divides by D), the tangent pair's common
    step with the elliptic cone (``lcp.disc_step``)."""
    step = 1.0 / Dr
    if _disc(cone, Dr.shape[1]):
        s1, s2 = disc_step(coupling[:, 1], coupling[:, 2], Dr[:, 1], Dr[:, 2])
        step = jnp.stack([step[:, 0], s1, s2], axis=1)
    return step


def _pre_projection(z, w, Dr, coupling, cone: str):
    """(C, d) the rows before the projection: y = z − w / D, the tangent pair with its common step
    under the elliptic cone."""
    y = z - w / Dr
    if _disc(cone, z.shape[1]):
        s1, s2 = disc_step(coupling[:, 1], coupling[:, 2], Dr[:, 1], Dr[:, 2])
        y = jnp.stack([y[:, 0], z[:, 1] - s1 * w[:, 1], z[:, 2] - s2 * w[:, 2]], axis=1)
    return y


def _project(y, zn, coupling, cone: str):
    """(C, d) the projection of ``_jacobi``: the normal onto z ≥ 0, the tangents onto the friction
    set of the normal impulse ``zn`` (C,): the disc (``lcp.project_disc``) or each row's interval."""
    if _disc(cone, y.shape[1]):
        t1, t2 = project_disc(y[:, 1], y[:, 2], coupling[:, 1], coupling[:, 2], zn)
        return jnp.stack([jnp.maximum(y[:, 0], 0.0), t1, t2], axis=1)
    bound = coupling * zn[:, None]
    return jnp.concatenate([jnp.maximum(y[:, :1], 0.0), jnp.clip(y[:, 1:], -bound[:, 1:], bound[:, 1:])], axis=1)


def _jacobi(z, p: Sweeping, Dr, cone: str = "box"):
    """One projected-Jacobi step from z (C, d) of the problem ``p`` with the regularised diagonal
    ``Dr``: the map whose fixed point is the solution (``_fixed_point_map``; the solve's residual).
    With the elliptic cone the tangent pair takes the common step (``lcp.disc_step``) and the disc's
    projection."""
    rows, index, WJ, extra, v_free, bias, coupling, valid = p
    v = _velocities(WJ, index, v_free, z)
    w = _rows_times(rows, v[index]) + bias + extra * z
    y = _project(_pre_projection(z, w, Dr, coupling, cone), z[:, 0], coupling, cone)
    return jnp.where(valid[:, None], y, 0.0)


def _contact_blocks(rows, WJ, extra):
    """(C, d, d) every contact's own 3×3 block of A (its rows against its M⁻¹Jᵀ) with the added
    diagonal ``extra``: what a visit keeps its rows' velocities current with (a padded contact,
    rows zero and extra 1, gets the identity)."""
    d = rows.shape[2]
    G = sum(rows[:, s, :, None, j] * WJ[:, s, None, :, j] for s in range(2) for j in range(rows.shape[3]))  # as _rows_times
    return G + jnp.eye(d, dtype=WJ.dtype) * extra[:, None, :]


def _setup(z, p: Sweeping):
    """The problem ``p`` laid out for the sweeps: its valid contacts first, in index order (``order``),
    each with its rows, M⁻¹Jᵀ, 3×3 block G of A (extra diagonal included), bias, coupling and
    extra diagonal; and the first sweep's carry (z in that order, the bodies' velocities)."""
    rows, index, WJ, extra, v_free, bias, coupling, valid = p
    order = jnp.argsort(~valid, stable=True)
    G = _contact_blocks(rows, WJ, extra)
    data = {"order": order, "n_valid": jnp.sum(valid.astype(jnp.int32)),
            **{k: x[order] for k, x in dict(rows=rows, WJ=WJ, G=G, bias=bias, mu=coupling, extra=extra,
                                             index=index).items()}}
    carry = (z[order], _velocities(WJ, index, v_free, z), jnp.asarray(jnp.inf, z.dtype), jnp.asarray(0, jnp.int32))
    return data, carry


def _sweep(data, carry, cone: str = "box"):
    """One projected Gauss–Seidel sweep in velocity form over a problem's valid contacts.

    Each visit reads the contact's constraint velocities from its two bodies at once
    (w = J v + b + extra z), then updates its rows in order (normal, tangents) keeping w current
    through the contact's own block G of A (so row k sees the new impulses of the rows before it,
    exactly as row-by-row PGS does), and moves the two bodies once by M⁻¹Jᵀ Δz. With the elliptic
    cone the two tangents are one block after the normal (``lcp._pgs_sweep``'s order)."""
    zo, v, _, it = carry
    d = zo.shape[1]
    disc = _disc(cone, d)

    def contact(i, carry):
        zo, v, change = carry
        ia, ib = data["index"][i, 0], data["index"][i, 1]
        zc = zo[i]
        r, wj, g, b, mu, ex = (data[k][i] for k in ("rows", "WJ", "G", "bias", "mu", "extra"))
        va, vb = v[ia], v[ib]
        w = r[0] @ va + r[1] @ vb + b + ex * zc
        z_old = zc
        for k in range(1 if disc else d):
            zk = zc[k] - w[k] / g[k, k]
            if k == 0:
                zk = jnp.maximum(zk, 0.0)
            else:
                bound = mu[k] * zc[0]
                zk = jnp.clip(zk, -bound, bound)
            w = w + g[:, k] * (zk - zc[k])
            zc = zc.at[k].set(zk)
        if disc:
            s1, s2 = disc_step(mu[1], mu[2], g[1, 1], g[2, 2])
            t1, t2 = project_disc(zc[1] - s1 * w[1], zc[2] - s2 * w[2], mu[1], mu[2], zc[0])
            zc = zc.at[1].set(t1).at[2].set(t2)
        dz = zc - z_old
        change = jnp.maximum(change, jnp.max(jnp.abs(jnp.diagonal(g) * dz)))
        v = v.at[ia].set(va + dz @ wj[0]).at[ib].set(vb + dz @ wj[1])
        return jax.lax.dynamic_update_index_in_dim(zo, zc, i, 0), v, change

    zo, v, change = jax.lax.fori_loop(0, data["n_valid"], contact, (zo, v, jnp.zeros((), zo.dtype)))
    return zo, v.at[-1].set(0.0), change, it + 1


def _unfinished(settings: LCPSettings, carry, tol):
    return (carry[3] < settings.max_iter) & (carry[2] > tol)


def _sweeps_single(settings: LCPSettings, z, p: Sweeping, tol):
    """Sweeps of one problem ``p`` from z to ``tol`` or ``settings.max_iter``: (z, last change, sweeps)."""
    data, carry = _setup(z, p)
    sweep = functools.partial(_sweep, cone=settings.cone)
    if settings.fixed_iterations:
        carry = jax.lax.fori_loop(0, settings.max_iter, lambda _, c: sweep(data, c), carry)
    else:
        carry = jax.lax.while_loop(lambda c: _unfinished(settings, c, tol), lambda c: sweep(data, c), carry)
    zo, _, change, it = carry
    return jnp.zeros_like(z).at[data["order"]].set(zo), change, it


def _tail(settings: LCPSettings, sweep, data, carry, tol):
    """``batching.tail_sweeps`` of a batch of worlds (leading axis B), to each one's ``tol`` or the cap."""
    return tail_sweeps(sweep, lambda c, t: _unfinished(settings, c, t), data, carry, tol, MIN_TAIL_BODIES)


def _sweeps_batched(settings: LCPSettings, z, p: Sweeping, tol):
    """``_sweeps_single`` of a batch (leading axis B on every array), through the one batching rule
    (``batching.tail_sweeps``)."""
    data, carry = jax.vmap(_setup)(z, p)
    zo, _, change, it = _tail(settings, jax.vmap(functools.partial(_sweep, cone=settings.cone)), data, carry, tol)
    z = jax.vmap(lambda z0, o, x: jnp.zeros_like(z0).at[o].set(x))(z, data["order"], zo)
    return z, change, it


def _sweeps(settings: LCPSettings):
    """The forward solve (z0, ``Sweeping``, tol) -> (z, last change, sweeps), with its own batching
    rule (a uniform trip count with ``fixed_iterations``: plain vmap)."""
    single = functools.partial(_sweeps_single, settings)
    if settings.fixed_iterations:
        return single
    return with_batching_rule(single, functools.partial(_sweeps_batched, settings))


def _native_sweeps(settings: LCPSettings):
    """``_sweeps``' signature in the fused CPU kernel (``native/pgs.cc``): the same sweeps, one C++
    loop per world, a batch of worlds (any leading dimensions: ``vmap`` broadcasts into them) split
    over threads."""
    def sweeps(z, p: Sweeping, tol):
        return bindings.pgs_sweeps(z, p.rows, p.index, p.WJ, p.extra, _velocities(p.WJ, p.index, p.v_free, z), p.bias,
                                   p.coupling, p.valid, tol, max_iter=settings.max_iter,
                                   fixed=settings.fixed_iterations, cone=settings.cone)

    return sweeps


ADJOINT_DENSE_ROWS = 1024
"""The most active rows whose adjoint system the kernel factorises densely (``_native_adjoint``);
a larger one goes to GMRES on T's products."""


def _projection_jacobians(y, zn, coupling, valid, cone: str):
    """(∂Π/∂y (C, d, d), ∂Π/∂z_n (C, d)): the derivative of ``_project`` of each contact at its rows
    before projection ``y`` and normal impulse ``zn``, formed by JAX (so its conventions at ties are
    T's); zero for a padded contact. What the adjoint kernel passes through (``adjoint_kernel``)."""
    one = lambda y, zn, c: _project(y[None], zn[None], c[None], cone)[0]
    P, N = jax.vmap(jax.jacfwd(one, argnums=(0, 1)))(y, zn, coupling)
    return jnp.where(valid[:, None, None], P, 0.0), jnp.where(valid[:, None], N, 0.0)


def adjoint_kernel(sol, args, g, reg: float, cone: str = "box"):
    """The fused adjoint kernel (``jaxcontact.native``'s ``adjoint.cc``) at the solution ``sol``
    (C·d,) of the map ``_fixed_point_map(reg, cone)`` with arguments ``args``: (λ (C·d,) solving
    (I − ∂T/∂z)ᵀ λ = g on its own, the relative residual of its dense solve (∞ where it did not
    solve: more than ``ADJOINT_DENSE_ROWS`` rows or a singular system), the number of rows of the
    contacts whose projection passes a derivative)."""
    rows, bodies_f, Minv, v_free, bias, soft, coupling, valid_f = (jax.lax.stop_gradient(a) for a in args)
    C, d = bias.shape
    N = Minv.shape[0]
    z, gz = jax.lax.stop_gradient(sol).reshape(C, d), g.reshape(C, d)
    index = _index(bodies_f, N)
    valid = valid_f > 0
    WJ, Dr, extra = _prepare(rows, index, Minv, soft, reg, valid)
    w = _rows_times(rows, _velocities(WJ, index, v_free, z)[index]) + bias + extra * z
    y = _pre_projection(z, w, Dr, coupling, cone)
    P, dzn = _projection_jacobians(y, z[:, 0], coupling, valid, cone)
    lam, residual, size = bindings.adjoint_solve(rows, index, WJ, extra, _steps(Dr, coupling, cone), P, dzn, gz, N,
                                                 max_rows=ADJOINT_DENSE_ROWS)
    return lam.reshape(-1), residual, size


def _native_adjoint(settings: LCPSettings, T):
    """``implicit_fixed_point``'s ``adjoint`` on a CPU: λ of (I − ∂T/∂z)ᵀ λ = g at the solution by
    the fused kernel (``adjoint_kernel``: the system on the rows the projection passes through,
    factorised densely in double precision); restarted GMRES on T's products where it did not
    solve it (more than ``ADJOINT_DENSE_ROWS`` rows, a singular system)."""
    reg = settings.regularization

    def adjoint(sol, args, g):
        lam, residual, _ = adjoint_kernel(sol, args, g, reg, settings.cone)
        matvec = fixed_point_adjoint_matvec(T, sol, args)
        # GMRES only where the kernel did not solve: elsewhere its right-hand side is the product of
        # the kernel's λ (GMRES then stops before its first step, also under vmap, where a cond would
        # run both branches). In float32 Krylov could not improve the kernel's λ anyway: the system
        # can be ill-conditioned (two sliding rows at a contact) and GMRES stalls at round-off.
        solved = jnp.isfinite(residual)
        rhs = jnp.where(solved, matvec(lam), g)
        return krylov_guarded_solve(matvec, rhs, x0=jnp.where(solved, lam, 0.0))

    return adjoint


def _choose_adjoint(settings: LCPSettings, T, plan: Plan):
    """The reverse pass's adjoint solve that ``plan.adjoint`` names (``problem.choose``): the fused
    kernel's (``_native_adjoint``) on a CPU, GMRES on T's products elsewhere; None for "reference"
    (``implicit_fixed_point``'s GMRES on T's products)."""
    if plan.adjoint != "native" or jax.default_backend() != "cpu":
        return None
    on_cpu = _native_adjoint(settings, T)

    def adjoint(sol, args, g):
        def krylov(sol, args, g):
            return krylov_guarded_solve(fixed_point_adjoint_matvec(T, sol, args), g)

        return jax.lax.platform_dependent(sol, args, g, cpu=on_cpu, default=krylov)

    return adjoint


def _choose_sweeps(settings: LCPSettings, group, plan: Plan):
    """The sweeps ``plan`` names (``problem.choose``): ``plan.sweep`` on a CPU and
    ``plan.sweep_elsewhere`` off it ("native": the fused kernel; "colour": by colour, with the
    manifold size ``group``; "sequential": pure JAX), one ``platform_dependent`` where they differ."""
    def make(name):
        if name == "native":
            return _native_sweeps(settings)
        if name == "colour":
            return _coloured_sweeps(settings, group)
        return _sweeps(settings)

    if plan.sweep == plan.sweep_elsewhere:
        return make(plan.sweep)
    on_cpu, elsewhere = make(plan.sweep), make(plan.sweep_elsewhere)
    return lambda *a: jax.lax.platform_dependent(*a, cpu=on_cpu, default=elsewhere)


# ------------------------------------------------------------------ graph-coloured sweeps (vectorised)
#
# The contacts come in *manifolds* of ``group`` consecutive contacts on the same two bodies (a body's
# ground candidates, a pair slot's points). Manifolds that share no body (the ground excepted: it
# neither moves nor is moved) can be visited at once: each step the valid manifolds are coloured
# greedily (no two of one colour share a body; without gradient), and a sweep is one vectorised
# update per colour over all of that colour's manifolds (and all worlds), each visiting its own
# contacts in order exactly as ``_sweep`` does. A sweep is then a Gauss–Seidel sweep in the order
# colour by colour: the iterates are those of projected Gauss–Seidel in that order, the fixed point
# (and the implicit derivative) the same. Box2D v3 colours its constraint graph the same way.


def _colouring(mbodies, mvalid, N: int):
    """Greedy colouring of M manifolds (per world): ``mbodies`` (M, 2) body indices (the ground N),
    ``mvalid`` (M,). Returns (colour (M,) in [0, M) for a valid manifold, M otherwise; rank (M,) its
    position among its colour's manifolds, < N)."""
    M = mbodies.shape[0]

    def visit(m, carry):
        taken, count, colour, rank = carry
        a, b = mbodies[m, 0], mbodies[m, 1]
        used = taken[a] | taken[b]
        c = jnp.where(mvalid[m], jnp.argmin(used), M).astype(jnp.int32)
        taken = taken.at[a, c].set(True).at[b, c].set(True).at[N].set(False)
        return taken, count.at[c].add(1), colour.at[m].set(c), rank.at[m].set(count[c])

    taken = jnp.zeros((N + 1, M + 1), bool)
    init = (taken, jnp.zeros(M + 1, jnp.int32), jnp.zeros(M, jnp.int32), jnp.zeros(M, jnp.int32))
    _, _, colour, rank = jax.lax.fori_loop(0, M, visit, init)
    return colour, rank


def _coloured_setup(group: int, z, p: Sweeping):
    """One world's problem laid out by manifold (a dummy manifold M appended: no rows, diagonal 1)
    and its colour table ``tab`` (M, W = N): the manifolds of colour c in row c (the dummy M where
    none)."""
    rows, index, WJ, extra, v_free, bias, coupling, valid = p
    C, d = z.shape
    N = v_free.shape[0]
    k = group
    M = C // k
    G = _contact_blocks(rows, WJ, extra)
    pad = lambda x, fill=0: jnp.concatenate([x.reshape((M, k) + x.shape[1:]),
                                             jnp.full((1, k) + x.shape[1:], fill, x.dtype)])
    mb = index.reshape(M, k, 2)[:, 0]
    mvalid = valid.reshape(M, k).any(axis=1)
    colour, rank = _colouring(mb, mvalid, N)
    tab = jnp.full((M + 1, N), M, jnp.int32).at[colour, rank].set(jnp.arange(M, dtype=jnp.int32), mode="drop")[:M]
    data = dict(rows=pad(rows), WJ=pad(WJ), G=pad(G, 0).at[M].set(jnp.eye(d, dtype=z.dtype)), bias=pad(bias),
                mu=pad(coupling), extra=pad(extra), bodies=jnp.concatenate([mb, jnp.full((1, 2), N, mb.dtype)]),
                tab=tab, colours=jnp.max(jnp.where(mvalid, colour + 1, 0), initial=0))
    carry = (pad(z), _velocities(WJ, index, v_free, z), jnp.asarray(jnp.inf, z.dtype), jnp.asarray(0, jnp.int32))
    return data, carry


def _coloured_sweep(data, carry, colours, cone: str = "box"):
    """One sweep of a batch of worlds (leading axis B on every array): for each colour (``colours``,
    unbatched: the most any world needs), one vectorised visit of every manifold of that colour,
    each contact of a manifold in order (rows normal, tangents, as ``_sweep``)."""
    zm, v, _, it = carry
    B, W = data["tab"].shape[0], data["tab"].shape[2]
    k, d = zm.shape[2], zm.shape[3]
    N = v.shape[1] - 1
    bi = jnp.arange(B)[:, None]
    disc = _disc(cone, d)

    def colour(c, state):
        zm, v, change = state
        ids = jax.lax.dynamic_index_in_dim(data["tab"], c, axis=1, keepdims=False)  # (B, W)
        r, wj, g, b, mu, ex = (data[key][bi, ids] for key in ("rows", "WJ", "G", "bias", "mu", "extra"))
        ab = data["bodies"][bi, ids]
        ia, ib = ab[..., 0], ab[..., 1]
        va, vb = v[bi, ia], v[bi, ib]
        zc_all = zm[bi, ids]
        new = []
        for j in range(k):
            zc = zc_all[:, :, j]
            gj = g[:, :, j]
            w = (jnp.sum(r[:, :, j, 0] * va[:, :, None, :], -1) + jnp.sum(r[:, :, j, 1] * vb[:, :, None, :], -1)
                 + b[:, :, j] + ex[:, :, j] * zc)
            z_old = zc
            for q in range(1 if disc else d):
                zq = zc[..., q] - w[..., q] / gj[..., q, q]
                if q == 0:
                    zq = jnp.maximum(zq, 0.0)
                else:
                    bound = mu[:, :, j, q] * zc[..., 0]
                    zq = jnp.clip(zq, -bound, bound)
                w = w + gj[..., :, q] * (zq - zc[..., q])[..., None]
                zc = zc.at[..., q].set(zq)
            if disc:
                m1, m2 = mu[:, :, j, 1], mu[:, :, j, 2]
                s1, s2 = disc_step(m1, m2, gj[..., 1, 1], gj[..., 2, 2])
                t1, t2 = project_disc(zc[..., 1] - s1 * w[..., 1], zc[..., 2] - s2 * w[..., 2], m1, m2, zc[..., 0])
                zc = jnp.stack([zc[..., 0], t1, t2], axis=-1)
            dz = zc - z_old
            change = jnp.maximum(change, jnp.max(jnp.abs(jnp.diagonal(gj, axis1=-2, axis2=-1) * dz), axis=(1, 2)))
            va = va + jnp.sum(dz[..., :, None] * wj[:, :, j, 0], axis=-2)
            vb = vb + jnp.sum(dz[..., :, None] * wj[:, :, j, 1], axis=-2)
            new.append(zc)
        v = v.at[bi, ia].set(va).at[bi, ib].set(vb).at[:, N].set(0.0)
        zm = zm.at[bi, ids].set(jnp.stack(new, axis=2))
        return zm, v, change

    zm, v, change = jax.lax.fori_loop(0, colours, colour, (zm, v, jnp.zeros((B,), zm.dtype)))
    return zm, v, change, it + 1


def _coloured_sweeps_batched(settings: LCPSettings, group: int, z, p: Sweeping, tol):
    """The sweeps of a batch of problems (leading axis B on every array) to each one's ``tol`` or
    ``settings.max_iter``: a world that has converged is frozen while the others go on."""
    data, carry = jax.vmap(functools.partial(_coloured_setup, group))(z, p)

    sweep = lambda data, carry: _coloured_sweep(data, carry, jnp.max(data["colours"]), settings.cone)
    if settings.fixed_iterations:
        carry = jax.lax.fori_loop(0, settings.max_iter, lambda _, c: sweep(data, c), carry)
    else:
        carry = _tail(settings, sweep, data, carry, tol)
    zm, _, change, it = carry
    B, C, d = z.shape
    return zm[:, :-1].reshape(B, C, d), change, it


def _coloured_sweeps(settings: LCPSettings, group: int):
    """``_sweeps``' signature, by colour: one world is a batch of one; a vmapped call sweeps the
    whole batch at once (its own batching rule: the colour loop's count is the batch's largest)."""
    batched = functools.partial(_coloured_sweeps_batched, settings, group)

    def single(*args):
        z, change, it = batched(*jax.tree_util.tree_map(lambda x: x[None], args))
        return z[0], change[0], it[0]

    return with_batching_rule(single, batched)


@struct.dataclass
class VelocityLCP:
    """The LCP of contacts between free bodies as ``solve_velocity`` takes it (``solve_body_lcp``'s
    arrays, one pytree): rows (C, 2, d, 6), bodies (C, 2), Minv (N, 6, 6), v_free (N, 6), bias (C, d),
    coupling (C, d), valid (C,), soft (C, d) or None, z0 (C, d) or None."""

    rows: jnp.ndarray
    bodies: jnp.ndarray
    Minv: jnp.ndarray
    v_free: jnp.ndarray
    bias: jnp.ndarray
    coupling: jnp.ndarray
    valid: jnp.ndarray
    soft: Any = None
    z0: Any = None


def solve_body_lcp(rows, bodies, Minv, v_free, bias, coupling, valid, soft=None,
                   settings: LCPSettings = LCPSettings(), z0=None, group: int | None = None,
                   method: Plan | None = None) -> LCPSolution:
    """The box-friction LCP of contacts between free bodies, without forming A.

    rows: (C, 2, d, 6) each contact's rows [normal, tangents] on its two bodies (signed: their sum
    is the relative velocity); bodies: (C, 2) the two bodies' indices (static or traced), −1 the
    ground; Minv: (N, 6, 6) every body's inverse mass matrix; v_free: (N, 6) the free velocities;
    bias: (C, d) added to J v (−target on the normal row); coupling: (C, d) friction coefficient of
    each tangent row (the normal's entry is ignored); valid: (C,) contacts in the problem (the
    others keep z = 0 and are never visited); soft: (C, d) relative diagonal added to A's rows
    (constraint-force mixing; default none), before ``settings.regularization``.
    z0: (C, d) start of the sweeps (a warm start), not differentiated. method: a ``problem.Plan`` of
    the velocity form (None: the table's, ``problem.table``, from ``settings`` and ``group``).
    Returns ``LCPSolution`` with z (C, d); differentiable in rows, Minv, v_free, bias, soft and
    coupling (implicitly, at the solution). The arrays one by one, as a user holds them; a world's
    problem goes through ``solve_contact`` (``solve_velocity``)."""
    how = Method(settings, group=group, form="velocity")
    plan = table("bodies", rows.shape[0] * rows.shape[2], how) if method is None else method
    lcp = VelocityLCP(rows=rows, bodies=bodies, Minv=Minv, v_free=v_free, bias=bias, coupling=coupling, valid=valid,
                      soft=soft, z0=z0)
    return solve_velocity(lcp, how, plan)


def solve_velocity(lcp: VelocityLCP, method: Method, plan: Plan) -> LCPSolution:
    """``solve_body_lcp`` of a ``VelocityLCP`` under ``method`` (its settings and manifold size) by
    the sweeps and adjoint of ``plan`` (``problem.choose``)."""
    settings, group = method.settings, method.group
    if settings.forward_newton:
        raise ValueError("LCPSettings.forward_newton is a dense solve's setting (solve_lcp, one body); the velocity "
                         "form (worlds) does not take it yet: set it to 0 (issue 61, docs/worlds.md 'Friction cone')")
    if settings.forward_active_set:
        raise ValueError("LCPSettings.forward_active_set is a dense solve's setting (solve_lcp, one body); the velocity "
                         "form (worlds) never forms A and does not take it: leave it None (issue 61, docs/worlds.md "
                         "'Friction cone')")
    rows, valid, Minv, v_free = lcp.rows, lcp.valid, lcp.Minv, lcp.v_free
    C, _, d, _ = rows.shape
    N = Minv.shape[0]
    dtype = v_free.dtype
    soft = jnp.zeros((C, d), dtype) if lcp.soft is None else jnp.broadcast_to(lcp.soft, (C, d)).astype(dtype)
    valid_f = valid.astype(dtype)
    bodies_f = jnp.asarray(lcp.bodies).astype(dtype)
    rows = rows * valid_f[:, None, None, None]  # padding: no rows (their z is pinned at 0)
    bias = jnp.where(valid[:, None], lcp.bias, 0.0)
    z0 = jnp.zeros((C, d), dtype) if lcp.z0 is None else jnp.where(valid[:, None], lcp.z0, 0.0).astype(dtype)
    coupling = lcp.coupling
    reg = settings.regularization
    T = _fixed_point_map(reg, settings.cone)

    def run(settings, sweeps, z_init, *args):
        """The sweeps from ``z_init``: (z, (residual, sweeps)); ``args`` T's (rows, bodies_f, Minv,
        v_free, bias, soft, coupling, valid_f), as ``implicit_fixed_point`` passes them."""
        rows, bodies_f, Minv, v_free, bias, soft, coupling, valid_f = args
        rows, Minv, v_free, bias, soft, coupling = (jax.lax.stop_gradient(x) for x in (rows, Minv, v_free, bias, soft, coupling))
        index = _index(bodies_f, N)
        WJ, Dr, extra = _prepare(rows, index, Minv, soft, reg, valid_f > 0)
        # the stopping tolerance of lcp._tolerance: never below round-off at the scale of |J v_free + bias|
        b = _rows_times(rows, with_ground(v_free)[index]) + bias
        floor = 64 * jnp.finfo(dtype).eps * (1.0 + jnp.max(jnp.abs(b)))
        tol = jnp.maximum(jnp.asarray(settings.tol, dtype), floor)
        p = Sweeping(rows, index, WJ, extra, v_free, bias, coupling, valid_f > 0)
        z, _, it = sweeps(jax.lax.stop_gradient(z_init).reshape(C, d), p, tol)
        step = _jacobi(z, p, Dr, settings.cone)  # T(z), set-up reused
        res = jnp.max(jnp.abs(Dr * (step - z)), initial=0.0)
        return z.reshape(-1), (res, it)

    fine = settings.polish_settings()
    fine = None if fine is None else functools.partial(run, fine, _choose_sweeps(fine, group, plan))
    newton = newton_polish(T, settings.gradient_newton, matrix_free=True) if settings.gradient_newton else None
    polish = None
    if fine is not None or newton is not None:
        def polish(z, *args):
            z = z if newton is None else newton(z, *args)
            z = z if fine is None else fine(jnp.zeros_like(z) if settings.gradient_restart else z, *args)[0]
            return z if newton is None or fine is None else newton(z, *args)

    @implicit_fixed_point(T, has_aux=True, matrix_free=True, adjoint=_choose_adjoint(settings, T, plan),
                          polish=polish)
    def _solve(z_init, *args):
        return run(settings, _choose_sweeps(settings, group, plan), z_init, *args)

    z, (res, it) = _solve(z0.reshape(-1), rows, bodies_f, Minv, v_free, bias, soft, coupling, valid_f)
    return LCPSolution(z=z.reshape(C, d), residual=res, iterations=it)


__all__ = ["VelocityLCP", "ground_index", "solve_body_lcp", "solve_velocity", "with_ground"]
