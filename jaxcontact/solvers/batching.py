"""The one batching rule of the iterative contact solves: a batch that does not wait for its slowest problem.

Under a plain ``vmap`` a ``while_loop`` runs every problem of the batch until the slowest has
converged (on the box-throw workload a body-step needs 7.2 sweeps on average, but its chunk of
256 bodies waited 16.7: ``benchmarks/results/breakdown.md``; on a 16-box heap the slowest of 16
worlds needs 4.1× the mean sweeps). ``tail_sweeps`` sweeps the batch whole while more than
1/``TAIL`` of it is unconverged, each problem frozen once converged (so each gets exactly its own
sweeps: the same result as alone), then gathers the unconverged tail into sub-batches of that size
that sweep on their own. ``with_batching_rule`` gives a single-problem solve this rule as its
``vmap``. Used by the dense PGS (``lcp``, batch-last layout) and by the velocity form's sequential
and coloured sweeps (``body_lcp``, batch-first).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

TAIL = 8
"""The batch is swept whole while more than 1/TAIL of it is unconverged."""
MIN_TAIL_DENSE = 8
"""The smallest sub-batch of the dense PGS's tail (its problems are small: wide sub-batches are cheap)."""
MIN_TAIL_BODIES = 4
"""The smallest sub-batch of the velocity form's tail (a world's sweep is long: narrow sub-batches)."""


def tail_sweeps(sweep, unfinished, data, carry, tol, min_tail: int, axis: int = 0):
    """Sweep a batch to convergence, each problem getting exactly its own sweeps.

    sweep(data, carry) -> carry: one sweep of the whole batch; unfinished(carry, tol) -> (B,)
    bool: the problems still to sweep (from the carry the sweep returns); data, carry: pytrees
    whose leaves have the batch on ``axis`` (0: leading; −1: trailing); tol: (B,). A problem's carry
    is frozen once it is finished. Returns the final carry."""
    B = tol.shape[0]

    def mask(active, x):
        shape = [1] * x.ndim
        shape[axis] = -1
        return active.reshape(shape)

    def masked(data, carry, active, tol):
        new = sweep(data, carry)
        carry = jax.tree_util.tree_map(lambda n, o: jnp.where(mask(active, n), n, o), new, carry)
        return carry, active & unfinished(carry, tol)

    active = unfinished(carry, tol)
    K = max(min_tail, B // TAIL)
    state = (carry, active)
    if B <= K:
        state = jax.lax.while_loop(lambda s: jnp.any(s[1]), lambda s: masked(data, *s, tol), state)
    else:
        state = jax.lax.while_loop(lambda s: jnp.sum(s[1]) > K, lambda s: masked(data, *s, tol), state)

        def take(t, idx):
            return jax.tree_util.tree_map(lambda x: jnp.take(x, idx, axis=axis), t)

        def put(t, idx, sub):
            def one(x, y):
                moved = jnp.moveaxis(x, axis, 0).at[idx].set(jnp.moveaxis(y, axis, 0))
                return jnp.moveaxis(moved, 0, axis)
            return jax.tree_util.tree_map(one, t, sub)

        def tail(state):  # the (up to) K unconverged problems with the lowest indices, to convergence
            carry, active = state
            _, idx = jax.lax.top_k(active.astype(jnp.int32), K)
            sub_data, sub_tol = take(data, idx), tol[idx]
            sub = jax.lax.while_loop(lambda s: jnp.any(s[1]), lambda s: masked(sub_data, *s, sub_tol),
                                     (take(carry, idx), active[idx]))
            return put(carry, idx, sub[0]), active.at[idx].set(sub[1])

        state = jax.lax.while_loop(lambda s: jnp.any(s[1]), tail, state)
    return state[0]


def with_batching_rule(single, batched):
    """``single(*args)`` whose ``vmap`` calls ``batched(*args)`` with every array of the arguments (pytrees)
    batched on its leading axis (unbatched ones broadcast): a solve's own batching rule (``tail_sweeps``)."""
    @jax.custom_batching.custom_vmap
    def solve(*args):
        return single(*args)

    @solve.def_vmap
    def _(axis_size, in_batched, *args):
        args = jax.tree_util.tree_map(lambda x, bat: x if bat else jnp.broadcast_to(x, (axis_size,) + x.shape),
                                      list(args), list(in_batched))
        if axis_size == 0:  # no problems (a world of no bodies): single's outputs, none of them
            one = jax.eval_shape(single, *jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype),
                                                                 args))
            out = jax.tree_util.tree_map(lambda s: jnp.zeros((0,) + s.shape, s.dtype), one)
            return out, jax.tree_util.tree_map(lambda _: True, out)
        out = batched(*args)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return solve


__all__ = ["MIN_TAIL_BODIES", "MIN_TAIL_DENSE", "TAIL", "tail_sweeps", "with_batching_rule"]
