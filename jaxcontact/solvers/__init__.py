"""Every numerical solver of jaxcontact, in one package — the only place that imports jaxopt.

| module | solver | used by |
| --- | --- | --- |
| ``entry`` | ``solve_contact(problem, method)``: the one entry of the contact problem; the ``Plan`` from ``problem.choose``'s table | every law, through its problem |
| ``problem`` | ``ContactProblem``, ``BodyProblem`` (with the law's target, mu, soft, warm), ``ContactSolution``; ``choose``/``table`` (the table: ``Plan``; the one ``native.available()``); ``SMALL_ROWS``, ``DENSE_WORLD_ROWS`` | ``entry``, ``jaxcontact.contact`` |
| ``batching`` | ``tail_sweeps``, ``with_batching_rule``: the one batching rule (a batch does not wait for its slowest problem) | ``lcp``, ``body_lcp`` |
| ``lcp`` | ``Method`` (how a law solves), ``solve_dense`` (a ``DenseLCP``; ``solve_lcp`` its arrays one by one): box-friction LCP, projected Gauss–Seidel | ``entry`` (dense form) |
| ``body_lcp`` | ``solve_velocity`` (a ``VelocityLCP``; ``solve_body_lcp`` its arrays one by one): the same LCP between free bodies, PGS in velocity form (A never formed); its sweeps in the fused CPU kernel (``jaxcontact.native``'s ``pgs.cc``, C++ behind ``jax.ffi``), graph-coloured (vectorised) or sequential (``LCPSettings.sweeps``) | ``entry`` (velocity form) |
| ``relaxed_lcp`` | ``solve_relaxed_lcp``: relaxed-complementarity LCP, Newton with κ continuation | ``entry`` (``RelaxedCoulomb``) |
| ``nonneg`` | ``minimize_nonneg`` / ``minimize_nonneg_qp``: FISTA (or jaxopt ``ProjectedGradient``) over x ≥ 0 | ContactNets' inner program |
| ``qp`` | ``solve_qp``: small dense QPs, jaxopt ``BoxOSQP`` | ContactNets' reference inner QP |
| ``root`` | ``powell_hybrid`` / ``find_root``: Powell's hybrid root finder | dacm Algorithm 2 (chains) |
| ``relaxed`` | ``relaxed_gradient``: the hard solution's value with the relaxed problem's implicit derivative (gradient mode ``"relaxed"``) | ``entry`` (``CoulombLCP(gradient="relaxed")``) |
| ``implicit`` | ``implicit_root`` / ``implicit_fixed_point``: jaxopt ``custom_root`` / ``custom_fixed_point``, the adjoint solved densely or matrix-free (GMRES) | all of the above (``body_lcp``: matrix-free) |

Implicit differentiation is declared once, in ``implicit``; the solvers call it and stay unaware
of how their derivative is formed (the relaxed solver's is one Newton step at the solution,
which also gives forward mode). Swapping jaxopt for another library touches this package only.
"""

from .batching import tail_sweeps, with_batching_rule
from .body_lcp import VelocityLCP, ground_index, solve_body_lcp, solve_velocity, with_ground
from .entry import degenerate, solve_contact
from .implicit import dense_guarded_solve, implicit_fixed_point, implicit_root, krylov_guarded_solve
from .lcp import (CONES, DenseLCP, LCPSettings, LCPSolution, Method, RowStructure, disc_step, project_disc, regularized,
                  solve_dense, solve_lcp)
from .problem import (DENSE_WORLD_ROWS, SMALL_ROWS, BodyProblem, ContactProblem, ContactSolution, Plan, choose,
                      normal_diagonal, table)
from .nonneg import NonnegSettings, NonnegSolution, minimize_nonneg, minimize_nonneg_qp
from .qp import QPSettings, QPSolution, solve_qp
from .root import HybridSettings, RootResult, find_root, powell_hybrid
from .relaxed import GRADIENT_MODES, RelaxedGradient, check_gradient_mode, relaxed_gradient, relaxed_solution
from .relaxed_lcp import relaxed_residual, solve_relaxed_lcp

__all__ = [
    "DENSE_WORLD_ROWS",
    "SMALL_ROWS",
    "CONES",
    "disc_step",
    "project_disc",
    "BodyProblem",
    "ContactProblem",
    "ContactSolution",
    "DenseLCP",
    "Method",
    "Plan",
    "VelocityLCP",
    "choose",
    "table",
    "normal_diagonal",
    "degenerate",
    "solve_contact",
    "tail_sweeps",
    "with_batching_rule",
    "GRADIENT_MODES",
    "RelaxedGradient",
    "check_gradient_mode",
    "regularized",
    "relaxed_gradient",
    "relaxed_residual",
    "relaxed_solution",
    "HybridSettings",
    "LCPSettings",
    "LCPSolution",
    "NonnegSettings",
    "NonnegSolution",
    "QPSettings",
    "QPSolution",
    "RootResult",
    "RowStructure",
    "dense_guarded_solve",
    "find_root",
    "ground_index",
    "implicit_fixed_point",
    "implicit_root",
    "krylov_guarded_solve",
    "minimize_nonneg",
    "minimize_nonneg_qp",
    "powell_hybrid",
    "solve_body_lcp",
    "solve_dense",
    "solve_velocity",
    "with_ground",
    "solve_lcp",
    "solve_qp",
    "solve_relaxed_lcp",
]
