"""Meshes' hulls as MuJoCo collides them (issue 63 item 4): ``collision.hull_corners`` keeps the corners
of a mesh's convex hull (a vertex a hair above a flat cap, within ``topology``'s tolerance, is none), so
that a real mesh's exact hull builds a topology (Metaworld's Sawyer gripper: 874 corners), and
``topology`` names such a vertex instead of failing on a broken face ring."""

import numpy as np
import pytest

from jaxcontact import collision, shapes


def _can(bump: float):
    """A 32-sided prism (radius 0.05 m, height 0.1 m) with a point at the top cap's centre raised by
    ``bump`` (m), and ten more on the cap's plane inside it (a mesh's fan vertices)."""
    a = 2 * np.pi * np.arange(32) / 32
    ring = np.c_[0.05 * np.cos(a), 0.05 * np.sin(a), np.zeros(32)]
    inner = np.c_[0.02 * np.cos(a[::3]), 0.02 * np.sin(a[::3]), np.zeros(11)]
    return np.concatenate([ring - [0, 0, 0.05], ring + [0, 0, 0.05], inner + [0, 0, 0.05], [[0.0, 0.0, 0.05 + bump]]])


def test_a_point_a_hair_above_a_flat_cap_is_no_corner():
    pts = _can(1e-10)
    with pytest.raises(ValueError, match=r"not corners of the hull"):
        collision.topology(pts)  # named, not a broken ring
    corners = collision.hull_corners(pts)
    assert len(corners) == 64  # the two rings
    topo = collision.topology(corners)
    assert sorted(len(f) for f in topo.faces)[-2:] == [32, 32] and len(topo.faces) == 34
    raised = collision.hull_corners(_can(1e-3))  # a real cone: its apex is a corner
    assert len(raised) == 65


def test_a_sawyer_sized_hull_builds_its_topology_at_once():
    """874 random points on a sphere (the Sawyer gripper's corner count), within the limit of 1024:
    the topology (its edge directions grouped at once) builds in well under a second of CPU."""
    import time

    rng = np.random.default_rng(3)
    p = rng.normal(size=(874, 3))
    p = 0.05 * p / np.linalg.norm(p, axis=1, keepdims=True)
    t = time.process_time()
    topo = collision.topology(p)
    assert time.process_time() - t < 3.0 and len(topo.vertices) == 874
    body = shapes.convex_hull(p, 1.0)
    assert body.vertices.shape == (874, 3)
