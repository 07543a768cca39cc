"""Worlds a person can watch (``jaxcontact.worlds.animate``): a rendered frame shows each box where
its projected position says, and an animation file is written frame by frame."""

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="rendering needs matplotlib (pip install -e '.[plot]')")

from jaxcontact.plotting import pyplot  # noqa: E402
from jaxcontact.worlds import animate, scenes  # noqa: E402


def _draw(states, scene, params, shade=False):
    plt = pyplot("test")
    faces = animate.hull_faces(scene, params.body)
    verts = animate.world_vertices(params.body, states)
    cam = animate.Camera.framing(verts.reshape(-1, 3))
    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    fig.subplots_adjust(0, 0, 1, 1)
    colours = [np.array(c) for c in ((1.0, 0.0, 0.0), (0.0, 0.6, 0.0), (0.0, 0.0, 1.0))]
    animate.render_frame(ax, cam, faces, verts, t=0.25, ground=None, colours=colours, shade=shade)
    fig.canvas.draw()
    img = np.asarray(fig.canvas.buffer_rgba())[..., :3] / 255.0
    return plt, fig, ax, cam, img, colours


def test_a_rendered_frame_shows_each_box_where_its_projection_says():
    """Three boxes of a heap, spread out and turned, each drawn in its own flat colour: the pixel at
    each box's projected centre has that box's colour; a pixel off every box is the background.
    Moving one box moves its colour with it."""
    scene, params, s = scenes.heap(3)
    st = np.concatenate([np.asarray(s.pos), np.asarray(s.quat), np.zeros((3, 6))], -1)
    st[:, :3] = [[0.0, 0.0, 0.05], [0.4, 0.1, 0.3], [-0.3, 0.35, 0.1]]
    plt, fig, ax, cam, img, colours = _draw(st, scene, params)
    for i in range(3):
        col, row = cam.pixel(ax, st[i, :3])
        np.testing.assert_allclose(img[row, col], colours[i], atol=0.02, err_msg=f"box {i} at pixel {(col, row)}")
    # midway between boxes 0 and 1, well off both silhouettes: white background
    col, row = cam.pixel(ax, [0.2, -0.2, 0.35])
    np.testing.assert_allclose(img[row, col], [1.0, 1.0, 1.0], atol=0.02)
    plt.close(fig)
    moved = st.copy()
    moved[0, :3] = [0.2, -0.2, 0.35]  # box 0 goes there, with the same camera
    plt2 = pyplot("test")
    fig2, ax2 = plt2.subplots(figsize=(4, 3), dpi=100)
    fig2.subplots_adjust(0, 0, 1, 1)
    animate.render_frame(ax2, cam, animate.hull_faces(scene, params.body), animate.world_vertices(params.body, moved),
                         colours=colours, shade=False)
    fig2.canvas.draw()
    img2 = np.asarray(fig2.canvas.buffer_rgba())[..., :3] / 255.0
    np.testing.assert_allclose(img2[row, col], colours[0], atol=0.02)
    c0, r0 = cam.pixel(ax2, st[0, :3])
    np.testing.assert_allclose(img2[r0, c0], [1.0, 1.0, 1.0], atol=0.02)
    plt2.close(fig2)


def test_frames_follow_real_time_and_the_last_state():
    idx = animate.frame_indices(501, 0.002, fps=25)
    assert idx[0] == 0 and idx[-1] == 500 and np.all(np.diff(idx)[:-1] == 20)
    assert len(animate.frame_indices(100001, 0.002, fps=25, max_frames=250)) <= 251


def test_animation_file_is_a_gif_with_every_frame(tmp_path):
    from PIL import Image

    scene, params, s = scenes.stack(2)
    st = np.concatenate([np.asarray(s.pos), np.asarray(s.quat), np.zeros((2, 6))], -1)
    states = np.stack([st + np.r_[0, 0, 0.01 * k, np.zeros(10)] for k in range(41)])  # rising 1 cm a step
    out = tmp_path / "stack.gif"
    n = animate.animate(scene, params, states, 0.002, out, fps=25, progress=False, size=(3, 2), dpi=50)
    assert n == 3  # states 0, 20, 40
    with Image.open(out) as im:
        assert im.n_frames == 3
    with pytest.raises(ValueError, match="write a .gif"):
        animate.check_animation_path(tmp_path / "x.avi")


def test_the_floor_stays_put_while_the_bodies_move(tmp_path, monkeypatch):
    """The grey floor of an animation is one square for every frame (``floor_square`` of the whole
    trajectory), under every body of every frame: two boxes sliding 1 m along x do not drag it
    along (a floor sized from each frame's bodies moves 1 m with them)."""
    scene, params, s = scenes.heap(2)
    st = np.concatenate([np.asarray(s.pos), np.asarray(s.quat), np.zeros((2, 6))], -1)
    states = np.stack([st + np.r_[0.025 * k, 0, 0, np.zeros(10)] for k in range(41)])  # 2.5 cm a step along x
    drawn = []
    render = animate.render_frame
    monkeypatch.setattr(animate, "render_frame",
                        lambda *a, **kw: (drawn.append(np.array(kw["floor"])), render(*a, **kw))[1])
    n = animate.animate(scene, params, states, 0.002, tmp_path / "slide.gif", fps=25, progress=False, size=(2, 1.5),
                        dpi=40)
    assert n == 3 and len(drawn) >= n  # matplotlib draws the first frame once more to start
    for floor in drawn[1:]:
        np.testing.assert_array_equal(floor, drawn[0])
    # the square holds every frame's vertices, seen from above (the ground is z = 0 here)
    verts = animate.world_vertices(params.body, states).reshape(-1, 3)
    lo, hi = drawn[0].min(axis=0), drawn[0].max(axis=0)
    assert np.all(verts[:, :2] >= lo[:2]) and np.all(verts[:, :2] <= hi[:2])
    ground = (np.asarray(params.ground.normal), float(params.ground.height))
    per_frame = [animate.floor_square(ground, animate.world_vertices(params.body, states[k])) for k in (0, 40)]
    assert np.ptp([f.mean(axis=0)[0] for f in per_frame]) == pytest.approx(1.0)  # what the old floor did
