"""dacm — the data-augmented contact model (Jiang, Sun & Liu) on the jaxcontact engine.

``features`` (contact detector, patch frame, inputs, labels, exact static impulse), ``data``
(ground truth from the Coulomb LCP law), ``networks`` (Flax MLPs, Fig. 3 hyper-parameters),
``train`` (optax training, checkpoints), ``law`` (``DACMLaw`` = Algorithm 1, ``PDDLaw``),
``evaluate`` (Figs. 3, 5, 6, 7), ``plots``, ``cli`` (``jaxcontact dacm ...``). See docs/dacm.md.
"""

from .law import DACMLaw, PDDLaw, out_of_range

__all__ = ["DACMLaw", "PDDLaw", "out_of_range"]
