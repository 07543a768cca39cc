"""Worlds a person can watch: frames of a world's hulls over time, as a GIF (or an MP4 where
matplotlib finds ffmpeg).

The renderer is matplotlib's 2D patches under a fixed orthographic camera (``Camera``: azimuth and
elevation, framing every body of every frame), each body's outward faces drawn far to near
(painter's order) and shaded by a fixed light; the ground is a grey square under the bodies (one
square for a whole animation, ``floor_square`` of every frame's bodies, so it does not move); the
time is in the top left corner. ``render_frame`` draws one state into an ``Axes``,
``animate`` writes a whole trajectory with a progress bar. ``Camera.pixel`` says where a world point
lands in a rendered figure, which is how the test checks that each box appears where its position
says. MuJoCo's offscreen renderer is not used (it needs an OpenGL backend; open ``to_mjcf``'s file in
MuJoCo's viewer for that).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from .. import collision

ANIMATION_SUFFIXES = (".gif", ".mp4")


def _rot(q):
    """(..., 3, 3) rotation matrices of unit quaternions (w, x, y, z), numpy."""
    q = np.asarray(q, float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def _segment_frame(axis):
    """(3, 3) a rotation whose third column is the unit ``axis``."""
    z = axis / np.linalg.norm(axis)
    x = np.cross(z, [1.0, 0, 0] if abs(z[0]) < 0.9 else [0, 1.0, 0])
    x = x / np.linalg.norm(x)
    return np.stack([x, np.cross(z, x), z], 1)


def drawn_body(scene, body):
    """``body`` (stacked) as it is drawn: a round body (``scene.shapes``) replaced by the hull of
    points on its surface (``mjcf.round_points``: a sphere-swept core's vertices each with a sphere's,
    a capsule's segment, a cylinder, an ellipsoid; a compound, a stand-in: the hull of all its parts);
    hulls as they are (their vertices first, so the
    scene's topologies still index them)."""
    if scene.shapes is None:
        return body
    from scipy.spatial import ConvexHull

    from .mjcf import round_points

    verts, mask = np.asarray(body.vertices, float), np.asarray(body.vertex_mask) > 0
    drawn = []
    for i, kind in enumerate(scene.shapes):
        core = verts[i][mask[i]]
        if kind == "hull":
            drawn.append(verts[i])
            continue
        if kind == "cylinder":
            pts = round_points("cylinder", np.asarray(body.cylinder[i], float))
        elif kind == "ellipsoid":
            pts = round_points("ellipsoid", np.asarray(body.ellipsoid[i], float))
        elif kind == "compound":  # drawn as the convex hull of its parts (each vertex swept by its own radius)
            rad = np.asarray(body.vertex_radius[i], float)[mask[i]]
            ball = round_points("sphere", [1.0])
            pts = np.concatenate([core[rad <= 0]] + [c + r * ball for c, r in zip(core[rad > 0], rad[rad > 0])])
            if body.vertex_shape is not None:  # cylinder and ellipsoid parts: points on their surfaces, posed
                pts = np.concatenate([pts] + _shaped_part_points(scene.parts[i], verts[i], np.asarray(body.vertex_shape[i], float)))
        elif kind == "capsule":
            a, b = core[0], core[1]
            half = np.linalg.norm(b - a) / 2
            pts = round_points("capsule", [float(body.radius[i]), half]) @ _segment_frame(b - a).T + (a + b) / 2
        else:  # a sphere, or a sphere-swept hull
            ball = round_points("sphere", [float(body.radius[i])])
            pts = (core[:, None, :] + ball[None]).reshape(-1, 3)
        drawn.append(pts[np.sort(ConvexHull(pts).vertices)])
    K = max(len(d) for d in drawn)
    out = np.stack([np.concatenate([d, np.repeat(d[:1], K - len(d), 0)]) for d in drawn])
    keep = np.stack([np.concatenate([mask[i] if scene.shapes[i] == "hull" else np.ones(len(d), bool),
                                     np.zeros(K - len(d), bool)]) for i, d in enumerate(drawn)])
    return body.replace(vertices=out, vertex_mask=keep.astype(float), radius=None, cylinder=None, ellipsoid=None,
                        vertex_radius=None, vertex_shape=None)


def _shaped_part_points(parts, verts, shape) -> list:
    """Points on each cylinder or ellipsoid part's surface (``mjcf.round_points``) at its pose in the body
    frame (its centre ``verts[start]``, its quaternion and sizes in ``shape[start]``: ``Body.vertex_shape``)."""
    from ..rotations import quat_to_mat
    from .mjcf import round_points

    out = []
    for kind, start, _, _ in parts or ():
        if kind in ("cylinder", "ellipsoid"):
            row = shape[start]
            R = np.asarray(quat_to_mat(row[4:8]), float)
            out.append(round_points(kind, row[1:3] if kind == "cylinder" else row[1:4]) @ R.T + verts[start])
    return out


def hull_faces(scene, body):
    """Per body, its hull's faces as lists of vertex indices (counter-clockwise from outside): the
    scene's topologies, computed for bodies in no pair (``collision.topology``)."""
    verts, mask = np.asarray(body.vertices, float), np.asarray(body.vertex_mask) > 0
    out = []
    for i, topo in enumerate(scene.topologies):
        topo = topo if topo is not None else collision.topology(verts[i], mask[i])
        out.append([list(f) for f in topo.faces])
    return out


def world_vertices(body, states: np.ndarray) -> np.ndarray:
    """(..., N, K, 3) world positions of every body's vertices from states (..., N, 13)."""
    s = np.asarray(states, float)
    R = _rot(s[..., 3:7])
    return s[..., None, :3] + np.einsum("...nij,nkj->...nki", R, np.asarray(body.vertices, float))


@dataclasses.dataclass(frozen=True)
class Camera:
    """A fixed orthographic view: ``right``/``up`` span the picture, ``toward`` points at the viewer;
    ``limits`` (u0, u1, v0, v1) the picture's extent in metres."""

    right: np.ndarray
    up: np.ndarray
    toward: np.ndarray
    limits: tuple

    @staticmethod
    def framing(points, elevation: float = 25.0, azimuth: float = -60.0, margin: float = 0.08) -> "Camera":
        """The camera at ``elevation``/``azimuth`` (degrees) that frames ``points`` (..., 3)."""
        e, a = np.radians(elevation), np.radians(azimuth)
        toward = np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
        right = np.array([-np.sin(a), np.cos(a), 0.0])
        up = np.cross(toward, right)
        p = np.asarray(points, float).reshape(-1, 3)
        u, v = p @ right, p @ up
        span = max(np.ptp(u), np.ptp(v), 1e-3)
        pad = margin * span
        return Camera(right, up, toward, (u.min() - pad, u.max() + pad, v.min() - pad, v.max() + pad))

    def project(self, points):
        """(..., 2) picture coordinates (m) and (...,) depth (larger: nearer the viewer)."""
        p = np.asarray(points, float)
        return np.stack([p @ self.right, p @ self.up], -1), p @ self.toward

    def pixel(self, ax, point):
        """(column, row) of the pixel where world ``point`` lands in ``ax``'s drawn figure (row 0 at the top)."""
        uv, _ = self.project(point)
        x, y = ax.transData.transform(uv)
        h = ax.figure.canvas.get_width_height()[1]
        return int(round(x)), int(round(h - y))


def body_colours(n: int):
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return [np.asarray(cmap(i % 10)[:3]) for i in range(n)]


def setup_axes(ax, cam: Camera):
    ax.set_xlim(cam.limits[0], cam.limits[1])
    ax.set_ylim(cam.limits[2], cam.limits[3])
    ax.set_aspect("equal")
    ax.set_axis_off()


def floor_square(ground, points) -> np.ndarray:
    """(4, 3) world corners of the grey floor drawn under ``points`` (..., 3): a square in the
    ground plane (``ground`` (normal, height)) centred under the points' bounding box, its half
    side 0.6 × the box's diagonal + 5 cm. ``animate`` computes it once from every frame's points,
    so the floor stays put while the bodies move."""
    n, h = np.asarray(ground[0], float), float(ground[1])
    n = n / np.linalg.norm(n)
    t1 = np.cross(n, [1.0, 0, 0] if abs(n[0]) < 0.9 else [0, 1.0, 0])
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(n, t1)
    c = n * h
    p = np.asarray(points, float).reshape(-1, 3)
    lo, hi = np.min(p, 0), np.max(p, 0)
    r = 0.6 * float(np.linalg.norm(hi - lo)) + 0.05
    centre = c + (0.5 * (lo + hi) - c) - n * (n @ (0.5 * (lo + hi) - c))
    return np.array([centre + r * (a * t1 + b * t2) for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1))])


def render_frame(ax, cam: Camera, faces, verts, t=None, ground=None, colours=None, shade: bool = True, floor=None):
    """Draw one state: ``verts`` (N, K, 3) world vertices, ``faces`` of ``hull_faces``; ``ground``
    (normal, height) or None; ``t`` (s) in the corner. Flat colours with ``shade=False``.
    ``floor``: the ground's square (``floor_square``; default: the one under this frame's bodies)."""
    from matplotlib.collections import PolyCollection

    ax.cla()
    setup_axes(ax, cam)
    colours = body_colours(len(faces)) if colours is None else colours
    if ground is not None:
        square = floor_square(ground, verts) if floor is None else np.asarray(floor, float)
        uv, _ = cam.project(square)
        ax.add_collection(PolyCollection([uv], facecolors=[(0.85, 0.85, 0.85)], edgecolors=[(0.7, 0.7, 0.7)]))
    light = np.array([0.3, -0.5, 0.8])
    light /= np.linalg.norm(light)
    polys, cols, depth = [], [], []
    for i, fs in enumerate(faces):
        for f in fs:
            p = verts[i][f]
            normal = np.cross(p[1] - p[0], p[2] - p[0])
            nn = np.linalg.norm(normal)
            if nn == 0 or normal @ cam.toward <= 0:  # back face
                continue
            normal /= nn
            uv, d = cam.project(p)
            polys.append(uv)
            k = 1.0 if not shade else 0.55 + 0.45 * max(0.0, float(normal @ light))
            cols.append(np.clip(colours[i] * k, 0, 1))
            depth.append(d.mean())
    order = np.argsort(depth)
    ax.add_collection(PolyCollection([polys[k] for k in order], facecolors=[cols[k] for k in order],
                                     edgecolors="none" if not shade else [(0.1, 0.1, 0.1, 0.5)] * len(order),
                                     linewidths=0.4))
    if t is not None:
        ax.text(0.02, 0.96, f"t = {t:.3f} s", transform=ax.transAxes, va="top", ha="left", fontsize=10,
                family="monospace")


def check_animation_path(path) -> Path:
    """``ValueError`` (one line) unless ``path`` ends in .gif, or .mp4 with ffmpeg available to matplotlib."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in ANIMATION_SUFFIXES:
        raise ValueError(f"--animate {path}: write a .gif (or an .mp4 where ffmpeg is installed), got {suffix or 'no suffix'!r}")
    if suffix == ".mp4":
        from matplotlib import animation

        if not animation.writers.is_available("ffmpeg"):
            raise ValueError(f"--animate {path}: an .mp4 needs ffmpeg, which matplotlib cannot find; write a .gif")
    return path


def frame_indices(num_states: int, dt: float, fps: int = 25, max_frames: int = 250) -> np.ndarray:
    """The states shown: one every ``1 / fps`` s of simulated time (real time), at most ``max_frames``
    (then evenly spread), the last state always."""
    stride = max(1, int(round(1.0 / (fps * dt))))
    idx = np.arange(0, num_states, stride)
    if len(idx) > max_frames:
        idx = np.unique(np.linspace(0, num_states - 1, max_frames).round().astype(int))
    if idx[-1] != num_states - 1:
        idx = np.append(idx, num_states - 1)
    return idx


def animate(scene, params, states, dt: float, path, fps: int = 25, max_frames: int = 250, progress: bool = True,
            size=(6.0, 4.5), dpi: int = 80, elevation: float = 25.0, azimuth: float = -60.0, title: str | None = None):
    """Write an animation of ``states`` (steps + 1, N, 13) of the world (``scene``, ``params``) to
    ``path`` (.gif by matplotlib's Pillow writer; .mp4 where ffmpeg is available): the hulls from
    a fixed camera framing every frame, the time in the corner, a progress bar while it writes.
    Returns the number of frames."""
    from tqdm.auto import tqdm
    from matplotlib import animation

    from ..plotting import pyplot

    plt = pyplot("--animate")
    path = check_animation_path(path)
    states = np.asarray(states, float)
    idx = frame_indices(states.shape[0], dt, fps, max_frames)
    body = drawn_body(scene, params.body)
    faces = hull_faces(scene, body)
    mask = np.asarray(body.vertex_mask) > 0
    verts = world_vertices(body, states[idx])
    shown = np.concatenate([verts[f][mask] for f in range(len(idx))])
    ground = (np.asarray(params.ground.normal), float(params.ground.height)) if scene.ground else None
    lowest = shown
    if ground is not None:  # frame the ground's line under the bodies too
        n = ground[0] / np.linalg.norm(ground[0])
        lowest = np.concatenate([shown, shown - np.outer(shown @ n - ground[1], n)])
    cam = Camera.framing(lowest, elevation, azimuth)
    floor = None if ground is None else floor_square(ground, shown)  # one floor for the whole animation
    colours = body_colours(len(faces))
    fig, ax = plt.subplots(figsize=size, dpi=dpi)
    fig.subplots_adjust(0, 0, 1, 1)
    if title:
        fig.suptitle(title, fontsize=9, y=0.995)

    def draw(k):
        render_frame(ax, cam, faces, verts[k], t=idx[k] * dt, ground=ground, colours=colours, floor=floor)
        return []

    anim = animation.FuncAnimation(fig, draw, frames=len(idx), blit=False)
    writer = animation.PillowWriter(fps=fps) if path.suffix.lower() == ".gif" else animation.FFMpegWriter(fps=fps)
    with tqdm(total=len(idx), desc=f"animate {path.name}", unit="frame", disable=not progress) as bar:
        anim.save(str(path), writer=writer, dpi=dpi, progress_callback=lambda i, n: bar.update(1))
    plt.close(fig)
    return len(idx)


def still(scene, params, state, path, t=None, elevation: float = 30.0, azimuth: float = -60.0, size=(5.0, 3.2),
          dpi: int = 90):
    """One state (N, 13) of the world as a picture (any matplotlib format), framed on it."""
    from ..plotting import pyplot

    plt = pyplot("still")
    body = drawn_body(scene, params.body)
    verts = world_vertices(body, np.asarray(state, float))
    cam = Camera.framing(verts.reshape(-1, 3), elevation, azimuth)
    fig, ax = plt.subplots(figsize=size, dpi=dpi)
    fig.subplots_adjust(0, 0, 1, 1)
    ground = (np.asarray(params.ground.normal), float(params.ground.height)) if scene.ground else None
    render_frame(ax, cam, hull_faces(scene, body), verts, t=t, ground=ground)
    fig.savefig(str(path))
    plt.close(fig)


__all__ = ["ANIMATION_SUFFIXES", "Camera", "animate", "still", "check_animation_path", "drawn_body", "floor_square", "frame_indices",
           "hull_faces", "render_frame", "world_vertices"]
