"""The contact problem as the solvers take it, its solution, and the one table of solve methods.

``ContactProblem`` (A = J W Jᵀ formed: one body's rows, learned Jacobians, a densified world) and
``BodyProblem`` (a world's rows kept on each contact's two bodies: A never formed) are built by
``jaxcontact.contact`` and solved by ``entry.solve_contact``, which asks ``choose`` how: the form
(dense, velocity, relaxed), the sweep and the batching, from the problem's static sizes and the
law's settings. Each threshold is a constant here, in one place.

| problem | condition | form | sweep (CPU / elsewhere) | batching |
|---|---|---|---|---|
| a ``ContactProblem`` | rows ≤ ``SMALL_ROWS`` | dense | unrolled | tail (own rule) |
| a ``ContactProblem`` | rows > ``SMALL_ROWS`` | dense | looped (``fori_loop``) | vmap |
| a ``BodyProblem`` | rows ≤ ``DENSE_WORLD_ROWS``, a relaxed gradient, or a jointed world's full mobility | densified (``dense``), then as above | | |
| a ``BodyProblem`` | otherwise | velocity | ``LCPSettings.sweeps``: auto → native / colour; native → native / colour; colour; sequential (colour → sequential without a manifold size) | tail (own rule) |
| any, with a relaxed law (``RelaxedCoulomb``) | | relaxed (Newton) | | vmap |

``LCPSettings.fixed_iterations`` (a uniform trip count) batches by plain vmap; "native" falls back
to "sequential" where the fused kernel cannot be built (``jaxcontact.native``); off a CPU,
``"auto"`` never builds it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from .. import native

SMALL_ROWS = 64
"""A problem of at most this many rows (C·d) is small: a world's is formed densely (A built), and
every dense problem this small is swept unrolled (each row one vector operation over a batch,
with its own batching rule); larger dense problems sweep in a ``fori_loop`` under plain vmap and
larger worlds are solved in velocity form (A never formed, each sweep over the valid contacts)."""

DENSE_WORLD_ROWS = 32
"""A world of free bodies (a ``BodyProblem`` without a jointed mobility) of at most this many rows is
formed densely; above it, in velocity form. One box on the ground (8 contacts, 24 rows) stays dense,
as the single body's problem; two boxes on the ground (60 rows) go to the velocity form, which
compiles 3.5–7× faster and runs 2.4–4.8× faster there than the unrolled dense sweep over 60 rows,
with the same finals to 1.2e-13 m (``python -m benchmarks.small_rows``, results/small_rows.md). A
jointed world's full mobility stays dense, unrolled up to ``SMALL_ROWS`` (the 3-link chain runs 2× slower
looped, a 12-gon prism's 36 and 48 rows 1.3–1.4× slower)."""

SWEEP_METHODS = ("auto", "native", "colour", "sequential")
"""``LCPSettings.sweeps``: how the velocity form runs its sweeps."""


@struct.dataclass
class ContactProblem:
    """The velocity-level contact problem of C contacts with d = 1 + num_tangents rows each.

    J: (C·d, nv) stacked rows (normal, tangents per contact). A: (C·d, C·d) Delassus matrix J W Jᵀ.
    free_velocity: (C, d) J v_free per contact. phi: (C,) signed distances (m). valid: (C,) real
    contacts (padding never pushes). target: (C,) −φ/h, the no-penetration normal velocity (m/s),
    or the law's (raised for restitution). The law's part of the problem (``PROBLEM_FIELDS``): mu,
    the friction coefficient per tangent row (a scalar, (nt,) per direction, or (C, nt)); soft, the
    softness (constraint-force mixing: (C,) relative diagonal per contact or (C, d) per row; a
    world's ``Scene.softness``, MuJoCo-soft rows' R / A_ii); warm, a start of the sweeps (C, d).
    """

    J: jnp.ndarray
    A: jnp.ndarray
    free_velocity: jnp.ndarray
    phi: jnp.ndarray
    valid: jnp.ndarray
    target: jnp.ndarray
    num_contacts: int = struct.field(pytree_node=False)
    num_tangents: int = struct.field(pytree_node=False)
    fixed_normal: Any = None  # (C,) bool or None: contacts whose normal impulse is held at 1 (``BodyProblem``'s)
    mu: Any = None  # friction per tangent row, broadcast to (C, num_tangents); None: no tangent rows allowed
    soft: Any = None  # (C,) or (C, d) relative diagonal added to each contact's rows (constraint-force mixing)
    warm: Any = None  # (C, d) start of the sweeps (a warm start; padded contacts start at zero; not differentiated)

    @property
    def rows_per_contact(self) -> int:
        return 1 + self.num_tangents


@struct.dataclass
class ContactSolution:
    """z: (C, d) impulses per contact in the contact frame (normal, tangents); impulse: (nv,)
    generalised impulse Jᵀz; residual (m/s) and iterations of the solver; degenerate: () bool, a
    world's box-friction solution at a degenerate complementarity point (``entry.degenerate``;
    False where not judged)."""

    z: jnp.ndarray
    impulse: jnp.ndarray
    residual: jnp.ndarray
    iterations: jnp.ndarray
    degenerate: jnp.ndarray = False


def from_jacobians(jac, phi, valid, mobility, v_free, dt: float) -> ContactProblem:
    """A problem from per-contact rows ``jac`` (C, d, nv) [normal, tangents...], signed distances
    ``phi`` (C,), a ``valid`` mask (C,), the ``mobility`` W (nv, nv) and the free velocity (nv,)."""
    C, d = jac.shape[0], jac.shape[1]
    J = jac.reshape(C * d, -1)
    return ContactProblem(
        J=J,
        A=J @ mobility @ J.T,
        free_velocity=(J @ v_free).reshape(C, d),
        phi=phi,
        valid=valid,
        target=-phi / dt,
        num_contacts=C,
        num_tangents=d - 1,
    )


def block_diag(blocks) -> jnp.ndarray:
    """Block-diagonal matrix of a stacked (n, r, c) array of equal-shape blocks: the mobility W of
    n free bodies from their (n, 6, 6) inverse mass matrices."""
    blocks = jnp.asarray(blocks)
    n, r, c = blocks.shape
    eye = jnp.eye(n, dtype=blocks.dtype)
    return jnp.einsum("lij,lm->limj", blocks, eye).reshape(n * r, n * c)


def from_body_rows(rows, bodies, phi, valid, mobility_blocks, v_free, dt: float) -> ContactProblem:
    """A problem of contacts between the free bodies of a world (and its ground).

    rows: (C, 2, d, 6) each contact's rows [normal, tangents...] on its two bodies, signed so that
    their sum applied to the two bodies' generalised velocities is the *relative* velocity (body
    b's minus body a's; the normal points from a to b, so a positive normal velocity separates).
    bodies: (C, 2) integer array (static or traced) of the two bodies' indices, −1 for the ground (no rows).
    mobility_blocks: (N, 6, 6) every body's M⁻¹, or (6N, 6N) a full mobility W (a jointed world's);
    v_free: (N, 6) free velocities. The stacked J is (C·d, 6N); with the blocks W is block-diagonal,
    so A = J W Jᵀ couples exactly the contacts that share a body."""
    C, _, d, nv = rows.shape
    N = v_free.shape[0]
    onehot = jax.nn.one_hot(bodies, N, dtype=rows.dtype)  # the ground's −1 gives a zero row
    jac = jnp.einsum("csdk,csn->cdnk", rows, onehot).reshape(C, d, N * nv)
    W = block_diag(mobility_blocks) if mobility_blocks.ndim == 3 else mobility_blocks
    return from_jacobians(jac, phi, valid, W, v_free.reshape(-1), dt)


@struct.dataclass
class BodyProblem:
    """The contact problem of a world's free bodies kept as rows on each contact's two bodies
    (A = J W Jᵀ is never formed: ``solve_bodies``).

    rows: (C, 2, d, 6) [normal, tangents] on the two bodies (signed: their sum is the relative
    velocity). bodies: (C, 2) the bodies' indices, −1 the ground. mobility: (N, 6, 6) every body's
    M⁻¹ (free bodies), or (6N, 6N) a full mobility W (a jointed world's: solved densely).
    v_free: (N, 6). phi, valid, target: (C,) as ``ContactProblem``'s. fixed_normal: None, or (C,) bool
    the contacts whose normal impulse is not solved but held at 1, so that their friction rows are
    bounded by μ alone, |z_t| ≤ μ (a joint's friction loss: ``worlds.joints.loss_rows``, μ = its
    friction loss times h; their normal rows are zero and never softened). Solved densely only.
    mu, soft, warm: the law's part, as ``ContactProblem``'s."""

    rows: jnp.ndarray
    bodies: jnp.ndarray
    mobility: jnp.ndarray
    v_free: jnp.ndarray
    phi: jnp.ndarray
    valid: jnp.ndarray
    target: jnp.ndarray
    fixed_normal: Any = None
    mu: Any = None
    soft: Any = None
    warm: Any = None

    @property
    def num_contacts(self) -> int:
        return self.rows.shape[0]

    @property
    def rows_per_contact(self) -> int:
        return self.rows.shape[2]

    @property
    def full_mobility(self) -> bool:
        """Whether ``mobility`` is a full (6N, 6N) W (a jointed world's), not every body's own M⁻¹."""
        return self.mobility.ndim == 2


def body_problem(rows, bodies, phi, valid, mobility, v_free, dt: float) -> BodyProblem:
    """The ``BodyProblem`` of a world's contacts (arguments as ``from_body_rows``)."""
    return BodyProblem(rows=rows, bodies=jnp.asarray(bodies, jnp.int32), mobility=mobility,
                       v_free=v_free, phi=phi, valid=valid, target=-phi / dt)


def dense(problem: BodyProblem) -> ContactProblem:
    """The same problem with J (C·d, 6N) and A formed (``from_body_rows``), for ``solve``."""
    prob = from_body_rows(problem.rows, problem.bodies, problem.phi, problem.valid, problem.mobility,
                          problem.v_free, 1.0)
    # the problem's own target (capped, raised), not −φ/dt, and the law's part
    return prob.replace(target=problem.target, fixed_normal=problem.fixed_normal, mu=problem.mu, soft=problem.soft,
                        warm=problem.warm)


def soften(problem: ContactProblem, soft) -> ContactProblem:
    """The dense problem with ``soft`` ((C,) per contact, or (C, d) per row) added to A's diagonal,
    relative to it (what ``solve_bodies`` does row by row): constraint-force mixing
    (``worlds.contacts.soft_rows``; a MuJoCo-soft row's R / A_ii, ``worlds.soft.rows``)."""
    soft = jnp.asarray(soft)
    row_soft = (jnp.repeat(soft, problem.rows_per_contact) if soft.ndim == 1 else soft.reshape(-1)).astype(problem.A.dtype)
    return problem.replace(A=problem.A + jnp.diag(row_soft * jnp.diagonal(problem.A)))


def normal_diagonal(problem: BodyProblem) -> jnp.ndarray:
    """(C,) the diagonal of A = J W Jᵀ at each contact's normal row, without forming A: Σ over a
    contact's sides of r M⁻¹ rᵀ (free bodies), or j W jᵀ with the row j over every body (a full W)."""
    n = problem.rows[:, :, 0, :]  # (C, S, 6)
    N = problem.v_free.shape[0]
    if problem.full_mobility:
        onehot = jax.nn.one_hot(problem.bodies, N, dtype=n.dtype)  # the ground's −1: a zero row
        j = jnp.einsum("csk,csn->cnk", n, onehot).reshape(n.shape[0], -1)
        return jnp.einsum("ci,ij,cj->c", j, problem.mobility, j)
    M = jnp.concatenate([problem.mobility, jnp.zeros((1, 6, 6), problem.mobility.dtype)])
    idx = jnp.where(problem.bodies < 0, N, problem.bodies)
    return jnp.einsum("csi,csij,csj->c", n, M[idx], n)


@dataclasses.dataclass(frozen=True)
class Plan:
    """A row of the table (``choose``): how a contact problem is solved. ``form`` "dense"
    (``lcp.solve_dense``), "velocity" (``body_lcp.solve_velocity``) or "relaxed"
    (``relaxed_lcp.solve_relaxed_lcp``); ``sweep`` the sweeps on a CPU ("unrolled", "looped"; "native",
    "colour", "sequential"; "newton") and ``sweep_elsewhere`` off a CPU; ``batching`` "tail"
    (``batching.tail_sweeps``) or "vmap"; ``adjoint`` the reverse pass's solve: "native" (the fused
    kernel ``native/adjoint.cc`` on a CPU, beside the fused sweeps) or "reference" (``implicit``'s)."""

    form: str
    sweep: str
    sweep_elsewhere: str
    batching: str
    adjoint: str = "reference"


def choose(problem, method) -> Plan:
    """The one table (module docstring): how ``problem`` (a ``ContactProblem`` or a ``BodyProblem``)
    is solved by ``method`` (``lcp.Method``: the law's settings, gradient mode, manifold size, a
    relaxed law's solve, a forced form), from the problem's static sizes. Refuses what no row solves:
    another type, a forced form the problem cannot take, a held normal (a joint's friction loss)
    outside the dense form."""
    if isinstance(problem, BodyProblem):
        kind, full = "bodies", problem.full_mobility
    elif isinstance(problem, ContactProblem):
        kind, full = "dense", False
    else:
        raise TypeError(f"solve_contact: expected a ContactProblem or a BodyProblem, got {type(problem).__name__}")
    held = problem.fixed_normal is not None  # rows of a fixed bound (a joint's friction loss): dense only
    if held and (method.relaxed is not None or method.form == "velocity"):
        raise ValueError("solve_contact: a problem with fixed-normal contacts (a joint's or tendon's friction loss) is "
                         "solved by the dense projected Gauss–Seidel only, not " + ("a relaxed law's Newton solve "
                         "(RelaxedCoulomb)" if method.relaxed is not None else "in velocity form"))
    if held:
        method = dataclasses.replace(method, form="dense")
    return table(kind, problem.num_contacts * problem.rows_per_contact, method, full)


def table(kind: str, rows: int, method, full_mobility: bool = False) -> Plan:
    """``choose``'s table by the problem's ``kind`` ("dense": a ``ContactProblem``; "bodies": a
    ``BodyProblem``), its number of ``rows`` and a jointed world's ``full_mobility``; ``method.form``
    forces "dense" or "velocity" (a comparison, a benchmark). The one place that asks whether the fused
    kernels can run (``native.available()``)."""
    if method.relaxed is not None:
        return Plan("relaxed", "newton", "newton", "vmap")
    form, settings, group = method.form, method.settings, method.group
    if form not in (None, "dense", "velocity"):
        raise ValueError(f"form must be None, 'dense' or 'velocity', got {form!r}")
    uniform = settings.fixed_iterations
    if form == "velocity" and (kind == "dense" or full_mobility):
        raise ValueError("the velocity form needs a BodyProblem of free bodies (every body's own M⁻¹); a formed A "
                         "or a jointed world's full mobility is solved densely")
    dense = kind == "dense" or form == "dense" or (form is None and (rows <= DENSE_WORLD_ROWS
                                                                      or method.gradient is not None or full_mobility))
    if dense:
        sweep = "unrolled" if rows <= SMALL_ROWS else "looped"
        return Plan("dense", sweep, sweep, "tail" if sweep == "unrolled" and not uniform else "vmap")
    cpu, elsewhere = {"auto": ("native", "colour"), "native": ("native", "colour"), "colour": ("colour", "colour"),
                      "sequential": ("sequential", "sequential")}[settings.sweeps]
    if group is None:  # no manifold size: no colouring
        cpu, elsewhere = (("sequential" if s == "colour" else s) for s in (cpu, elsewhere))
    if settings.sweeps == "auto" and jax.default_backend() != "cpu":
        cpu = elsewhere  # no CPU to run on: never build the kernel
    if cpu == "native":
        cpu = "native" if native.available() else "sequential"
    return Plan("velocity", cpu, elsewhere, "vmap" if uniform else "tail", "native" if cpu == "native" else "reference")


__all__ = ["DENSE_WORLD_ROWS", "SMALL_ROWS", "SWEEP_METHODS", "BodyProblem", "ContactProblem", "ContactSolution", "Plan",
           "block_diag", "body_problem", "choose", "dense", "from_body_rows", "from_jacobians", "soften", "table"]
