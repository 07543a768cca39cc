"""Small dense convex QPs by jaxopt ``BoxOSQP`` (the reference form of ContactNets' inner problem)."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
from flax import struct

@dataclasses.dataclass(frozen=True)
class QPSettings:
    """Settings of ``solve_qp`` (jaxopt ``BoxOSQP``, ADMM).

    tol: primal/dual residual tolerance. max_iter: ADMM iteration cap. rho_start: initial ADMM
    step size (adapted every ``stepsize_updates_frequency`` iterations). linear_solver: how
    ADMM's inner linear systems are solved ("lu" dense, "cg", "cg+jacobi").
    """

    tol: float = 1e-7
    max_iter: int = 2000
    rho_start: float = 0.1
    stepsize_updates_frequency: int = 10
    linear_solver: str = "cg+jacobi"

    def __post_init__(self):
        if not self.tol > 0:
            raise ValueError(f"QPSettings.tol must be positive, got {self.tol}")
        if self.max_iter < 1:
            raise ValueError(f"QPSettings.max_iter must be >= 1, got {self.max_iter}")


@struct.dataclass
class QPSolution:
    x: jnp.ndarray
    dual: jnp.ndarray
    iterations: jnp.ndarray
    error: jnp.ndarray


def solve_qp(Q, c, G, h, settings: QPSettings = QPSettings()) -> QPSolution:
    """Solve min ½ xᵀQx + cᵀx subject to G x <= h (Q positive semi-definite, dense, small).

    jaxopt ``BoxOSQP`` (OSQP's ADMM, dense LU for its linear systems) is the forward solver;
    derivatives of the solution with respect to (Q, c, G, h) are *implicit*: jaxopt
    differentiates the solver's optimality conditions at the returned solution, so reverse
    mode never enters the ADMM loop. Pure and jit/vmap-able (a batch of QPs is one ``vmap``).
    Returns ``QPSolution(x, dual, iterations, error)`` with ``dual`` the multipliers of G x <= h.
    """
    from jaxopt import BoxOSQP

    solver = BoxOSQP(
        eq_qp_solve=settings.linear_solver,
        tol=settings.tol,
        maxiter=settings.max_iter,
        rho_start=settings.rho_start,
        stepsize_updates_frequency=settings.stepsize_updates_frequency,
        check_primal_dual_infeasability=False,
        jit=True,
    )
    lower = jnp.full_like(h, -jnp.inf)
    res = solver.run(params_obj=(Q, c), params_eq=G, params_ineq=(lower, h))
    return QPSolution(
        x=res.params.primal[0],
        dual=res.params.dual_eq,
        iterations=res.state.iter_num,
        error=res.state.error,
    )

