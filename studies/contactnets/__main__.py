"""ContactNets reproduction on the real cube tosses: the data-efficiency study (Fig. 5) with its
loss-gradient throughput benchmark (study --speed-only), its report, and the diagnostics of the
gap to the tuned Coulomb LCP. Checkpoints go to --work (default work/contactnets); results to
studies/contactnets/results/."""

import sys

from ..common import dispatch

COMMANDS = {
    "study": (".study", "train and roll out the variants → results/contactnets_data_efficiency.json|png, "
                        "contactnets_speed.json (--speed-only: only the throughput)"),
    "report": (".report", "write results/contactnets_data_efficiency.md (+ .png) from the JSON results"),
    "paired": (".paired", "learned models against the LCP per test toss, bootstrap intervals → results/contactnets_paired.{json,md}"),
    "sensitivity": (".sensitivity", "rollout error vs perturbed first states and finer steps → results/contactnets_sensitivity.json"),
    "finetune": (".finetune", "fine-tune polytopes on rollout windows → results/contactnets_rollout_finetune.json"),
    "friction-scale": (".friction_scale", "one friction factor calibrated by rollouts → results/contactnets_friction_scale.json"),
    "cone": (".cone", "a checkpoint's metrics under its preset cone (the square) and Coulomb's disc → results/contactnets_cone.{json,md}"),
}

if __name__ == "__main__":
    sys.exit(dispatch("studies.contactnets", __doc__, COMMANDS))
