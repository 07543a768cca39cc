"""Planar rigid impact models on real impacts (Fazeli, Zapolsky, Drumwright & Rodriguez).

Six impact maps (:mod:`.models`), the energy ellipse and IRB bound (:mod:`.ellipse`), system
identification (:mod:`.sysid`), a learned model (:mod:`.learned`) and the full study
(:mod:`.study`); see ``docs/impacts.md``.
"""

from .data import ImpactData, default_data_path, load_impacts, split_impacts, validate
from .ellipse import energy_change, feasibility, irb_impulse
from .models import MODEL_NAMES, MODELS, contact_quantities, impact

__all__ = [
    "ImpactData", "default_data_path", "load_impacts", "split_impacts", "validate",
    "energy_change", "feasibility", "irb_impulse", "MODEL_NAMES", "MODELS",
    "contact_quantities", "impact",
]
