"""Rotation helpers: unit quaternions (w, x, y, z), body-to-world, and planar rotations.

All functions are pure, shape-polymorphic over leading axes only where stated, and safe to
differentiate at zero rotation (no NaN gradients from norms of zero vectors).
"""

from __future__ import annotations

import jax.numpy as jnp


def quat_mul(q: jnp.ndarray, r: jnp.ndarray) -> jnp.ndarray:
    """Hamilton product q ⊗ r of quaternions stored (w, x, y, z)."""
    w1, x1, y1, z1 = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    w2, x2, y2, z2 = r[..., 0], r[..., 1], r[..., 2], r[..., 3]
    return jnp.stack(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ],
        axis=-1,
    )


def quat_conj(q: jnp.ndarray) -> jnp.ndarray:
    return q * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def quat_to_mat(q: jnp.ndarray) -> jnp.ndarray:
    """Rotation matrix (body to world) of a unit quaternion (w, x, y, z)."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    r00 = 1 - 2 * (y * y + z * z)
    r01 = 2 * (x * y - w * z)
    r02 = 2 * (x * z + w * y)
    r10 = 2 * (x * y + w * z)
    r11 = 1 - 2 * (x * x + z * z)
    r12 = 2 * (y * z - w * x)
    r20 = 2 * (x * z - w * y)
    r21 = 2 * (y * z + w * x)
    r22 = 1 - 2 * (x * x + y * y)
    return jnp.stack(
        [jnp.stack([r00, r01, r02], -1), jnp.stack([r10, r11, r12], -1), jnp.stack([r20, r21, r22], -1)],
        axis=-2,
    )


def quat_exp(rotvec: jnp.ndarray) -> jnp.ndarray:
    """Unit quaternion of a rotation vector (axis * angle); exact and smooth at zero."""
    half = 0.5 * rotvec
    a2 = jnp.sum(half * half, axis=-1)
    small = a2 < 1e-12
    a2_safe = jnp.where(small, 1.0, a2)
    a = jnp.sqrt(a2_safe)
    sinc = jnp.where(small, 1.0 - a2 / 6.0, jnp.sin(a) / a)
    cos = jnp.where(small, 1.0 - a2 / 2.0, jnp.cos(a))
    return jnp.concatenate([cos[..., None], sinc[..., None] * half], axis=-1)


def quat_normalize(q: jnp.ndarray) -> jnp.ndarray:
    return q / jnp.linalg.norm(q, axis=-1, keepdims=True)


def quat_angle_between(q1: jnp.ndarray, q2: jnp.ndarray) -> jnp.ndarray:
    """Rotation angle (radians, in [0, π]) of q1⁻¹ ⊗ q2; sign of the quaternions does not matter."""
    d = jnp.abs(jnp.sum(q1 * q2, axis=-1))
    return 2.0 * jnp.arccos(jnp.clip(d, 0.0, 1.0))


def skew(v: jnp.ndarray) -> jnp.ndarray:
    z = jnp.zeros_like(v[..., 0])
    return jnp.stack(
        [
            jnp.stack([z, -v[..., 2], v[..., 1]], -1),
            jnp.stack([v[..., 2], z, -v[..., 0]], -1),
            jnp.stack([-v[..., 1], v[..., 0], z], -1),
        ],
        axis=-2,
    )


def rot2d(theta: jnp.ndarray) -> jnp.ndarray:
    c, s = jnp.cos(theta), jnp.sin(theta)
    return jnp.stack([jnp.stack([c, -s], -1), jnp.stack([s, c], -1)], -2)


def perp2d(a: jnp.ndarray) -> jnp.ndarray:
    """ẑ × a for planar vectors: (−a_y, a_x)."""
    return jnp.stack([-a[..., 1], a[..., 0]], axis=-1)


def inv3(A: jnp.ndarray) -> jnp.ndarray:
    """Inverse of a 3×3 matrix in closed form (adjugate / determinant).

    For the small, well-conditioned matrices of the step (inertia tensors, the gyroscopic
    Newton matrix) this is elementwise arithmetic, so under ``vmap`` it stays in fused
    vector code instead of one batched LAPACK call per step (an LU with a pivoting loop on a
    CPU, which cost as much as the rest of the free-flight step)."""
    r0, r1, r2 = A[..., 0, :], A[..., 1, :], A[..., 2, :]
    c12 = jnp.cross(r1, r2)
    det = jnp.sum(r0 * c12, axis=-1)
    adj = jnp.stack([c12, jnp.cross(r2, r0), jnp.cross(r0, r1)], axis=-1)
    return adj / det[..., None, None]


def solve3(A: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    """x with A x = b for a 3×3 ``A`` (``inv3``)."""
    return inv3(A) @ b
