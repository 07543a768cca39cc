"""ContactNets (Pfrommer, Halm & Posa 2020) on the jaxcontact engine.

Learned contact geometry and friction (``functions``), the complementarity-inspired loss with a
jaxopt QP per transition, vmapped (``loss``), rollout laws sharing the engine's LCP (``laws``),
the E2E and system-identified Coulomb-LCP baselines, training with optax and checkpoints
(``train``), eq. 18–19 metrics (``evaluate``) and the ``jaxcontact contactnets`` CLI. See
docs/contactnets.md.
"""

from .data import TossData, bundled_path, load_tosses, split_train_val
from .functions import ContactFunctions, DeepParams, PolytopeParams, init_deep, init_polytope, true_polytope
from .laws import ContactNetsLaw, E2ELaw, E2EParams
from .loss import LossConfig, batch_loss, contact_qp, regularizers, sharded_batch_loss, transition_loss

__all__ = [
    "ContactFunctions", "ContactNetsLaw", "DeepParams", "E2ELaw", "E2EParams", "LossConfig", "PolytopeParams",
    "TossData", "batch_loss", "bundled_path", "contact_qp", "init_deep", "init_polytope", "load_tosses",
    "regularizers", "sharded_batch_loss", "split_train_val", "transition_loss", "true_polytope",
]
