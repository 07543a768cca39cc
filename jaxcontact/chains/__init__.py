"""Articulated chains: box links joined by revolute joints, maximal coordinates.

``model`` — ``ChainParams`` (pytree), ``ChainModel`` (static), builders, joint rows, validation;
``dynamics`` — the ground truth: the chain as a world with joints (``as_world``), stepped by the
worlds' one multi-body step (``step``, ``rollout``).
dacm's Algorithm 2 on these chains lives in ``jaxcontact.dacm.chain``.
"""

from .dynamics import as_world, batch_rollout, rollout, step, step_with_info
from .model import (
    ChainModel,
    ChainParams,
    energy,
    horizontal_state,
    joint_angles,
    joint_separation,
    lowest_point,
    make_chain,
    planar_state,
    validate_chain,
)

__all__ = [
    "ChainModel", "ChainParams", "as_world", "batch_rollout", "energy", "horizontal_state",
    "joint_angles", "joint_separation", "lowest_point", "make_chain", "planar_state", "rollout",
    "step", "step_with_info", "validate_chain",
]
