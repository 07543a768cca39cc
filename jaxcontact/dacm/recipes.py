"""Named training recipes of ``jaxcontact dacm train`` (``--preset``).

``best`` (alias ``default``) is the best measured recipe and the default: friction-ratio target,
coulomb inputs, resting / steady-sliding steps capped per throw, early stopping on held-out
throws, the residual friction head, epoch caps and a total training-time budget that grows with
the data size so that a default run stays bounded. ``paper`` is the paper-faithful setup (Fig. 3
hyper-parameters, the paper's inputs and targets, no subsampling, no early stopping, no budget).
Explicit command-line flags override a preset's values. Why these values: docs/dacm.md,
sections "Improvements over the paper" and "Default recipe"; measurements in
``studies/dacm/results/defaults.json``.
"""

from __future__ import annotations

from .networks import HyperParams

# Keys of a recipe = keyword arguments of ``train.train`` plus the epoch caps / width scale
# (``HyperParams.scaled``) and the time budget (``budget``: seconds for all networks together,
# ``None`` off; ``budget_per_kilo``: seconds added per 1 000 training instances) and the symmetry
# averaging the checkpoint asks its law for (``symmetry_for``; ``evaluate --symmetry k`` overrides it).
KEYS = ("friction_target", "inputs", "max_rest_per_throw", "max_steady_per_throw", "patience",
        "friction_head", "regressor_weight", "clf_epochs", "reg_epochs", "hidden_scale", "time_limit",
        "budget", "budget_per_kilo", "symmetry")

PAPER = dict(friction_target="absolute", inputs="paper", max_rest_per_throw=None, max_steady_per_throw=None,
             patience=None, friction_head="plain", regressor_weight="uniform", clf_epochs=100, reg_epochs=1000,
             hidden_scale=None, time_limit=None, budget=None, budget_per_kilo=None, symmetry=1)

BEST = dict(friction_target="ratio", inputs="coulomb", max_rest_per_throw=20, max_steady_per_throw=20,
            patience=20, friction_head="residual", regressor_weight="uniform", clf_epochs=100, reg_epochs=300,
            hidden_scale=None, time_limit=None, budget=60.0, budget_per_kilo=5.0, symmetry="auto")

PRESETS = {"best": BEST, "default": BEST, "paper": PAPER}


def resolve(preset: str = "default", **overrides) -> dict:
    """The recipe of ``preset`` with every override that is not ``None`` applied. An integer
    option given as 0 (``max_rest_per_throw``, ``max_steady_per_throw``, ``patience``) and a
    budget / time limit given as 0 mean "off" (``None``)."""
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {tuple(PRESETS)}, got {preset!r}")
    unknown = set(overrides) - set(KEYS)
    if unknown:
        raise ValueError(f"unknown recipe keys {sorted(unknown)}")
    r = dict(PRESETS[preset])
    for k, v in overrides.items():
        if v is None:
            continue
        if k in ("max_rest_per_throw", "max_steady_per_throw", "patience", "budget", "budget_per_kilo",
                 "time_limit") and v == 0:
            v = None
        r[k] = v
    return r


def hyperparams(recipe: dict, shape: str) -> HyperParams:
    """Fig. 3 architectures with the recipe's epoch caps and width scale."""
    return HyperParams.paper(shape).scaled(recipe["clf_epochs"], recipe["reg_epochs"], recipe["hidden_scale"])


def symmetry_for(recipe: dict, dim: int, anisotropic: bool) -> int:
    """The law's symmetry averaging (``DACMLaw.symmetry``) for this data: "auto" is the largest
    exact symmetry of the ground truth about the ground normal — 4 for isotropic friction in 3D,
    2 for the anisotropic pyramid, 1 in 2D."""
    k = recipe.get("symmetry", 1)
    if k == "auto":
        return 1 if dim != 3 else (2 if anisotropic else 4)
    k = int(k)
    if k > 1 and dim != 3:
        raise ValueError("symmetry > 1 needs 3D data")
    if k == 4 and anisotropic:
        raise ValueError("symmetry 4 needs isotropic friction (anisotropic data: 2)")
    return k


def total_budget(budget: float | None, per_kilo: float | None, instances: int) -> float | None:
    """Total training-time budget (s): ``budget`` plus ``per_kilo`` per 1 000 training instances
    (after subsampling); ``None`` when ``budget`` is ``None`` (no budget)."""
    if budget is None:
        return None
    return float(budget) + float(per_kilo or 0.0) * instances / 1000.0


def budget_seconds(recipe: dict, instances: int) -> float | None:
    """``total_budget`` of a recipe for ``instances`` training instances."""
    return total_budget(recipe.get("budget"), recipe.get("budget_per_kilo"), instances)


def describe(name: str) -> str:
    """One line: what a preset sets (for ``--help``)."""
    r = PRESETS[name]
    parts = []
    for k in KEYS:
        v = r[k]
        flag = "--" + k.replace("_", "-")
        if k == "budget":
            per = r["budget_per_kilo"] or 0.0
            parts.append("--time-budget " + ("off" if v is None else f"{v:g}+{per:g}*(training instances/1000)"))
        elif k == "budget_per_kilo":
            continue
        else:
            parts.append(f"{flag} {'off' if v is None else v}")
    return f"{name}: " + " ".join(parts)
