"""System identification by differentiating rollouts (issue 10).

Fit any differentiable subset of the physical parameters — friction (isotropic or anisotropic),
restitution, mass and inertia, ground normal and height, body vertices — to observed
trajectories by minimising a short-window (multiple-shooting) trajectory loss through
``jaxcontact.rollout``: Levenberg–Marquardt on the residuals with JAX Jacobians, optax Adam, or
scipy Nelder–Mead as the derivative-free baseline. See docs/sysid.md.
"""

from .core import METHODS, FitResult, Problem, default_params, errors, fit, within_tolerance
from .data import Trajectories, check_trajectories, load, save
from .optim import FitError
from .params import NAMES, ParamSpec, canonical
from .schedule import (DEFAULT_SCHEDULE, GRID_SCHEDULE, NOISY_SCHEDULE, RANDOM_START_NOISY_SCHEDULE, RANDOM_START_SCHEDULE,
                       SCHEDULES, Stage, staged_fit)

__all__ = [
    "DEFAULT_SCHEDULE", "GRID_SCHEDULE", "NOISY_SCHEDULE", "RANDOM_START_SCHEDULE", "RANDOM_START_NOISY_SCHEDULE", "SCHEDULES", "METHODS", "NAMES", "Stage", "FitError", "FitResult", "ParamSpec", "Problem", "Trajectories", "canonical",
    "check_trajectories", "default_params", "errors", "fit", "load", "save", "staged_fit", "within_tolerance",
]
