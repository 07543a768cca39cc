"""dacm (Data-driven Contact Models) reproduction: the generate → train → evaluate study of the
box, pentagon, 2D box and anisotropic box, its diagnostics, and Algorithm 2 on the 3-link chain.
Data and checkpoints go to --work (default work/dacm); results to studies/dacm/results/.
The step-cost benchmark of the dacm law is an engine benchmark: python -m benchmarks.dacm_speed."""

import sys

from ..common import dispatch

COMMANDS = {
    "study": (".study", "configurations through `jaxcontact dacm` → results/dacm.{json,md} "
                        "(also --merge, --add-evaluations, --diagnose, --probe)"),
    "oracle": (".oracle", "rollouts with GT classes / GT friction per patch type → results/dacm_oracle.json"),
    "sensitivity": (".sensitivity", "the GT simulator against slightly perturbed copies → results/dacm_sensitivity_<shape>.json"),
    "fig7": (".fig7", "Fig. 7 distances over launch speeds and heights → results/dacm_fig7_robustness.json"),
    "chain": (".chain", "Algorithm 2 on the 3-link chain → results/dacm_chain.{json,md}"),
    "chain-defaults": (".chain_defaults", "generate → train (defaults) → chain as a user runs them → "
                                          "results/chain_defaults.{json,md}"),
}

if __name__ == "__main__":
    sys.exit(dispatch("studies.dacm", __doc__, COMMANDS))
