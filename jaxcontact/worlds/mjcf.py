"""Worlds from MuJoCo models (MJCF and URDF, through MuJoCo's own compiler) and back.

``from_mujoco(model)`` reads a compiled ``mujoco.MjModel``; ``from_mjcf(path_or_xml)`` compiles a
file or an XML string with MuJoCo first (MJCF or URDF: MuJoCo's compiler reads both, with its
defaults classes, includes, compiler options, mesh hulls, masses and inertias). Both return
``(scene, params, state, model)`` for ``worlds.rollout``. ``to_mjcf(scene, params, state)`` writes
a world as MJCF that MuJoCo loads with the same bodies, masses, inertias, friction and poses.

The mapping (docs/worlds.md, "Scenes from MuJoCo files"):

* jaxcontact body i is MuJoCo body i + 1 (the world body, 0, holds the ground plane), or where a
  jointless body is folded into the body it moves with (``FoldedModel``), MuJoCo body
  ``FoldedModel.kept[i]`` (``body_groups``: each world body's MuJoCo bodies). A body's
  frame is MuJoCo's body frame moved to its centre of mass (``body_ipos``): ``State.pos`` is
  MuJoCo's ``xipos``, ``State.quat`` its ``xquat``; the inertia is ``body_inertia`` turned from the
  principal frame (``body_iquat``) into the body frame. Mass and inertia are MuJoCo's compiled
  ones (of every geom of the body, visual ones included, as MuJoCo computes them).
* Geoms: box and mesh (as its convex hull, at most ``collision.MAX_HULL_VERTICES`` vertices), and
  natively sphere, capsule (at any pose in its body), cylinder and ellipsoid (centred on the body's
  centre of mass, axes along the body frame's), with MuJoCo's compiled sizes (``shapes.sphere``,
  …: ``Body.radius``, ``cylinder``, ``ellipsoid``); a body of several colliding box, mesh, sphere and
  capsule geoms is a ``shapes.compound`` of them (``compound_body``, MuJoCo's mass properties; a
  cylinder or ellipsoid among them is refused by name); spheres and capsules touch each other and
  hulls, cylinders and ellipsoids every kind (``collision.convex_pair``); a plane on the
  world body is the ground (the floor: normal +z); every other plane (tilted, on the world body or
  on a body without a joint) is one of the world's tilted planes (``Scene.planes``, ``Params.planes``). Geoms that collide
  with nothing (contype = conaffinity = 0) are MuJoCo's visual geoms and are skipped; a body without a colliding
  geom moves with MuJoCo's mass and inertia and touches nothing (``Scene.contactless``, ``inertia_box``); a
  body's one cylinder or ellipsoid off its centre of mass or turned in its body is a compound of one part.
* Fixed scenery (``Scene.fixed``): a body without a joint welded to the world (MuJoCo's
  ``body_weldid`` 0), and a mocap body, is a fixed body at its compiled (or keyframe) pose; each other colliding geom on
  the world body is a fixed body of its own (after MuJoCo's bodies, named by the geom, its frame
  the geom's; a sphere, capsule, cylinder or ellipsoid natively), with the geom's friction. A fixed body's mass and inertia never act (MuJoCo's, or a
  nominal 1 kg solid where MuJoCo gives none). A hinge to a fixed body is a hinge to the world.
* Joints: a free joint on a body of the world body; a hinge, slide or ball per body, or a body's
  slides then up to two hinges through one point, or two hinges alone through two (a composite, ``joints.Joints.groups``), a
  jointless body inside a moving one as a welded body (6 rows; folded into that body where it, or
  the body, has no mass or inertia of its own: ``FoldedModel``), and active connect and weld
  equalities (``worlds.joints``: docs/worlds.md, "Ball joints, composite joints, welds and
  equalities"); each joint to its parent body, or the world, with its damping, spring (stiffness, springref) and armature
  (``joints.JointParams``: MuJoCo's compiled values; its angle or displacement measured as MuJoCo's
  qpos), and its range limit (``JointParams.range``: hard, one-sided rows of the contact problem;
  MuJoCo's are soft); actuators on a hinge or slide with a fixed gain and an affine bias
  (``worlds.actuation``: motors, position and velocity servos; the keyframe's control held unless a
  rollout's controls give one per step); a hinge's or slide's friction loss (``JointParams.frictionloss``:
  a bounded row, MuJoCo's ``dof_frictionloss``); fixed tendons (``worlds.tendons``: ``wrap_prm``,
  ``tendon_range``, ``tendon_stiffness`` with ``tendon_lengthspring``, ``tendon_damping``,
  ``tendon_frictionloss``; hard limits) and their equalities (``Tendons.equal``: L₁ − L₁⁰ = p(L₂ − L₂⁰), a
  bilateral row); a ball's friction loss (each of its three dofs bounded on its own). A ball's spring toward
  anything but its zero, a free joint's damping, armature or friction loss, spatial tendons (and a tendon's
  armature, nonlinear spring or damper, plasticity, limit margin), other equality kinds, other actuators (on a
  fixed tendon they load: ``Joints.actuated``'s J + t), heightfields, flexes and plugins
  are refused by name before any work, and so are a keyframe (or ``data``) with a NaN or infinite
  entry (named by its joint and body), a keyframe quaternion 0 0 0 0 (``from_mjcf``: MuJoCo's
  compiler would make it the identity) and a centre of mass (``<inertial>``) outside its body's shape (a hull,
  a round body or a compound: every such body in one sentence each; a jointless body welded to a moving one
  whose centre of mass lies outside its own geoms is folded into that body instead, ``FoldedModel``).
* ``approximate=True`` replaces what has a stated convex stand-in: spheres, ellipsoids, capsules
  and cylinders by the hulls of points on their surfaces (``round_points``, then they touch
  other bodies too) where a body has one geom, and a mesh hull above the vertex limit (a body's, or a
  part's of a body of several geoms, which is a compound as without approximate) by
  ``collision.reduce_hull``. Mass properties stay MuJoCo's.
* The pair table: MuJoCo's filter (``contype``/``conaffinity`` of the two geoms, ``<exclude>``,
  parent and child bodies by their welds, never for a body welded to the world; no two fixed
  bodies); the ground is in the world when a moving body's geom collides with the floor plane, and the
  moving bodies whose geoms the filter keeps off it do not touch it (``Scene.no_ground``).
* Friction: the geoms' sliding μ (torsional and rolling friction, which jaxcontact does not model,
  are dropped). One μ for every geom: the law's μ, exact. Several: per-body μ
  (``worlds.materials``: √(μ_a μ_b)), where MuJoCo takes max(μ_a, μ_b) or an explicit
  ``<contact><pair>``'s friction (its geoms' bodies become a pair of the world, whatever the filter
  says); ``FrictionRuleWarning`` names the pair that differs most and by how much (none for
  ``to_mjcf``'s files, whose pairs carry √(μ_a μ_b)). condim 1 on every geom and pair: frictionless.
* ``opt.timestep`` and ``opt.gravity`` (its x and y as ``Model.gravity_xy``) give the ``Model``; a keyframe (or ``data``)
  gives the initial ``qpos``/``qvel``, else MuJoCo's reset state (``qpos0``, at rest). ``opt.density``,
  ``opt.viscosity`` and ``opt.wind`` give ``Params.medium`` (``worlds.medium``: MuJoCo's inertia-box fluid model,
  each body's principal frame ``body_iquat``; its ellipsoid model, ``fluidshape``, refused by name, and so is a
  massive body folded into its host under a medium). A file of no bodies besides the world body (a floor, assets)
  is a world of no bodies, as MuJoCo's.

mujoco is an optional extra (``pip install "jaxcontact[mjcf]"``), imported inside the functions.
"""

from __future__ import annotations

import math
import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .. import collision, shapes
from ..laws import CoulombLCP
from ..rotations import quat_to_mat
from ..types import Body, Ground, Model, Params, Planes, State
from ..validation import (BOOL, COM_TOL, DTYPE, KEYFRAME, MJ_DATA, MJ_MODEL, OPTIONAL_PATH, SOURCE, MissingExtra,
                          ComOutsideError, check_arguments, com_outside, validate_body)
from . import joints as world_joints
from .actuation import ActuatorParams
from .joints import JointedParams, JointParams, Joints
from .medium import make_medium
from .tendons import TendonParams, Tendons
from .scene import Scene, make_scene

MUJOCO_MIN_VERSION = (4, 0)  # the oldest mujoco these loaders were run and tested with
INSTALL_HINT = 'pip install "jaxcontact[mjcf]"'


class MujocoUnavailable(MissingExtra):
    """mujoco is missing or older than ``MUJOCO_MIN_VERSION``; the message names the extra."""


class FrictionRuleWarning(UserWarning):
    """A loaded world's pairs get √(μ_a μ_b) where MuJoCo gives them max(μ_a, μ_b)."""


def require_mujoco(what: str = "jaxcontact.worlds.mjcf"):
    """The ``mujoco`` module, or ``MujocoUnavailable`` (one line naming the ``[mjcf]`` extra)."""
    try:
        import mujoco
    except ImportError:
        raise MujocoUnavailable(f"{what} needs mujoco, which is not installed: {INSTALL_HINT}") from None
    if _version(getattr(mujoco, "__version__", "0")) < MUJOCO_MIN_VERSION:
        need = ".".join(map(str, MUJOCO_MIN_VERSION))
        raise MujocoUnavailable(f"{what} needs mujoco >= {need}, found {mujoco.__version__}: {INSTALL_HINT}")
    return mujoco


def mujoco_data(model, keyframe: int | None = None):
    """MuJoCo C's ``MjData`` of ``model`` at its reset state (or keyframe ``keyframe``), after
    ``mj_forward``: the start of a reference run (``mujoco_trajectory``) and of a comparison."""
    mujoco = require_mujoco("mjcf.mujoco_data")
    data = mujoco.MjData(model)
    if keyframe is not None:
        mujoco.mj_resetDataKeyframe(model, data, keyframe)
    mujoco.mj_forward(model, data)
    return data


def mujoco_trajectory(model, data, steps: int):
    """MuJoCo C's reference run from ``data``'s state: (xipos (steps + 1, nbody − 1, 3), qpos
    (steps + 1, nq)), each step's positions read after ``mj_kinematics`` (``mj_step`` leaves the
    previous step's in ``xipos``)."""
    mujoco = require_mujoco("mjcf.mujoco_trajectory")
    pos, qpos = [data.xipos[1:].copy()], [data.qpos.copy()]
    for _ in range(steps):
        mujoco.mj_step(model, data)
        mujoco.mj_kinematics(model, data)
        pos.append(data.xipos[1:].copy())
        qpos.append(data.qpos.copy())
    return np.array(pos), np.array(qpos)


def _version(text: str) -> tuple:
    out = []
    for part in str(text).split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def _one_line(text) -> str:
    return " ".join(str(text).split())


def _numbers(x) -> str:
    """Numbers as a reader writes them: ``(0, 0, 3)``, plain floats (no ``np.float64(...)``)."""
    return "(" + ", ".join(f"{float(v):g}" for v in np.ravel(x)) + ")"


# ------------------------------------------------------------------------------------ shapes

BOX_SIGNS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)  # shapes.box's order
ROUND_LONGITUDES = 12  # points per ring of a round shape's stand-in
ROUND_LATITUDES = (-60.0, -30.0, 0.0, 30.0, 60.0)  # degrees; the poles are added


def _rings(radius, lats, n=ROUND_LONGITUDES):
    phi = 2 * np.pi * np.arange(n) / n
    out = []
    for lat in np.radians(lats):
        out.append(np.c_[radius * np.cos(lat) * np.cos(phi), radius * np.cos(lat) * np.sin(phi),
                         np.full(n, radius * np.sin(lat))])
    return np.concatenate(out)


def round_points(kind: str, size) -> np.ndarray:
    """Points on the surface of a MuJoCo sphere, ellipsoid, capsule or cylinder (``geom_size``, its
    frame) whose convex hull stands in for it under ``approximate=True``: rings of
    ``ROUND_LONGITUDES`` points at the latitudes ``ROUND_LATITUDES`` and the poles (a cylinder: its
    two end rings). The hull lies inside the shape."""
    size = np.asarray(size, float)
    if kind in ("sphere", "ellipsoid"):
        unit = np.concatenate([_rings(1.0, ROUND_LATITUDES), [[0, 0, 1.0], [0, 0, -1.0]]])
        return unit * (size[0] if kind == "sphere" else size[:3])
    if kind == "capsule":
        r, h = size[0], size[1]
        top = np.concatenate([_rings(r, [0.0, 30.0, 60.0]), [[0, 0, r]]]) + [0, 0, h]
        bottom = np.concatenate([_rings(r, [0.0, -30.0, -60.0]), [[0, 0, -r]]]) - [0, 0, h]
        return np.concatenate([top, bottom])
    if kind == "cylinder":
        r, h = size[0], size[1]
        ring = _rings(r, [0.0], 2 * ROUND_LONGITUDES)
        return np.concatenate([ring + [0, 0, h], ring - [0, 0, h]])
    raise ValueError(f"round_points: no stand-in for a {kind}")


ROUND = ("sphere", "capsule", "ellipsoid", "cylinder")
COMPOUND_GEOMS = ("box", "mesh", "sphere", "capsule", "cylinder", "ellipsoid")  # the geoms a body of several may hold (shapes.compound)


def _geom_points(mujoco, model, g) -> np.ndarray:
    """The geom's vertices in its body's frame (MuJoCo's, origin at the body's frame origin)."""
    kind = mujoco.mjtGeom(model.geom_type[g]).name[len("mjGEOM_"):].lower()
    size = model.geom_size[g]
    if kind == "box":
        local = BOX_SIGNS * size
    elif kind == "mesh":
        m = model.geom_dataid[g]
        local = model.mesh_vert[model.mesh_vertadr[m]: model.mesh_vertadr[m] + model.mesh_vertnum[m]].astype(float)
    else:
        local = round_points(kind, size)
    return model.geom_pos[g] + local @ np.asarray(quat_to_mat(np.asarray(model.geom_quat[g], float))).T


def _extreme(points) -> np.ndarray:
    """The corners of the convex hull of ``points`` (``collision.hull_corners``: scipy's hull vertices
    without those on a face or an edge of the others to ``topology``'s tolerance)."""
    return collision.hull_corners(points)


# ------------------------------------------------------------------------------------ loading

def _name(mujoco, model, obj, i) -> str:
    n = mujoco.mj_id2name(_raw(model), obj, i)
    return f"{n!r}" if n else f"#{i}"


def _raw(model):
    """The compiled ``mujoco.MjModel`` behind ``model`` (a ``FoldedModel`` or the model itself)."""
    return model.raw if isinstance(model, FoldedModel) else model


def _proper(m, I) -> bool:
    """Whether a mass ``m`` and an inertia ``I`` (principal moments) can be a moving body's own."""
    return bool(m > 0 and np.all(np.asarray(I) > 0))


class FoldedModel:
    """A compiled ``mujoco.MjModel`` as the world sees it, with the jointless bodies that cannot move on
    their own folded into the body they move with (MuJoCo welds them to it: ``body_weldid``).

    A body without a joint inside a moving body moves rigidly with its parent, in MuJoCo as here.
    When it has no mass or inertia of its own (a frame that carries geoms or sites), or when the body
    it hangs from has none so far (a massless jointed frame whose mass is its jointless children's),
    it is *folded* into that body, its host: its geoms and sites become the host's at their
    relative poses, its mass and inertia are added to the host's (the combined centre of mass and
    inertia about it), its children hang from the host. A jointless body with a mass and an inertia
    under a host that has both stays a body of its own, welded to its parent by 6 rows
    (``joints`` kind "welded"), unless its centre of mass lies outside its own colliding geoms (a
    jaxcontact body's centre of mass is inside its shape; as one rigid body with its host it is
    exact, since MuJoCo moves the two rigidly: ``_com_outside_geoms``). Every other field is the model's own.

    Reads as the model: ``body_mass``, ``body_ipos``, ``body_iquat``, ``body_inertia`` are each
    host's combined ones (MuJoCo's where nothing is folded), ``geom_bodyid``/``geom_pos``/``geom_quat``
    and ``site_bodyid``/``site_pos``/``site_quat`` name the host and the pose in its frame. ``host``:
    each MuJoCo body's host (itself where not folded); ``kept``: MuJoCo's bodies that are world
    bodies, in order (jaxcontact body ``i`` is MuJoCo body ``kept[i]``); ``index(b)``: the world body
    of MuJoCo body ``b`` (its host's); ``pose[b]``: ``(pos, quat)`` of body ``b`` in its host's frame;
    ``folded``: the folded bodies."""

    def __init__(self, mujoco, model):
        M = mujoco
        self.raw = model
        n = int(model.nbody)
        jointed = {int(b) for b in model.jnt_bodyid}
        host = list(range(n))
        pos, quat = np.zeros((n, 3)), np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
        parts = {b: [b] for b in range(n)}  # each host's bodies
        mass = np.asarray(model.body_mass, float).copy()
        ipos = np.asarray(model.body_ipos, float).copy()
        iquat = np.asarray(model.body_iquat, float).copy()
        inertia = np.asarray(model.body_inertia, float).copy()
        for b in range(1, n):
            p = int(model.body_parentid[b])
            if b in jointed or _static(model, b) or p == 0:
                continue
            h = host[p]
            if (_proper(model.body_mass[b], model.body_inertia[b]) and _proper(mass[h], inertia[h])
                    and not _com_outside_geoms(M, model, b)):
                continue  # a body of its own, welded by rows
            R = np.asarray(quat_to_mat(quat[p]))
            pos[b] = pos[p] + R @ model.body_pos[b]
            q = np.zeros(4)
            M.mju_mulQuat(q, quat[p], np.asarray(model.body_quat[b], float))
            quat[b] = q / np.linalg.norm(q)
            host[b] = h
            parts[h].append(b)
            # the host's combined mass properties (about the combined centre of mass, in its frame)
            ms, cs, Is = [], [], []
            for k in parts[h]:
                Rk = np.asarray(quat_to_mat(quat[k]))
                Ri = np.asarray(quat_to_mat(np.asarray(model.body_iquat[k], float)))
                ms.append(float(model.body_mass[k]))
                cs.append(pos[k] + Rk @ model.body_ipos[k])
                Is.append(Rk @ Ri @ np.diag(model.body_inertia[k]) @ Ri.T @ Rk.T)
            total = sum(ms)
            c = sum(m * x for m, x in zip(ms, cs)) / total if total > 0 else cs[0]
            I = sum(Ik + m * (np.dot(x - c, x - c) * np.eye(3) - np.outer(x - c, x - c)) for m, x, Ik in zip(ms, cs, Is))
            w, V = np.linalg.eigh(0.5 * (I + I.T))
            if np.linalg.det(V) < 0:
                V[:, 0] = -V[:, 0]
            qi = np.zeros(4)
            M.mju_mat2Quat(qi, np.ascontiguousarray(V).reshape(-1))
            mass[h], ipos[h], iquat[h], inertia[h] = total, c, qi, np.where(np.abs(w) < 1e-15 * max(1.0, np.max(np.abs(w))), 0.0, w)
        self.host = tuple(host)
        self.pose = tuple((pos[b], quat[b]) for b in range(n))
        self.folded = frozenset(b for b in range(n) if host[b] != b)
        self.kept = tuple(b for b in range(1, n) if host[b] == b)
        self.parts = {h: tuple(ps) for h, ps in parts.items() if h == host[h]}
        self._index = {b: k for k, b in enumerate(self.kept)}
        self.body_mass, self.body_ipos, self.body_iquat, self.body_inertia = mass, ipos, iquat, inertia
        for what in ("geom", "site"):
            bodyid = np.asarray(getattr(model, f"{what}_bodyid")).copy()
            at = np.asarray(getattr(model, f"{what}_pos"), float).copy()
            turn = np.asarray(getattr(model, f"{what}_quat"), float).copy()
            for g in range(len(bodyid)):
                b = int(bodyid[g])
                if host[b] != b:
                    at[g] = pos[b] + np.asarray(quat_to_mat(quat[b])) @ at[g]
                    q = np.zeros(4)
                    M.mju_mulQuat(q, quat[b], turn[g].copy())
                    turn[g] = q
                    bodyid[g] = host[b]
            setattr(self, f"{what}_bodyid", bodyid)
            setattr(self, f"{what}_pos", at)
            setattr(self, f"{what}_quat", turn)

    def __getattr__(self, name):
        return getattr(self.raw, name)

    def index(self, b: int) -> int:
        """The world body of MuJoCo body ``b`` (its host's index in ``kept``)."""
        return self._index[self.host[b]]

    def on_host(self, b: int, point) -> np.ndarray:
        """A point of MuJoCo body ``b``'s frame in its host's frame."""
        p, q = self.pose[b]
        return p + np.asarray(quat_to_mat(q)) @ np.asarray(point, float)

    def xipos(self, d, b: int) -> np.ndarray:
        """World body ``b``'s centre of mass in ``d`` (MuJoCo's ``xipos`` where nothing is folded)."""
        if len(self.parts.get(b, (b,))) == 1:
            return np.asarray(d.xipos[b], float)
        return np.asarray(d.xpos[b], float) + np.asarray(d.xmat[b], float).reshape(3, 3) @ self.body_ipos[b]


def _com_outside_geoms(mujoco, model, b: int) -> bool:
    """Whether MuJoCo body ``b``'s centre of mass (``body_ipos``) lies outside the convex hull of its own
    colliding geoms (their vertices, a round geom's surface points: ``_geom_points``) by more than
    ``COM_TOL`` of their size; False for a body without such geoms, or a flat or degenerate set."""
    gs = [g for g in range(model.ngeom) if model.geom_bodyid[g] == b and _colliding(model, g)
          and model.geom_type[g] != mujoco.mjtGeom.mjGEOM_PLANE]
    if not gs:
        return False
    pts = np.concatenate([_geom_points(mujoco, model, g) for g in gs]) - np.asarray(model.body_ipos[b], float)
    if len(pts) < 4:
        return False
    return bool(com_outside(pts) > COM_TOL * np.max(np.linalg.norm(pts, axis=1)))


def body_groups(model) -> tuple:
    """For each world body ``from_mujoco(model)`` makes of MuJoCo's bodies (in order, before the world
    body's own geoms), the MuJoCo body ids it holds: its own, then those folded into it
    (``FoldedModel``). Its centre of mass is theirs, weighted by ``body_mass``."""
    f = FoldedModel(require_mujoco("body_groups"), model)
    return tuple(f.parts[b] for b in f.kept)


def _check(mujoco, model, approximate: bool):
    """Everything the world cannot hold, as a list of sentences (empty: supported)."""
    M = mujoco
    problems = []
    counts = [("nflex", "flexes"), ("nplugin", "plugins")]
    problems += _actuator_problems(M, model)
    problems += _tendon_problems(M, model)
    problems += _equality_problems(M, model)
    for field, what in counts:
        k = int(getattr(model, field, 0))
        if k:
            problems.append(f"{k} {what} (jaxcontact worlds have none)")
    for j in range(model.njnt):
        t = model.jnt_type[j]
        b = model.jnt_bodyid[j]
        name = f"joint {_name(M, model, M.mjtObj.mjOBJ_JOINT, j)} of body {_name(M, model, M.mjtObj.mjOBJ_BODY, b)}"
        if t == M.mjtJoint.mjJNT_FREE and model.body_parentid[b] != 0:
            problems.append(f"{name}: a free joint on a body inside another body")
        # a hinge's, slide's or ball's damping and armature load, a hinge's or slide's spring (joints.JointParams)
        hinge = _joint_kind(M, model, j) is not None
        ball_spring = t == M.mjtJoint.mjJNT_BALL and np.allclose(  # toward the ball's zero: its coordinates
            model.qpos_spring[model.jnt_qposadr[j]:model.jnt_qposadr[j] + 4], (1.0, 0.0, 0.0, 0.0), atol=1e-12)
        if model.jnt_stiffness[j] != 0 and _joint_kind(M, model, j) not in ("hinge", "slide") and not ball_spring:
            problems.append(f"{name}: a joint spring (stiffness {model.jnt_stiffness[j]:g}) on a "
                            f"{M.mjtJoint(t).name[len('mjJNT_'):].lower()} joint (jaxcontact's joint springs are a "
                            "hinge's or a slide's)")
        dofs = range(model.jnt_dofadr[j], model.jnt_dofadr[j] + {int(M.mjtJoint.mjJNT_FREE): 6,
                                                                   int(M.mjtJoint.mjJNT_BALL): 3}.get(int(t), 1))
        for field, what in (("dof_damping", "damping"), ("dof_armature", "armature"), ("dof_frictionloss", "friction loss")):
            v = np.asarray(getattr(model, field))[list(dofs)]
            if np.any(v != 0) and not hinge:
                problems.append(f"{name}: joint {what} {float(np.max(np.abs(v))):g} (no jaxcontact counterpart on a free "
                                "joint: a hinge's or slide's loads)")
            elif np.any(v != 0) and what == "friction loss" and (_joint_kind(M, model, j) not in ("hinge", "slide", "ball")
                                                                 or np.ptp(v) != 0):
                problems.append(f"{name}: joint friction loss {_numbers(v)} on a {_joint_kind(M, model, j)} joint (a "
                                "hinge's, a slide's or a ball's, one value for its three dofs, loads)")
    for b in range(1, model.nbody):
        name = f"body {_name(M, model, M.mjtObj.mjOBJ_BODY, b)}"
        joints = [j for j in range(model.njnt) if model.jnt_bodyid[j] == b]
        if len(joints) > 1:
            problems += _composite_problems(M, model, name, joints)
        elif model.body_mocapid[b] >= 0:
            pass  # a mocap body: fixed scenery where its mocap_pos puts it (_fixed_bodies)
        # a jointless body inside a moving one: folded into its host (FoldedModel), or welded by rows
        if hasattr(model, "body_gravcomp") and model.body_gravcomp[b] != 0:
            problems.append(f"{name}: gravity compensation")
    for g in range(model.ngeom):
        kind = M.mjtGeom(model.geom_type[g]).name[len("mjGEOM_"):].lower()
        b = model.geom_bodyid[g]
        name = f"geom {_name(M, model, M.mjtObj.mjOBJ_GEOM, g)} ({kind}) of body {_name(M, model, M.mjtObj.mjOBJ_BODY, b)}"
        if model.geom_contype[g] == 0 and model.geom_conaffinity[g] == 0:
            continue  # visual: collides with nothing
        if kind == "plane":
            if b != 0 and not _static(model, b):
                problems.append(f"{name}: a plane on a moving body (a plane is fixed scenery: a geom of the world body "
                                "or of a body without a joint)")
            elif b != 0 and not any(model.geom_bodyid[h] == b and _colliding(model, h)
                                    and model.geom_type[h] != M.mjtGeom.mjGEOM_PLANE for h in range(model.ngeom)):
                problems.append(f"{name}: a plane alone on a body without a joint (jaxcontact body i is MuJoCo body "
                                "i + 1, and a plane is no body: put it on the world body)")
        elif (b != 0 and not approximate and kind not in COMPOUND_GEOMS
              and sum(model.geom_bodyid[h] == b and _colliding(model, h) for h in range(model.ngeom)) > 1):
            problems.append(f"{name}: a {kind} in a body of several colliding geoms (a compound's parts are "
                            f"{', '.join(COMPOUND_GEOMS)}; approximate=True or --approximate: the convex hull of them all)")
        elif kind not in ROUND + ("box", "mesh"):
            problems.append(f"{name}: no jaxcontact counterpart")
    for p in range(int(getattr(model, "npair", 0))):
        name = f"contact pair {_name(M, model, M.mjtObj.mjOBJ_PAIR, p)}"
        for g in (model.pair_geom1[p], model.pair_geom2[p]):
            if not _colliding(model, g):
                problems.append(f"{name}: geom {_name(M, model, M.mjtObj.mjOBJ_GEOM, g)} collides only through "
                                "explicit pairs (contype = conaffinity = 0; jaxcontact reads such geoms as visual)")
        mu = np.asarray(model.pair_friction[p], float)
        if model.pair_dim[p] > 1 and mu[0] != mu[1]:
            problems.append(f"{name}: anisotropic friction {_numbers(mu[:2])} (jaxcontact's pairs are isotropic)")
    if model.opt.disableflags & M.mjtDisableBit.mjDSBL_CONSTRAINT:  # MuJoCo drops every constraint row
        rows = [what for what, has in (("joint limits", np.any(model.jnt_limited)), ("equalities", model.neq > 0),
                                        ("friction loss", np.any(model.dof_frictionloss != 0)),
                                        ("tendon limits", np.any(getattr(model, "tendon_limited", [])))) if has]
        if rows:
            problems.append(f"option flag constraint disabled beside {', '.join(rows)} (MuJoCo drops them; a jaxcontact "
                            "world keeps them)")
    if _has_medium(model):  # MuJoCo's inertia-box fluid model loads (worlds.medium); its ellipsoid model does not
        for b in range(1, model.nbody):
            name = f"body {_name(M, model, M.mjtObj.mjOBJ_BODY, b)}"
            mass = float(model.raw.body_mass[b])
            ellipsoid = [g for g in range(model.ngeom) if model.raw.geom_bodyid[g] == b
                         and np.ravel(model.geom_fluid)[g * M.mjNFLUID] > 0]
            if ellipsoid and mass >= 1e-15:
                problems.append(f"{name}: the ellipsoid fluid model (geom {_name(M, model, M.mjtObj.mjOBJ_GEOM, ellipsoid[0])}"
                                " fluidshape=\"ellipsoid\"; jaxcontact's medium is MuJoCo's inertia-box model)")
            elif b in model.folded and mass >= 1e-15:
                problems.append(f"{name}: a jointless body with a mass of its own folded into its host under a fluid "
                                "medium (MuJoCo drags each body's own inertia box, the world would drag the host's)")
    return problems


def _has_medium(model) -> bool:
    """Whether MuJoCo's passive fluid forces act (``opt.density``, ``opt.viscosity``; wind alone drags nothing)."""
    return bool(model.opt.density != 0 or model.opt.viscosity != 0)


def _centred(model, g, tol: float = 1e-9) -> bool:
    """Whether geom ``g`` sits at its body's centre of mass with the body frame's axes (its quat ±1 0 0 0)."""
    b = model.geom_bodyid[g]
    at = np.linalg.norm(np.asarray(model.geom_pos[g], float) - model.body_ipos[b])
    q = np.asarray(model.geom_quat[g], float)
    return at <= tol * max(1.0, float(np.max(model.geom_size[g]))) and abs(abs(q[0]) - 1.0) <= tol


def _offset_round(M, model, g) -> bool:
    """Whether geom ``g`` is a cylinder or an ellipsoid off its body's centre of mass or turned in its
    body frame: a compound of one part at its pose (``compound_body``); a body's one centred
    cylinder or ellipsoid, and a sphere or capsule anywhere, is a round body (``_round_body``)."""
    kind = M.mjtGeom(model.geom_type[g]).name[len("mjGEOM_"):].lower()
    return kind in ("cylinder", "ellipsoid") and not _centred(model, g)


def _round_body(M, model, g, b) -> Body:
    """Body ``b``'s one round geom ``g`` natively (``Body.radius``, ``cylinder``, ``ellipsoid``) in the
    frame at the centre of mass, with MuJoCo's compiled sizes, mass and inertia."""
    kind = M.mjtGeom(model.geom_type[g]).name[len("mjGEOM_"):].lower()
    size = np.asarray(model.geom_size[g], float)
    c = np.asarray(model.geom_pos[g], float) - model.body_ipos[b]
    R = np.asarray(quat_to_mat(np.asarray(model.body_iquat[b], float)))
    inertia = R @ np.diag(model.body_inertia[b]) @ R.T
    mass = float(model.body_mass[b])
    if kind == "sphere":
        return shapes.sphere(size[0], 1.0).replace(mass=jnp.asarray(mass), inertia=jnp.asarray(inertia),
                                                  vertices=jnp.asarray(c[None]))
    if kind == "capsule":
        axis = np.asarray(quat_to_mat(np.asarray(model.geom_quat[g], float)))[:, 2]
        return shapes.capsule(size[0], size[1], 1.0).replace(mass=jnp.asarray(mass), inertia=jnp.asarray(inertia),
                                                            vertices=jnp.asarray(np.stack([c - size[1] * axis,
                                                                                           c + size[1] * axis])))
    body = shapes.cylinder(size[0], size[1], 1.0) if kind == "cylinder" else shapes.ellipsoid(size[:3], 1.0)
    return body.replace(mass=jnp.asarray(mass), inertia=jnp.asarray(inertia))


def inertia_box(mujoco, model, b: int, name: str, fixed: bool) -> Body:
    """Body ``b``, which has no colliding geom, as its equivalent-inertia box (MuJoCo's own picture of
    a body's inertia, ``mjVIS_INERTIA``: the uniform box of its mass and principal inertia, along
    ``body_iquat``) with MuJoCo's compiled mass and inertia: the world's ``Scene.contactless`` body
    (its shape touches nothing; it is what ``worlds.animate`` draws). A moving body needs a mass and
    an inertia (refused by name otherwise); a fixed one without them gets a nominal 1 kg cube of 1 cm."""
    mass, I = float(model.body_mass[b]), np.asarray(model.body_inertia[b], float)
    R = np.asarray(quat_to_mat(np.asarray(model.body_iquat[b], float)))
    if not (mass > 0 and np.all(I > 0)):
        if not fixed:
            raise ValueError(f"unsupported in a jaxcontact world: {name} has no colliding geom and no mass or inertia "
                             f"(mass {mass:g}, inertia {_numbers(I)}; a moving body needs both: give it an <inertial>)")
        return shapes.box(0.01, 1.0)
    edges2 = 6.0 / mass * (np.sum(I) - 2 * I)  # full edges squared: I_x = m (B² + C²) / 12, ...
    edges = np.sqrt(np.maximum(edges2, (1e-3 * np.sqrt(np.max(edges2))) ** 2 if np.max(edges2) > 0 else 1e-8))
    verts = (BOX_SIGNS * edges / 2) @ R.T
    return shapes._as_body(verts, mass, R @ np.diag(I) @ R.T, None)


def compound_body(mujoco, model, b: int, gs, fixed: bool, approximate: bool = False) -> Body:
    """Body ``b`` of several colliding geoms ``gs`` as a ``shapes.compound`` of them (boxes, meshes as
    their convex hulls, spheres, capsules: ``COMPOUND_GEOMS``) at their poses in the body frame, with
    MuJoCo's compiled mass, inertia (``body_inertia`` turned from ``body_iquat``) and centre of mass
    (``body_ipos``), which sum the geoms' as ``shapes.compound`` does by default (or an
    ``<inertial>``'s); a massless fixed body: the parts' combined, of 1 kg each (never used).
    approximate: a mesh part above ``collision.MAX_HULL_VERTICES`` is ``collision.reduce_hull``'s."""
    M = mujoco
    parts, poses = [], []
    for g in gs:
        kind = M.mjtGeom(model.geom_type[g]).name[len("mjGEOM_"):].lower()
        size = np.asarray(model.geom_size[g], float)
        pose = (np.asarray(model.geom_pos[g], float), np.asarray(model.geom_quat[g], float))
        if kind == "box":
            parts.append(shapes.box(2 * size, 1.0))
        elif kind == "sphere":
            parts.append(shapes.sphere(size[0], 1.0))
        elif kind == "capsule":
            parts.append(shapes.capsule(size[0], size[1], 1.0))
        elif kind == "cylinder":  # MuJoCo's axis is the geom's z, as shapes.cylinder's
            parts.append(shapes.cylinder(size[0], size[1], 1.0))
        elif kind == "ellipsoid":
            parts.append(shapes.ellipsoid(size[:3], 1.0))
        else:  # a mesh: its hull in the body frame, placed at its own centre of mass
            pts = _within_vertex_limit(_extreme(_geom_points(mujoco, model, g)), f"geom {_name(M, model, M.mjtObj.mjOBJ_GEOM, g)}",
                                       approximate)
            hull = shapes.convex_hull(pts, 1.0)
            v = np.asarray(hull.vertices)
            pose = (pts.mean(0) - v.mean(0), np.array([1.0, 0.0, 0.0, 0.0]))  # the same vertex set, shifted
            parts.append(hull)
        poses.append(pose)
    mass = float(model.body_mass[b])
    if fixed and not (mass > 0 and np.all(np.asarray(model.body_inertia[b]) > 0)):
        return shapes.compound(parts, poses)
    R = np.asarray(quat_to_mat(np.asarray(model.body_iquat[b], float)))
    return shapes.compound(parts, poses, mass=mass, inertia=R @ np.diag(model.body_inertia[b]) @ R.T,
                           com=np.asarray(model.body_ipos[b], float))


def _outside_sentence(name: str, out: float, what: str) -> str:
    return (f"the centre of mass of {name} (MuJoCo's body_ipos, from its <inertial> or its geoms) lies {out:.3g} m "
            f"outside {what} (a jaxcontact body's centre of mass is inside its shape); move the <inertial> pos inside")


def _com_problem(body: Body, name: str) -> list:
    """``[sentence]`` when the centre of mass of ``body`` (a round body or a compound ``from_mujoco`` built,
    its frame at MuJoCo's ``body_ipos``) lies outside its shape (its parts' hulls swept by their radii,
    ``validation.validate_body``'s rule, which a rollout would refuse it by), else ``[]``."""
    try:
        validate_body(body)
    except ComOutsideError as err:
        return [_outside_sentence(name, err.distance, "its colliding geoms (their hulls swept by their radii)")]
    return []


APPROXIMATE_HULL_VERTICES = 128
"""``approximate=True``'s hulls: a mesh hull above this many corners is reduced to its extreme ones
(``collision.reduce_hull``), for speed: a world pads every body to its largest hull, and Metaworld's
Sawyer (its gripper's exact hull of 874 corners) steps in 562 ms of CPU exact against 230 ms reduced
(``python -m benchmarks.hull_sizes``, ``benchmarks/results/hull_sizes.md``, with each reduction's largest
surface deviation: 1.6 mm on that gripper, 2.7 % of its size). Strict loads keep the exact hull up to
``collision.MAX_HULL_VERTICES``."""


def _within_vertex_limit(verts, name: str, approximate: bool) -> np.ndarray:
    """A hull's vertices within the engine's limit: the exact hull up to ``collision.MAX_HULL_VERTICES``
    (refused by name above it); ``approximate``: reduced to its extreme ``APPROXIMATE_HULL_VERTICES``
    above that."""
    if approximate and len(verts) > APPROXIMATE_HULL_VERTICES:
        return collision.reduce_hull(verts, APPROXIMATE_HULL_VERTICES)
    if len(verts) <= collision.MAX_HULL_VERTICES:
        return verts
    if not approximate:
        raise ValueError(f"unsupported in a jaxcontact world: {name}'s hull has {len(verts)} vertices, above the "
                         f"engine's limit of {collision.MAX_HULL_VERTICES} (approximate=True or --approximate: "
                         "collision.reduce_hull keeps its extreme vertices)")
    return collision.reduce_hull(verts, APPROXIMATE_HULL_VERTICES)


def _plane_normal(model, g) -> np.ndarray:
    """A world-body plane's normal (its z axis in the world: the world body's frame is the world's)."""
    return np.asarray(quat_to_mat(np.asarray(model.geom_quat[g], float)))[:, 2]


def _floor(model, g) -> bool:
    """Whether world-body plane ``g`` is the floor (normal +z), which stays the world's ground."""
    return bool(np.linalg.norm(_plane_normal(model, g) - [0.0, 0.0, 1.0]) < 1e-9)


def _static(model, b: int) -> bool:
    """Whether MuJoCo body ``b`` is welded to the world (no joint on the way to it) or is a mocap body
    (moved only by the user, through ``data.mocap_pos``/``mocap_quat``; at rest in a simulation)."""
    return bool(model.body_weldid[b] == 0 or model.body_mocapid[b] >= 0)


def _fixed_bodies(model) -> list:
    """MuJoCo's bodies welded to the world and its mocap bodies (``_static``): fixed bodies. A mocap
    body's pose is its state's, so a user moves it between rollouts as MuJoCo's ``mocap_pos`` does
    between steps."""
    return [b for b in range(1, model.nbody) if _static(model, b)]


def _nominal_inertia(verts) -> np.ndarray:
    """The inertia of a 1 kg uniform solid hull of ``verts`` (about its own centroid): a fixed body's
    mass properties never enter the physics (infinite mass), but a body must have valid ones."""
    return shapes.polyhedron_mass_properties(np.asarray(verts, float), 1.0)[1]


def _colliding(model, g) -> bool:
    return bool(model.geom_contype[g] or model.geom_conaffinity[g])


def _compatible(model, g1, g2) -> bool:
    return bool((model.geom_contype[g1] & model.geom_conaffinity[g2]) or (model.geom_contype[g2] & model.geom_conaffinity[g1]))


def _keyframe_index(M, model, keyframe) -> int:
    """The index of ``keyframe`` (a name or an index) in ``model``, or a one-line ``ValueError``."""
    if isinstance(keyframe, str):
        k = M.mj_name2id(model, M.mjtObj.mjOBJ_KEY, keyframe)
        if k < 0:
            names = [M.mj_id2name(model, M.mjtObj.mjOBJ_KEY, i) for i in range(model.nkey)]
            raise ValueError(f"keyframe {keyframe!r}: no such keyframe (the model has {names or 'none'})")
        return k
    k = int(keyframe)
    if not 0 <= k < model.nkey:
        raise ValueError(f"keyframe {keyframe}: the model has {model.nkey} keyframes")
    return k


FREE_QPOS = ("position x", "position y", "position z", "quaternion w", "quaternion x", "quaternion y", "quaternion z")
FREE_QVEL = ("velocity x", "velocity y", "velocity z", "angular velocity x", "angular velocity y", "angular velocity z")


def _coordinate(M, model, index: int, field: str) -> str:
    """What ``qpos[index]`` (``field`` "qpos") or ``qvel[index]`` ("qvel") of ``model`` is, in the
    file's names: ``free joint 'lid' of body 'box': position z``."""
    adr = model.jnt_qposadr if field == "qpos" else model.jnt_dofadr
    j = int(np.searchsorted(np.asarray(adr), index, side="right")) - 1
    free = model.jnt_type[j] == M.mjtJoint.mjJNT_FREE
    kind = "free joint" if free else "joint"
    part = (FREE_QPOS if field == "qpos" else FREE_QVEL)[index - adr[j]] if free else (
        "angle" if field == "qpos" else "angular velocity")
    return (f"{kind} {_name(M, model, M.mjtObj.mjOBJ_JOINT, j)} of body "
            f"{_name(M, model, M.mjtObj.mjOBJ_BODY, model.jnt_bodyid[j])}: {part}")


def _check_start(M, model, qpos, qvel, what: str) -> None:
    """A world's start refused in one line: a NaN or infinite ``qpos``/``qvel`` entry of ``what``
    (a keyframe, ``data``), named by its joint and body."""
    for field, values in (("qpos", qpos), ("qvel", qvel)):
        bad = np.flatnonzero(~np.isfinite(np.asarray(values, float)))
        if len(bad):
            i = int(bad[0])
            more = f" (and {len(bad) - 1} more entries)" if len(bad) > 1 else ""
            raise ValueError(f"{what}: {field}[{i}] is {float(values[i])} ({_coordinate(M, model, i, field)}){more}; "
                             "a world starts from finite positions and velocities")


def key_quaternions(mujoco, spec, model, keyframe) -> None:
    """Refuse (one ``ValueError``) a keyframe of ``spec`` (a ``mujoco.MjSpec``, before MuJoCo's
    compiler turns a zero quaternion into the identity) whose free-joint quaternion has zero norm,
    naming the keyframe and the body; ``model`` is ``spec`` compiled."""
    M = mujoco
    k = _keyframe_index(M, model, keyframe)
    raw = np.asarray(list(spec.keys[k].qpos), float)
    for j in range(model.njnt):
        if model.jnt_type[j] != M.mjtJoint.mjJNT_FREE:
            continue
        a = int(model.jnt_qposadr[j]) + 3
        if len(raw) >= a + 4 and np.all(np.isfinite(raw[a:a + 4])) and np.linalg.norm(raw[a:a + 4]) == 0:
            raise ValueError(f"keyframe {_name(M, model, M.mjtObj.mjOBJ_KEY, k)}: qpos[{a}:{a + 4}] is the quaternion "
                             f"0 0 0 0 of body {_name(M, model, M.mjtObj.mjOBJ_BODY, model.jnt_bodyid[j])} (free joint "
                             f"{_name(M, model, M.mjtObj.mjOBJ_JOINT, j)}), which is no rotation; MuJoCo would read it as "
                             "the identity (1 0 0 0): write that if it is meant")


def from_mujoco(model, keyframe=None, data=None, approximate: bool = False, dtype=None, **scene_kw):
    """``(scene, params, state, jc_model)`` of the world a compiled ``mujoco.MjModel`` describes.

    keyframe: a keyframe's index or name for the initial ``qpos``/``qvel`` (``mj_resetDataKeyframe``);
    data: an ``MjData`` whose ``qpos``/``qvel`` start the world instead; neither: MuJoCo's reset state
    (``qpos0``, at rest). approximate: replace spheres, ellipsoids, capsules and cylinders, several
    geoms on one body and hulls above the vertex limit by stated convex stand-ins (module
    docstring) instead of refusing them. dtype: of the arrays (default: JAX's default float).
    scene_kw: ``make_scene`` settings (``max_pairs``, ``margin``, ...). Anything the world cannot
    hold raises one ``ValueError`` naming every such element and why, before any other work; so
    does a start (the keyframe, ``data``) with a NaN or infinite entry (its joint and body named),
    and a body whose centre of mass lies outside its shape. Explicit ``<contact><pair>``s are pairs
    of the world; the bodies keep the file's names (``Scene.names``)."""
    check_arguments("worlds.from_mujoco", model=(model, MJ_MODEL), keyframe=(keyframe, KEYFRAME), data=(data, MJ_DATA),
                    approximate=(approximate, BOOL), dtype=(dtype, DTYPE))
    mujoco = require_mujoco("from_mujoco")
    M = mujoco
    if not isinstance(model, M.MjModel):
        raise ValueError(f"from_mujoco: expected a mujoco.MjModel, got {type(model).__name__}")
    model = FoldedModel(M, model)  # jaxcontact body i is MuJoCo body model.kept[i]
    problems = _check(mujoco, model, approximate)
    # a world of fixed scenery alone loads (its bodies held, nothing moves); so does a file of a floor or assets
    # alone (no bodies besides the world body: a world of none, which steps as MuJoCo's does, with nothing to move)
    if problems:
        raise ValueError("unsupported in a jaxcontact world: " + "; ".join(problems))
    dtype = jnp.result_type(float) if dtype is None else dtype

    d = M.MjData(model.raw)
    if data is not None:
        _check_start(M, model, data.qpos, data.qvel, "data")
        d.qpos[:], d.qvel[:] = data.qpos, data.qvel
    elif keyframe is not None:
        k = _keyframe_index(M, model, keyframe)
        _check_start(M, model, model.key_qpos[k], model.key_qvel[k],
                     f"keyframe {_name(M, model, M.mjtObj.mjOBJ_KEY, k)}")
        M.mj_resetDataKeyframe(model.raw, d, k)
    M.mj_forward(model.raw, d)

    # bodies: geometry and mass in the frame at the centre of mass, oriented as MuJoCo's body frame;
    # then the world body's geoms, each a fixed body (after MuJoCo's bodies: body i is still MuJoCo's i + 1)
    plane = next((g for g in range(model.ngeom) if model.geom_type[g] == M.mjtGeom.mjGEOM_PLANE
                  and model.geom_bodyid[g] == 0 and _colliding(model, g) and _floor(model, g)), None)
    tilted = [g for g in range(model.ngeom) if model.geom_type[g] == M.mjtGeom.mjGEOM_PLANE and _colliding(model, g)
              and g != plane]  # every other plane (tilted, a second floor, on a fixed body): Scene.planes
    world_geoms = [g for g in range(model.ngeom) if model.geom_bodyid[g] == 0 and _colliding(model, g)
                   and model.geom_type[g] != M.mjtGeom.mjGEOM_PLANE]
    fixed_mj = set(_fixed_bodies(model))
    nk = len(model.kept)  # MuJoCo's bodies that are world bodies (the others folded into them)
    fixed = [model.index(b) for b in sorted(fixed_mj)] + [nk + k for k in range(len(world_geoms))]
    n = nk + len(world_geoms)
    bodies, mus, condims, geoms, contactless, outside = [], [], [], [], [], []
    for b in model.kept:
        gs = [g for g in range(model.ngeom) if model.geom_bodyid[g] == b and _colliding(model, g) and g not in tilted]
        name = f"body {_name(M, model, M.mjtObj.mjOBJ_BODY, b)}"
        if not gs:  # collides with nothing: moves (or is fixed) with MuJoCo's mass, touches nothing
            bodies.append(inertia_box(M, model, b, name, b in fixed_mj))
            contactless.append(model.index(b))
            mus.append(None)
            condims.append(set())
            geoms.append([])
            continue
        kinds = {int(model.geom_type[g]) for g in gs}
        if len(gs) > 1 or (_offset_round(M, model, gs[0]) and not approximate):  # a body of several shapes: its
            # geoms the compound's parts (approximate: a mesh part above the vertex limit reduced); so is one
            # cylinder or ellipsoid off the centre of mass or turned in its body
            bodies.append(compound_body(mujoco, model, b, gs, b in fixed_mj, approximate))
            outside += _com_problem(bodies[-1], name)
            mus.append(max(float(model.geom_friction[g, 0]) for g in gs))
            condims.append({int(model.geom_condim[g]) for g in gs})
            geoms.append(gs)
            continue
        if len(gs) == 1 and not approximate and M.mjtGeom(model.geom_type[gs[0]]).name[len("mjGEOM_"):].lower() in ROUND:
            bodies.append(_round_body(M, model, gs[0], b))  # natively: a sphere, capsule, cylinder or ellipsoid
            outside += _com_problem(bodies[-1], name)
            mus.append(float(model.geom_friction[gs[0], 0]))
            condims.append({int(model.geom_condim[gs[0]])})
            geoms.append(gs)
            continue
        pts = np.concatenate([_geom_points(mujoco, model, g) for g in gs]) - model.body_ipos[b]
        if len(gs) == 1 and kinds == {int(M.mjtGeom.mjGEOM_BOX)}:
            verts = pts  # a box keeps shapes.box's 8 corners in their order
        else:
            verts = _within_vertex_limit(_extreme(pts), name, approximate)
        out = com_outside(verts)
        if out > COM_TOL * np.max(np.linalg.norm(verts, axis=1)):
            outside.append(_outside_sentence(name, out, "the convex hull of its colliding geoms"))
            verts = verts - verts.mean(0)  # a stand-in while the other bodies are checked (refused below)
        R = np.asarray(quat_to_mat(np.asarray(model.body_iquat[b], float)))
        inertia = R @ np.diag(model.body_inertia[b]) @ R.T
        mass = float(model.body_mass[b])
        if b in fixed_mj and not (mass > 0 and np.all(np.asarray(model.body_inertia[b]) > 0)):
            mass, inertia = 1.0, _nominal_inertia(verts)  # a massless fixed body: nominal (never used)
        body = shapes._as_body(np.asarray(verts, float), mass, inertia, None)
        bodies.append(body)
        mus.append(max(float(model.geom_friction[g, 0]) for g in gs))
        condims.append({int(model.geom_condim[g]) for g in gs})
        geoms.append(gs)

    if outside:  # every moving body whose centre of mass lies outside its geoms, in one refusal
        raise ValueError("unsupported in a jaxcontact world: " + "; ".join(outside))

    # geoms on the world body (but the floor plane): each a fixed body, its frame the geom's
    for g in world_geoms:
        name = f"geom {_name(M, model, M.mjtObj.mjOBJ_GEOM, g)} of the world body"
        kind = M.mjtGeom(model.geom_type[g]).name[len("mjGEOM_"):].lower()
        if kind in ROUND and not approximate:  # natively, in the geom's frame (a nominal 1 kg, never used)
            size = np.asarray(model.geom_size[g], float)
            bodies.append({"sphere": lambda: shapes.sphere(size[0], 1.0), "capsule": lambda: shapes.capsule(size[0], size[1], 1.0),
                           "cylinder": lambda: shapes.cylinder(size[0], size[1], 1.0),
                           "ellipsoid": lambda: shapes.ellipsoid(size[:3], 1.0)}[kind]())
            mus.append(float(model.geom_friction[g, 0]))
            condims.append({int(model.geom_condim[g])})
            geoms.append([g])
            continue
        local = _geom_points(mujoco, model, g)
        local = (local - model.geom_pos[g]) @ np.asarray(quat_to_mat(np.asarray(model.geom_quat[g], float)))
        verts = local if model.geom_type[g] == M.mjtGeom.mjGEOM_BOX else _within_vertex_limit(_extreme(local), name,
                                                                                              approximate)
        out = com_outside(verts)
        if out > COM_TOL * np.max(np.linalg.norm(verts, axis=1)):
            raise ValueError(f"unsupported in a jaxcontact world: {name}'s frame lies {out:.3g} m outside its hull "
                             "(a fixed body's frame is inside its hull)")
        bodies.append(shapes._as_body(np.asarray(verts, float), 1.0, _nominal_inertia(verts), None))
        mus.append(float(model.geom_friction[g, 0]))
        condims.append({int(model.geom_condim[g])})
        geoms.append([g])

    # a body that collides with nothing takes another's μ (never used), so that one μ stays one μ
    known = [m for m in mus if m is not None]
    fill = known[0] if known else (float(model.geom_friction[plane, 0]) if plane is not None else 1.0)
    mus = [fill if m is None else m for m in mus]

    # explicit <contact><pair>s: body pairs (-1: the ground plane) MuJoCo collides whatever its filter
    # says, with the pair's own friction in place of max(mu_a, mu_b)
    explicit = {}
    for p in range(int(getattr(model, "npair", 0))):
        if model.pair_geom1[p] in tilted or model.pair_geom2[p] in tilted:  # a plane's pair: its μ checked below
            condims.append({int(model.pair_dim[p])})
            continue
        b1, b2 = (nk + world_geoms.index(g) if g in world_geoms else
                  (model.index(int(model.geom_bodyid[g])) if model.geom_bodyid[g] else -1)
                  for g in (model.pair_geom1[p], model.pair_geom2[p]))
        explicit[tuple(sorted((b1, b2)))] = 0.0 if model.pair_dim[p] == 1 else float(model.pair_friction[p, 0])
        condims.append({int(model.pair_dim[p])})

    # friction: one μ (exact) or per body (the geometric mean against MuJoCo's max rule)
    all_condims = set().union(*condims) | ({int(model.geom_condim[plane])} if plane is not None else set())
    all_condims |= {int(model.geom_condim[g]) for g in tilted}
    if all_condims == {1}:
        mus, ground_mu = [0.0] * n, 0.0
    else:  # condim 1 beside friction: each body keeps its μ; MuJoCo's condim rule is compared (_warn_friction)
        ground_mu = float(model.geom_friction[plane, 0]) if plane is not None else None

    # the pair table: MuJoCo's filter
    excluded = set()
    for sig in np.asarray(model.exclude_signature).reshape(-1):
        b1, b2 = int(sig) >> 16, int(sig) & 0xFFFF  # MuJoCo body ids (a folded body's: its host's)
        excluded.add(tuple(sorted((model.host[b1], model.host[b2]))))
    filterparent = not (model.opt.disableflags & M.mjtDisableBit.mjDSBL_FILTERPARENT)
    mj_body = lambda i: model.kept[i] if i < nk else 0  # a world geom's body is the world body
    weld = lambda i: int(model.body_weldid[mj_body(i)])
    weld_parent = lambda i: int(model.body_weldid[model.body_parentid[mj_body(i)]])  # a host's parent is unfolded
    pairs = []
    for a in range(n):
        for c in range(a + 1, n):
            ba, bc = mj_body(a), mj_body(c)
            if tuple(sorted((ba, bc))) in excluded or weld(a) == weld(c):  # MuJoCo: one weld never touches itself
                continue
            # MuJoCo's parent filter, by welds, never for bodies welded to the world
            if filterparent and weld(a) and weld(c) and (weld(a) == weld_parent(c) or weld(c) == weld_parent(a)):
                continue
            if any(_compatible(model, g1, g2) for g1 in geoms[a] for g2 in geoms[c]):
                pairs.append((a, c))
    pairs = sorted(set(pairs) | {k for k in explicit if k[0] >= 0})
    names = tuple(M.mj_id2name(model.raw, M.mjtObj.mjOBJ_BODY, b) or None for b in model.kept)
    names += tuple(M.mj_id2name(model.raw, M.mjtObj.mjOBJ_GEOM, g) or None for g in world_geoms)
    ground, no_ground = False, []
    if plane is not None:  # MuJoCo's filter between each moving body's geoms and the floor
        free = [b for b in range(n) if b not in fixed and b not in contactless]
        touch = [(-1, b) in explicit or any(_compatible(model, plane, g) and (0, mj_body(b)) not in excluded
                                             for g in geoms[b]) for b in free]
        if any(touch):  # the bodies it filters out are kept off the ground (Scene.no_ground)
            ground = True
            no_ground = [b for b, t in zip(free, touch) if not t]
    if model.opt.disableflags & (M.mjtDisableBit.mjDSBL_CONTACT | M.mjtDisableBit.mjDSBL_CONSTRAINT):
        pairs, ground, no_ground, explicit, tilted = [], False, [], {}, []  # MuJoCo collides nothing: no pairs,
        # no ground, no tilted planes (their geoms are no bodies either way)
    if ground_mu is None:
        ground_mu = max(mus, default=fill)
    plane_mu = [0.0 if all_condims == {1} else float(model.geom_friction[g, 0]) for g in tilted]
    for k, g in enumerate(tilted):  # a plane touches every free body (MuJoCo's filter must agree)
        free = [b for b in range(n) if b not in fixed and b not in contactless]
        odd = [b for b in free if not any(_compatible(model, g, h) for h in geoms[b])]
        if odd:
            raise ValueError(f"unsupported in a jaxcontact world: plane {_name(M, model, M.mjtObj.mjOBJ_GEOM, g)} does not "
                             f"collide with {', '.join(str(names[b]) for b in odd)} (a jaxcontact plane touches every "
                             "body not fixed to the world)")

    # joints: hinges, slides and balls to the parent body or the world; welded bodies; equalities
    hinges = [j for j in range(model.njnt) if _joint_kind(M, model, j) is not None]
    welded = [b for b in model.kept if not _static(model, b) and b not in model.jnt_bodyid]  # a mocap body: fixed
    equalities = [e for e in range(int(model.neq)) if model.eq_active0[e] and int(model.eq_type[e]) != int(M.mjtEq.mjEQ_TENDON)]
    joints = joint_params = None
    if hinges or welded or equalities:
        kinds = tuple(_joint_kind(M, model, j) for j in hinges)
        d0 = _at_zero(M, model, d, [j for j, k in zip(hinges, kinds) if k == "slide"])
        parent, child, ap, ac, xp, xc = [], [], [], [], [], []
        several = {int(model.jnt_bodyid[j]) for j in hinges if sum(model.jnt_bodyid == model.jnt_bodyid[j]) > 1}
        offset = {b for b in several if len(own := [j for j in hinges if model.jnt_bodyid[j] == b]) == 2  # two hinges
                  and np.max(np.abs(model.jnt_pos[own[1]] - model.jnt_pos[own[0]])) > 1e-9}  # through different points
        for j, kind in zip(hinges, kinds):
            b = int(model.jnt_bodyid[j])
            p = model.host[int(model.body_parentid[b])]
            # the parent's anchor: where the child's is at qpos 0 (MuJoCo's xanchor of a slide stays at
            # qpos0 = its ref; a hinge's does not move with its angle)
            anchor, axis = np.asarray(d0.xanchor[j], float), np.asarray(d0.xaxis[j], float)
            pos = model.jnt_pos[j]
            if b in several and b not in offset:  # a composite: every joint at the hinges' point (slides': the first's)
                own = [i for i in range(model.njnt) if model.jnt_bodyid[i] == b]
                pos = model.jnt_pos[next((i for i in own if kinds[hinges.index(i)] == "hinge"), own[0])]
            if kind == "slide" or b in several:
                anchor = np.asarray(d0.xpos[b], float) + np.asarray(d0.xmat[b], float).reshape(3, 3) @ pos
            child.append(model.index(b))
            xc.append(pos - model.body_ipos[b])
            ac.append(np.asarray(model.jnt_axis[j], float))
            if model.body_weldid[p] == 0:  # the world, or a body fixed to it: a joint to the world
                parent.append(-1)
                xp.append(anchor)
                ap.append(axis)
            else:
                Rp = np.asarray(d0.xmat[p], float).reshape(3, 3)
                parent.append(model.index(p))
                xp.append(Rp.T @ (anchor - model.xipos(d0, p)))
                ap.append(Rp.T @ axis)
        if several:  # a composite's axes in its parent's frame at qpos 0 (MuJoCo's composition)
            dz = _at_zero(M, model, d, hinges)
            for k, j in enumerate(hinges):
                p = model.host[int(model.body_parentid[model.jnt_bodyid[j]])]
                if int(model.jnt_bodyid[j]) in several:
                    ap[k] = (np.eye(3) if parent[k] < 0 else np.asarray(dz.xmat[p], float).reshape(3, 3)).T @ dz.xaxis[j]
                if int(model.jnt_bodyid[j]) in offset:  # each hinge's own point, the parent's at q = 0
                    b = int(model.jnt_bodyid[j])
                    at = np.asarray(dz.xpos[b], float) + np.asarray(dz.xmat[b], float).reshape(3, 3) @ model.jnt_pos[j]
                    xp[k] = at if parent[k] < 0 else (np.asarray(dz.xmat[p], float).reshape(3, 3).T @ (at - model.xipos(dz, p)))
        limited = tuple(bool(model.jnt_limited[j]) for j in hinges)
        tendons, tendon_params = _tendons(M, model, hinges, dtype) if model.ntendon else (None, None)
        extra = _hinge_passive(M, model, hinges, parent, dtype, reference="slide" in kinds or any(limited) or bool(model.nu)
                               or bool(model.ntendon) or "ball" in kinds or bool(several or welded or equalities)) if hinges else {}
        loss = np.asarray(model.dof_frictionloss)[[int(model.jnt_dofadr[j]) for j in hinges]]
        if np.any(loss != 0):  # MuJoCo's compiled dof_frictionloss (N·m, N for a slide; a ball's first dof: all three's)
            extra["frictionloss"] = jnp.asarray(loss, dtype)
        more = _welds_and_equalities(M, model, d, welded, equalities)
        actuated, force_limited, actuators = (_actuators(M, model, d, hinges, dtype, len(more["kinds"])) if model.nu
                                              else ((), (), None))
        kinds += tuple(more["kinds"])
        parent, child = parent + more["parent"], child + more["child"]
        xp, xc, ap, ac = xp + more["xp"], xc + more["xc"], ap + more["axis"], ac + more["axis"]
        joints = Joints(parent=tuple(parent), child=tuple(child), kinds=kinds, limited=limited + (False,) * len(more["kinds"]),
                        actuated=actuated, force_limited=force_limited, tendons=tendons)
        arr = lambda x: jnp.asarray(np.stack(x), dtype)
        if more["kinds"]:  # the welds' and equalities' entries: no passive force, their held orientation
            n = len(more["kinds"])
            extra = {k: jnp.concatenate([v, jnp.zeros((n,), dtype)]) for k, v in extra.items() if k != "reference"} | {
                "reference": arr([np.asarray(r) for r in extra.get("reference", jnp.zeros((0, 4)))] + more["reference"])}
        if tendons is not None:
            extra["tendons"] = tendon_params
        if actuators is not None:
            extra["actuators"] = actuators
        if any(limited):  # MuJoCo's compiled range (radians for a hinge, metres for a slide; a ball's cone)
            extra["range"] = jnp.asarray(np.concatenate([np.asarray(model.jnt_range, float)[hinges],
                                                         np.zeros((len(more["kinds"]), 2))]), dtype)
            ref = np.asarray(model.jnt_solref, float)[hinges]
            if np.all(ref[:, 0] > 0) and np.all(ref[:, 1] > 0):  # MuJoCo's soft-limit pace (its direct
                # stiffness/damping form, solref < 0, keeps the hard rows alone)
                soft = np.concatenate([ref, np.tile([0.02, 1.0], (len(more["kinds"]), 1))])  # the others': unused
                extra["limit_soft"] = jnp.asarray(soft, dtype)
        joint_params = JointParams(anchor_parent=arr(xp), anchor_child=arr(xc), axis_parent=arr(ap), axis_child=arr(ac),
                                   **extra)

    same = len({*mus, ground_mu} if ground else set(mus)) <= 1  # none: a world of no bodies
    if not same:
        bodies = [bd.replace(friction=jnp.asarray(mu)) for bd, mu in zip(bodies, mus)]
    if all_condims != {1}:
        body_names = [_name(M, model, M.mjtObj.mjOBJ_BODY, b) for b in model.kept]
        body_names += [_name(M, model, M.mjtObj.mjOBJ_GEOM, g) for g in world_geoms]
        rules = ([max((int(model.geom_condim[g]) for g in gs), default=3) for gs in geoms],
                 [max((int(model.geom_priority[g]) for g in gs), default=0) for gs in geoms],
                 (int(model.geom_condim[plane]), int(model.geom_priority[plane])) if plane is not None else (3, 0))
        _warn_friction(mus, ground_mu if ground else None, pairs, explicit, body_names, fixed + contactless + no_ground, rules)
    scene_kw.setdefault("names", names)
    if scene_kw.get("constraints") == "mujoco":  # MuJoCo's contacts act from their margin: the rows must reach it
        gm = [float(model.geom_margin[g] - model.geom_gap[g]) for gs in geoms for g in gs]
        gm += [float(model.geom_margin[plane] - model.geom_gap[plane])] if plane is not None else []
        if int(model.opt.enableflags) & int(M.mjtEnableBit.mjENBL_OVERRIDE):
            gm = [float(model.opt.o_margin)]
        gm += [float(x) for x in np.asarray(model.jnt_margin, float)[np.asarray(model.jnt_limited, bool)]]
        widest = 4.0 * max(gm, default=0.0)  # a contact's margin: its two sides' sum; the ground's reach holds half
        scene_kw["margin"] = max(scene_kw.get("margin", 0.002), widest)
        # the file's integrator where the step has it (RK4; MuJoCo's implicit ones step as Euler here)
        rk4 = int(model.opt.integrator) == int(M.mjtIntegrator.mjINT_RK4)
        scene_kw.setdefault("integrator", "rk4" if rk4 else "euler")
    scene, stacked = make_scene(bodies, pairs=pairs, ground=ground, joints=joints, fixed=fixed, planes=len(tilted),
                                contactless=contactless, no_ground=no_ground, **scene_kw)
    cast = lambda x: jnp.asarray(x, dtype)
    stacked = stacked.replace(mass=cast(stacked.mass), inertia=cast(stacked.inertia), vertices=cast(stacked.vertices),
                              vertex_mask=cast(stacked.vertex_mask),
                              friction=None if stacked.friction is None else cast(stacked.friction),
                              **{k: cast(getattr(stacked, k)) for k in ("radius", "cylinder", "ellipsoid", "vertex_radius", "vertex_shape")
                                 if getattr(stacked, k) is not None})
    if plane is not None:
        normal = np.asarray(d.geom_xmat[plane], float).reshape(3, 3)[:, 2]
        groundp = Ground(normal=cast(normal), height=cast(normal @ d.geom_xpos[plane]))
    else:
        groundp = Ground(normal=cast([0.0, 0.0, 1.0]), height=cast(0.0))
    law = CoulombLCP.init_params(mu=ground_mu if not same or not mus else mus[0], restitution=0.0)
    law = law.replace(mu=cast(law.mu), restitution=cast(law.restitution))
    if joints is None:
        params = Params(body=stacked, ground=groundp, law=law)
    else:
        params = JointedParams(body=stacked, ground=groundp, law=law, joints=joint_params)
    if _has_medium(model):  # MuJoCo's fluid: each body's principal frame (body_iquat; a world geom's: its own)
        frame = np.reshape([model.body_iquat[b] for b in model.kept] + [[1.0, 0.0, 0.0, 0.0]] * len(world_geoms), (-1, 4))
        params = params.replace(medium=make_medium(float(model.opt.density), float(model.opt.viscosity),
                                                   np.asarray(model.opt.wind, float), frame, dtype=dtype))
    if tilted:
        params = params.replace(planes=_mjcf_planes(M, model, d, tilted, plane_mu, mus, same, dtype, fixed + contactless))
    if scene.constraints == "mujoco":  # MuJoCo's soft constraints with the file's compiled values (worlds.soft)
        params = params.replace(soft=_soft_params(M, model, geoms, ([] if plane is None else [plane]) + tilted, fixed,
                                                  hinges if joints is not None else [],
                                                  0 if joints is None else joints.num_joints, dtype))
        if joints is not None and joints.limited and getattr(params.joints, "limit_soft", None) is None:
            raise ValueError("unsupported in a jaxcontact world: constraints='mujoco' with a limited joint whose "
                             "solreflimit is MuJoCo's direct form (negative stiffness and damping); the soft "
                             "limits take a time constant and a damping ratio")

    # the state at the centre of mass: world linear velocity, body angular velocity
    pos, quat, vel, omega = [], [], [], []
    v6 = np.zeros(6)
    for b in model.kept:
        M.mj_objectVelocity(model.raw, d, M.mjtObj.mjOBJ_BODY, b, v6, 0)  # (ω, v) at xipos, world axes
        R = np.asarray(d.xmat[b], float).reshape(3, 3)
        pos.append(model.xipos(d, b))
        quat.append(np.asarray(d.xquat[b], float))
        vel.append(v6[3:] + np.cross(v6[:3], pos[-1] - d.xipos[b]))  # at the (combined) centre of mass
        omega.append(R.T @ v6[:3])
    for g in world_geoms:  # fixed: at the geom's pose, at rest
        q = np.zeros(4)
        M.mju_mat2Quat(q, np.asarray(d.geom_xmat[g], float))
        pos.append(np.asarray(d.geom_xpos[g], float))
        quat.append(q)
        vel.append(np.zeros(3))
        omega.append(np.zeros(3))
    stack = lambda x, k: cast(np.reshape(np.asarray(x, float), (-1, k)))  # (N, k); a world of no bodies: (0, k)
    state = State(pos=stack(pos, 3), quat=stack(quat, 4), vel=stack(vel, 3), omega=stack(omega, 3))

    from .scenes import model as world_model

    off = bool(model.opt.disableflags & M.mjtDisableBit.mjDSBL_GRAVITY)
    g = 0.0 if off else -float(model.opt.gravity[2])
    xy = {} if off or not np.any(model.opt.gravity[:2] != 0) else {"gravity_xy": tuple(float(x) for x in model.opt.gravity[:2])}
    return scene, params, state, world_model(dt=float(model.opt.timestep), gravity=g, **xy)


def _callers_level() -> int:
    """The ``stacklevel`` (for a ``warnings.warn`` in the function that calls this) of the first frame outside
    the package: the user's call of ``from_mjcf``/``from_mujoco``, however deep the loader's frames."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def _soft_params(M, model, geoms, surfaces, fixed, hinges, num_joints: int, dtype):
    """``worlds.soft.SoftParams`` of MuJoCo's compiled values: each body's contact solref, solimp,
    solmix, margin (``geom_margin − geom_gap``), priority and condim from its colliding geoms (the mean
    of several geoms' values, the largest priority and condim), its inverse weight ``body_invweight0`` of
    its geoms' MuJoCo bodies (a folded body's geoms keep theirs; 0 for a fixed body: MuJoCo's world); the first of
    ``surfaces``' (the floor, then the tilted planes) as the ground's, which every surface shares (MuJoCo's defaults
    without one; a warning where the file gives the surfaces different values); ``opt.o_solref``/``o_solimp``/``o_margin`` where the override flag is on;
    each joint's ``jnt_solimp``, ``jnt_margin`` and ``dof_invweight0`` (the welds' and equalities' that
    follow the joints: unused defaults)."""
    from .soft import DEFAULT_SOLIMP, DEFAULT_SOLREF, SoftParams

    override = bool(int(model.opt.enableflags) & int(M.mjtEnableBit.mjENBL_OVERRIDE))

    def values(gs):
        if not gs:
            return np.asarray(DEFAULT_SOLREF), np.asarray(DEFAULT_SOLIMP), 1.0, 0.0, 0, 3
        ref = np.mean([model.geom_solref[g] for g in gs], axis=0)
        imp = np.mean([model.geom_solimp[g] for g in gs], axis=0)
        margin = max(float(model.geom_margin[g] - model.geom_gap[g]) for g in gs)
        if override:
            ref, imp, margin = np.asarray(model.opt.o_solref), np.asarray(model.opt.o_solimp), float(model.opt.o_margin)
        return (ref, imp, float(np.mean([model.geom_solmix[g] for g in gs])), margin,
                max(int(model.geom_priority[g]) for g in gs), max(int(model.geom_condim[g]) for g in gs))

    per = [values(gs) for gs in geoms]
    floor = values(surfaces[:1])
    differ = [g for g in surfaces[1:] if any(np.any(np.asarray(a) != np.asarray(b)) for a, b in zip(values([g]), floor))]
    if differ:
        warnings.warn(f"the soft contacts' values (solref, solimp, solmix, margin, priority, condim) of plane geom(s) "
                      f"{[_name(M, model, M.mjtObj.mjOBJ_GEOM, g) for g in differ]} differ from those of "
                      f"{_name(M, model, M.mjtObj.mjOBJ_GEOM, surfaces[0])}: every surface of a world shares the "
                      f"first's here (SoftParams.ground_*)", UserWarning, stacklevel=_callers_level())
    nk = len(model.kept)
    inv = [0.0 if i in fixed or i >= nk else  # a contact's Â: its geom's MuJoCo body's (a folded body's own)
           float(np.mean([model.raw.body_invweight0[model.raw.geom_bodyid[g], 0] for g in gs] if gs
                         else model.body_invweight0[model.kept[i], 0])) for i, gs in enumerate(geoms)]
    arr = lambda x: jnp.asarray(np.asarray(x, float), dtype)
    J = int(num_joints)
    limit = {}
    if J:
        pad = J - len(hinges)
        limit = dict(limit_solimp=arr(np.concatenate([np.asarray(model.jnt_solimp, float)[hinges].reshape(-1, 5),
                                                      np.tile(DEFAULT_SOLIMP, (pad, 1))])),
                     limit_margin=arr(np.concatenate([np.asarray(model.jnt_margin, float)[hinges], np.zeros(pad)])),
                     limit_invweight=arr(np.concatenate([np.asarray(model.dof_invweight0, float)[
                         np.asarray(model.jnt_dofadr, int)[hinges]], np.zeros(pad)])))
    return SoftParams(
        solref=arr([p[0] for p in per]).reshape(-1, 2), solimp=arr([p[1] for p in per]).reshape(-1, 5),
        solmix=arr([p[2] for p in per]), margin=arr([p[3] for p in per]), ground_solref=arr(floor[0]),
        ground_solimp=arr(floor[1]), ground_solmix=arr(floor[2]), ground_margin=arr(floor[3]),
        impratio=arr(model.opt.impratio), invweight=arr(inv), priority=tuple(p[4] for p in per),
        ground_priority=floor[4], condim=tuple(p[5] for p in per), ground_condim=floor[5],
        cone="pyramidal" if int(model.opt.cone) == int(M.mjtCone.mjCONE_PYRAMIDAL) else "elliptic", **limit)


def _mjcf_planes(M, model, d, tilted, plane_mu, mus, same, dtype, fixed=()):
    """``types.Planes`` of MuJoCo's planes ``tilted`` (geom ids: every colliding plane but the floor), at
    their compiled world poses (normal: the geom's z axis), each μ its geom's. A ``<contact><pair>``
    naming one must carry jaxcontact's μ for it (the plane's with one material, √(μ_plane μ_body) with
    per-body μ: what ``to_mjcf`` writes), or it is refused by name. Without such pairs MuJoCo gives a
    plane's contact max(μ_plane, μ_body): ``FrictionRuleWarning`` where that differs."""
    normals = np.stack([np.asarray(d.geom_xmat[g], float).reshape(3, 3)[:, 2] for g in tilted])
    points = np.stack([np.asarray(d.geom_xpos[g], float) for g in tilted])
    paired = set()
    for p in range(int(getattr(model, "npair", 0))):
        g1, g2 = int(model.pair_geom1[p]), int(model.pair_geom2[p])
        if g1 not in tilted and g2 not in tilted:
            continue
        pl, other = (g1, g2) if g1 in tilted else (g2, g1)
        mu_p = plane_mu[tilted.index(pl)]
        b = model.index(int(model.geom_bodyid[other])) if model.geom_bodyid[other] else -1
        want = mu_p if same or other in tilted or b < 0 else float(np.sqrt(mu_p * mus[b]))
        got = float(model.pair_friction[p, 0])
        if other in tilted or abs(got - want) > 1e-9 * max(1.0, want):
            raise ValueError(f"unsupported in a jaxcontact world: contact pair {_name(M, model, M.mjtObj.mjOBJ_PAIR, p)} "
                             f"gives plane {_name(M, model, M.mjtObj.mjOBJ_GEOM, pl)} μ {got:g} where jaxcontact's is "
                             f"{want:g} (the plane's μ, mixed with a body's by √(μ_a μ_b) under per-body friction)")
        paired.add((pl, b))
    worst = max(((abs(max(mu_p, m) - (mu_p if same else np.sqrt(mu_p * m))), g) for g, mu_p in zip(tilted, plane_mu)
                 for b, m in enumerate(mus) if (g, b) not in paired and b not in fixed), default=(0.0, None))
    if worst[0] > 1e-9:
        warnings.warn(f"plane {_name(M, model, M.mjtObj.mjOBJ_GEOM, worst[1])}: MuJoCo gives its contacts "
                      "max(μ_plane, μ_body); jaxcontact the plane's μ (one material) or √(μ_plane μ_body) (per-body), "
                      f"differing by up to {worst[0]:.3g}; write <contact><pair>s with jaxcontact's μ to agree",
                      FrictionRuleWarning, stacklevel=3)
    cast = lambda x: jnp.asarray(x, dtype)
    return Planes(normal=cast(normals), offset=cast(np.sum(normals * points, axis=1)), friction=cast(plane_mu))


def _planes_xml(scene, params, friction, mu_law, extra_geom) -> str:
    """``to_mjcf``'s tilted planes (``Params.planes``): one plane geom each on the world body, through
    n·offset with ``zaxis`` n, its own μ (MuJoCo collides a plane as the infinite half-space too)."""
    if not scene.planes:
        return ""
    pl = params.planes
    out = ""
    for k in range(scene.planes):
        n = np.asarray(pl.normal[k], float)
        n = n / np.linalg.norm(n)
        out += (f'    <geom name="plane{k}" type="plane" size="0 0 0.05" pos="{_f(n * float(pl.offset[k]))}" '
                f'zaxis="{_f(n)}" friction="{_f(float(pl.friction[k]))} 0.005 0.0001"{extra_geom}/>\n')
    return out


def _plane_pairs(scene, params, friction, mu_law, geom, soft=None) -> str:
    """``<contact><pair>``s of every tilted plane with every free body where MuJoCo's max(μ_plane,
    μ_body) is not jaxcontact's μ (the plane's, or √(μ_plane μ_body) with per-body μ)."""
    out = ""
    extra = "".join(f' {k}="{v}"' for k, v in geom.items() if k in ("condim", "solref", "solimp", "margin", "gap"))
    for k in range(scene.planes):
        mu_p = float(params.planes.friction[k])
        for i in range(scene.num_bodies):
            if i in scene.fixed or i in scene.contactless:
                continue
            mu_b = mu_law if friction is None else float(friction[i])
            want = mu_p if friction is None else float(np.sqrt(mu_p * mu_b))
            if abs(max(mu_p, mu_b) - want) <= 1e-12:
                continue
            if scene.shapes is not None and scene.shapes[i] == "compound":
                raise ValueError(f"to_mjcf: plane {k}'s μ {mu_p:g} against {scene.body_name(i)}, a compound, needs a "
                                 "<pair> per geom; give the plane the bodies' μ or a larger one")
            more = "" if soft is None else soft(-1, i)  # a tilted plane has the ground's soft values
            out += (f'    <pair geom1="plane{k}" geom2="geom{i}" friction="{_f(want)} {_f(want)} 0.005 0.0001 0.0001"'
                    f'{extra}{more}/>\n')
    return out


def _passive_xml(scene, jp, state, soft=None):
    """Each joint's coordinate at ``state`` (a hinge's 0 without a reference) and its passive
    attributes for ``to_mjcf`` (a hinge's in degrees, MuJoCo's default angle unit; a slide's in
    metres): ``ref`` the coordinate of the written pose, ``springref``, ``stiffness``, ``damping``,
    ``armature``."""
    J = scene.joints.num_joints
    if (not jp.has_passive() and not scene.joints.has_slides and not scene.joints.limited and jp.frictionloss is None
            and scene.joints.tendons is None):  # a tendon's length sums the coordinates: written with ``ref``
        return [0.0] * J, [""] * J
    q = np.zeros(J) if jp.reference is None else np.asarray(world_joints.coordinates(scene.joints, jp, state)[0], float)
    q = np.asarray([q[scene.joints.dof_start[j]] if scene.joints.kind(j) in world_joints.SCALAR else 0.0 for j in range(J)])
    xml = []
    for j in range(J):
        unit = (lambda x: x) if scene.joints.kind(j) == "slide" else np.degrees
        scalar = scene.joints.kind(j) in world_joints.SCALAR
        a = f' ref="{_f(unit(q[j]))}"' if jp.reference is not None and scalar else ""
        if j in scene.joints.limited_joints:
            a += f' limited="true" range="{_f(unit(np.asarray(jp.range, float)[j]))}"'
            if jp.limit_soft is not None:  # MuJoCo's pace for a joint past its limit (JointParams.limit_soft)
                a += f' solreflimit="{_f(np.asarray(jp.limit_soft, float)[j])}"'
            if soft is not None and soft.limit_solimp is not None:  # MuJoCo's soft mode: the limit's impedance
                a += (f' solimplimit="{_f(np.asarray(soft.limit_solimp, float)[j])}"'
                      f' margin="{_f(np.asarray(soft.limit_margin, float)[j])}"')
        if not scalar:  # a ball's damping, armature and friction loss; a weld or an equality has none
            xml.append("".join(f' {n}="{_f(np.asarray(getattr(jp, n))[j])}"' for n in ("damping", "armature", "frictionloss")
                               if getattr(jp, n) is not None and scene.joints.kind(j) == "ball"))
            continue
        if jp.stiffness is not None:
            ref = 0.0 if jp.springref is None else float(np.asarray(jp.springref)[j])
            a += f' stiffness="{_f(np.asarray(jp.stiffness)[j])}" springref="{_f(unit(ref))}"'
        for name in ("damping", "armature", "frictionloss"):
            if getattr(jp, name) is not None:
                a += f' {name}="{_f(np.asarray(getattr(jp, name))[j])}"'
        xml.append(a)
    return [float(x) for x in q], xml


def _group_xml(scene, jp, state, i, parent, g, q_now, passive_xml, rates, qpos, qvel) -> str:
    """``to_mjcf``'s joints of body i that are no lone hinge or slide (its group ``g``): a welded body
    none; a ball a ``type="ball"`` joint at its anchor (the written pose its qpos 1 0 0 0, so a limited
    ball must be at its reference, else refused by name); a composite one joint per hinge and slide at
    the group's anchor, each axis in the body's frame now, ``ref`` its coordinate (the written pose
    is the state's). Appends the keyframe's qpos and qvel."""
    joints = scene.joints
    kind = joints.kind(g[0])
    if kind == "welded":
        return '<!-- welded to its parent: no joint -->'
    body = lambda k: None if k is None or k < 0 else jax.tree_util.tree_map(lambda x: x[k], state)
    anchor = _f(np.asarray(jp.anchor_child, float)[g[-1]])
    d = joints.dof_start[g[0]]
    if kind == "ball":
        Q = np.asarray(world_joints.ball_quaternion(jp, g[0], body(i), body(parent)), float)
        if g[0] in joints.limited_joints and np.linalg.norm(Q[1:]) > 1e-9:
            raise ValueError(f"to_mjcf: the limited ball joint {g[0]} of {scene.body_name(i)} is turned "
                             f"{2 * np.degrees(np.arcsin(min(1.0, np.linalg.norm(Q[1:])))):.3g}° from its reference; MuJoCo's "
                             "ball has no ref, so its cone would move to the written pose")
        qpos.append([1.0, 0.0, 0.0, 0.0])
        qvel.append(rates[d:d + 3])
        return f'<joint name="ball{i}" type="ball" pos="{anchor}"{passive_xml[g[0]]}/>'
    Rc = np.asarray(quat_to_mat(np.asarray(state.quat[i], float)))
    Rp = np.eye(3) if parent is None or parent < 0 else np.asarray(quat_to_mat(np.asarray(state.quat[parent], float)))
    hinges = [j for j in g if joints.kind(j) == "hinge"]
    offset = len(g) == 2 and len(hinges) == 2 and not np.allclose(np.asarray(jp.anchor_parent[hinges[0]], float),
                                                                  np.asarray(jp.anchor_parent[hinges[1]], float), atol=1e-12)
    out = []
    for k, j in enumerate(g):
        last = len(hinges) > 1 and j == hinges[-1]  # the last hinge's axis is the child's, the first the parent's
        world = Rc @ np.asarray(jp.axis_child[j], float) if last else Rp @ np.asarray(jp.axis_parent[j], float)
        if len(hinges) == 3 and j == hinges[1]:  # the middle one's turns with the first: R_p R(b₁, q₁) b₂
            b1 = np.asarray(jp.axis_parent[hinges[0]], float)
            b1 = b1 / np.linalg.norm(b1)
            half = 0.5 * q_now[hinges[0]]
            world = Rp @ np.asarray(quat_to_mat(np.r_[np.cos(half), np.sin(half) * b1])) @ np.asarray(jp.axis_parent[j], float)
        axis = Rc.T @ (world / np.linalg.norm(world))
        at = anchor
        if offset and j == hinges[0]:  # two hinges through different points: the first's axis is fixed in the
            # parent, through its anchor there, which the second hinge has moved in the child's frame
            xp1 = (np.zeros(3) if parent is None or parent < 0 else np.asarray(state.pos[parent], float)) \
                + Rp @ np.asarray(jp.anchor_parent[j], float)
            at = _f(Rc.T @ (xp1 - np.asarray(state.pos[i], float)))
        out.append(f'<joint name="{joints.kind(j)}{i}_{k}" type="{joints.kind(j)}" pos="{at}" axis="{_f(axis)}"'
                   f'{passive_xml[j]}/>')
        qpos.append([q_now[j]])
        qvel.append([rates[d + k]])
    return "".join(out)


def _tendon_equalities_xml(scene, params, state) -> str:
    """The ``<tendon>`` equalities of ``to_mjcf``'s file (``tendons.Tendons.equal``), their polynomials
    rewritten for the written file's reference lengths: MuJoCo takes L⁰ at the file's qpos0, the coordinates
    at ``state`` (the joints' ``ref``), so a₀ and the shift of L₂ are moved to keep L₁ − L₁⁰ = p(L₂ − L₂⁰)
    the same relation; "" without any."""
    joints = scene.joints
    if joints is None or joints.tendons is None or not joints.tendons.equal:
        return ""
    tp = params.joints.tendons
    q = world_joints.scalar_view(joints, world_joints.coordinates(joints, params.joints, state)[0])
    written = np.asarray(joints.tendons.matrix(tp.coef, joints.num_joints) @ q, float)  # the file's tendon_length0
    ours, a = np.asarray(tp.length0, float), np.asarray(tp.polycoef, float)
    rows = []
    for k, (t1, t2) in enumerate(joints.tendons.equal):
        c = a[k].copy()
        if t2 >= 0:  # p(x' + δ) with δ = written L₂⁰ − ours: the binomial shift of the quartic
            d = written[t2] - ours[t2]
            c = np.array([sum(a[k, n] * math.comb(n, i) * d ** (n - i) for n in range(i, 5)) for i in range(5)])
        c[0] += ours[t1] - written[t1]
        other = f' tendon2="tendon{t2}"' if t2 >= 0 else ""
        rows.append(f'    <tendon name="tendon_equality{k}" tendon1="tendon{t1}"{other} polycoef="{_f(c)}"/>\n')
    return f'  <equality>\n{"".join(rows)}  </equality>\n'


def _equalities_xml(scene, params) -> str:
    """``to_mjcf``'s ``<equality>`` element of the world's connect and weld equalities (MuJoCo's
    semantics: a connect's anchor on body 1, body 2's computed by MuJoCo at the written pose; a weld's
    relpose, body 1's anchor and body 2's orientation in body 1's frame, and its anchor on body 2);
    "" without any. Body 1 is the parent (the child where the parent is the world)."""
    joints = scene.joints
    if joints is None:
        return ""
    jp = params.joints
    rows = []
    for j in range(joints.num_joints):
        kind = joints.kind(j)
        if kind not in world_joints.EQUALITIES:
            continue
        p, c = joints.parent[j], joints.child[j]
        ap, ac = np.asarray(jp.anchor_parent[j], float), np.asarray(jp.anchor_child[j], float)
        ref = np.asarray(jp.reference[j], float)
        if p < 0:  # body 1 the child, body 2 the world: relpose its orientation's inverse
            on1, on2, rel = ac, ap, ref * np.array([1, -1, -1, -1])
            names = f'body1="body{c}"'
        else:
            on1, on2, rel = ap, ac, ref
            names = f'body1="body{p}" body2="body{c}"'
        if kind == "connect":
            rows.append(f'    <connect name="connect{j}" {names} anchor="{_f(on1)}"/>\n')
        else:
            rows.append(f'    <weld name="weld{j}" {names} relpose="{_f(np.r_[on1, rel])}" anchor="{_f(on2)}"/>\n')
    return f'  <equality>\n{"".join(rows)}  </equality>\n' if rows else ""


def _joint_kind(M, model, j: int) -> str | None:
    """MuJoCo joint ``j`` as a world's joint kind (``joints.KINDS``): "hinge", "slide", "ball", or
    None (a free joint). (MuJoCo's enums compare to ints with ==, not inside a tuple: ``in`` would
    silently be False.)"""
    t = int(model.jnt_type[j])
    return {int(M.mjtJoint.mjJNT_HINGE): "hinge", int(M.mjtJoint.mjJNT_SLIDE): "slide",
            int(M.mjtJoint.mjJNT_BALL): "ball"}.get(t)


def _composite_problems(M, model, name: str, joints: list) -> list:
    """What a body's several joints cannot be here (``joints.Joints.groups``): anything but hinges and
    slides, a slide after a hinge, hinges through different points beside other joints, more than two hinges or three
    slides."""
    kinds = [_joint_kind(M, model, j) for j in joints]
    if any(k not in ("hinge", "slide") for k in kinds):
        return [f"{name}: {len(joints)} joints, one of them a {next(k or 'free' for k in kinds if k not in ('hinge', 'slide'))} "
                "(a body's several joints are hinges and slides)"]
    out = []
    if "slide" in kinds[kinds.index("hinge"):] if "hinge" in kinds else False:
        out.append(f"{name}: a slide after a hinge on one body (a composite joint here is its slides, then its hinges)")
    hinges = [j for j, k in zip(joints, kinds) if k == "hinge"]
    if len(hinges) > 3 or len(joints) - len(hinges) > 3 or len(joints) > 5:
        out.append(f"{name}: {len(hinges)} hinges and {len(joints) - len(hinges)} slides on one body (at most three "
                   "hinges through one point and three slides, five in all)")
    if len(joints) > 2 and hinges and np.max(np.abs(model.jnt_pos[hinges] - model.jnt_pos[hinges[0]])) > 1e-9:
        out.append(f"{name}: hinges through different points on one body beside other joints (a composite joint's "
                   "hinges share a point, but for two hinges alone)")
    if any(np.linalg.norm(np.cross(model.jnt_axis[a], model.jnt_axis[b])) < 1e-9 for a, b in zip(hinges, hinges[1:])):
        out.append(f"{name}: two parallel hinges in a row on one body")
    return out


def _equality_problems(M, model) -> list:
    """What the equality constraints cannot be here: a kind other than connect and weld, a weld
    without torque (torquescale 0), two bodies (or their sites) both held still."""
    out = []
    fixed = lambda b: b == 0 or model.body_weldid[b] == 0
    for e in range(int(model.neq)):
        name = f"equality {_name(M, model, M.mjtObj.mjOBJ_EQUALITY, e)}"
        t = int(model.eq_type[e])
        kind = M.mjtEq(t).name[len("mjEQ_"):].lower()
        body = ((lambda i: int(model.site_bodyid[i])) if int(model.eq_objtype[e]) == int(M.mjtObj.mjOBJ_SITE)
                else (lambda i: i))
        if t == int(M.mjtEq.mjEQ_TENDON):  # two fixed tendons (or one) of the world's (tendons.Tendons.equal)
            continue  # a spatial tendon in it is refused by _tendon_problems
        if t not in (int(M.mjtEq.mjEQ_CONNECT), int(M.mjtEq.mjEQ_WELD)):
            out.append(f"{name}: a {kind} equality (jaxcontact's are connect, weld and tendon)")
        elif t == int(M.mjtEq.mjEQ_WELD) and model.eq_data[e, 10] == 0:
            out.append(f"{name}: a weld with torquescale 0 (a connect: write it as one)")
        elif fixed(body(int(model.eq_obj1id[e]))) and fixed(body(int(model.eq_obj2id[e]))):
            out.append(f"{name}: a {kind} between two bodies held to the world")
    return out


def _actuator_problems(M, model) -> list:
    """What the world's actuators (``actuation``) cannot hold, one sentence per actuator: a
    transmission other than a hinge's or slide's joint, activation dynamics, a gain other than a
    fixed one, a bias other than none or affine, MuJoCo 4's actuator damping, armature or delay."""
    out = []
    for a in range(int(model.nu)):
        name = f"actuator {_name(M, model, M.mjtObj.mjOBJ_ACTUATOR, a)}"
        trn, j = int(model.actuator_trntype[a]), int(model.actuator_trnid[a, 0])
        if trn == int(M.mjtTrn.mjTRN_TENDON):  # a fixed tendon's (its own problems: _tendon_problems)
            if model.tendon_actfrclimited[j]:
                out.append(f"{name}: tendon {_name(M, model, M.mjtObj.mjOBJ_TENDON, j)}'s actuator force limit "
                           "(actfrcrange; jaxcontact limits each actuator's force: forcerange)")
        elif trn != int(M.mjtTrn.mjTRN_JOINT) or _joint_kind(M, model, j) not in ("hinge", "slide"):
            what = M.mjtTrn(trn).name[len("mjTRN_"):].lower()
            out.append(f"{name}: a {what} transmission (jaxcontact's actuators drive a hinge, a slide or a fixed tendon)")
            continue
        for field, allowed, what in (("actuator_dyntype", ("mjDYN_NONE",), "activation dynamics"),
                                     ("actuator_gaintype", ("mjGAIN_FIXED",), "gain type"),
                                     ("actuator_biastype", ("mjBIAS_NONE", "mjBIAS_AFFINE"), "bias type")):
            kind = {"actuator_dyntype": M.mjtDyn, "actuator_gaintype": M.mjtGain, "actuator_biastype": M.mjtBias}[field]
            value = kind(int(getattr(model, field)[a])).name
            if value not in allowed:
                out.append(f"{name}: {what} {value} (supported: {', '.join(allowed)})")
        for field in ("actuator_damping", "actuator_armature", "actuator_delay"):
            v = np.asarray(getattr(model, field, np.zeros(model.nu)))[a]
            if np.any(v != 0):
                out.append(f"{name}: {field.split('_', 1)[1]} {_numbers(np.atleast_1d(v))} (no jaxcontact counterpart)")
        if np.any(np.asarray(model.actuator_gear[a, 1:]) != 0):
            out.append(f"{name}: a gear with more than one entry {_numbers(model.actuator_gear[a])}")
    return out


def _tendon_problems(M, model) -> list:
    """What the world's fixed tendons (``worlds.tendons``) cannot hold, one sentence each: a spatial
    tendon, a joint other than a hinge or slide in it (MuJoCo's compiler refuses a joint named twice), MuJoCo 4's tendon
    armature, nonlinear spring or damper and plasticity, a limit margin."""
    out = []
    for t in range(int(getattr(model, "ntendon", 0))):
        name = f"tendon {_name(M, model, M.mjtObj.mjOBJ_TENDON, t)}"
        adr, num = int(model.tendon_adr[t]), int(model.tendon_num[t])
        if any(int(model.wrap_type[w]) != int(M.mjtWrap.mjWRAP_JOINT) for w in range(adr, adr + num)):
            out.append(f"{name}: a spatial tendon (jaxcontact's tendons are fixed: a linear combination of joints)")
            continue
        js = [int(model.wrap_objid[w]) for w in range(adr, adr + num)]
        for j in js:
            if _joint_kind(M, model, j) is None:
                out.append(f"{name}: joint {_name(M, model, M.mjtObj.mjOBJ_JOINT, j)} is not a hinge or slide (a fixed "
                           "tendon sums hinge and slide coordinates)")
        for field, what in (("tendon_armature", "armature"), ("tendon_stiffnesspoly", "a nonlinear spring"),
                            ("tendon_dampingpoly", "a nonlinear damper"), ("tendon_springyield", "a spring yield")):
            v = np.asarray(getattr(model, field, np.zeros(model.ntendon)))[t]
            if np.any(v != 0):
                out.append(f"{name}: {what} {_numbers(np.atleast_1d(v))} (no jaxcontact counterpart)")
        if int(np.asarray(getattr(model, "tendon_plasticadr", -np.ones(model.ntendon)))[t]) >= 0:
            out.append(f"{name}: plasticity (no jaxcontact counterpart)")
        if model.tendon_limited[t] and model.tendon_margin[t] != 0:
            out.append(f"{name}: a limit margin {model.tendon_margin[t]:g} (jaxcontact's limits engage at the range)")
    return out


def _tendons(M, model, hinges, dtype):
    """(``tendons.Tendons``, ``tendons.TendonParams``) of MuJoCo's compiled fixed tendons over the
    world's joints ``hinges`` (MuJoCo joint ids): ``wrap_prm`` (coefficients), ``tendon_range`` where
    limited, ``tendon_stiffness`` with ``tendon_lengthspring``, ``tendon_damping``,
    ``tendon_frictionloss`` (each None where every tendon's is 0)."""
    index = {j: k for k, j in enumerate(hinges)}
    T = int(model.ntendon)
    spans = [range(int(model.tendon_adr[t]), int(model.tendon_adr[t]) + int(model.tendon_num[t])) for t in range(T)]
    joints = tuple(tuple(index[int(model.wrap_objid[w])] for w in ws) for ws in spans)
    coef = np.zeros((T, max(len(ws) for ws in spans)))
    for t, ws in enumerate(spans):
        coef[t, :len(ws)] = np.asarray(model.wrap_prm, float)[list(ws)]
    limited = tuple(bool(x) for x in model.tendon_limited)
    f = lambda x: jnp.asarray(np.asarray(x, float), dtype)
    some = lambda x: f(x) if np.any(np.asarray(x) != 0) else None
    stiffness = some(model.tendon_stiffness)
    # MuJoCo's active tendon equalities: L1 − L1⁰ = p(L2 − L2⁰) (eq_data's polynomial; tendon_length0 at qpos0)
    eqs = [e for e in range(int(model.neq)) if model.eq_active0[e] and int(model.eq_type[e]) == int(M.mjtEq.mjEQ_TENDON)]
    equal = tuple((int(model.eq_obj1id[e]), int(model.eq_obj2id[e])) for e in eqs)
    params = TendonParams(coef=f(coef), range=f(model.tendon_range) if any(limited) else None, stiffness=stiffness,
                          springlength=None if stiffness is None else f(model.tendon_lengthspring),
                          damping=some(model.tendon_damping), frictionloss=some(model.tendon_frictionloss),
                          polycoef=f(np.asarray(model.eq_data, float)[eqs, :5]) if eqs else None,
                          length0=f(model.tendon_length0) if eqs else None)
    return Tendons(joints=joints, limited=limited, equal=equal), params


def _actuators(M, model, d, hinges, dtype, extra: int = 0):
    """(``Joints.actuated``, ``force_limited``, ``actuation.ActuatorParams``) of MuJoCo's compiled
    actuators (each on a joint among ``hinges``, or on a fixed tendon: index J + t with J the world's
    joints, ``hinges`` and the ``extra`` welds and equalities after them), the control ``d.ctrl`` (a
    keyframe's or 0)."""
    index = {j: k for k, j in enumerate(hinges)}
    nu = int(model.nu)
    inf = np.tile([-np.inf, np.inf], (nu, 1))
    ctrl_lim = np.asarray(model.actuator_ctrllimited, bool)[:, None]
    force_lim = np.asarray(model.actuator_forcelimited, bool)
    f = lambda x: jnp.asarray(np.asarray(x, float), dtype)
    params = ActuatorParams(
        gear=f(model.actuator_gear[:, 0]), gain=f(model.actuator_gainprm[:, 0]), bias=f(model.actuator_biasprm[:, :3]),
        ctrl=f(d.ctrl), ctrlrange=f(np.where(ctrl_lim, model.actuator_ctrlrange, inf)),
        forcerange=f(np.where(force_lim[:, None], model.actuator_forcerange, inf)))
    tendon = int(M.mjtTrn.mjTRN_TENDON)  # an actuator on tendon t drives index J + t (Joints.actuated)
    actuated = tuple(len(hinges) + extra + int(model.actuator_trnid[a, 0]) if int(model.actuator_trntype[a]) == tendon
                     else index[int(model.actuator_trnid[a, 0])] for a in range(nu))
    return actuated, tuple(bool(x) for x in force_lim), params


def _actuators_xml(scene, params):
    """(the ``<actuator>`` element, the keyframe's ``ctrl`` attribute) of the world's actuators: each
    a ``<general>`` on its joint (``hinge{i}``/``slide{i}``, i its child body) with its gear, fixed
    gain and affine bias, its ranges where finite; ("", "") without actuators."""
    joints = scene.joints
    ap = None if joints is None else params.joints.actuators
    if ap is None:
        return "", ""
    rows = []
    for a, j in enumerate(joints.actuated):
        J = joints.num_joints
        on = f'tendon="tendon{j - J}"' if j >= J else f'joint="{joints.kind(j)}{joints.child[j]}"'
        attrs = (f'{on} gear="{_f(np.asarray(ap.gear)[a])}" gaintype="fixed" '
                 f'gainprm="{_f(np.asarray(ap.gain)[a])}" biastype="affine" biasprm="{_f(np.asarray(ap.bias)[a])}"')
        for name in ("ctrl", "force"):
            r = np.asarray(getattr(ap, f"{name}range"), float)[a]
            limited = bool(np.all(np.isfinite(r)))
            attrs += f' {name}limited="{str(limited).lower()}"' + (f' {name}range="{_f(r)}"' if limited else "")
        rows.append(f'    <general name="actuator{a}" {attrs}/>\n')
    return f'  <actuator>\n{"".join(rows)}  </actuator>\n', f' ctrl="{_f(np.asarray(ap.ctrl))}"'


def _tendons_xml(scene, params) -> str:
    """The ``<tendon>`` element of the world's fixed tendons (``Joints.tendons``): each a ``<fixed>``
    over its joints (``hinge{i}``/``slide{i}``, i the child body) with their coefficients, its range
    where limited, spring (``springlength`` lo hi), damping and friction loss; "" without tendons."""
    joints = scene.joints
    if joints is None or joints.tendons is None:
        return ""
    tp = params.joints.tendons
    coef = np.asarray(tp.coef, float)
    out = []
    for t, js in enumerate(joints.tendons.joints):
        a = ""
        if t in joints.tendons.limited_tendons:
            a += f' limited="true" range="{_f(np.asarray(tp.range, float)[t])}"'
        if tp.stiffness is not None:
            a += f' stiffness="{_f(np.asarray(tp.stiffness)[t])}" springlength="{_f(np.asarray(tp.springlength, float)[t])}"'
        for name in ("damping", "frictionloss"):
            if getattr(tp, name) is not None:
                a += f' {name}="{_f(np.asarray(getattr(tp, name))[t])}"'
        inner = "".join(f'      <joint joint="{joints.kind(j)}{joints.child[j]}" coef="{_f(coef[t, k])}"/>\n'
                        for k, j in enumerate(js))
        out.append(f'    <fixed name="tendon{t}"{a}>\n{inner}    </fixed>\n')
    return f'  <tendon>\n{"".join(out)}  </tendon>\n'


def _at_zero(M, model, d, slides):
    """A copy of ``d`` (None: MuJoCo's ``qpos0``) with the ``slides``' qpos set to 0 (their children
    where MuJoCo's qpos 0 puts them; a ball's its identity quaternion), positions computed
    (``mj_kinematics``); ``d`` itself when there are none."""
    if not slides and d is not None:
        return d
    d0 = M.MjData(_raw(model))
    d0.qpos[:] = model.qpos0 if d is None else d.qpos
    for j in slides:
        a = int(model.jnt_qposadr[j])
        if model.jnt_type[j] == M.mjtJoint.mjJNT_BALL:
            d0.qpos[a:a + 4] = (1.0, 0.0, 0.0, 0.0)
        else:
            d0.qpos[a] = 0.0
    M.mj_kinematics(_raw(model), d0)
    return d0


def _welds_and_equalities(M, model, d, welded, equalities) -> dict:
    """The rows of the jointless bodies inside moving ones (kind "welded": held at their pose in the
    parent, anchored at their centre of mass) and of the active connect and weld equalities (MuJoCo's
    ``eq_data``: a connect's anchor on body 1, then body 2's; a weld's anchor on body 2, then body 1's,
    then body 2's orientation in body 1's frame), each as ``joints.Joints`` entries: the child body 2
    (body 1 where body 2 is the world or held to it), the parent the other (−1: the world, then its
    anchor in world coordinates). Lists: kinds, parent, child, xp, xc (anchors), axis (unused:
    +z), reference (the child's orientation in the parent's frame)."""
    out = {k: [] for k in ("kinds", "parent", "child", "xp", "xc", "axis", "reference")}
    held = lambda b: b == 0 or _static(model, b)  # the world, a body welded to it, a mocap body (fixed scenery)
    R = lambda b: np.asarray(d.xmat[b], float).reshape(3, 3)
    quat = lambda b: np.asarray(d.xquat[b], float)

    def add(kind, c, pc, p, pp, ref):  # pc, pp: the anchors in MuJoCo's body frames (p: 0 the world)
        out["kinds"].append(kind)
        out["child"].append(model.index(c))
        out["xc"].append(np.asarray(pc, float) - model.body_ipos[c])
        out["axis"].append(np.array([0.0, 0.0, 1.0]))
        out["reference"].append(ref / np.linalg.norm(ref))
        if held(p):
            out["parent"].append(-1)
            out["xp"].append(np.asarray(d.xpos[p], float) + R(p) @ pp)
        else:
            out["parent"].append(model.index(p))
            out["xp"].append(np.asarray(pp, float) - model.body_ipos[p])

    def rel(p, c):  # body c's orientation in p's frame (the world's where p is held)
        q, inv = np.zeros(4), np.zeros(4)
        M.mju_negQuat(inv, quat(p) if not held(p) else np.array([1.0, 0, 0, 0]))
        M.mju_mulQuat(q, inv, quat(c))
        return q

    for b in welded:
        p = model.host[int(model.body_parentid[b])]
        add("welded", b, model.body_ipos[b], p, R(p).T @ (model.xipos(d, b) - d.xpos[p]), rel(p, b))
    for e in equalities:
        b1, b2 = int(model.eq_obj1id[e]), int(model.eq_obj2id[e])
        data = np.asarray(model.eq_data[e], float)
        relpose = data[6:10].copy()
        if int(model.eq_objtype[e]) == int(M.mjtObj.mjOBJ_SITE):  # two sites: their points, their frames aligned
            s1, s2 = b1, b2
            b1, b2 = int(model.site_bodyid[s1]), int(model.site_bodyid[s2])
            on1, on2 = np.asarray(model.site_pos[s1], float), np.asarray(model.site_pos[s2], float)
            inv = np.zeros(4)
            M.mju_negQuat(inv, np.asarray(model.site_quat[s2], float))
            M.mju_mulQuat(relpose, np.asarray(model.site_quat[s1], float), inv)
        elif int(model.eq_type[e]) == int(M.mjtEq.mjEQ_CONNECT):
            on1, on2 = data[0:3], data[3:6]
        else:
            on1, on2 = data[3:6], data[0:3]
        if int(model.eq_objtype[e]) != int(M.mjtObj.mjOBJ_SITE) and (b1 in model.folded or b2 in model.folded):
            # on folded bodies: the anchors and body 2's orientation in body 1's frame on their hosts
            (p1, q1), (p2, q2) = model.pose[b1], model.pose[b2]
            on1, on2 = model.on_host(b1, on1), model.on_host(b2, on2)
            inv, q = np.zeros(4), np.zeros(4)
            M.mju_negQuat(inv, q2)
            M.mju_mulQuat(q, q1, relpose.copy())
            M.mju_mulQuat(relpose, q.copy(), inv)
            b1, b2 = model.host[b1], model.host[b2]
        kind = "connect" if int(model.eq_type[e]) == int(M.mjtEq.mjEQ_CONNECT) else "weld"
        if kind == "connect":  # no orientation held: the reference is the start's (unused)
            add(kind, b1, on1, b2, on2, rel(b2, b1)) if held(b2) else add(kind, b2, on2, b1, on1, rel(b1, b2))
        elif held(b2):  # body 1 the child: its orientation in body 2's frame is relpose⁻¹
            q = np.zeros(4)
            M.mju_negQuat(q, relpose)
            if held(b2) and b2 != 0:
                M.mju_mulQuat(q, quat(b2), q.copy())
            add(kind, b1, on1, b2, on2, q)
        else:
            q = relpose.copy()
            if held(b1) and b1 != 0:
                M.mju_mulQuat(q, quat(b1), relpose.copy())
            add(kind, b2, on2, b1, on1, q)
    return out


def _hinge_passive(M, model, hinges, parent, dtype, reference: bool = False) -> dict:
    """The hinges' and slides' passive fields of ``joints.JointParams`` (none when every one is zero
    and ``reference`` is False): MuJoCo's compiled ``dof_damping``, ``jnt_stiffness``,
    ``qpos_spring`` (springref) and ``dof_armature``, and each child's orientation in its parent's
    frame at qpos = 0 (the reference a hinge's angle is measured from, so q here is MuJoCo's qpos;
    the orientation a slide keeps)."""
    dof = [int(model.jnt_dofadr[j]) for j in hinges]
    adr = [int(model.jnt_qposadr[j]) for j in hinges]
    fields = dict(damping=np.asarray(model.dof_damping)[dof], stiffness=np.asarray(model.jnt_stiffness)[hinges],
                  armature=np.asarray(model.dof_armature)[dof])
    if not reference and not any(np.any(v != 0) for v in fields.values()):
        return {}
    d0 = _at_zero(M, model, None, hinges)
    ref = []
    for j, p in zip(hinges, parent):
        qc = np.asarray(d0.xquat[model.jnt_bodyid[j]], float)
        if p < 0:
            ref.append(qc)
        else:
            out, inv = np.zeros(4), np.zeros(4)
            M.mju_negQuat(inv, np.asarray(d0.xquat[model.kept[p]], float))
            M.mju_mulQuat(out, inv, qc)
            ref.append(out)
    out = {k: jnp.asarray(v, dtype) for k, v in fields.items() if np.any(v != 0)}
    springref = np.where([model.jnt_type[j] == M.mjtJoint.mjJNT_BALL for j in hinges], 0.0, np.asarray(model.qpos_spring)[adr])
    out.update(springref=jnp.asarray(springref, dtype), reference=jnp.asarray(np.stack(ref), dtype))
    return out


FRICTION_RTOL = 1e-9  # a pair's μ in MuJoCo and here agree within this (relative): to_mjcf's pairs are exact


def mujoco_pair_friction(mu_a, mu_b, condim_a=3, condim_b=3, priority_a=0, priority_b=0):
    """(μ, rule) MuJoCo gives a contact of two geoms without an explicit ``<pair>``: the geom of the
    higher ``priority`` decides its condim and μ; at equal priority the larger condim and
    max(μ_a, μ_b); condim 1 is frictionless."""
    if priority_a != priority_b:
        mu, dim = (mu_a, condim_a) if priority_a > priority_b else (mu_b, condim_b)
        rule = "the higher geom priority's"
    else:
        mu, dim, rule = max(mu_a, mu_b), max(condim_a, condim_b), "max(mu_a, mu_b)"
    return (0.0, "condim 1: frictionless") if dim == 1 else (float(mu), rule)


def _warn_friction(mus, ground_mu, pairs, explicit, names, fixed=(), rules=None):
    """``FrictionRuleWarning`` when a pair's μ here (√(μ_a μ_b)) is not MuJoCo's (its explicit
    ``<pair>``'s, else ``mujoco_pair_friction`` of the bodies' condims and priorities ``rules``:
    (per body, per body, the ground's (condim, priority)); None: max(μ_a, μ_b)), naming the pair of
    the largest difference."""
    dims, prios, ground_rule = rules if rules is not None else ([3] * len(mus), [0] * len(mus), (3, 0))
    worst, where = 0.0, None
    cases = [(mus[a], mus[b], explicit.get((a, b)), f"bodies {names[a]} and {names[b]}", (dims[a], dims[b], prios[a], prios[b]))
             for a, b in pairs]
    if ground_mu is not None:
        cases += [(m, ground_mu, explicit.get((-1, i)), f"body {names[i]} and the ground",
                   (dims[i], ground_rule[0], prios[i], ground_rule[1])) for i, m in enumerate(mus) if i not in fixed]
    for ma, mb, given, what, (da, db, pa, pb) in cases:
        mine = float(np.sqrt(ma * mb))
        theirs, rule = mujoco_pair_friction(ma, mb, da, db, pa, pb) if given is None else (given, "its <contact><pair>'s friction")
        diff = abs(theirs - mine)
        if diff > FRICTION_RTOL * max(theirs, mine) and diff > worst:
            worst, where = diff, (what, mine, theirs, rule)
    if where is not None:
        warnings.warn(f"the geoms' friction differs: jaxcontact gives a pair sqrt(mu_a mu_b), MuJoCo max(mu_a, mu_b) "
                      f"(the higher geom priority's, none at condim 1) or an explicit <contact><pair>'s friction; the "
                      f"largest difference is {where[0]}: {where[1]:.4g} here, {where[2]:.4g} in MuJoCo ({where[3]})",
                      FrictionRuleWarning, stacklevel=3)


def from_mjcf(source, keyframe=None, approximate: bool = False, dtype=None, **scene_kw):
    """``from_mujoco`` of an MJCF or URDF file (a path: ``str`` or ``os.PathLike``) or of MJCF text
    (a ``str`` starting with ``<``), compiled by MuJoCo (includes and meshes are found relative to
    the file). ``bytes`` are refused (decode them to ``str``, or compile them yourself with
    ``mujoco.MjModel.from_xml_string`` and call ``from_mujoco``). Errors are one line: a missing
    file is a ``FileNotFoundError``, a directory an ``IsADirectoryError``, anything else a
    ``ValueError`` that names the file (MuJoCo's compiler message, an element the world cannot
    hold, a keyframe with a NaN or infinite entry or a zero quaternion, a centre of mass outside
    its body's hull), all before any simulation."""
    check_arguments("worlds.from_mjcf", source=(source, SOURCE), keyframe=(keyframe, KEYFRAME),
                    approximate=(approximate, BOOL), dtype=(dtype, DTYPE))
    mujoco = require_mujoco("from_mjcf")
    if isinstance(source, (bytes, bytearray, memoryview)):
        raise ValueError(f"from_mjcf: got {type(source).__name__} ({len(source)} bytes); pass a file path, or the "
                         "MJCF text as a str (data.decode()), or compile it with mujoco.MjModel.from_xml_string "
                         "and call from_mujoco")
    if not isinstance(source, (str, os.PathLike)):
        raise ValueError(f"from_mjcf: expected a file path (str or os.PathLike) or MJCF text (a str starting with "
                         f"'<'), got {'None' if source is None else type(source).__name__}")
    text = source if isinstance(source, str) and source.lstrip().startswith("<") else None
    if text is None:
        path = os.fspath(source)
        shown = path if len(path) <= 200 and "\n" not in path else f"{path[:60]!r}... ({len(path)} characters)"
        if os.path.isdir(path):
            raise IsADirectoryError(f"MJCF/URDF file {shown}: not a file (a directory)")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"MJCF/URDF file not found: {shown}")
    where = "the MJCF text" if text is not None else shown
    try:
        spec = mujoco.MjSpec.from_string(text) if text is not None else mujoco.MjSpec.from_file(path)
        model = spec.compile()
    except ValueError as err:  # MuJoCo's parser and compiler: "XML Error: ..." over several lines
        raise ValueError(f"MuJoCo could not load {where}: {_one_line(err)}") from None
    try:
        if keyframe is not None:
            key_quaternions(mujoco, spec, model, keyframe)
        return from_mujoco(model, keyframe=keyframe, approximate=approximate, dtype=dtype, **scene_kw)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None


# ------------------------------------------------------------------------------------ writing

def _f(x) -> str:
    """Numbers as the shortest text that reads back to the same float64 (``repr``)."""
    return " ".join(repr(float(v)) for v in np.ravel(x))


def _qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def _box_size(verts):
    """Half sizes of an axis-aligned box centred at the origin with exactly these 8 vertices, or None."""
    if len(verts) != 8:
        return None
    h = np.max(np.abs(verts), axis=0)
    tol = 1e-9 * max(float(np.max(h)), 1e-12)
    if np.any(h <= tol) or np.max(np.abs(np.abs(verts) - h)) > tol:
        return None
    if len({tuple(np.sign(v).astype(int)) for v in verts}) != 8:
        return None
    return h


PAIR_ATTRIBUTES = ("condim", "solref", "solreffriction", "solimp", "margin", "gap")  # a <pair>'s, as a geom's


def _round_geom(scene, body, i: int, kind: str, core) -> str:
    """The MJCF geom attributes of round body ``i`` (``scene.shapes[i]``): a sphere at its core
    vertex, a capsule between its two (``fromto``), a cylinder or ellipsoid at the body's origin."""
    if kind == "sphere":
        return f'type="sphere" size="{_f(float(body.radius[i]))}" pos="{_f(core[0])}"'
    if kind == "capsule":
        return f'type="capsule" size="{_f(float(body.radius[i]))}" fromto="{_f(np.concatenate(core[:2]))}"'
    if kind == "cylinder":
        return f'type="cylinder" size="{_f(np.asarray(body.cylinder[i], float))}"'
    if kind == "ellipsoid":
        return f'type="ellipsoid" size="{_f(np.asarray(body.ellipsoid[i], float))}"'
    raise ValueError(f"to_mjcf: {scene.body_name(i)} is a {kind}, which has no MuJoCo geom")


def _compound_geoms(scene, body, i: int, verts, attributes: str, assets: list) -> str:
    """The MJCF geoms of compound body ``i`` (``Scene.parts``), one per part: a hull part as a mesh
    of its vertices in the body frame (``hull{i}_{k}`` in ``assets``), a sphere at its centre, a
    capsule between its two ends (``fromto``), each with its own radius; named ``geom{i}_{k}``."""
    out = []
    for k, (kind, start, stop, _) in enumerate(scene.parts[i]):
        v = verts[start:stop]
        name = f'name="geom{i}_{k}"'
        if kind == "hull":
            assets.append(f'    <mesh name="hull{i}_{k}" vertex="{_f(v)}"/>\n')
            out.append(f'<geom {name} type="mesh" mesh="hull{i}_{k}" {attributes}/>')
        elif kind in ("cylinder", "ellipsoid"):  # at its centre and orientation (Body.vertex_shape)
            row = np.asarray(body.vertex_shape[i][start], float)
            size = row[1:3] if kind == "cylinder" else row[1:4]
            out.append(f'<geom {name} type="{kind}" size="{_f(size)}" pos="{_f(v[0])}" quat="{_f(row[4:8])}" {attributes}/>')
        else:
            r = float(body.vertex_radius[i][start])
            where = f'pos="{_f(v[0])}"' if kind == "sphere" else f'fromto="{_f(np.concatenate(v[:2]))}"'
            out.append(f'<geom {name} type="{kind}" size="{_f(r)}" {where} {attributes}/>')
    return "\n      ".join(out)


def pair_friction(scene, friction, ground_mu) -> dict:
    """Per-body μ as MuJoCo ``<pair>``s: ``{(a, b): μ}`` of every pair of bodies that can touch (the
    scene's pairs; ``(-1, i)``: body i and the ground, when the world has one), μ jaxcontact's own
    combined friction of the pair (``worlds.materials``: √(μ_a μ_b), the ground's μ the law's)."""
    mix = lambda a, b: float(np.sqrt(a * b)) if a * b > 0 else 0.0
    out = {(a, b): mix(friction[a], friction[b]) for a, b in scene.pairs}
    if scene.ground:
        out.update({(-1, i): mix(friction[i], ground_mu) for i in range(scene.num_bodies)
                    if i not in scene.fixed and i not in scene.contactless})
    return out


def _soft_xml(scene, params, geom: dict, option: dict):
    """``to_mjcf``'s MuJoCo soft values of a world in ``constraints="mujoco"`` (``params.soft``), as
    ``from_mjcf`` reads them back: (each body's geom attributes, the ground's (the tilted planes share
    them), ``<option>``'s impratio and cone, a function giving a ``<pair>``'s attributes for bodies
    (a, b) (−1: the ground): MuJoCo's mix of the two sides, ``soft.mixed``, since a pair takes none
    from its geoms). A key the caller's ``geom``/``option`` gives is theirs. None in the hard mode."""
    sp = getattr(params, "soft", None)
    if scene.constraints != "mujoco" or sp is None:
        return None
    from .soft import mixed

    def attrs(ref, imp, mix, margin, prio, cond):
        values = dict(solref=_f(ref), solimp=_f(imp), solmix=_f(mix), margin=_f(margin), priority=str(int(prio)),
                      condim=str(int(cond)))
        return "".join(f' {k}="{v}"' for k, v in values.items() if k not in geom)

    a = lambda x: np.asarray(x, float)
    bodies = [attrs(a(sp.solref)[i], a(sp.solimp)[i], a(sp.solmix)[i], a(sp.margin)[i], sp.priority[i], sp.condim[i])
              for i in range(scene.num_bodies)]
    ground = attrs(a(sp.ground_solref), a(sp.ground_solimp), a(sp.ground_solmix), a(sp.ground_margin),
                   sp.ground_priority, sp.ground_condim)
    opt = "".join(f' {k}="{v}"' for k, v in (("impratio", _f(a(sp.impratio))), ("cone", sp.cone)) if k not in option)

    def pair(b1: int, b2: int) -> str:
        ref, imp, margin, cond = (np.asarray(x)[0] for x in mixed(sp, np.asarray([[b1, b2]])))
        values = dict(solref=_f(ref), solimp=_f(imp), margin=_f(margin), condim=str(int(cond)))
        return "".join(f' {k}="{v}"' for k, v in values.items() if k not in geom)

    return bodies, ground, opt, pair


def _pairs(scene, friction, ground_mu, geom: dict, soft=None) -> str:
    """The ``<pair>`` elements of ``pair_friction``; the geoms' extra contact attributes (``geom``'s
    ``PAIR_ATTRIBUTES``) repeated on each, since a pair does not take them from its geoms; in MuJoCo's
    soft mode each pair's mixed soft values (``soft``: ``_soft_xml``'s pair function)."""
    extra = "".join(f' {k}="{v}"' for k, v in geom.items() if k in PAIR_ATTRIBUTES)
    name = lambda i: "ground" if i < 0 else f"geom{i}"
    more = (lambda a, b: "") if soft is None else soft
    return "".join(f'    <pair geom1="{name(a)}" geom2="{name(b)}" friction="{_f([mu, mu])} 0.005 0.0001 0.0001"'
                   f'{extra}{more(a, b)}/>\n' for (a, b), mu in pair_friction(scene, friction, ground_mu).items())


def to_mjcf(scene, params, state, model=None, path=None, option: dict | None = None, geom: dict | None = None,
            name: str = "jaxcontact") -> str:
    """The world as MJCF text (also written to ``path`` if given) that MuJoCo loads with the same
    bodies (a box as a box geom, any other hull as a mesh), masses and inertias (``<inertial>`` at
    the body's origin, its centre of mass), friction (below), poses (the bodies' ``pos``/``quat``:
    MuJoCo's ``qpos0`` is ``state``) and joints (a world's revolute joints as hinges, the child body
    nested in its parent; every other body on a free joint). Velocities go to a keyframe named
    ``"initial"`` (MuJoCo starts worlds at rest: ``from_mjcf(..., keyframe="initial")``, or the
    viewer's key 0). A fixed body (``Scene.fixed``) is a body of the world body without a joint
    (MuJoCo welds it to the world; no qpos), at its pose. The pairs the scene leaves out become ``<exclude>``s. ``model``: its ``dt`` and gravity (default ``worlds.model()``'s).
    ``option``/``geom``: extra MuJoCo attributes for ``<option>`` and every geom (the plane too)
    (``{"cone": "elliptic"}``, ``{"condim": 1}``), which have no jaxcontact counterpart.

    Friction: one μ (the law's, no per-body ``body.friction``) is every geom's, and MuJoCo's pairs
    get it too. Per-body μ: each geom carries its body's μ (the plane the law's), but MuJoCo would
    give a pair max(μ_a, μ_b) where jaxcontact gives √(μ_a μ_b) (``worlds.materials``), so every
    pair of bodies that can touch, and every body with the ground, is also written as a
    ``<contact><pair>`` carrying jaxcontact's own μ for it (``pair_friction``; MuJoCo uses an explicit
    pair in place of its own rule, and ``from_mjcf`` reads it back without a ``FrictionRuleWarning``).
    The torsional and rolling friction written (0.005, 0.0001) are MuJoCo's defaults; jaxcontact has
    none.

    MuJoCo's soft mode (``Scene.constraints = "mujoco"``, ``params.soft``): each body's contact solref,
    solimp, solmix, margin, priority and condim on its geoms, the ground's on the floor and the tilted
    planes, impratio and the cone on ``<option>``, each limited joint's solimplimit and margin, and a
    ``<pair>``'s mixed values (``soft.mixed``), so ``from_mjcf(text, constraints="mujoco")`` reads the
    same ``SoftParams`` back; a key given in ``geom``/``option`` is the caller's.

    Refused (``ValueError``): anisotropic μ (MuJoCo's geom friction is isotropic), a body that is
    the child of two joints (MuJoCo's joints form a tree). Restitution has no MuJoCo counterpart
    and is left out with a warning."""
    check_arguments("worlds.to_mjcf", scene=(scene, Scene), params=(params, Params), state=(state, State),
                    model=(model, (Model, None)), path=(path, OPTIONAL_PATH), option=(option, (dict, None)),
                    geom=(geom, (dict, None)), name=(name, str))
    from .scenes import model as world_model

    model = world_model() if model is None else model
    body = params.body
    N = scene.num_bodies
    verts_all = np.asarray(body.vertices, float)
    mask = np.asarray(body.vertex_mask) > 0
    pos, quat = np.asarray(state.pos, float), np.asarray(state.quat, float)
    quat = quat / np.linalg.norm(quat, axis=-1, keepdims=True)
    vel, omega = np.asarray(state.vel, float), np.asarray(state.omega, float)
    if pos.shape != (N, 3):
        raise ValueError(f"to_mjcf: state.pos must be ({N}, 3) for the scene's {N} bodies (one world), got {pos.shape}")
    mu_law = np.broadcast_to(np.asarray(params.law.mu, float), (2,))
    if mu_law[0] != mu_law[1]:
        raise ValueError(f"to_mjcf: the law's mu {_numbers(mu_law)} is anisotropic; MuJoCo's geom friction is isotropic")
    if np.any(np.asarray(getattr(params.law, "restitution", 0.0)) != 0):
        warnings.warn("to_mjcf: restitution has no MuJoCo counterpart; the MJCF has none", UserWarning, stacklevel=2)
    friction = None if body.friction is None else np.broadcast_to(np.asarray(body.friction, float), (N,))
    if friction is not None and scene.parts is not None and any(p is not None for p in scene.parts):
        i = next(i for i, p in enumerate(scene.parts) if p is not None)
        raise ValueError(f"to_mjcf: per-body friction (body.friction) with {scene.body_name(i)} a compound: MuJoCo's "
                         "<pair>s name one geom each, a compound has several; give one μ (the law's)")
    extra_geom = "".join(f' {k}="{v}"' for k, v in (geom or {}).items())
    if scene.no_ground and {"contype", "conaffinity"} & set(geom or {}):
        raise ValueError(f"to_mjcf: geom= sets contype/conaffinity, which keep {scene.body_name(scene.no_ground[0])} off the "
                         "ground (Scene.no_ground); leave them out")
    medium = getattr(params, "medium", None)  # a fluid medium: MuJoCo's own options (its compiler picks the frames)
    fluid = {} if medium is None else {"density": _f(medium.density), "viscosity": _f(medium.viscosity),
                                       "wind": _f(medium.wind)}
    extra_option = "".join(f' {k}="{v}"' for k, v in (fluid | (option or {})).items())
    soft = _soft_xml(scene, params, geom or {}, option or {})  # MuJoCo's soft values (constraints="mujoco")
    if soft is not None:
        extra_option += soft[2]

    # the joint tree
    parent_of, hinge_of, group_of = {}, {}, {}
    if scene.joints is not None:
        jp = params.joints
        for g in scene.joints.groups:
            p, c = scene.joints.parent[g[0]], scene.joints.child[g[0]]
            if scene.joints.kind(g[0]) in world_joints.EQUALITIES:
                continue
            if c in parent_of:
                raise ValueError(f"to_mjcf: {scene.body_name(c)} is the child of two joints; MuJoCo's joints form a tree")
            parent_of[c] = p
            hinge_of[c] = g[0]
            group_of[c] = g
        anchor_child = np.asarray(jp.anchor_child, float)
        axis_child = np.asarray(jp.axis_child, float)
        q_now, passive_xml = _passive_xml(scene, jp, state, None if soft is None else params.soft)
        rates = np.asarray(world_joints.coordinates(scene.joints, jp, state)[1], float)
    children = {i: [c for c in range(N) if parent_of.get(c, -2) == i] for i in range(-1, N)}
    roots = [i for i in range(N) if parent_of.get(i, -1) == -1]

    assets, order, qpos, qvel = [], [], [], []
    R = [np.asarray(quat_to_mat(q)) for q in quat]

    def body_xml(i, parent, depth):
        order.append(i)
        if parent is None or parent < 0:
            rel_pos, rel_quat = pos[i], quat[i]
        else:
            rel_pos = R[parent].T @ (pos[i] - pos[parent])
            qp = quat[parent] * np.array([1, -1, -1, -1])
            rel_quat = _qmul(qp, quat[i])
        v = verts_all[i][mask[i]]
        h = _box_size(v)
        mu = mu_law[0] if friction is None else friction[i]
        fr = f'friction="{_f(mu)} 0.005 0.0001"' + ("" if soft is None else soft[0][i])
        kind = "hull" if scene.shapes is None else scene.shapes[i]
        if i in scene.contactless:  # collides with nothing: no geom, its mass and inertia alone
            g = "<!-- collides with nothing: no geom -->"
        elif kind == "compound":
            g = _compound_geoms(scene, body, i, verts_all[i], f"{fr}{extra_geom}", assets)
        elif kind != "hull":
            g = f'<geom name="geom{i}" {_round_geom(scene, body, i, kind, v)} {fr}{extra_geom}/>'
        elif h is not None:
            g = f'<geom name="geom{i}" type="box" size="{_f(h)}" {fr}{extra_geom}/>'
        else:
            assets.append(f'    <mesh name="hull{i}" vertex="{_f(v)}"/>\n')
            g = f'<geom name="geom{i}" type="mesh" mesh="hull{i}" {fr}{extra_geom}/>'
        if scene.no_ground and i not in scene.no_ground:  # the floor's bit 2 (below) in its affinity: touches it
            g = g.replace("<geom ", '<geom conaffinity="3" ')
        I = np.asarray(body.inertia[i], float)
        inertial = (f'<inertial pos="0 0 0" mass="{_f(body.mass[i])}" '
                    f'fullinertia="{_f([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])}"/>')
        if i in scene.fixed:  # fixed to the world: a body without a joint (MuJoCo welds it to the world)
            joint = '<!-- fixed to the world: no joint -->'
        elif i in group_of and (len(group_of[i]) > 1 or scene.joints.kind(group_of[i][0]) not in world_joints.SCALAR):
            joint = _group_xml(scene, jp, state, i, parent, group_of[i], q_now, passive_xml, rates, qpos, qvel)
        elif i in hinge_of and scene.joints.kind(hinge_of[i]) == "slide":
            j = hinge_of[i]
            joint = (f'<joint name="slide{i}" type="slide" pos="{_f(anchor_child[j])}" axis="{_f(axis_child[j])}"'
                     f'{passive_xml[j]}/>')
            qpos.append([q_now[j]])  # the XML pose is the state's: its displacement is ``ref``
            qvel.append([float(np.asarray(world_joints.coordinates(scene.joints, jp, state)[1])[j])])
        elif i in hinge_of:
            j = hinge_of[i]
            joint = (f'<joint name="hinge{i}" type="hinge" pos="{_f(anchor_child[j])}" axis="{_f(axis_child[j])}"'
                     f'{passive_xml[j]}/>')
            axis_w = R[i] @ axis_child[j]
            w_p = np.zeros(3) if parent is None or parent < 0 else R[parent] @ omega[parent]
            qpos.append([q_now[j]])  # the XML pose is the state's: its angle is ``ref``
            qvel.append([float((R[i] @ omega[i] - w_p) @ axis_w / np.linalg.norm(axis_w))])
        else:
            joint = f'<freejoint name="free{i}"/>'
            qpos.append(np.r_[pos[i], quat[i]])
            qvel.append(np.r_[vel[i], omega[i]])
        inner = "".join(body_xml(c, i, depth + 1) for c in children[i])
        pad = "  " * (depth + 2)
        return (f'{pad}<body name="body{i}" pos="{_f(rel_pos)}" quat="{_f(rel_quat)}">\n{pad}  {joint}\n'
                f'{pad}  {inertial}\n{pad}  {g}\n{inner}{pad}</body>\n')

    bodies = "".join(body_xml(i, -1, 0) for i in roots)
    if len(order) != N:
        raise ValueError("to_mjcf: the joints do not form a tree over the bodies")
    plane = ""
    if scene.ground:
        n = np.asarray(params.ground.normal, float)
        n = n / np.linalg.norm(n)
        plane = (f'    <geom name="ground" type="plane" size="0 0 0.05" pos="{_f(n * float(params.ground.height))}" '
                 f'zaxis="{_f(n)}" friction="{_f(mu_law[0])} 0.005 0.0001"{"" if soft is None else soft[1]}{extra_geom}/>\n')
        if scene.no_ground:  # contype = conaffinity = 2: the floor touches the geoms of affinity 3, not the others' 1
            plane = plane.replace('type="plane"', 'type="plane" contype="2" conaffinity="2"')
    plane += _planes_xml(scene, params, friction, mu_law[0], ("" if soft is None else soft[1]) + extra_geom)
    jointed = set() if scene.joints is None else scene.joints.body_pairs()
    keep = set(scene.pairs) | jointed
    excludes = "".join(f'    <exclude body1="body{a}" body2="body{b}"/>\n' for a in range(N) for b in range(a + 1, N)
                       if (a, b) not in keep)
    pair_soft = None if soft is None else soft[3]
    pair_xml = "" if friction is None else _pairs(scene, friction, mu_law[0], geom or {}, pair_soft)
    pair_xml += _plane_pairs(scene, params, friction, mu_law[0], geom or {}, pair_soft)
    actuators, ctrl = _actuators_xml(scene, params)
    actuators = _equalities_xml(scene, params) + _tendon_equalities_xml(scene, params, state) + actuators
    key = (f'  <keyframe>\n    <key name="initial" qpos="{_f(np.concatenate(qpos))}"\n'
           f'         qvel="{_f(np.concatenate(qvel))}"{ctrl}/>\n  </keyframe>\n') if qpos else (
        '  <keyframe>\n    <key name="initial"/>\n  </keyframe>\n')  # a world of no bodies: no coordinates
    xml = (f'<mujoco model="{name}">\n'
           f'  <!-- written by jaxcontact.worlds.to_mjcf: body i is jaxcontact body i, its origin at its centre of '
           f'mass; the velocities are in the keyframe "initial" -->\n'
           f'  <option timestep="{_f(model.dt)}" gravity="{_f([*model.gravity_xy, -float(model.gravity)])}"{extra_option}/>\n'
           + (f'  <asset>\n{"".join(assets)}  </asset>\n' if assets else "")
           + f'  <worldbody>\n{plane}{bodies}  </worldbody>\n'
           + (f'  <contact>\n{excludes}{pair_xml}  </contact>\n' if excludes or pair_xml else "")
           + _tendons_xml(scene, params) + actuators + key + '</mujoco>\n')
    if path is not None:
        with open(path, "w") as f:
            f.write(xml)
    return xml


__all__ = ["COMPOUND_GEOMS", "FoldedModel", "FrictionRuleWarning", "MUJOCO_MIN_VERSION", "MujocoUnavailable", "body_groups", "compound_body", "from_mjcf", "from_mujoco",
           "key_quaternions", "mujoco_data", "mujoco_pair_friction", "mujoco_trajectory", "pair_friction", "require_mujoco", "round_points", "to_mjcf"]
