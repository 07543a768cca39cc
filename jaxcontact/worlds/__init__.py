"""Worlds of many convex bodies touching each other and the ground, in one hard contact problem
(``scene``: the static description; ``step``: the step, rollouts; ``scenes``: ready-made worlds;
``billiards``: a pusher's velocity chosen by gradient so that a struck box rests at a target;
``sharding``: batches of worlds sharded over devices; ``materials``: per-body friction;
``joints``: revolute joints between bodies, eliminated before the contact problem — a chain is a
world with joints, ``chains.as_world``; ``mjcf``: worlds from MuJoCo's MJCF/URDF files and back,
``from_mjcf``/``from_mujoco``/``to_mjcf``, mujoco imported on use; ``animate``: worlds as GIFs;
``checks``: physics checks of a batch of rollouts, ``rollout_checks``; ``planes``: tilted planes, walls
and ramps, as fixed scenery)."""

from . import billiards, contacts, joints, materials, planes, scenes, soft
from .mjcf import from_mjcf, from_mujoco, to_mjcf
from .joints import JointedParams, JointParams, Joints
from .scenes import DEFAULT_LAW, model
from .scene import Scene, make_scene, stack_bodies
from .soft import SoftParams, soft_params
from .sharding import sharded_batch_rollout
from .contacts import WorldContacts, collide
from .pipeline import WorldInfo, batch_rollout, check_law, energy, rollout, step, step_with_info, validate
from .checks import rollout_checks

__all__ = ["DEFAULT_LAW", "JointParams", "JointedParams", "Joints", "SoftParams", "billiards", "contacts", "joints", "materials",
           "model", "planes", "scenes", "soft", "soft_params",
           "Scene", "WorldContacts", "WorldInfo", "batch_rollout", "check_law", "collide", "energy", "make_scene",
           "from_mjcf", "from_mujoco", "to_mjcf", "rollout", "rollout_checks", "sharded_batch_rollout", "stack_bodies", "step", "step_with_info", "validate"]
