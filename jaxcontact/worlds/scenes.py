"""Ready-made worlds of 0.1 m, 0.37 kg boxes (the issue's test scenes): ``stack``, ``pyramid``,
``heap``, ``cradle``. Each returns ``(scene, params, state)`` for ``worlds.rollout``
with ``model()`` (the world's default law)."""

from __future__ import annotations

import dataclasses
import numbers

import jax
import jax.numpy as jnp
import numpy as np

from .. import shapes
from ..laws import CoulombLCP
from ..solvers import LCPSettings
from ..types import Ground, Model, Params, State
from .scene import make_scene

# The world's default law: hard Coulomb contact, warm-started from the previous step's impulses
# per contact slot (a stack at rest then converges in tens of sweeps, not hundreds), with room for
# the first step of a stack built at rest (about 600 sweeps for 10 boxes from zero). Solved to
# 1e-7 m/s so that gradients through worlds meet 1e-3 on pushes, drops and slides (at 1e-5 a warm
# start stops one or two sweeps in and the implicit derivative is taken on a lagging active set:
# docs/gradients.md "Through worlds at the defaults"); float32 floors the tolerance at 64 eps of the
# velocity scale (solvers/lcp.py), so there it acts as before.
# stall_active_set, forward_active_set: a stalled solve polished in the forward, no solve polished under
# differentiation alone, so reverse mode follows the plain rollout (issue 63; docs/worlds.md, "Robots")
DEFAULT_LAW = CoulombLCP(solver=LCPSettings(warm_start=True, max_iter=1000, tol=1e-7, stall_active_set=3,
                                            forward_active_set=0))

SIZE = 0.1  # m, the boxes' edge
MASS = 0.37  # kg


def model(law=DEFAULT_LAW, sweeps: str | None = None, **settings) -> Model:
    """A ``Model`` with the world's default law (``DEFAULT_LAW``); ``sweeps`` sets its solver's
    ``LCPSettings.sweeps`` ("auto", "native", "colour", "sequential"); other ``Model`` settings by name."""
    if sweeps is not None:
        law = dataclasses.replace(law, solver=dataclasses.replace(law.solver, sweeps=sweeps))
    return Model(law=law, **settings)


def _state(pos, vel=None, quat=None) -> State:
    pos = jnp.asarray(pos, dtype=jnp.result_type(float))
    n = pos.shape[0]
    quat = jnp.tile(jnp.array([1.0, 0.0, 0.0, 0.0], pos.dtype), (n, 1)) if quat is None else jnp.asarray(quat, pos.dtype)
    vel = jnp.zeros((n, 3), pos.dtype) if vel is None else jnp.asarray(vel, pos.dtype)
    return State(pos=pos, quat=quat, vel=vel, omega=jnp.zeros((n, 3), pos.dtype))


def _params(body, mu, restitution) -> Params:
    dtype = jnp.result_type(float)
    return Params(body=body, ground=Ground(normal=jnp.array([0.0, 0.0, 1.0], dtype), height=jnp.zeros((), dtype)),
                  law=CoulombLCP.init_params(mu=mu, restitution=restitution))


def _count(builder: str, name: str, n) -> int:
    """``n`` as an int >= 1, or a ``ValueError`` naming the builder's argument."""
    if isinstance(n, np.ndarray) and n.shape == () and np.issubdtype(n.dtype, np.integer):
        n = int(n)
    if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 1:
        raise ValueError(f"scenes.{builder}: {name} must be an int >= 1, got {n!r}")
    return int(n)


def _gap(builder: str, gap) -> float:
    """``gap`` (m) as a float: finite and above −SIZE (a negative gap starts neighbours inside each
    other, a ``PenetrationWarning`` when deeper than one step of ``Model.max_correction_speed``)."""
    if not (isinstance(gap, numbers.Real) and np.isfinite(gap) and gap > -SIZE):
        raise ValueError(f"scenes.{builder}: gap must be a finite distance > -{SIZE} m (the box size), got {gap!r}")
    return float(gap)


def _boxes(n, pairs, ground=True, **scene_kw):
    return make_scene([shapes.box((SIZE,) * 3, MASS)] * n, pairs=pairs, ground=ground, **scene_kw)


def stack(n: int = 10, mu: float = 0.5, restitution: float = 0.0, **scene_kw):
    """``n`` boxes stacked face to face on the ground, at rest, exactly touching; neighbours only."""
    n = _count("stack", "n", n)
    scene, body = _boxes(n, [(i, i + 1) for i in range(n - 1)], **scene_kw)
    pos = [[0.0, 0.0, SIZE / 2 + SIZE * i] for i in range(n)]
    return scene, _params(body, mu, restitution), _state(pos)


def pyramid(levels: int = 4, mu: float = 0.5, restitution: float = 0.0, gap: float = 0.0, **scene_kw):
    """A pyramid of ``levels`` rows (4-3-2-1 for 4: 10 boxes), each box centred on the gap between
    two below; ``gap`` (m) between neighbours of a row. Pairs: neighbours in a row and the boxes
    a box rests on."""
    levels = _count("pyramid", "levels", levels)
    gap = _gap("pyramid", gap)
    pos, index = [], {}
    for r in range(levels):
        count = levels - r
        for k in range(count):
            x = (k - (count - 1) / 2) * (SIZE + gap)
            index[(r, k)] = len(pos)
            pos.append([x, 0.0, SIZE / 2 + SIZE * r])
    pairs = []
    for (r, k), i in index.items():
        if (r, k + 1) in index:
            pairs.append((i, index[(r, k + 1)]))
        for kk in (k, k + 1):
            if (r - 1, kk) in index:
                pairs.append((index[(r - 1, kk)], i))
    scene, body = _boxes(len(pos), pairs, **scene_kw)
    return scene, _params(body, mu, restitution), _state(pos)


def cradle(n: int = 5, gap: float = 0.005, speed: float = 1.0, restitution: float = 1.0, **scene_kw):
    """Newton's cradle of boxes on a frictionless ground: ``n`` boxes in a row along x, ``gap`` (m)
    apart, resting on the ground; the first moves at ``speed`` (m/s) towards the others."""
    n = _count("cradle", "n", n)
    gap = _gap("cradle", gap)
    scene, body = _boxes(n, [(i, i + 1) for i in range(n - 1)], **scene_kw)
    pos = [[i * (SIZE + gap), 0.0, SIZE / 2] for i in range(n)]
    vel = np.zeros((n, 3))
    vel[0, 0] = speed
    return scene, _params(body, 0.0, restitution), _state(pos, vel)


def heap_broad_phase(scene):
    """``scene`` with the heap's broad phase (``Scene.max_pairs`` = 3N, ``heap``) when it has more than
    3N pairs and none, and then, when its groups of pairs hold more than 3N slots together (a heap
    of several kinds: each group is under the cap), 3N slots across them (``Scene.max_slots``):
    what ``simulate --mjcf`` and ``benchmarks.mixed_speed`` run a loaded world with (a body in a
    heap touches about six others; more pairs within reach are flagged CAPACITY)."""
    N = scene.num_bodies
    if scene.max_pairs is None and scene.num_pairs > 3 * N:
        scene = dataclasses.replace(scene, max_pairs=3 * N)
        if scene.max_slots is None and scene.num_narrow_slots > 3 * N:
            scene = dataclasses.replace(scene, max_slots=3 * N)
    return scene


def heap(n: int = 16, key=None, height: float = 0.3, spacing: float = 0.18, **scene_kw):
    """``n`` boxes dropped from a loose grid (``spacing`` m apart, 3 × 3 per layer, the lowest
    layer ``height`` m up) with random orientations and small random velocities (``key``); every
    pair may touch, through the broad phase (``Scene.max_pairs`` = 3n unless given). The spacing must exceed a box's diagonal (√3 · 0.1 m), so that no two boxes
    overlap whatever their orientations."""
    n = _count("heap", "n", n)
    diagonal = np.sqrt(3.0) * SIZE
    if spacing <= diagonal:
        raise ValueError(f"heap: spacing {spacing} m lets randomly oriented boxes overlap; it must exceed the "
                         f"box diagonal {diagonal:.4f} m")
    if height <= diagonal / 2:
        raise ValueError(f"heap: height {height} m lets the lowest boxes start in the ground; it must exceed "
                         f"{diagonal / 2:.4f} m")
    key = jax.random.PRNGKey(0) if key is None else key
    side = int(np.ceil(np.sqrt(min(n, 9))))
    per_layer = side * side
    pos = []
    for i in range(n):
        layer, j = divmod(i, per_layer)
        pos.append([(j % side - (side - 1) / 2) * spacing, (j // side - (side - 1) / 2) * spacing,
                    height + layer * spacing])
    k1, k2 = jax.random.split(key)
    q = jax.random.normal(k1, (n, 4))
    q = q / jnp.linalg.norm(q, axis=1, keepdims=True)
    vel = 0.2 * jax.random.normal(k2, (n, 3))
    # the broad phase keeps 3n pairs a step (a box in a heap touches about six others); more within
    # reach is flagged CAPACITY
    scene, body = _boxes(n, "all", **{"max_pairs": 3 * n, **scene_kw})
    return scene, _params(body, 0.5, 0.0), _state(pos, vel, q)


RAMP_SIZE = (2.0, 0.6, 0.1)  # m, full edges of ``ramp``'s fixed board (length, width, thickness)


def ramp(angle: float = 0.3, mu: float = 0.2, start: float = 0.8, speed: float = 0.0, ground: bool = True,
         **scene_kw):
    """A box on a ramp fixed to the world (``Scene.fixed``, docs/worlds.md "Fixed scenery"): body 0
    the ramp, a ``RAMP_SIZE`` board turned by ``angle`` (rad) about y, so that it falls along +x,
    its centre 1 m up; body 1 a box resting face down on it, ``start`` m up the slope from the
    board's centre, moving down the slope at ``speed`` (m/s). μ on both (the law's). Unless it
    sticks (tan θ ≤ μ) the box slides down at g (sin θ − μ cos θ) along ``ramp_axes(angle)[0]``."""
    if not (isinstance(angle, numbers.Real) and 0 <= angle < np.pi / 2):
        raise ValueError(f"scenes.ramp: angle must be in [0, pi/2) rad, got {angle!r}")
    board = shapes.box(RAMP_SIZE, 50.0)
    scene, body = make_scene([board, shapes.box((SIZE,) * 3, MASS)], ground=ground, fixed=[0], **scene_kw)
    down, normal = ramp_axes(angle)
    centre = np.array([0.0, 0.0, 1.0])
    q = [np.cos(angle / 2), 0.0, np.sin(angle / 2), 0.0]
    pos = [centre, centre + (RAMP_SIZE[2] + SIZE) / 2 * normal - start * down]
    return scene, _params(body, mu, 0.0), _state(pos, [np.zeros(3), speed * down], [q, q])


def ramp_axes(angle: float):
    """(down the slope, the surface's normal) of ``ramp(angle)``'s board, unit vectors."""
    return (np.array([np.cos(angle), 0.0, -np.sin(angle)]), np.array([np.sin(angle), 0.0, np.cos(angle)]))


__all__ = ["DEFAULT_LAW", "MASS", "RAMP_SIZE", "SIZE", "cradle", "heap", "heap_broad_phase", "model", "pyramid", "ramp", "ramp_axes",
           "stack"]
