"""Mass properties of the shape constructors against closed forms."""

import numpy as np
import pytest

import jaxcontact as jc


def test_convex_hull_of_box_points_matches_box_formula():
    rng = np.random.default_rng(0)
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * [0.1, 0.05, 0.02]
    interior = rng.uniform(-0.5, 0.5, (20, 3)) * [0.1, 0.05, 0.02]
    hull = jc.shapes.convex_hull(np.vstack([corners, interior]) + [1.0, 2.0, 3.0], mass=2.0)
    box = jc.shapes.box((0.2, 0.1, 0.04), mass=2.0)
    assert hull.vertices.shape == (8, 3)  # interior points dropped
    np.testing.assert_allclose(hull.inertia, box.inertia, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(np.asarray(hull.vertices).mean(0), 0.0, atol=1e-12)  # centred on the COM


@pytest.mark.parametrize("n", [3, 5, 8])
def test_regular_prism_inertia_closed_form(n):
    R, h, m = 0.06, 0.1, 0.37
    body = jc.shapes.regular_prism(n, R, h, m)
    # regular n-gon of circumradius R: polar second moment per unit mass R²(2 + cos(2π/n))/6
    # (R²/3 for a square, R²/2 for a disk); in-plane axes carry half of it (isotropic n-gon)
    iz = m * R**2 / 6 * (2 + np.cos(2 * np.pi / n))
    ixx = iz / 2 + m * h**2 / 12
    np.testing.assert_allclose(np.diag(body.inertia), [ixx, ixx, iz], rtol=1e-9)
    assert body.vertices.shape == (2 * n, 3)


def test_polygon_inertia_and_padding():
    b = jc.shapes.box2d((0.2, 0.1), 0.5, pad_to=6)
    assert float(b.inertia) == pytest.approx(0.5 * (0.2**2 + 0.1**2) / 12)
    assert b.vertices.shape == (6, 2) and float(b.vertex_mask.sum()) == 4
    with pytest.raises(ValueError, match="pad_to=2 is smaller"):
        jc.shapes.box2d((0.2, 0.1), 0.5, pad_to=2)


def test_padded_body_simulates_like_unpadded():
    import jax

    law = jc.CoulombLCP()
    model = jc.Model(law=law, max_contacts=None)
    s0 = jc.make_state(pos=[0, 0, 0.2], quat=[0.9, 0.3, 0.2, 0.1] / np.linalg.norm([0.9, 0.3, 0.2, 0.1]), vel=[0.5, 0, 0], omega=[1.0, 2.0, 0])
    finals = []
    for pad in (None, 12):
        params = jc.Params(body=jc.shapes.box(0.1, 0.37, pad_to=pad), ground=jc.Ground.flat(), law=law.init_params(0.3))
        finals.append(jc.rollout(model, params, s0, 300, output="final"))
    for a, b in zip(jax.tree_util.tree_leaves(finals[0]), jax.tree_util.tree_leaves(finals[1])):
        np.testing.assert_allclose(a, b, atol=1e-9)
