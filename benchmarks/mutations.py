"""Mutation check of the physics tests: plant small, plausible physics bugs one at a time in a
temporary copy of the repository, run the tests that should notice, and report which survive.

    python -m benchmarks.mutations                 # every mutation (about 30-60 min on 2 cores)
    python -m benchmarks.mutations --only gyro-sign,big-friction-bound
    python -m benchmarks.mutations --list

Each mutation is an exact string replacement in one source file, with the number of times the
string must occur: a target that is missing (or occurs a different number of times, e.g. after a
refactor) stops the run with an error naming it, so the list never silently tests nothing. The
catching tests must be in the default tier (a test marked slow stops the run: pyproject's addopts
deselect it, so it would never see the mutation). The unmutated copy must pass every selected test first. A mutation is *caught* when its tests fail,
*survives* when they pass. Not part of the test suite's time budget; run it by hand after
changing the engine or its tests. Results: ``benchmarks/results/mutations.{json,md}`` (with the
commit and the command); ``docs/testing.md`` quotes the last run.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"

INV = "tests/test_invariants.py"
PHYS = "tests/test_physics.py"
GRAD = "tests/test_gradients.py"
COLL = "tests/test_collision.py"
WORLDS = "tests/test_worlds.py"
WMAT = "tests/test_worlds_materials.py"
WPHYS = "tests/test_worlds_physics.py"
SWEEPS = "tests/test_world_sweeps.py"
NARROW = "tests/test_collision_kernel.py"
ADJOINT = "tests/test_world_adjoint.py"
MJCF = "tests/test_mjcf.py"
STEP = "tests/test_one_step.py"
ENTRY = "tests/test_solver_entry.py"
CLI_MJCF = "tests/test_cli_mjcf.py"
DOORS = "tests/test_doors.py"
FACES = "tests/test_faces.py"
CONE = "tests/test_friction_cone.py"
SCENERY = "tests/test_scenery.py"
MJCF_SCENERY = "tests/test_mjcf_scenery.py"


@dataclasses.dataclass(frozen=True)
class Mutation:
    name: str
    area: str
    path: str  # relative to the repository root
    old: str
    new: str
    tests: tuple[str, ...]  # pytest node ids (or files) expected to catch it
    count: int = 1  # occurrences of ``old`` the file must hold; all of them are replaced

    def apply(self, root: Path) -> None:
        f = root / self.path
        text = f.read_text()
        found = text.count(self.old)
        if found != self.count:
            raise SystemExit(f"mutation {self.name!r}: expected {self.count} occurrence(s) of {self.old!r} in "
                             f"{self.path}, found {found} (the source changed: update the mutation)")
        f.write_text(text.replace(self.old, self.new))


MUTATIONS = (
    # integration
    Mutation("explicit-euler-position", "integration", "jaxcontact/stages.py",
             "pos=state.pos + h * vel,", "pos=state.pos + h * state.vel,",
             (f"{PHYS}::test_free_fall_is_exact",)),
    Mutation("quaternion-world-frame", "integration", "jaxcontact/stages.py",
             "quat_mul(state.quat, quat_exp(h * omega))", "quat_mul(quat_exp(h * omega), state.quat)",
             (f"{INV}::test_box_tumbling_near_its_intermediate_axis_keeps_world_angular_momentum_and_energy",)),
    Mutation("force-times-mass", "integration", "jaxcontact/stages.py",
             "v = state.vel + h * (g + f[:3] / body.mass)", "v = state.vel + h * (g + f[:3] * body.mass)",
             (f"{INV}::test_force_and_torque_controls_give_constant_accelerations",)),
    Mutation("torque-without-inertia", "integration", "jaxcontact/stages.py",
             "w0 = state.omega + h * solve3(I, f[3:])", "w0 = state.omega + h * f[3:]",
             (f"{INV}::test_force_and_torque_controls_give_constant_accelerations",)),
    # gyroscopic term
    Mutation("gyro-sign", "gyroscopic", "jaxcontact/stages.py",
             "res = h * jnp.cross(w0, Iw)", "res = -h * jnp.cross(w0, Iw)",
             (f"{INV}::test_box_tumbling_near_its_intermediate_axis_keeps_world_angular_momentum_and_energy",)),
    Mutation("gyro-order", "gyroscopic", "jaxcontact/stages.py",
             "res = h * jnp.cross(w0, Iw)", "res = h * jnp.cross(Iw, w0)",
             (f"{INV}::test_dzhanibekov_flip_matches_eulers_equations",)),
    Mutation("gyro-jacobian", "gyroscopic", "jaxcontact/stages.py",
             "jac = I + h * (skew(w0) @ I - skew(Iw))", "jac = I + h * (skew(w0) @ I + skew(Iw))",
             (f"{INV}::test_box_tumbling_near_its_intermediate_axis_keeps_world_angular_momentum_and_energy",
              f"{INV}::test_dzhanibekov_flip_matches_eulers_equations")),
    # Jacobians and mass matrix
    Mutation("jacobian-moment-sign", "jacobian", "jaxcontact/geometry.py",
             "ang = jnp.cross(r_body[None, :], u_body)", "ang = jnp.cross(u_body, r_body[None, :])",
             (f"{PHYS}::test_tipped_box_falls_onto_a_face_and_rests",)),
    Mutation("jacobian-world-frame", "jacobian", "jaxcontact/geometry.py",
             "u_body = directions @ R  # rows Rᵀu", "u_body = directions @ R.T  # rows Rᵀu",
             (f"{PHYS}::test_tipped_box_falls_onto_a_face_and_rests", f"{INV}::test_restitution_targets_match_their_formulas")),
    Mutation("inverse-inertia", "jacobian", "jaxcontact/geometry.py",
             "bot = jnp.concatenate([z, inv3(body.inertia)], axis=1)", "bot = jnp.concatenate([z, body.inertia], axis=1)",
             (f"{PHYS}::test_tipped_box_falls_onto_a_face_and_rests",)),
    # friction bounds, both sweep paths
    # (the box preset's sweeps since issue 61 made the disc the default: caught by its tests)
    Mutation("unrolled-friction-bound", "friction", "jaxcontact/solvers/lcp.py",
             "bound = coupling[i] * zs[int(rows.parent[i])]", "bound = 0.5 * coupling[i] * zs[int(rows.parent[i])]",
             (f"{CONE}::test_box_preset_keeps_the_square",)),
    Mutation("big-friction-bound", "friction", "jaxcontact/solvers/lcp.py",
             "zi = jnp.clip(zi, lo0[i] - coupling[i] * zp, hi0[i] + coupling[i] * zp)",
             "zi = jnp.clip(zi, lo0[i] - 0.5 * coupling[i] * zp, hi0[i] + 0.5 * coupling[i] * zp)",
             (f"{CONE}::test_every_sweep_path_keeps_the_box_preset",)),
    Mutation("big-friction-bound-lcp", "friction", "jaxcontact/solvers/lcp.py",
             "zi = jnp.clip(zi, lo0[i] - coupling[i] * zp, hi0[i] + coupling[i] * zp)",
             "zi = jnp.clip(zi, lo0[i] - 0.5 * coupling[i] * zp, hi0[i] + 0.5 * coupling[i] * zp)",
             (f"{INV}::test_both_sweep_paths_solve_the_same_lcp",)),
    Mutation("big-stops-after-one-sweep", "friction", "jaxcontact/solvers/lcp.py",
             "jnp.maximum(change, jnp.abs(d[i] * (zi - z[i])))", "jnp.maximum(change, 0.0 * (zi - z[i]))",
             (f"{INV}::test_both_sweep_paths_solve_the_same_lcp",)),
    Mutation("anisotropic-mu-swapped", "friction", "jaxcontact/solvers/entry.py",
             "return jnp.concatenate([jnp.zeros((C, 1), dtype), mu], axis=1).reshape(-1)",
             "return jnp.concatenate([jnp.zeros((C, 1), dtype), mu[..., ::-1]], axis=1).reshape(-1)",
             (f"{PHYS}::test_anisotropic_friction_distance_ratio",)),
    # restitution
    Mutation("velocity-bounce-90pc", "restitution", "jaxcontact/laws/coulomb.py",
             "bounce = -eps * vn_pre\n", "bounce = -0.9 * eps * vn_pre\n",
             (f"{PHYS}::test_drop_from_10_cm_bounces_at_the_closed_form_time_speed_and_apex",)),
    Mutation("velocity-bounce-target-formula", "restitution", "jaxcontact/laws/coulomb.py",
             "bounce = -eps * vn_pre\n", "bounce = -0.9 * eps * vn_pre\n",
             (f"{INV}::test_restitution_targets_match_their_formulas",)),
    Mutation("velocity-closing-window", "restitution", "jaxcontact/laws/coulomb.py",
             "(phi + model.dt * vn_pre <= model.patch_tol)", "(phi + model.dt * vn_pre <= 0.0)",
             (f"{INV}::test_restitution_targets_match_their_formulas",)),
    Mutation("position-bounce-phi-term", "restitution", "jaxcontact/laws/coulomb.py",
             "bounce = -eps * vn_pre - (1.0 + eps) * phi / model.dt",
             "bounce = -eps * vn_pre - eps * phi / model.dt",
             (f"{INV}::test_restitution_targets_match_their_formulas",)),
    # (not listed: widening the position form's closing window to patch_tol is an equivalent
    # mutant: where φ + h v⁻ > 0 its target −ε v⁻ − (1 + ε) φ/h is below −φ/h and never chosen)
    Mutation("restitution-clipped-at-half", "restitution", "jaxcontact/laws/coulomb.py",
             "eps = jnp.clip(restitution, 0.0, 1.0)", "eps = jnp.clip(restitution, 0.0, 0.5)",
             (f"{INV}::test_restitution_targets_match_their_formulas",)),
    Mutation("relaxed-bounce-80pc", "restitution", "jaxcontact/laws/coulomb.py",
             "target + w * jnp.maximum(bounce - target, 0.0)",
             "target + 0.8 * w * jnp.maximum(bounce - target, 0.0)",
             (f"{INV}::test_relaxed_law_bounces_at_eps_times_approach_speed",)),
    # implicit gradients
    Mutation("fixed-point-map-sign", "gradient", "jaxcontact/solvers/lcp.py",
             "        w = A @ z + b\n", "        w = A @ z - b\n",
             (f"{GRAD}::test_grad_wrt_friction_matches_finite_differences",)),
    Mutation("fixed-point-friction-bound", "gradient", "jaxcontact/solvers/lcp.py",
             "    zp = z[rows.parent]\n", "    zp = 0.5 * z[rows.parent]\n",
             (f"{CONE}::test_slide_gradients_match_central_differences[box]",)),
    Mutation("adjoint-not-solved", "gradient", "jaxcontact/solvers/implicit.py",
             "x = jnp.linalg.solve(M + (ridge * scale) * jnp.eye(n, dtype=rhs.dtype), rhs)", "x = rhs",
             (f"{GRAD}::test_grad_wrt_friction_matches_finite_differences",)),
    Mutation("krylov-adjoint-sign", "gradient", "jaxcontact/solvers/implicit.py",
             "gmres(lambda u: matvec(u) + ridge * u,", "gmres(lambda u: -matvec(u) + ridge * u,",
             (f"{GRAD}::test_matrix_free_adjoint_solve_matches_the_dense_one_without_forming_a_matrix",)),
    Mutation("krylov-adjoint-truncated", "gradient", "jaxcontact/solvers/implicit.py",
             "restart=min(KRYLOV_RESTART, n), maxiter=restarts,", "restart=2, maxiter=1,",
             (f"{GRAD}::test_matrix_free_adjoint_solve_matches_the_dense_one_without_forming_a_matrix",)),
    # the planar path
    Mutation("planar-torque-times-inertia", "planar", "jaxcontact/stages.py",
             "w = state.omega + h * f[2] / body.inertia", "w = state.omega + h * f[2] * body.inertia",
             (f"{INV}::test_force_and_torque_controls_give_constant_accelerations",)),
    Mutation("planar-angle-explicit", "planar", "jaxcontact/stages.py",
             "angle=state.angle + h * v_new[2],", "angle=state.angle + h * state.omega,",
             (f"{INV}::test_force_and_torque_controls_give_constant_accelerations",)),
    Mutation("planar-jacobian-sign", "planar", "jaxcontact/geometry.py",
             "ang = directions @ perp2d(R @ r_body)", "ang = -(directions @ perp2d(R @ r_body))",
             (f"{PHYS}::test_inelastic_throws_never_gain_energy_and_barely_penetrate[box2d]",
              f"{PHYS}::test_resting_body_stays_at_rest[box2d]")),
    # energy, the yardstick of the energy tests
    Mutation("energy-rotational-term", "energy", "jaxcontact/stages.py",
             "0.5 * state.omega @ body.inertia @ state.omega", "0.5 * state.omega @ state.omega",
             (f"{INV}::test_energy_by_hand",)),
    # worlds: the narrow phase (a feature pair's normal and depth, the speculative margin). On a CPU
    # the fused kernel (narrow.cc, rebuilt from the mutated source) is the default that the physics
    # tests meet; the pure-JAX reference is held to it by the kernel-versus-reference test
    Mutation("face-normal-of-b-unflipped", "worlds", "jaxcontact/collision.py",
             "face_normal = jnp.where(use_b, -n, n)", "face_normal = jnp.where(use_b, n, n)",
             (f"{NARROW}::test_kernel_gives_the_reference_contacts",), count=2),
    Mutation("face-depth-from-incident-face", "worlds", "jaxcontact/collision.py",
             "c = _map(lambda x: jnp.sum(jnp.where(ref_ok, x, 0.0)) / ref_size.astype(dt), r)",
             "c = _map(lambda x: jnp.sum(jnp.where(inc_ok, x, 0.0)) / inc_size.astype(dt), q)",
             (f"{NARROW}::test_kernel_gives_the_reference_contacts",)),
    Mutation("edge-axis-towards-a", "worlds", "jaxcontact/collision.py",
             "axis = jnp.where(jnp.dot(sg(axis), sg(p1) - centre_a) < 0, -axis, axis)",
             "axis = jnp.where(jnp.dot(sg(axis), sg(p1) - centre_a) > 0, -axis, axis)",
             (f"{NARROW}::test_kernel_gives_the_reference_contacts",)),
    Mutation("no-speculative-face-contacts", "worlds", "jaxcontact/collision.py",
             "mask = mask & (sg(phi_c) <= margin)", "mask = mask & (sg(phi_c) <= 0.0)",
             (f"{NARROW}::test_kernel_gives_the_reference_contacts",)),
    Mutation("evaluate-crossing-on-the-wrong-edge", "worlds", "jaxcontact/collision.py",
             "y3 = q[k3] + u[:, None] * e_inc[k3]", "y3 = q[i3] + u[:, None] * e_inc[i3]",
             (f"{NARROW}::test_kernel_derivatives_are_the_references",)),
    Mutation("narrow-kernel-face-normal-of-b-unflipped", "worlds", "jaxcontact/native/narrow.cc",
             "const V3<T> fn = use_b ? mul(n, T(-1)) : n;", "const V3<T> fn = n;",
             (f"{COLL}::test_random_pairs_depth_against_brute_force_and_symmetry",)),
    Mutation("narrow-kernel-depth-from-incident-face", "worlds", "jaxcontact/native/narrow.cc",
             "    if (k < ref_size) c = add(c, r[k]);", "    if (k < inc_size) c = add(c, q[k]);",
             (f"{COLL}::test_face_face_stack_with_offset",)),
    Mutation("narrow-kernel-edge-axis-towards-a", "worlds", "jaxcontact/native/narrow.cc",
             "if (dot(axis, sub(e_p1, centre_a)) < 0) axis = mul(axis, T(-1));",
             "if (dot(axis, sub(e_p1, centre_a)) > 0) axis = mul(axis, T(-1));",
             (f"{COLL}::test_crossed_edges_one_point_at_the_closest_points",)),
    Mutation("narrow-kernel-no-speculative-contacts", "worlds", "jaxcontact/native/narrow.cc",
             "s.mask[m] = s.mask[m] && s.phi[m] <= margin;", "s.mask[m] = s.mask[m] && s.phi[m] <= 0;",
             (f"{COLL}::test_separated_pairs_within_and_beyond_the_margin",
              f"{WPHYS}::test_speculative_contact_stops_a_fast_box_without_penetration")),
    Mutation("narrow-kernel-exits-at-touching", "worlds", "jaxcontact/native/narrow.cc",
             "if (s.sep_a[f] > margin) return apart();", "if (s.sep_a[f] > 0) return apart();",
             (f"{COLL}::test_separated_pairs_within_and_beyond_the_margin",)),
    # worlds: the speculative contacts' reach, the broad phase
    Mutation("reach-without-linear-speed", "worlds", "jaxcontact/worlds/contacts.py",
             "speed = jnp.linalg.norm(state.vel, axis=-1) + jnp.linalg.norm(state.omega, axis=-1) * r",
             "speed = jnp.linalg.norm(state.omega, axis=-1) * r",
             (f"{WPHYS}::test_speculative_contact_stops_a_fast_box_without_penetration",)),
    Mutation("broad-phase-keeps-farthest", "worlds", "jaxcontact/worlds/contacts.py",
             "neg, sel = jax.lax.top_k(pair_reach[ks] - gaps[ks], K + 1)",
             "neg, sel = jax.lax.top_k(gaps[ks] - pair_reach[ks], K + 1)",
             (f"{WPHYS}::test_broad_phase_keeps_the_closest_pair_and_flags_only_a_second_one_within_reach",)),
    Mutation("broad-phase-capacity-off-by-one", "worlds", "jaxcontact/worlds/contacts.py",
             "capacity = capacity | (neg[K] >= 0)", "capacity = capacity | (neg[K - 1] >= 0)",
             (f"{WPHYS}::test_broad_phase_keeps_the_closest_pair_and_flags_only_a_second_one_within_reach",)),
    # worlds: the pair friction rule
    Mutation("pair-friction-arithmetic-mean", "worlds", "jaxcontact/laws/coulomb.py",
             "return jnp.where(pos, jnp.sqrt(jnp.where(pos, prod, 1.0)), 0.0)", "return 0.5 * (mu_a + mu_b)",
             (f"{WMAT}::test_mix_rule_and_default_path",)),
    Mutation("pair-friction-own-mu-twice", "worlds", "jaxcontact/worlds/materials.py",
             "friction[jnp.maximum(a, 0)][:, None]", "friction[b][:, None]",
             (f"{WMAT}::test_mix_rule_and_default_path",)),
    # worlds: the velocity-form sweep
    Mutation("body-lcp-friction-bound", "worlds", "jaxcontact/solvers/body_lcp.py",
             "bound = mu[k] * zc[0]", "bound = 0.5 * mu[k] * zc[0]",
             (f"{CONE}::test_every_sweep_path_keeps_the_box_preset",)),
    Mutation("body-lcp-normal-unprojected", "worlds", "jaxcontact/solvers/body_lcp.py",
             "zk = jnp.maximum(zk, 0.0)", "zk = zk",
             (f"{SWEEPS}::test_kernel_gives_the_sequential_sweeps_iterates",)),
    # worlds: the fused CPU kernel (rebuilt from the mutated source: its cache is keyed by the source)
    Mutation("pgs-kernel-friction-bound", "worlds", "jaxcontact/native/pgs.cc",
             "const T bound = coupling[c * 3 + k] * zc[0];", "const T bound = T(0.5) * coupling[c * 3 + k] * zc[0];",
             (f"{CONE}::test_every_sweep_path_keeps_the_box_preset",)),
    Mutation("pgs-kernel-normal-unprojected", "worlds", "jaxcontact/native/pgs.cc",
             "zk = std::max(zk, T(0));", "zk = zk;",
             (f"{SWEEPS}::test_kernel_gives_the_sequential_sweeps_iterates",)),
    Mutation("pgs-kernel-second-body-pushed-back", "worlds", "jaxcontact/native/pgs.cc",
             "vb[j] += dz[0] * wb[j]", "vb[j] -= dz[0] * wb[j]",
             (f"{WPHYS}::test_velocity_form_sweep_slides_at_mu_g_and_lets_a_lifted_box_go",)),
    # worlds: the reverse pass's adjoint kernel (its λ alone; the Krylov polish would repair a wrong one)
    # (issue 61 made the kernel take each contact's projection Jacobian (P, N): the same three bugs
    # in its new form; the codes' tie rule is gone, JAX's own derivative of the projection is passed)
    Mutation("adjoint-kernel-sliding-sign", "worlds", "jaxcontact/native/adjoint.cc",
             "H[(3 * a) * n + r] -= double(jn[c * 3 + i]);", "H[(3 * a) * n + r] += double(jn[c * 3 + i]);",
             (f"{ADJOINT}::test_adjoint_kernel_solves_the_adjoint_system",)),
    Mutation("adjoint-kernel-lambda-without-d", "worlds", "jaxcontact/native/adjoint.cc",
             "m[3 * a + j] = double(step[c * 3 + j]) * x;", "m[3 * a + j] = x;",
             (f"{ADJOINT}::test_adjoint_kernel_solves_the_adjoint_system",)),
    Mutation("adjoint-kernel-no-extra-diagonal", "worlds", "jaxcontact/native/adjoint.cc",
             "Arr[r * n + r] += double(extra[act[a] * 3 + i]);", "",
             (f"{ADJOINT}::test_adjoint_kernel_solves_the_adjoint_system",)),
    # worlds: the graph-coloured sweeps
    Mutation("colour-friction-bound", "worlds", "jaxcontact/solvers/body_lcp.py",
             "bound = mu[:, :, j, q] * zc[..., 0]", "bound = 0.5 * mu[:, :, j, q] * zc[..., 0]",
             (f"{CONE}::test_every_sweep_path_keeps_the_box_preset",)),
    Mutation("colouring-ignores-second-body", "worlds", "jaxcontact/solvers/body_lcp.py",
             "used = taken[a] | taken[b]", "used = taken[a]",
             (f"{SWEEPS}::test_colouring_never_puts_two_manifolds_on_one_body_in_a_colour",)),
    # worlds: soft resting rows, stiff impact islands
    Mutation("soft-and-stiff-swapped", "worlds", "jaxcontact/worlds/contacts.py",
             "return jnp.where(stiff, 0.0, softness)", "return jnp.where(stiff, softness, 0.0)",
             (f"{WORLDS}::test_newtons_cradle_one_impact_at_a_time_and_simultaneous",)),
    Mutation("stiff-island-one-hop", "worlds", "jaxcontact/worlds/contacts.py",
             "for _ in range(squarings):", "for _ in range(min(squarings, 0)):",
             (f"{WORLDS}::test_newtons_cradle_one_impact_at_a_time_and_simultaneous",)),
    # worlds: the joints' Baumgarte stabilisation
    Mutation("joint-baumgarte-sign", "worlds", "jaxcontact/worlds/joints.py",
             "target = -(joints.baumgarte / model.dt) * err", "target = (joints.baumgarte / model.dt) * err",
             (f"{WPHYS}::test_joint_drift_decays_by_one_minus_beta_per_step",)),
    Mutation("joint-baumgarte-times-dt", "worlds", "jaxcontact/worlds/joints.py",
             "target = -(joints.baumgarte / model.dt) * err", "target = -(joints.baumgarte * model.dt) * err",
             (f"{WPHYS}::test_joint_drift_decays_by_one_minus_beta_per_step",)),
    Mutation("joint-axis-error-sign", "worlds", "jaxcontact/worlds/joints.py",
             "err = jnp.concatenate([xc - xp, U @ jnp.cross(ap, ac)])",
             "err = jnp.concatenate([xc - xp, U @ jnp.cross(ac, ap)])",
             (f"{WPHYS}::test_joint_drift_decays_by_one_minus_beta_per_step",)),
    # the one step (issue 52): the per-body route's materials, candidates, flags and warm start; the
    # route chosen by coupling; the refusal of a ground law where a world couples bodies
    Mutation("per-body-friction-ignored", "step", "jaxcontact/worlds/pipeline.py",
             "return p.replace(law=model.law.with_friction(p.law, p.body.friction))", "return p",
             (f"{STEP}::test_per_body_route_takes_the_materials_and_the_scene_candidates",)),
    Mutation("per-body-flags-of-the-first-body", "step", "jaxcontact/worlds/pipeline.py",
             "pick = (lambda x: x[0]) if one else (lambda x: _or(x))", "pick = lambda x: x[0]",
             (f"{STEP}::test_per_body_route_flags_every_body_under_jit",)),
    Mutation("per-body-warm-start-dropped", "step", "jaxcontact/worlds/pipeline.py",
             "return per_body(lambda p, s: model.law.init_warm(lmodel, p, s), params, state)", "return None",
             (f"{PHYS}::test_python_loop_of_step_equals_rollout",)),
    Mutation("every-world-coupled", "step", "jaxcontact/worlds/pipeline.py",
             "return bool(scene.pairs) or scene.joints is not None", "return True",
             (f"{STEP}::test_a_single_body_is_a_world_of_one_body",
              f"{STEP}::test_learned_law_runs_in_a_world_without_pairs")),
    Mutation("coupling-refusal-skipped", "step", "jaxcontact/worlds/pipeline.py",
             "if coupled(scene) and why is not None:", "if False and why is not None:",
             (f"{STEP}::test_learned_law_refused_by_name_where_a_world_couples_bodies",
              f"{STEP}::test_jointed_world_with_a_ground_law_is_refused_by_name")),
    # the one solver entry (issue 52): the table's thresholds and fallbacks, the one batching rule
    Mutation("table-small-rows-strict", "solvers", "jaxcontact/solvers/problem.py",
             'sweep = "unrolled" if rows <= SMALL_ROWS else "looped"', 'sweep = "unrolled" if rows < SMALL_ROWS else "looped"',
             (f"{ENTRY}::test_the_table",)),
    Mutation("table-jointed-world-in-velocity-form", "solvers", "jaxcontact/solvers/problem.py",
             "or full_mobility))", "))", (f"{ENTRY}::test_the_table",)),
    Mutation("table-colour-without-manifolds", "solvers", "jaxcontact/solvers/problem.py",
             "if group is None:  # no manifold size: no colouring", "if False:",
             (f"{ENTRY}::test_the_table",)),
    Mutation("batching-converged-not-frozen", "solvers", "jaxcontact/solvers/batching.py",
             "carry = jax.tree_util.tree_map(lambda n, o: jnp.where(mask(active, n), n, o), new, carry)",
             "carry = new",
             (f"{PHYS}::test_batched_solver_equals_single_body",
              f"{SWEEPS}::test_a_batch_is_each_world_on_its_own")),
    # checks and warnings (issue 50): the solver-accuracy criterion, the inertia's triangle
    # inequality, the traced centre-of-mass bound, the pair-overlap warning
    Mutation("solver-accuracy-ignored", "checks", "jaxcontact/stages.py",
             "failed = failed | ((info.iterations >= s.max_iter) & (info.residual > max(s.tol, SOLVER_ACCURACY)))",
             "failed = failed | ((info.iterations >= s.max_iter) & (info.residual > s.tol))",
             ("tests/test_warnings.py::test_capped_solve_below_the_accuracy_is_not_flagged",)),
    Mutation("inertia-triangle-full-trace", "checks", "jaxcontact/validation.py",
             "second = (0.5 + INERTIA_TOL) * jnp.trace(S)", "second = (1.0 + INERTIA_TOL) * jnp.trace(S)",
             ("tests/test_worlds_inputs.py::test_impossible_inertia_is_refused_eagerly_and_flagged_under_jit",)),
    Mutation("com-traced-absolute-metres", "checks", "jaxcontact/validation.py",
             "add(17, com_outside_traced(body) > COM_TOL)", "add(17, com_outside_traced(body) * 1e-3 > COM_TOL)",
             ("tests/test_worlds_inputs.py::test_centre_of_mass_outside_the_hull_is_refused_eagerly_and_flagged_under_jit",)),
    Mutation("overlap-warning-inverted", "checks", "jaxcontact/worlds/pipeline.py",
             "deep = depth > model.penetration_tol", "deep = depth < model.penetration_tol",
             ("tests/test_worlds_inputs.py::test_overlapping_start_warns_with_pair_depth_and_time",)),
    # worlds from MuJoCo files (issue 53): the loader's frames, velocities, hinges and friction
    Mutation("mjcf-quaternion-dropped", "mjcf", "jaxcontact/worlds/mjcf.py",
             "quat.append(np.asarray(d.xquat[b], float))", "quat.append(np.array([1.0, 0.0, 0.0, 0.0]))",
             (f"{MJCF}::test_loaded_bodies_are_mujocos_in_the_world_frame",)),
    Mutation("mjcf-velocity-of-the-body-origin", "mjcf", "jaxcontact/worlds/mjcf.py",
             "M.mj_objectVelocity(model.raw, d, M.mjtObj.mjOBJ_BODY, b, v6, 0)",
             "M.mj_objectVelocity(model.raw, d, M.mjtObj.mjOBJ_XBODY, b, v6, 0)",
             (f"{MJCF}::test_loaded_bodies_are_mujocos_in_the_world_frame",)),
    Mutation("mjcf-omega-in-world-axes", "mjcf", "jaxcontact/worlds/mjcf.py",
             "omega.append(R.T @ v6[:3])", "omega.append(v6[:3].copy())",
             (f"{MJCF}::test_loaded_bodies_are_mujocos_in_the_world_frame",)),
    Mutation("mjcf-hinge-axis-swapped", "mjcf", "jaxcontact/worlds/mjcf.py",
             "ac.append(np.asarray(model.jnt_axis[j], float))", "ac.append(np.asarray(model.jnt_axis[j], float)[[1, 0, 2]])",
             (f"{MJCF}::test_loaded_world_moves_as_mujoco_and_slides_with_the_geometric_mean",)),
    Mutation("mjcf-friction-first-geoms-mu", "mjcf", "jaxcontact/worlds/mjcf.py",
             "same = len({*mus, ground_mu} if ground else set(mus)) == 1", "same = True",
             (f"{MJCF}::test_loaded_world_moves_as_mujoco_and_slides_with_the_geometric_mean",)),
    # MJCF files that load what they say (issue 60 parts 5 and 6): to_mjcf's pair friction, the
    # keyframe and centre-of-mass refusals, explicit pairs read back, the animation's fixed floor
    Mutation("mjcf-pairs-max-rule", "mjcf", "jaxcontact/worlds/mjcf.py",
             "mix = lambda a, b: float(np.sqrt(a * b)) if a * b > 0 else 0.0", "mix = lambda a, b: max(a, b)",
             (f"{MJCF}::test_to_mjcf_pairs_make_mujoco_slide_as_jaxcontact_does",
              f"{MJCF}::test_to_mjcf_round_trip_gives_the_world_back")),
    Mutation("mjcf-pairs-not-written", "mjcf", "jaxcontact/worlds/mjcf.py",
             'pair_xml = "" if friction is None else _pairs(scene, friction, mu_law[0], geom or {})', 'pair_xml = ""',
             (f"{MJCF}::test_to_mjcf_pairs_make_mujoco_slide_as_jaxcontact_does",)),
    Mutation("mjcf-pairs-ground-left-out", "mjcf", "jaxcontact/worlds/mjcf.py",
             "    if scene.ground:\n        out.update(", "    if False:\n        out.update(",
             (f"{MJCF}::test_to_mjcf_pairs_make_mujoco_slide_as_jaxcontact_does",)),
    Mutation("mjcf-keyframe-nan-loads", "mjcf", "jaxcontact/worlds/mjcf.py",
             "_check_start(M, model, model.key_qpos[k], model.key_qvel[k],",
             "(lambda *a: None)(M, model, model.key_qpos[k], model.key_qvel[k],",
             (f"{MJCF}::test_a_keyframe_that_is_no_state_is_refused_by_name",)),
    Mutation("mjcf-keyframe-qvel-unchecked", "mjcf", "jaxcontact/worlds/mjcf.py",
             'for field, values in (("qpos", qpos), ("qvel", qvel)):', 'for field, values in (("qpos", qpos),):',
             (f"{MJCF}::test_a_keyframe_that_is_no_state_is_refused_by_name",)),
    Mutation("mjcf-zero-quaternion-loads", "mjcf", "jaxcontact/worlds/mjcf.py",
             "np.linalg.norm(raw[a:a + 4]) == 0:", "np.linalg.norm(raw[a:a + 4]) < 0:",
             (f"{MJCF}::test_a_keyframe_that_is_no_state_is_refused_by_name",)),
    Mutation("mjcf-com-outside-hull-loads", "mjcf", "jaxcontact/worlds/mjcf.py",
             "            verts = _within_vertex_limit(_extreme(pts), name, approximate)\n        out = com_outside(verts)\n"
             "        if out > COM_TOL * np.max(np.linalg.norm(verts, axis=1)):",
             "            verts = _within_vertex_limit(_extreme(pts), name, approximate)\n        out = com_outside(verts)\n"
             "        if out > np.max(np.linalg.norm(verts, axis=1)):",
             (f"{MJCF}::test_a_centre_of_mass_outside_the_hull_is_refused_by_name",)),
    Mutation("mjcf-explicit-pair-friction-ignored", "mjcf", "jaxcontact/worlds/mjcf.py",
             "theirs, rule = mujoco_pair_friction(ma, mb, da, db, pa, pb) if given is None else (given, \"its <contact><pair>'s friction\")",
             "theirs, rule = mujoco_pair_friction(ma, mb, da, db, pa, pb)",
             (f"{MJCF}::test_to_mjcf_round_trip_gives_the_world_back",
              f"{MJCF}::test_explicit_pairs_join_the_table_and_their_friction_is_compared")),
    Mutation("animate-floor-per-frame", "mjcf", "jaxcontact/worlds/animate.py",
             "colours=colours, floor=floor)", "colours=colours, floor=floor_square(ground, verts[k]))",
             ("tests/test_animate.py::test_the_floor_stays_put_while_the_bodies_move",)),
    # issue 60 parts 1 and 7 (/work/wt/cli): chunked rollouts of jointed worlds continue from the
    # state a chunk reached, compile once, and the joints' drift stays within the stabilisation's bound
    Mutation("chunk-start-not-continued", "worlds", "jaxcontact/simulate.py",
             'start = "initial" if done == 0 else "continued"', 'start = "initial"',
             (f"{CLI_MJCF}::test_a_jointed_world_runs_to_the_end_in_chunks_that_compile_once",)),
    Mutation("last-chunk-own-length", "worlds", "jaxcontact/simulate.py",
             "traj, info = worlds.rollout(model, scene, params, state, length, u, start=start)",
             "traj, info = worlds.rollout(model, scene, params, state, k, None if u is None else u[:k], start=start)",
             (f"{CLI_MJCF}::test_a_jointed_world_runs_to_the_end_in_chunks_that_compile_once",)),
    Mutation("drift-tolerance-times-beta", "worlds", "jaxcontact/worlds/joints.py",
             'float(dt) * CONTINUED_SPEED / float(baumgarte)', 'float(dt) * CONTINUED_SPEED * float(baumgarte)',
             (f"{CLI_MJCF}::test_a_jointed_world_runs_to_the_end_in_chunks_that_compile_once",)),
    Mutation("continued-start-unchecked", "worlds", "jaxcontact/worlds/joints.py",
             "        if d > tol:\n", "        if d > 10 * tol:\n",
             (f"{CLI_MJCF}::test_a_jointed_world_runs_to_the_end_in_chunks_that_compile_once",)),
    Mutation("joint-correction-halved", "worlds", "jaxcontact/worlds/joints.py",
             "target = -(joints.baumgarte / model.dt) * err", "target = -(0.5 * joints.baumgarte / model.dt) * err",
             (f"{CLI_MJCF}::test_a_jointed_world_runs_to_the_end_in_chunks_that_compile_once",)),
    # every door refuses a wrong argument by name (issue 60, part 2): a door's check dropped (bodies,
    # worlds, chains, the sharded rollout, to_mjcf, a law's init_params), the hints, μ's pair
    Mutation("types-body-step-unchecked", "validation", "jaxcontact/dynamics.py",
             'check_arguments("step", ', '(lambda *a, **k: None)("step", ', (DOORS,)),
    Mutation("types-sharded-unchecked", "validation", "jaxcontact/sharding.py",
             'check_arguments("sharding.sharded_batch_rollout", ', '(lambda *a, **k: None)("", ', (DOORS,)),
    Mutation("types-worlds-rollout-unchecked", "validation", "jaxcontact/worlds/pipeline.py",
             'check_arguments("worlds.rollout", ', '(lambda *a, **k: None)("worlds.rollout", ', (DOORS,)),
    Mutation("types-chains-batch-unchecked", "validation", "jaxcontact/chains/dynamics.py",
             'check_arguments("chains.batch_rollout", ', '(lambda *a, **k: None)("", ', (DOORS,)),
    Mutation("types-to-mjcf-unchecked", "validation", "jaxcontact/worlds/mjcf.py",
             'check_arguments("worlds.to_mjcf", ', '(lambda *a, **k: None)("", ', (DOORS,)),
    Mutation("types-init-params-unchecked", "validation", "jaxcontact/laws/coulomb.py",
             'check_arguments("CoulombLCP.init_params", ', '(lambda *a, **k: None)("", ', (DOORS,)),
    Mutation("types-known-mistakes-dropped", "validation", "jaxcontact/validation.py",
             "hint = MISTAKES.get((family, name, got)) or MISTAKES.get((\"*\", name, got))", "hint = None",
             (f"{DOORS}::test_the_messages_name_the_needed_type_and_the_known_mistakes",)),
    Mutation("types-swap-hint-dropped", "validation", "jaxcontact/validation.py",
             "            if swapped:\n", "            if False:\n",
             (f"{DOORS}::test_the_messages_name_the_needed_type_and_the_known_mistakes",)),
    Mutation("types-friction-any-length", "validation", "jaxcontact/validation.py",
             "isinstance(x, (list, tuple)) and len(x) == 2", "isinstance(x, (list, tuple)) and len(x) >= 2",
             (f"{DOORS}::test_the_messages_name_the_needed_type_and_the_known_mistakes",)),
    # faces rest and two doors (issues 61 and 60, part 3): a face's kept points (geometry.face_points),
    # Model.max_contacts the one count of ground contacts, a world's warning of a body in the ground
    Mutation("face-points-closest-only", "faces", "jaxcontact/geometry.py",
             "return jnp.where(jnp.sum(touching) > num, jnp.stack(idx), closest)", "return closest",
             (f"{FACES}::test_faces_rest_as_single_bodies", f"{FACES}::test_kept_points_span_the_face")),
    Mutation("face-points-same-side", "faces", "jaxcontact/geometry.py",
             "i = pick(-jnp.sign(jnp.sum(jnp.where(iota == idx[2], side, 0.0))) * side)",
             "i = pick(jnp.sign(jnp.sum(jnp.where(iota == idx[2], side, 0.0))) * side)",
             (f"{FACES}::test_kept_points_span_the_face",)),
    Mutation("face-points-nearest-next", "faces", "jaxcontact/geometry.py",
             "            i = pick(spread)", "            i = pick(-spread)",
             (f"{FACES}::test_faces_rest_as_single_bodies", f"{FACES}::test_kept_points_span_the_face")),
    Mutation("face-points-every-vertex-touches", "faces", "jaxcontact/geometry.py",
             "touching = valid & (phi <= low + tol)", "touching = valid",
             (f"{FACES}::test_faces_rest_as_single_bodies", f"{FACES}::test_kept_points_span_the_face")),
    Mutation("face-points-rest-one-direction", "faces", "jaxcontact/geometry.py",
             "a = np.pi * (2 * j + 1) / (num - 4)", "a = np.pi / 4",
             (f"{FACES}::test_kept_points_span_the_face",)),
    Mutation("face-points-single-body-closest", "faces", "jaxcontact/contact.py",
             "model.num_contacts(body), model.patch_tol)", "model.num_contacts(body))",
             (f"{FACES}::test_faces_rest_as_single_bodies",)),
    Mutation("face-points-world-closest", "faces", "jaxcontact/worlds/contacts.py",
             "geometry.contact_candidates(p.body, p.ground, s, Cg, model.patch_tol)",
             "geometry.contact_candidates(p.body, p.ground, s, Cg)",
             (f"{FACES}::test_faces_rest_in_a_world",)),
    Mutation("ground-count-capped-per-body", "faces", "jaxcontact/worlds/pipeline.py",
             "    check_ground_contacts(model, scene, params)\n    return model",
             "    return dataclasses.replace(model, max_contacts=4)",
             (f"{FACES}::test_one_setting_decides_the_ground_contacts",)),
    Mutation("ground-count-capped-coupled", "faces", "jaxcontact/worlds/contacts.py",
             "return (int(scene.ground) + scene.planes) * model.num_contacts(params.body)",
             "return (int(scene.ground) + scene.planes) * min(model.num_contacts(params.body), 4)",
             (f"{FACES}::test_faces_rest_in_a_world",)),
    Mutation("ground-count-disagreement-silent", "faces", "jaxcontact/worlds/contacts.py",
             "if given is not None and min(given, params.body.num_candidates) != want:", "if False:",
             (f"{FACES}::test_one_setting_decides_the_ground_contacts",)),
    Mutation("world-ground-penetration-unwarned", "faces", "jaxcontact/worlds/pipeline.py",
             "            eager.warn_world_penetration(model, params, state, batched=False)", "            pass",
             (f"{FACES}::test_start_in_the_ground_warns_from_every_door",)),
    # gradients through worlds (issue 60, part 4): the polish of the solution under differentiation
    Mutation("polish-dropped", "gradients", "jaxcontact/solvers/implicit.py",
             "sol = jax.lax.stop_gradient(polish(jax.lax.stop_gradient(sol), *args))",
             "sol = jax.lax.stop_gradient(sol)",
             ("tests/test_world_gradients.py::test_polish_leaves_the_value_and_moves_the_derivative_to_the_fixed_point",)),
    Mutation("polish-sweeps-dropped", "gradients", "jaxcontact/solvers/lcp.py",
             "z = z if fine is None else fine(start, A, b, coupling)[0]", "z = z",
             ("tests/test_world_gradients.py::test_polish_leaves_the_value_and_moves_the_derivative_to_the_fixed_point",)),
    Mutation("polish-value-returned", "gradients", "jaxcontact/solvers/implicit.py",
             "            return out, (sol, x0, args)\n",
             "            return ((sol, out[1]) if has_aux else sol), (sol, x0, args)\n",
             ("tests/test_world_gradients.py::test_polish_leaves_the_value_and_moves_the_derivative_to_the_fixed_point",)),
    Mutation("polish-velocity-form-dropped", "gradients", "jaxcontact/solvers/body_lcp.py",
             "                          polish=polish)", "                          polish=None)",
             ("tests/test_world_gradients.py::test_polish_in_velocity_form_gives_the_converged_derivative",)),
    # issue 61, Coulomb's cone (the disc, the default): its projection and the common step of the
    # tangent pair in each path, the relaxed law's smoothed disc, and the implicit derivative's map
    # (dense, matrix-free) and adjoint kernel
    Mutation("disc-projection-radius", "cone", "jaxcontact/solvers/lcp.py",
             "    f = jnp.where(slides, zn / s, 1.0)\n", "    f = jnp.where(slides, 0.5 * zn / s, 1.0)\n",
             (f"{CONE}::test_a_box_slides_the_same_distance_straight_at_every_heading",)),
    Mutation("disc-dense-unrolled-normal", "cone", "jaxcontact/solvers/lcp.py",
             "coupling[i], coupling[j],\n                                      zs[int(rows.parent[i])])",
             "coupling[i], coupling[j],\n                                      0.5 * zs[int(rows.parent[i])])",
             (f"{CONE}::test_a_box_slides_the_same_distance_straight_at_every_heading",)),
    Mutation("disc-dense-unrolled-per-row-steps", "cone", "jaxcontact/solvers/lcp.py",
             "si, sj = disc_step(coupling[i], coupling[j], A[i, i], A[j, j])", "si, sj = 1.0 / A[i, i], 1.0 / A[j, j]",
             (f"{CONE}::test_every_sweep_path_solves_the_disc_and_its_complementarity_holds",)),
    Mutation("disc-dense-looped-normal", "cone", "jaxcontact/solvers/lcp.py",
             "coupling[i], coupling[j], zp)", "coupling[i], coupling[j], 0.5 * zp)",
             (f"{CONE}::test_every_sweep_path_solves_the_disc_and_its_complementarity_holds",)),
    Mutation("disc-velocity-sequential-normal", "cone", "jaxcontact/solvers/body_lcp.py",
             "mu[1], mu[2], zc[0])", "mu[1], mu[2], 0.5 * zc[0])",
             (f"{CONE}::test_every_sweep_path_solves_the_disc_and_its_complementarity_holds",)),
    Mutation("disc-coloured-normal", "cone", "jaxcontact/solvers/body_lcp.py",
             "m1, m2, zc[..., 0])", "m1, m2, 0.5 * zc[..., 0])",
             (f"{CONE}::test_every_sweep_path_solves_the_disc_and_its_complementarity_holds",)),
    Mutation("disc-kernel-radius", "cone", "jaxcontact/native/pgs.cc",
             "? zc[0] / std::sqrt(ss) : T(1);", "? T(0.5) * zc[0] / std::sqrt(ss) : T(1);",
             (f"{CONE}::test_every_sweep_path_solves_the_disc_and_its_complementarity_holds",)),
    Mutation("disc-kernel-first-tangents-step", "cone", "jaxcontact/native/pgs.cc",
             "const T top = std::max(m1 * m1 * g[4], m2 * m2 * g[8]);", "const T top = m1 * m1 * g[4];",
             (f"{CONE}::test_every_sweep_path_solves_the_disc_and_its_complementarity_holds",)),
    Mutation("disc-relaxed-radius", "cone", "jaxcontact/solvers/relaxed_lcp.py",
             "f = zp / (zp + _sr(", "f = 0.5 * zp / (zp + _sr(",
             (f"{CONE}::test_relaxed_law_slides_on_the_smoothed_disc",)),
    Mutation("disc-fixed-point-dense-normal", "cone", "jaxcontact/solvers/lcp.py",
             "c1, c2,\n                                  z[rows.parent[first]])", "c1, c2,\n                                  0.5 * z[rows.parent[first]])",
             (f"{CONE}::test_slide_gradients_match_central_differences",)),
    Mutation("disc-fixed-point-velocity-step", "cone", "jaxcontact/solvers/body_lcp.py",
             "y = jnp.stack([y[:, 0], z[:, 1] - s1 * w[:, 1], z[:, 2] - s2 * w[:, 2]], axis=1)",
             "y = jnp.stack([y[:, 0], z[:, 1] - s1 * w[:, 1], z[:, 2] - s1 * w[:, 2]], axis=1)",
             (f"{CONE}::test_velocity_form_derivatives_of_the_disc_match_finite_differences",)),
    Mutation("disc-fixed-point-velocity-normal", "cone", "jaxcontact/solvers/body_lcp.py",
             "coupling[:, 1], coupling[:, 2], zn)", "coupling[:, 1], coupling[:, 2], 0.5 * zn)",
             (f"{CONE}::test_velocity_form_derivatives_of_the_disc_match_finite_differences",)),
    Mutation("disc-adjoint-steps", "cone", "jaxcontact/solvers/body_lcp.py",
             "step = jnp.stack([step[:, 0], s1, s2], axis=1)", "step = jnp.stack([step[:, 0], s1, s1], axis=1)",
             (f"{ADJOINT}::test_adjoint_kernel_solves_the_adjoint_system",)),
    Mutation("disc-adjoint-without-normal-column", "cone", "jaxcontact/solvers/body_lcp.py",
             "jnp.where(valid[:, None], N, 0.0)", "jnp.where(valid[:, None], 0.0 * N, 0.0)",
             (f"{ADJOINT}::test_adjoint_kernel_solves_the_adjoint_system",)),
    Mutation("disc-adjoint-kernel-separated-normal", "cone", "jaxcontact/native/adjoint.cc",
             "for (int t = 1; t < 3; ++t) out[0] += double(jn[c * 3 + t]) * out[t];", "",
             (f"{ADJOINT}::test_adjoint_kernel_solves_the_adjoint_system",)),
    # round shapes against the ground (issue 62, first slice): candidates, mass properties, reach, files
    Mutation("round-distance-without-radius", "shapes", "jaxcontact/geometry.py",
             "pts, phi, r = pts - rad * n, phi - rad, r - rad * nb", "pts, phi, r = pts - rad * n, phi, r - rad * nb",
             ("tests/test_round_shapes.py::test_sphere_penetration_depth_and_reach",)),
    Mutation("round-lever-arm-at-core", "shapes", "jaxcontact/geometry.py",
             "pts, phi, r = pts - rad * n, phi - rad, r - rad * nb", "pts, phi, r = pts - rad * n, phi - rad, r",
             ("tests/test_round_shapes.py::test_sliding_sphere_rolls_at_five_sevenths",)),
    Mutation("cylinder-rim-highest", "shapes", "jaxcontact/geometry.py",
             "u = jax.lax.stop_gradient(-normal_body[:2])", "u = jax.lax.stop_gradient(normal_body[:2])",
             ("tests/test_round_shapes.py::test_candidates_are_the_lowest_surface_points",)),
    Mutation("cylinder-rim-quarter-angles", "shapes", "jaxcontact/geometry.py",
             "RIM_ANGLES = (0.0, 2 * np.pi / 3, -2 * np.pi / 3)", "RIM_ANGLES = (0.0, np.pi / 2, -np.pi / 2)",
             ("tests/test_round_shapes.py::test_candidates_are_the_lowest_surface_points",)),
    Mutation("cylinder-rim-cap-height", "shapes", "jaxcontact/geometry.py",
             "(sign * half)[None]", "(sign * 0.5 * half)[None]",
             ("tests/test_round_shapes.py::test_round_bodies_rest",)),
    Mutation("ellipsoid-support-unscaled", "shapes", "jaxcontact/geometry.py",
             "return (-(semi_axes * an) / k)[None]", "return (-an / k)[None]",
             ("tests/test_round_shapes.py::test_candidates_are_the_lowest_surface_points",)),
    Mutation("sphere-inertia", "shapes", "jaxcontact/shapes.py",
             "0.4 * mass * r * r * np.eye(3)", "0.5 * mass * r * r * np.eye(3)",
             ("tests/test_round_shapes.py::test_mass_properties_are_the_solids",)),
    Mutation("capsule-hemisphere-shift", "shapes", "jaxcontact/shapes.py",
             "l * l + 3 * l * r / 4)", "l * l + 3 * l * r / 8)",
             ("tests/test_round_shapes.py::test_mass_properties_are_the_solids",)),
    Mutation("cylinder-inertia-length", "shapes", "jaxcontact/shapes.py",
             "across = mass * (rho * rho / 4 + l * l / 3)", "across = mass * (rho * rho / 4 + l * l / 12)",
             ("tests/test_round_shapes.py::test_mass_properties_are_the_solids",)),
    Mutation("ellipsoid-inertia", "shapes", "jaxcontact/shapes.py",
             "inertia = mass / 5.0 * np.diag", "inertia = mass / 4.0 * np.diag",
             ("tests/test_round_shapes.py::test_mass_properties_are_the_solids",)),
    Mutation("round-reach-without-radius", "shapes", "jaxcontact/worlds/contacts.py",
             "far + body.radius, 0.0)", "far, 0.0)",
             ("tests/test_round_shapes.py::test_sphere_penetration_depth_and_reach",)),
    Mutation("round-penetration-by-vertices", "shapes", "jaxcontact/stages.py",
             "    if params.body.is_round:\n        _, phi, valid, _ = geometry.candidate_points",
             "    if False:\n        _, phi, valid, _ = geometry.candidate_points",
             ("tests/test_round_shapes.py::test_sphere_penetration_depth_and_reach",)),
    Mutation("mjcf-capsule-axis", "shapes", "jaxcontact/worlds/mjcf.py",
             "axis = np.asarray(quat_to_mat(np.asarray(model.geom_quat[g], float)))[:, 2]",
             "axis = np.asarray(quat_to_mat(np.asarray(model.geom_quat[g], float)))[:, 0]",
             ("tests/test_round_shapes.py::test_mjcf_round_geoms_load_natively_and_write_back",)),
    # fixed scenery (issue 62 items 3 and 8: Scene.fixed, MJCF world geoms and jointless bodies)
    Mutation("fixed-mobility-kept", "scenery", "jaxcontact/worlds/pipeline.py",
             "mobility = jnp.where(jnp.asarray(held)[:, None, None], 0.0, motion.mobility)",
             "mobility = motion.mobility",
             (f"{SCENERY}::test_a_box_dropped_on_a_fixed_table_rests_on_it",)),
    Mutation("fixed-falls", "scenery", "jaxcontact/worlds/pipeline.py",
             "velocity = jnp.where(jnp.asarray(held)[:, None], 0.0, motion.velocity)", "velocity = motion.velocity",
             (f"{SCENERY}::test_a_box_dropped_on_a_fixed_table_rests_on_it",)),
    # Not listed, equivalent mutants (no answer changes): integrating a fixed body (its velocity after
    # contact is exactly zero) and keeping its ground rows (zero mobility: they take no impulse).
    Mutation("fixed-depenetrated", "scenery", "jaxcontact/worlds/pipeline.py",
             "state, projected_b = _keep(scene.fixed_bodies, given, state), projected_b & ~scene.fixed_bodies",
             "state, projected_b = state, projected_b",
             (f"{SCENERY}::test_a_box_pushed_into_a_fixed_wall_stops_without_penetration_or_bounce",)),
    Mutation("fixed-pairs-kept", "scenery", "jaxcontact/worlds/scene.py",
             "drop |= set(itertools.combinations(fixed, 2))", "drop |= set()",
             (f"{SCENERY}::test_fixed_bodies_refused_by_name",)),
    Mutation("fixed-links-islands", "scenery", "jaxcontact/worlds/contacts.py",
             "a, b = jnp.where(a_fixed | b_fixed, -1, a), jnp.where(b_fixed, a, b)", "a, b = a, b",
             (f"{SCENERY}::test_a_fixed_body_links_no_island_as_the_ground",)),
    Mutation("fixed-moving-unflagged", "scenery", "jaxcontact/worlds/pipeline.py",
             "bad = jnp.asarray(scene.fixed_bodies) & moving", "bad = jnp.asarray(scene.fixed_bodies) & False",
             (f"{SCENERY}::test_fixed_bodies_refused_by_name",)),
    Mutation("mjcf-world-geom-unturned", "scenery", "jaxcontact/worlds/mjcf.py",
             "M.mju_mat2Quat(q, np.asarray(d.geom_xmat[g], float))", "M.mju_mat2Quat(q, np.eye(3).ravel())",
             (f"{MJCF_SCENERY}::test_a_box_slides_down_the_mjcf_ramp_as_the_hand_calculation_and_mujoco_say",)),
    Mutation("mjcf-world-geom-hull-unturned", "scenery", "jaxcontact/worlds/mjcf.py",
             "local = (local - model.geom_pos[g]) @ np.asarray(quat_to_mat(np.asarray(model.geom_quat[g], float)))",
             "local = local - model.geom_pos[g]",
             (f"{MJCF_SCENERY}::test_a_box_slides_down_the_mjcf_ramp_as_the_hand_calculation_and_mujoco_say",)),
    Mutation("mjcf-hinge-to-fixed-parent", "scenery", "jaxcontact/worlds/mjcf.py",
             "if model.body_weldid[p] == 0:", "if p == 0:",
             (f"{MJCF_SCENERY}::test_fixed_bodies_keep_their_friction_and_hinges_to_them_become_hinges_to_the_world",)),
    Mutation("to-mjcf-fixed-free", "scenery", "jaxcontact/worlds/mjcf.py",
             "joint = '<!-- fixed to the world: no joint -->'", "joint = f'<freejoint name=\"free{i}\"/>'",
             (f"{MJCF_SCENERY}::test_to_mjcf_writes_fixed_bodies_without_joints_and_reads_them_back",)),
    Mutation("fixed-jointed-mobility-kept", "scenery", "jaxcontact/worlds/pipeline.py",
             "mobility = jnp.where(free[:, None] & free[None, :], motion.mobility, 0.0)", "mobility = motion.mobility",
             (f"{SCENERY}::test_a_hinged_box_swings_against_a_fixed_wall_and_stops_there",)),
    Mutation("simulate-kicks-fixed", "scenery", "jaxcontact/simulate.py",
             "free = ~scene.jointed_bodies & ~scene.fixed_bodies", "free = ~scene.jointed_bodies",
             (f"{MJCF_SCENERY}::test_simulate_mjcf_keeps_fixed_bodies_at_rest_in_perturbed_worlds",)),
    # issue 60 part 4, the flag: Flags.DEGENERATE (solvers.degenerate, a saturated friction manifold without slip)
    Mutation("degenerate-slip-ignored", "grads", "jaxcontact/solvers/entry.py",
             "slip < velocity_tol * scale, True)", "slip < jnp.inf, True)",
             ("tests/test_world_gradients.py::test_degenerate_is_a_saturated_manifold_without_slip",)),
    Mutation("degenerate-rows-not-net", "grads", "jaxcontact/solvers/entry.py",
             "net = per(z[:, 1:])", "net = per(jnp.abs(z[:, 1:]))",
             ("tests/test_world_gradients.py::test_degenerate_is_a_saturated_manifold_without_slip",)),
    Mutation("degenerate-bound-anywhere", "grads", "jaxcontact/solvers/entry.py",
             "(force >= (1 - impulse_tol) * cap)", "(force >= 0.5 * cap)",
             ("tests/test_world_gradients.py::test_degenerate_is_a_saturated_manifold_without_slip",)),
    Mutation("degenerate-flag-dropped", "grads", "jaxcontact/worlds/pipeline.py",
             "con.capacity, (jnp.asarray(info.flags) & int(Flags.DEGENERATE)) != 0)", "con.capacity, False)",
             ("tests/test_world_gradients.py::test_degenerate_flag_on_a_train_not_on_a_push",)),
    # issue 61, part cone2 (the disc's implicit derivative): the projection's derivative in z_n and
    # across the tangent pair in each path (the dense map, the velocity form's map that GMRES and the
    # adjoint kernel read, the kernel's dense system), against the hand-written Jacobian of the map
    Mutation("disc-dense-map-no-normal-column", "cone", "jaxcontact/solvers/lcp.py",
             "c1, c2,\n                                  z[rows.parent[first]])",
             "c1, c2,\n                                  jax.lax.stop_gradient(z[rows.parent[first]]))",
             (f"{CONE}::test_dense_disc_derivative_solves_the_reference_system",)),
    Mutation("disc-velocity-projection-no-normal-column", "cone", "jaxcontact/solvers/body_lcp.py",
             "t1, t2 = project_disc(y[:, 1], y[:, 2], coupling[:, 1], coupling[:, 2], zn)",
             "t1, t2 = project_disc(y[:, 1], y[:, 2], coupling[:, 1], coupling[:, 2], jax.lax.stop_gradient(zn))",
             (f"{CONE}::test_velocity_form_disc_derivative_solves_the_reference_system",)),
    Mutation("disc-adjoint-kernel-diagonal-projection", "cone", "jaxcontact/native/adjoint.cc",
             "        if (p == 0.0) continue;\n", "        if (p == 0.0 || i != j) continue;\n",
             (f"{CONE}::test_velocity_form_disc_derivative_solves_the_reference_system",)),
    # --- round pairs (issue 62, items 4, 6): spheres and capsules with each other and with hulls ---
    Mutation("round-round-normal-flipped", "round pairs", "jaxcontact/collision.py",
             "    n = _unit(cb - ca)\n", "    n = _unit(ca - cb)\n",
             ("tests/test_round_pairs.py::test_round_round_contacts_are_the_sampled_closest",)),
    Mutation("round-round-one-radius", "round pairs", "jaxcontact/collision.py",
             "dist = jnp.linalg.norm(cb - ca, axis=-1) - radius_a - radius_b", "dist = jnp.linalg.norm(cb - ca, axis=-1) - radius_a",
             ("tests/test_round_pairs.py::test_round_round_contacts_are_the_sampled_closest",)),
    Mutation("round-ends-never-touch", "round pairs", "jaxcontact/collision.py",
             "along = jax.lax.stop_gradient(dirs @ n >= ROUND_ALIGN)", "along = jax.lax.stop_gradient(dirs @ n >= 2.0)",
             ("tests/test_round_pairs.py::test_parallel_capsules_touch_at_the_overlaps_ends", "tests/test_round_pairs.py::test_capsule_lying_on_a_box_face_touches_at_both_ends")),
    Mutation("round-ends-always-touch", "round pairs", "jaxcontact/collision.py",
             "along = jax.lax.stop_gradient(dirs @ n >= ROUND_ALIGN)", "along = jax.lax.stop_gradient(dirs @ n >= -2.0)",
             ("tests/test_round_pairs.py::test_parallel_capsules_touch_at_the_overlaps_ends",)),
    Mutation("round-margin-ignored", "round pairs", "jaxcontact/collision.py",
             "ok = jax.lax.stop_gradient(dist <= margin)", "ok = jax.lax.stop_gradient(dist <= 0)",
             ("tests/test_round_pairs.py::test_round_hull_contacts_are_the_sampled_closest",)),
    Mutation("point-triangle-edges-only", "round pairs", "jaxcontact/collision.py",
             "return jnp.where(jax.lax.stop_gradient(inside), proj, e)", "return e",
             ("tests/test_round_pairs.py::test_round_hull_contacts_are_the_sampled_closest",)),
    Mutation("sphere-inside-hull-as-outside", "round pairs", "jaxcontact/collision.py",
             "inside = jax.lax.stop_gradient(sep[f] <= 0)", "inside = jax.lax.stop_gradient(sep[f] <= -1.0)",
             ("tests/test_round_pairs.py::test_round_hull_contacts_are_the_sampled_closest",)),
    Mutation("capsule-meeting-hull-as-outside", "round pairs", "jaxcontact/collision.py",
             "meets = jax.lax.stop_gradient(lo <= hi)", "meets = jax.lax.stop_gradient(lo > 2.0)",
             ("tests/test_round_pairs.py::test_round_hull_contacts_are_the_sampled_closest",)),
    Mutation("round-hull-radius-ignored", "round pairs", "jaxcontact/collision.py",
             "return _manifold(p + radius_a * dirs, q, d - radius_a, dirs,", "return _manifold(p + radius_a * dirs, q, d, dirs,",
             ("tests/test_round_pairs.py::test_round_hull_contacts_are_the_sampled_closest",)),
    Mutation("hull-round-normal-unflipped", "round pairs", "jaxcontact/worlds/contacts.py",
             "return pc.replace(normal=-pc.normal)", "return pc",
             ("tests/test_round_pairs.py::test_a_sphere_and_a_capsule_rest_on_a_fixed_box",)),
    Mutation("round-pairs-grouped-by-topology", "round pairs", "jaxcontact/worlds/scene.py",
             "groups.setdefault((self.pair_shape(a), self.pair_shape(b)), []).append(k)",
             "groups.setdefault((self.topologies[a], self.topologies[b]), []).append(k)",
             ("tests/test_round_shapes.py::test_worlds_refuse_pairs_of_round_bodies_by_name",)),
    # bodies of several shapes (issue 62 items 2 and 8: shapes.compound, contacts.compound_pair, mjcf.compound_body)
    Mutation("compound-parallel-axis-dropped", "compound", "jaxcontact/shapes.py",
             "+ mi * (d @ d * np.eye(3) - np.outer(d, d))", "",
             ("tests/test_compound.py::test_two_flush_boxes_are_the_box_of_their_union",
              "tests/test_compound.py::test_compound_mass_properties_match_mujoco")),
    Mutation("compound-part-inertia-unrotated", "compound", "jaxcontact/shapes.py",
             "inertia += Ri @ np.asarray(Ii, np.float64) @ Ri.T", "inertia += np.asarray(Ii, np.float64)",
             ("tests/test_compound.py::test_hammer_mass_properties_against_quadrature",
              "tests/test_compound.py::test_compound_mass_properties_match_mujoco")),
    Mutation("compound-vertex-radius-ignored", "compound", "jaxcontact/geometry.py",
             "pts, phi, r = swept_vertices(body.vertex_radius, pts, phi, r, n, nb)", "pass",
             ("tests/test_compound.py::test_dumbbell_rolls_straight_and_rests",)),
    Mutation("compound-pair-bodies-swapped", "compound", "jaxcontact/worlds/contacts.py",
             "rows.append(_pair_rows(sa, sb, pc))", "rows.append(_pair_rows(sb, sa, pc))",
             ("tests/test_compound.py::test_box_rests_on_a_table",
              "tests/test_compound.py::test_compound_pair_is_the_union_box_pair")),
    Mutation("compound-pair-first-part-only", "compound", "jaxcontact/worlds/contacts.py",
             "for kind, start, stop, topo in shape[1]]", "for kind, start, stop, topo in shape[1][:1]]",
             ("tests/test_compound.py::test_dumbbell_on_a_fixed_box_rests_on_both_balls",)),
    Mutation("compound-pair-keeps-the-farthest", "compound", "jaxcontact/worlds/contacts.py",
             "_, keep = jax.lax.top_k(-jax.lax.stop_gradient(jnp.where(valid, phi, jnp.inf)), n)",
             "_, keep = jax.lax.top_k(jax.lax.stop_gradient(jnp.where(valid, phi, -jnp.inf)), n)",
             ("tests/test_compound.py::test_a_compound_pair_keeps_its_deepest_points",)),
    Mutation("mjcf-compound-geom-unturned", "compound", "jaxcontact/worlds/mjcf.py",
             "pose = (np.asarray(model.geom_pos[g], float), np.asarray(model.geom_quat[g], float))",
             "pose = (np.asarray(model.geom_pos[g], float), np.array([1.0, 0.0, 0.0, 0.0]))",
             ("tests/test_compound.py::test_from_mjcf_loads_bodies_of_several_geoms_and_writes_them_back",)),
    Mutation("to-mjcf-compound-radius", "compound", "jaxcontact/worlds/mjcf.py",
             "r = float(body.vertex_radius[i][start])", "r = 2 * float(body.vertex_radius[i][start])",
             ("tests/test_compound.py::test_from_mjcf_loads_bodies_of_several_geoms_and_writes_them_back",)),
    # --- issue 61, cone3: the face's normal split converged in the forward (LCPSettings.forward_newton) ---
    Mutation("forward-newton-dropped", "friction cone", "jaxcontact/solvers/lcp.py",
             "            z = split(z, A, b, coupling)", "            z = z",
             ("tests/test_friction_cone.py::test_forward_newton_makes_a_sliding_spinning_box_s_derivative_exact",)),
    Mutation("forward-newton-one-step", "friction cone", "jaxcontact/solvers/lcp.py",
             "split = newton_polish(T, settings.forward_newton)", "split = newton_polish(T, 1)",
             ("tests/test_friction_cone.py::test_forward_newton_makes_a_sliding_spinning_box_s_derivative_exact",)),
    Mutation("forward-newton-velocity-form-silent", "friction cone", "jaxcontact/solvers/body_lcp.py",
             "    if settings.forward_newton:\n        raise", "    if False:\n        raise",
             ("tests/test_friction_cone.py::test_forward_newton_is_checked",)),
    # --- issue 61, design (c): the active-set polish in the forward, the disc the default ---
    Mutation("active-set-polish-off-by-default", "friction cone", "jaxcontact/solvers/lcp.py",
             "DENSE_ACTIVE_SET_ROUNDS = 1", "DENSE_ACTIVE_SET_ROUNDS = 0",
             ("tests/test_friction_cone.py::test_active_set_polish_lands_the_throws_stuck_steps_on_the_fixed_point",
              "tests/test_friction_cone.py::test_the_disc_slides_with_exact_derivatives_at_its_defaults")),
    Mutation("active-set-slip-with-the-velocity", "friction cone", "jaxcontact/solvers/lcp.py",
             "jnp.where(sl, z[first] + c1 * zn * g1 / s, w[first])", "jnp.where(sl, z[first] - c1 * zn * g1 / s, w[first])",
             ("tests/test_friction_cone.py::test_active_set_polish_lands_the_throws_stuck_steps_on_the_fixed_point",)),
    Mutation("active-set-no-slip-identified", "friction cone", "jaxcontact/solvers/lcp.py",
             "sl = on & (jnp.sqrt(l1 * l1 + l2 * l2) >= zn * (1 - 1e-10))", "sl = on & False",
             ("tests/test_friction_cone.py::test_active_set_polish_lands_the_throws_stuck_steps_on_the_fixed_point",)),
    Mutation("active-set-polish-for-the-square-too", "friction cone", "jaxcontact/solvers/lcp.py",
             'rounds = DENSE_ACTIVE_SET_ROUNDS if settings.cone == "elliptic" else 0',
             'rounds = DENSE_ACTIVE_SET_ROUNDS',
             ("tests/test_friction_cone.py::test_box_preset_keeps_the_square_bit_for_bit_without_the_polish",)),
    Mutation("forward-active-set-velocity-form-silent", "friction cone", "jaxcontact/solvers/body_lcp.py",
             "    if settings.forward_active_set:\n        raise", "    if False:\n        raise",
             ("tests/test_friction_cone.py::test_forward_active_set_is_checked",)),
    # the polish where differentiated (implicit_fixed_point's refine): dropped, or run in every solve by default
    Mutation("refine-dropped-under-differentiation", "friction cone", "jaxcontact/solvers/implicit.py",
             "out = jax.lax.stop_gradient(refine(jax.lax.stop_gradient(out), *args))", "out = out",
             ("tests/test_friction_cone.py::test_active_set_polish_lands_the_throws_stuck_steps_on_the_fixed_point",
              "tests/test_friction_cone.py::test_the_disc_slides_with_exact_derivatives_at_its_defaults")),
    Mutation("default-polish-in-every-solve", "friction cone", "jaxcontact/solvers/lcp.py",
             "refine, active = (_refined(active_set_polish(rows, settings.cone, T, rounds), T) if rounds else None), None",
             "refine, active = None, (active_set_polish(rows, settings.cone, T, rounds) if rounds else None)",
             ("tests/test_friction_cone.py::test_active_set_polish_lands_the_throws_stuck_steps_on_the_fixed_point",)),
    # fast hits (issue 62 item 5: Scene.fast_hits, contacts.pair_contacts at the pose a fast pair reaches)
    Mutation("fast-hits-never-fast", "fast hits", "jaxcontact/worlds/contacts.py",
             "move[pairs[:, 0]] + move[pairs[:, 1]] > FAST_HIT)", "move[pairs[:, 0]] + move[pairs[:, 1]] > 1.0)",
             ("tests/test_fast_hits.py::test_a_ball_falling_fast_past_a_box_edge_or_corner_is_not_deflected",)),
    Mutation("fast-hits-current-pose", "fast hits", "jaxcontact/worlds/contacts.py",
             "jax.tree_util.tree_map(lambda p, c: jnp.where(fast, p, c), ps, cs)",
             "jax.tree_util.tree_map(lambda p, c: jnp.where(fast, c, c), ps, cs)",
             ("tests/test_fast_hits.py::test_a_fast_pairs_contacts_are_its_meeting_features_at_this_pose",)),
    Mutation("fast-hits-predicted-distance-kept", "fast hits", "jaxcontact/worlds/contacts.py",
             "phi = jnp.where(fast, phi - model.dt * vn, phi)", "phi = jnp.where(fast, phi, phi)",
             ("tests/test_fast_hits.py::test_a_fast_pairs_contacts_are_its_meeting_features_at_this_pose",)),
    Mutation("fast-hits-one-body-closing", "fast hits", "jaxcontact/worlds/contacts.py",
             "vn = rows[:, 0, 0] @ jnp.concatenate([sa.vel, sa.omega]) + rows[:, 1, 0]",
             "vn = rows[:, 1, 0]",
             ("tests/test_fast_hits.py::test_a_fast_pairs_contacts_are_its_meeting_features_at_this_pose",)),
    # --- issue 62 item 4: cylinder and ellipsoid pairs, the general convex method (collision.convex_pair) ---
    Mutation("convex-no-search", "convex pairs", "jaxcontact/collision.py",
             "CONVEX_ITERATIONS = 32 ", "CONVEX_ITERATIONS = 0 ",
             ("tests/test_convex_pairs.py::test_convex_pairs_match_the_definition_and_sampled_surfaces",)),
    Mutation("convex-ridge-steps-dropped", "convex pairs", "jaxcontact/collision.py",
             "dirs = _unit(jnp.concatenate([dirs, fp, proj]))", "dirs = _unit(jnp.concatenate([dirs, fp]))",
             ("tests/test_convex_pairs.py::test_convex_pairs_match_the_definition_and_sampled_surfaces",)),
    Mutation("convex-cylinder-support-radius", "convex pairs", "jaxcontact/collision.py",
             "s = jnp.concatenate([self.dims[0] * u,", "s = jnp.concatenate([0.9 * self.dims[0] * u,",
             ("tests/test_convex_pairs.py::test_convex_pairs_match_the_definition_and_sampled_surfaces",)),
    Mutation("convex-ellipsoid-support-unscaled", "convex pairs", "jaxcontact/collision.py",
             "s = self.dims[:3] * an / jnp.sqrt(", "s = an / jnp.sqrt(",
             ("tests/test_convex_pairs.py::test_convex_pairs_match_the_definition_and_sampled_surfaces",)),
    Mutation("convex-hull-entry-as-exit", "convex pairs", "jaxcontact/collision.py",
             "lo = jnp.max(jnp.where(den < -1e-12, t,", "lo = jnp.max(jnp.where(den > 1e-12, t,",
             ("tests/test_convex_pairs.py::test_resting_manifolds_cylinder_on_a_box",)),
    Mutation("convex-cylinder-entry-as-exit", "convex pairs", "jaxcontact/collision.py",
             "lo_s = jnp.where(along, -big, (-b - root) / sa)", "lo_s = jnp.where(along, -big, (-b + root) / sa)",
             ("tests/test_convex_pairs.py::test_resting_manifolds_cylinder_on_a_box", "tests/test_convex_pairs.py::test_a_stack_of_three_cylinders_stands")),
    Mutation("convex-deepest-point-midway", "convex pairs", "jaxcontact/collision.py",
             "x0 = jnp.where(on_a, xa + 0.5 * deep * n, jnp.where(on_b, yb - 0.5 * deep * n, 0.5 * (ca + cb)))",
             "x0 = 0.5 * (xa + yb)",
             ("tests/test_convex_pairs.py::test_convex_pairs_match_the_definition_and_sampled_surfaces",)),
    Mutation("convex-margin-ignored", "convex pairs", "jaxcontact/collision.py",
             "mask = jnp.concatenate([first[None], ha, hb]) & (sg(phi) <= margin)",
             "mask = jnp.concatenate([first[None], ha, hb])",
             ("tests/test_convex_pairs.py::test_resting_manifolds_cylinder_on_a_box",)),
    Mutation("convex-pairs-not-dispatched", "convex pairs", "jaxcontact/worlds/contacts.py",
             "if ta in collision.CONVEX_KINDS or tb in collision.CONVEX_KINDS:", "if False:",
             ("tests/test_convex_pairs.py::test_cylinders_and_an_ellipsoid_rest_on_fixed_boxes",)),
    Mutation("convex-cylinder-dims-halved", "convex pairs", "jaxcontact/worlds/contacts.py",
             "dims = dims.at[:, :2].add(jnp.asarray(body.cylinder, dtype))",
             "dims = dims.at[:, :2].add(0.5 * jnp.asarray(body.cylinder, dtype))",
             ("tests/test_convex_pairs.py::test_cylinders_and_an_ellipsoid_rest_on_fixed_boxes",)),
    Mutation("mjcf-round-scenery-as-hulls", "convex pairs", "jaxcontact/worlds/mjcf.py",
             "if kind in ROUND and not approximate:  # natively", "if False:  # natively",
             ("tests/test_convex_pairs.py::test_mjcf_round_scenery_and_cylinder_pairs_load_natively",)),
    # the dense world threshold (issue 60, tier time): a world of free bodies above DENSE_WORLD_ROWS in velocity form
    Mutation("table-dense-world-rows-as-small-rows", "solvers", "jaxcontact/solvers/problem.py",
             "(rows <= DENSE_WORLD_ROWS or gradient", "(rows <= SMALL_ROWS or gradient", (f"{ENTRY}::test_the_table",)),
    # a hinge's passive forces (issue 63, item 1): damping, springs, armature, their reference and the traced rule
    Mutation("passive-damping-explicit", "joints", "jaxcontact/worlds/joints.py",
             "force = arm * (G @ (v1 - v0)) + h * damp * (G @ v1)", "force = arm * (G @ (v1 - v0)) + h * damp * (G @ v0)",
             ("tests/test_joint_passive.py::test_damping_is_implicit_euler_with_the_armature_in_the_inertia",)),
    Mutation("passive-armature-dropped", "joints", "jaxcontact/worlds/joints.py",
             "    C = arm + h * damp\n", "    C = h * damp\n",
             ("tests/test_joint_passive.py::test_damping_is_implicit_euler_with_the_armature_in_the_inertia",)),
    Mutation("passive-spring-sign", "joints", "jaxcontact/worlds/joints.py",
             "force = force + h * per_dof(jnp.asarray(jp.stiffness, dtype)) * (q - ref)",
             "force = force + h * per_dof(jnp.asarray(jp.stiffness, dtype)) * (ref - q)",
             ("tests/test_joint_passive.py::test_a_spring_oscillates_at_its_frequency_with_the_armature",)),
    Mutation("passive-springref-ignored", "joints", "jaxcontact/worlds/joints.py",
             "ref = zeros if jp.springref is None else per_dof(jnp.asarray(jp.springref, dtype))", "ref = zeros",
             ("tests/test_joint_passive.py::test_a_spring_oscillates_at_its_frequency_with_the_armature",)),
    Mutation("passive-reference-ignored", "joints", "jaxcontact/worlds/joints.py",
             "d = quat_mul(rel, quat_conj(jp.reference[r]))", "d = rel",
             ("tests/test_joint_passive.py::test_a_damped_sprung_arm_from_mjcf_follows_mujoco_and_writes_back",)),
    Mutation("passive-mjcf-damping-not-loaded", "joints", "jaxcontact/worlds/mjcf.py",
             "fields = dict(damping=np.asarray(model.dof_damping)[dof],", "fields = dict(damping=0 * np.asarray(model.dof_damping)[dof],",
             ("tests/test_joint_passive.py::test_a_damped_sprung_arm_from_mjcf_follows_mujoco_and_writes_back",)),
    Mutation("passive-rule-negative-passes", "joints", "jaxcontact/worlds/joints.py",
             "bad = bad | ~jnp.all(jnp.isfinite(a) & (a >= 0))", "bad = bad | ~jnp.all(jnp.isfinite(a))",
             ("tests/test_joint_passive.py::test_bad_passive_fields_are_refused_eagerly_and_flagged_under_jit",)),
    # slide joints (issue 63, item 1): their rows, coordinate, rate rows, the armature's Ġv, the MJCF anchor
    Mutation("slide-rotation-rows-free", "joints", "jaxcontact/worlds/joints.py",
             "ang = jnp.concatenate([zero, eye @ quat_to_mat(s.quat)], axis=1)",
             "ang = jnp.concatenate([zero, 0 * eye @ quat_to_mat(s.quat)], axis=1)",
             ("tests/test_joint_slides.py::test_a_cart_pole_from_mjcf_follows_mujoco_c",)),
    Mutation("slide-parent-lever-at-its-anchor", "joints", "jaxcontact/worlds/joints.py",
             "Jp = on(parent, Rp.T @ (xc - parent.pos))", "Jp = on(parent, anchor_parent)",
             ("tests/test_joint_slides.py::test_a_bead_slides_out_along_a_spinning_rod_as_in_mujoco_c",)),
    Mutation("slide-error-sign", "joints", "jaxcontact/worlds/joints.py",
             "err = jnp.concatenate([U @ (xc - xp), Rp @ (2.0 * d[1:])])",
             "err = jnp.concatenate([U @ (xp - xc), Rp @ (2.0 * d[1:])])",
             ("tests/test_joint_slides.py::test_a_bead_slides_out_along_a_spinning_rod_as_in_mujoco_c",)),
    Mutation("slide-coordinate-sign", "joints", "jaxcontact/worlds/joints.py",
             "qs.append(jnp.dot(ap, xc - xp)[None])", "qs.append(jnp.dot(ap, xp - xc)[None])",
             ("tests/test_joint_slides.py::test_a_slide_spring_oscillates_at_its_frequency_with_the_armature_and_damping_is_implicit",)),
    Mutation("slide-rate-parent-dropped", "joints", "jaxcontact/worlds/joints.py",
             "G = G.at[d, 6 * p:6 * p + 6].add(-geometry.point_jacobian(parent, r_p, ap[None])[0])",
             "G = G.at[d, 6 * p:6 * p + 6].add(0 * geometry.point_jacobian(parent, r_p, ap[None])[0])",
             ("tests/test_joint_slides.py::test_a_bead_slides_out_along_a_spinning_rod_as_in_mujoco_c",)),
    Mutation("armature-rate-drift-dropped", "joints", "jaxcontact/worlds/joints.py",
             "force = force + h * arm * rate_drift(joints, jp, state)",
             "force = force + 0 * h * arm * rate_drift(joints, jp, state)",
             ("tests/test_joint_slides.py::test_a_bead_slides_out_along_a_spinning_rod_as_in_mujoco_c",)),
    Mutation("slide-mjcf-anchor-at-xanchor", "joints", "jaxcontact/worlds/mjcf.py",
             "anchor = np.asarray(d0.xpos[b], float) + np.asarray(d0.xmat[b], float).reshape(3, 3) @ pos",
             "anchor = anchor",
             ("tests/test_joint_slides.py::test_a_cart_pole_from_mjcf_follows_mujoco_c",)),
    # joint range limits (issue 63, item 1): one-sided rows of the contact problem
    Mutation("limit-upper-sign", "joints", "jaxcontact/worlds/joints.py",
             "for sign, dist in ((1.0, q[d] - rng[j, 0]), (-1.0, rng[j, 1] - q[d])):",
             "for sign, dist in ((1.0, q[d] - rng[j, 0]), (1.0, rng[j, 1] - q[d])):",
             ("tests/test_joint_limits.py::test_a_falling_rod_stops_at_its_hinge_limit_without_bounce_and_stays",)),
    Mutation("limit-distance-ignored", "joints", "jaxcontact/worlds/joints.py",
             "            phi.append(dist)\n", "            phi.append(0 * dist + 1.0)\n",
             ("tests/test_joint_limits.py::test_a_falling_rod_stops_at_its_hinge_limit_without_bounce_and_stays",)),
    Mutation("limit-parent-row-dropped", "joints", "jaxcontact/worlds/joints.py",
             "gp = jnp.zeros_like(gc) if p < 0 else G[d, 6 * p:6 * p + 6]", "gp = jnp.zeros_like(gc)",
             ("tests/test_joint_limits.py::test_a_limited_arm_from_mjcf_follows_mujoco_c_until_its_limits_and_rests_on_them",)),
    Mutation("limit-never-in-the-problem", "joints", "jaxcontact/worlds/contacts.py",
             "state)\n    reach = scene.margin + 2.0 * model.dt * jnp.maximum(-jax.lax.stop_gradient(rate), 0.0)\n    return rows, phi, jax.lax.stop_gradient(phi) < reach, bodies",
             "state)\n    reach = scene.margin + 2.0 * model.dt * jnp.maximum(-jax.lax.stop_gradient(rate), 0.0)\n    return rows, phi, jax.lax.stop_gradient(phi) < -1.0, bodies",
             ("tests/test_joint_limits.py::test_a_slide_falls_onto_its_lower_limit_and_holds_the_weight",)),
    Mutation("limit-mjcf-range-not-loaded", "joints", "jaxcontact/worlds/mjcf.py",
             "limited = tuple(bool(model.jnt_limited[j]) for j in hinges)", "limited = tuple(False for j in hinges)",
             ("tests/test_joint_limits.py::test_a_limited_arm_from_mjcf_follows_mujoco_c_until_its_limits_and_rests_on_them",)),
    # actuators on joints (issue 63, item 2)
    Mutation("actuator-gain-dropped", "joints", "jaxcontact/worlds/actuation.py",
             "f = gain * u + bias[:, 0]", "f = 0 * gain * u + bias[:, 0]",
             ("tests/test_actuators.py::test_a_motor_spins_the_rotor_at_gear_times_control_over_inertia_within_its_ranges",)),
    Mutation("actuator-gear-once", "joints", "jaxcontact/worlds/actuation.py",
             "explicit = jnp.zeros((num_joints,), q.dtype).at[idx].add(g * f)",
             "explicit = jnp.zeros((num_joints,), q.dtype).at[idx].add(f)",
             ("tests/test_actuators.py::test_a_motor_spins_the_rotor_at_gear_times_control_over_inertia_within_its_ranges",)),
    Mutation("actuator-position-bias-dropped", "joints", "jaxcontact/worlds/actuation.py",
             "bias[:, 1] * length", "0 * bias[:, 1] * length",
             ("tests/test_actuators.py::test_a_critically_damped_position_servo_reaches_its_target_without_overshoot",)),
    Mutation("actuator-velocity-bias-explicit", "joints", "jaxcontact/worlds/actuation.py",
             "jnp.where(lim, bias[:, 2] * speed, 0.0)", "bias[:, 2] * speed",
             ("tests/test_actuators.py::test_a_velocity_servo_is_implicit_euler_toward_its_target_rate",)),
    Mutation("actuator-ctrl-unclipped", "joints", "jaxcontact/worlds/actuation.py",
             "u = jnp.clip(ap.ctrl, ap.ctrlrange[:, 0], ap.ctrlrange[:, 1])", "u = ap.ctrl",
             ("tests/test_actuators.py::test_a_motor_spins_the_rotor_at_gear_times_control_over_inertia_within_its_ranges",)),
    Mutation("actuator-force-unclipped", "joints", "jaxcontact/worlds/actuation.py",
             "f = jnp.where(lim, jnp.clip(f, ap.forcerange[:, 0], ap.forcerange[:, 1]), f)", "f = f",
             ("tests/test_actuators.py::test_a_motor_spins_the_rotor_at_gear_times_control_over_inertia_within_its_ranges",)),
    Mutation("actuator-mjcf-bias-not-loaded", "joints", "jaxcontact/worlds/mjcf.py",
             "bias=f(model.actuator_biasprm[:, :3])", "bias=f(0 * model.actuator_biasprm[:, :3])",
             ("tests/test_actuators.py::test_a_servoed_arm_from_mjcf_follows_mujoco_c_and_writes_back",)),
    Mutation("actuator-rule-nan-passes", "joints", "jaxcontact/worlds/actuation.py",
             "for a in (ap.gear, ap.gain, ap.bias, ap.ctrl):", "for a in (ap.gear, ap.gain, ap.bias):",
             ("tests/test_actuators.py::test_unsupported_actuators_and_bad_values_are_refused_by_name_and_flagged_under_jit",)),
    Mutation("actuator-step-controls-ignored", "joints", "jaxcontact/worlds/pipeline.py",
             "    if not actuated(scene) or control is None:\n        return params, control\n",
             "    if True:\n        return params, None\n",
             ("tests/test_actuators.py::test_per_step_controls_drive_the_actuators_with_gradients_and_batches",)),
    Mutation("cli-controls-not-passed", "cli", "jaxcontact/simulate.py",
             "residuals=residuals,\n                                  controls=controls)",
             "residuals=residuals,\n                                  controls=None)",
             ("tests/test_actuators.py::test_simulate_mjcf_controls_runs_the_arm_and_refuses_bad_files",)),
    # tilted planes as fixed scenery (issue 62, item 3: Scene.planes, Params.planes, worlds.planes; MJCF in and out)
    Mutation("plane-normal-flat", "planes", "jaxcontact/worlds/planes.py",
             "Ground(normal=p.normal[k], height=p.offset[k])",
             "Ground(normal=0 * p.normal[k] + jnp.array([0.0, 0.0, 1.0]), height=p.offset[k])",
             ("tests/test_planes.py::test_a_box_slides_down_a_tilted_plane_at_g_sin_minus_mu_cos_and_sticks_below_the_friction_angle",)),
    Mutation("plane-offset-dropped", "planes", "jaxcontact/worlds/planes.py",
             "Ground(normal=p.normal[k], height=p.offset[k])", "Ground(normal=p.normal[k], height=0 * p.offset[k])",
             ("tests/test_planes.py::test_a_box_pushed_into_a_vertical_wall_plane_stops_at_it_and_rests",)),
    Mutation("plane-friction-law", "planes", "jaxcontact/worlds/contacts.py",
             "jnp.broadcast_to(jnp.asarray(params.planes.friction[k], dtype), (1, 2))", "law_mu[None]",
             ("tests/test_planes.py::test_a_box_slides_down_a_tilted_plane_at_g_sin_minus_mu_cos_and_sticks_below_the_friction_angle",)),
    Mutation("plane-mjcf-normal", "planes", "jaxcontact/worlds/mjcf.py",
             "normals = np.stack([np.asarray(d.geom_xmat[g], float).reshape(3, 3)[:, 2] for g in tilted])",
             "normals = np.stack([np.asarray(d.geom_xmat[g], float).reshape(3, 3)[2] for g in tilted])",
             ("tests/test_mjcf_planes.py::test_tilted_planes_load_at_mujocos_pose_with_their_friction_and_write_back",)),
    Mutation("plane-mjcf-offset", "planes", "jaxcontact/worlds/mjcf.py",
             "offset=cast(np.sum(normals * points, axis=1))", "offset=cast(0 * np.sum(normals * points, axis=1))",
             ("tests/test_mjcf_planes.py::test_tilted_planes_load_at_mujocos_pose_with_their_friction_and_write_back",)),
    Mutation("plane-to-mjcf-no-pairs", "planes", "jaxcontact/worlds/mjcf.py",
             "if abs(max(mu_p, mu_b) - want) <= 1e-12:", "if True:",
             ("tests/test_mjcf_planes.py::test_a_box_slides_down_a_loaded_ramp_as_in_mujoco_c",)),
    Mutation("plane-friction-unmixed", "planes", "jaxcontact/worlds/materials.py",
             "surface = jnp.concatenate([ground_mu, jnp.broadcast_to(surface, (C - G, 2))]).astype(friction.dtype)",
             "surface = surface",
             ("tests/test_planes.py::test_a_plane_mixes_its_friction_with_a_bodys_own_as_the_ground_does",)),
    # cylinder and ellipsoid parts in bodies of several shapes (issue 62, item 2: Body.vertex_shape)
    Mutation("part-rim-one-point", "compounds", "jaxcontact/geometry.py",
             "idx = jnp.clip(code.astype(jnp.int32) - 1, 0, 5)", "idx = 0 * code.astype(jnp.int32)",
             ("tests/test_compound_round_parts.py::test_a_mallet_stands_on_its_head_on_a_fixed_box_and_lies_on_the_ground",)),
    Mutation("part-orientation-ignored", "compounds", "jaxcontact/geometry.py",
             "Rp = jax.vmap(quat_to_mat)(vertex_shape[:, 4:8] + ",
             "Rp = jax.vmap(quat_to_mat)(jnp.array([1.0, 0, 0, 0], r.dtype) + 0 * vertex_shape[:, 4:8] + 0 * ",
             ("tests/test_compound_round_parts.py::test_a_cart_of_cylinder_wheels_rolls_at_the_speed_of_its_analytic_inertia",)),
    Mutation("part-ellipsoid-as-cylinder", "compounds", "jaxcontact/geometry.py",
             "local = jnp.where((code == 7)[:, None], ell, on_rim)", "local = jnp.where((code == 8)[:, None], ell, on_rim)",
             ("tests/test_compound_round_parts.py::test_an_ellipsoid_part_rests_at_its_semi_axis_height",)),
    Mutation("part-pair-centre-ignored", "compounds", "jaxcontact/worlds/contacts.py",
             "return state.replace(pos=state.pos + R @ centre,", "return state.replace(pos=state.pos + 0 * R @ centre,",
             ("tests/test_compound_round_parts.py::test_a_mallet_stands_on_its_head_on_a_fixed_box_and_lies_on_the_ground",)),
    Mutation("actuator-unmarked-forcerange-passes", "joints", "jaxcontact/worlds/actuation.py",
             "bad = bad | jnp.any(unmarked & jnp.any(jnp.isfinite(ap.forcerange), axis=1))", "bad = bad",
             ("tests/test_actuators.py::test_unsupported_actuators_and_bad_values_are_refused_by_name_and_flagged_under_jit",)),
    # joint friction loss and fixed tendons (issue 63, items 1 and 3: joints.loss_rows, worlds.tendons, MJCF)
    Mutation("loss-bound-not-times-h", "joints", "jaxcontact/worlds/contacts.py",
             "bound = model.dt * jnp.concatenate(bound)", "bound = jnp.concatenate(bound)",
             ("tests/test_friction_loss.py::test_a_spinning_wheel_stops_at_the_analytic_time_and_stays_stopped",)),
    Mutation("loss-normal-not-held", "joints", "jaxcontact/solvers/entry.py",
             "return A, jnp.where(n, -jnp.diagonal(regularized(A, settings.regularization)), b)", "return A, b",
             ("tests/test_friction_loss.py::test_a_spinning_wheel_stops_at_the_analytic_time_and_stays_stopped",)),
    Mutation("loss-row-softened", "joints", "jaxcontact/solvers/entry.py",
             "soft = jnp.where(problem.fixed_normal, 0.0, soft)", "soft = soft",
             ("tests/test_friction_loss.py::test_a_pendulum_is_held_below_its_friction_loss_and_slips_above_it",)),
    Mutation("tendon-limit-upper-sign", "tendons", "jaxcontact/worlds/tendons.py",
             "for sign, dist in ((1.0, L[t] - rng[t, 0]), (-1.0, rng[t, 1] - L[t])):",
             "for sign, dist in ((1.0, L[t] - rng[t, 0]), (1.0, rng[t, 1] - L[t])):",
             ("tests/test_tendons.py::test_a_tendon_limit_stops_the_coupled_joints_without_bounce",)),
    Mutation("tendon-coefficient-sign-lost", "tendons", "jaxcontact/worlds/tendons.py",
             ".at[rows, cols].set(coef[rows, ks])", ".at[rows, cols].set(jnp.abs(coef[rows, ks]))",
             ("tests/test_tendons.py::test_a_tendon_spring_oscillates_at_its_analytic_frequency",)),
    Mutation("tendon-damping-explicit", "tendons", "jaxcontact/worlds/tendons.py",
             "return Gt, h * damp, force", "return Gt, 0 * damp, force",
             ("tests/test_tendons.py::test_a_tendon_damper_is_implicit_euler_on_the_relative_rate",)),
    Mutation("tendon-dead-band-ignored", "tendons", "jaxcontact/worlds/tendons.py",
             "(L - jnp.clip(L, band[:, 0], band[:, 1]))", "(L - band[:, 0])",
             ("tests/test_tendons.py::test_a_tendon_spring_s_dead_band_exerts_no_force_inside_it",)),
    Mutation("tendon-passive-dropped", "tendons", "jaxcontact/worlds/joints.py",
             "push = push + Gt.T @ ft", "push = push",
             ("tests/test_tendons.py::test_a_tendon_spring_oscillates_at_its_analytic_frequency",)),
    Mutation("tendon-limit-one-side", "tendons", "jaxcontact/worlds/tendons.py",
             "r = r.at[s, row].set(signs[k] * Gt[k, 6 * b:6 * b + 6])",
             "r = r.at[s, row].set(signs[k] * Gt[k, 6 * b:6 * b + 6] * (s == 0))",
             ("tests/test_tendons.py::test_a_tendon_limit_stops_the_coupled_joints_without_bounce",)),
    Mutation("mjcf-tendon-coefficients-one", "tendons", "jaxcontact/worlds/mjcf.py",
             "coef[t, :len(ws)] = np.asarray(model.wrap_prm, float)[list(ws)]", "coef[t, :len(ws)] = 1.0",
             ("tests/test_mjcf_tendons.py::test_two_hinges_coupled_by_a_limited_tendon_follow_mujoco_c",)),
    Mutation("mjcf-friction-loss-dropped", "joints", "jaxcontact/worlds/mjcf.py",
             'extra["frictionloss"] = jnp.asarray(loss, dtype)', 'extra["frictionloss"] = jnp.asarray(0 * loss, dtype)',
             ("tests/test_mjcf_tendons.py::test_a_pendulum_with_friction_loss_follows_mujoco_c",)),
    Mutation("tendon-actuator-force-dropped", "tendons", "jaxcontact/worlds/joints.py",
             "ft + h * t_extra * (Gt @ v1) - h * t_pushed", "ft + h * t_extra * (Gt @ v1)",
             ("tests/test_tendons.py::test_a_motor_on_a_tendon_drives_its_joints_through_the_coefficients",)),
    Mutation("mjcf-tendon-actuator-first-tendon", "tendons", "jaxcontact/worlds/mjcf.py",
             "len(hinges) + int(model.actuator_trnid[a, 0]) if", "len(hinges) if",
             ("tests/test_mjcf_tendons.py::test_actuators_on_tendons_follow_mujoco_c_and_write_back",)),
    # ball joints, composite joints, welded bodies and connect/weld equalities (issue 63, items 1, 3, 4: issue-rows2)
    Mutation("ball-rows-at-centre", "joints", "jaxcontact/worlds/joints.py",
             "    Jc = geometry.point_jacobian(child, anchor_child, eye)\n    if parent is None:\n        return Jc,",
             "    Jc = geometry.point_jacobian(child, 0 * anchor_child, eye)\n    if parent is None:\n        return Jc,",
             ("tests/test_joint_rows.py::test_a_ball_pendulum_follows_mujoco_c_with_damping_and_armature",)),
    Mutation("ball-rates-world-frame", "joints", "jaxcontact/worlds/joints.py",
             "G = G.at[d:d + 3, 6 * c + 3:6 * c + 6].set(jnp.eye(3, dtype=Rc.dtype))",
             "G = G.at[d:d + 3, 6 * c + 3:6 * c + 6].set(Rc)",
             ("tests/test_joint_rows.py::test_a_ball_pendulum_follows_mujoco_c_with_damping_and_armature",)),
    Mutation("ball-cone-row-sign", "joints", "jaxcontact/worlds/joints.py",
             "rows.append(jnp.zeros((2, 3, 6), dtype).at[0, 0].set(-gc).at[1, 0].set(-gp))",
             "rows.append(jnp.zeros((2, 3, 6), dtype).at[0, 0].set(gc).at[1, 0].set(gp))",
             ("tests/test_joint_rows.py::test_a_ball_cone_limit_holds_without_bounce",)),
    Mutation("composite-row-along-first-axis", "joints", "jaxcontact/worlds/joints.py",
             "U = (n / sin)[None]", "U = a1[None]",
             ("tests/test_joint_rows.py::test_a_universal_joint_moves_only_in_its_two_dofs_and_follows_mujoco_c",)),
    Mutation("composite-slides-row-along-a-slide", "joints", "jaxcontact/worlds/joints.py",
             "N = _unit(jnp.cross(S[:, 0], S[:, 1]))[None]", "N = S[:, 0][None]",
             ("tests/test_joint_rows.py::test_a_planar_body_of_two_slides_and_a_hinge_follows_mujoco_c",)),
    Mutation("composite-first-angle-sign", "joints", "jaxcontact/worlds/joints.py",
             "return jnp.arctan2(jnp.dot(axis, jnp.cross(u, v)), jnp.dot(u, v))",
             "return jnp.arctan2(jnp.dot(axis, jnp.cross(v, u)), jnp.dot(u, v))",
             ("tests/test_joint_rows.py::test_a_universal_joint_moves_only_in_its_two_dofs_and_follows_mujoco_c",)),
    Mutation("three-hinges-other-branch", "joints", "jaxcontact/worlds/joints.py",
             "side = jnp.where(jnp.dot(n, b3) < 0, -1.0, 1.0)", "side = jnp.where(jnp.dot(n, b3) < 0, 1.0, -1.0)",
             ("tests/test_joint_rows.py::test_three_hinges_through_one_point_turn_as_a_ball_with_each_angle_its_own",)),
    Mutation("ball-spring-half-turn", "joints", "jaxcontact/worlds/joints.py",
             "qs.append(2.0 * _log(quat_mul(quat_conj(jp.reference[r]), _relative(child, parent))))",
             "qs.append(_log(quat_mul(quat_conj(jp.reference[r]), _relative(child, parent))))",
             ("tests/test_joint_rows.py::test_a_ball_spring_pulls_toward_the_balls_zero_as_in_mujoco_c",)),
    Mutation("weld-rows-no-turn", "joints", "jaxcontact/worlds/joints.py",
             "ang = lambda s: jnp.concatenate([zero, quat_to_mat(s.quat)], axis=1)",
             "ang = lambda s: jnp.concatenate([zero, 0 * quat_to_mat(s.quat)], axis=1)",
             ("tests/test_joint_rows.py::test_a_welded_child_moves_with_its_parent_and_a_weld_holds_a_box_to_the_world",)),
    Mutation("weld-turn-error-sign", "joints", "jaxcontact/worlds/joints.py",
             "return Rp @ (2.0 * d[1:]), Rp", "return Rp @ (-2.0 * d[1:]), Rp",
             ("tests/test_joint_rows.py::test_a_welded_child_moves_with_its_parent_and_a_weld_holds_a_box_to_the_world",)),
    Mutation("connect-rows-parent-still", "joints", "jaxcontact/worlds/joints.py",
             "return Jc, geometry.point_jacobian(parent, anchor_parent, eye), xc - xp",
             "return Jc, 0 * geometry.point_jacobian(parent, anchor_parent, eye), xc - xp",
             ("tests/test_joint_rows.py::test_a_connect_equality_closes_a_four_bar_loop",)),
    Mutation("loop-rows-unregularised", "joints", "jaxcontact/worlds/joints.py",
             "eps = REDUNDANT_REGULARIZATION * jnp.sqrt", "eps = 0 * REDUNDANT_REGULARIZATION * jnp.sqrt",
             ("tests/test_joint_rows.py::test_a_connect_equality_closes_a_four_bar_loop",)),
    Mutation("mjcf-weld-anchors-swapped", "joints", "jaxcontact/worlds/mjcf.py",
             "            on1, on2 = data[3:6], data[0:3]", "            on1, on2 = data[0:3], data[3:6]",
             ("tests/test_joint_rows.py::test_a_welded_child_moves_with_its_parent_and_a_weld_holds_a_box_to_the_world",)),
    # the MJCF corpus census's blockers (issue 62 item 8 / issue 63 item 4): bodies that collide with nothing
    # (Scene.contactless), a body's one off-centre or turned cylinder or ellipsoid, mocap bodies, condim and priority
    Mutation("contactless-ground-touched", "corpus", "jaxcontact/worlds/contacts.py",
             "    if scene.contactless:  # nor does a body that collides with nothing\n        valid = valid & ~",
             "    if False:  # nor does a body that collides with nothing\n        valid = valid & ~",
             ("tests/test_mjcf_contactless.py::test_bodies_without_colliding_geoms_load_move_through_the_floor_and_follow_mujoco",),
             count=2),
    Mutation("contactless-depenetrated", "corpus", "jaxcontact/worlds/pipeline.py",
             "if scene.contactless:  # a body that collides with nothing is never moved out of the ground",
             "if False:  # a body that collides with nothing is never moved out of the ground",
             ("tests/test_mjcf_contactless.py::test_a_body_without_colliding_geom_falls_through_the_floor_on_the_per_body_route",
              "tests/test_mjcf_contactless.py::test_bodies_without_colliding_geoms_load_move_through_the_floor_and_follow_mujoco")),
    Mutation("contactless-per-body-impulse", "corpus", "jaxcontact/worlds/pipeline.py",
             "v, p_imp = jnp.where(none, v1, v), jnp.where(none, 0.0, p_imp)", "v, p_imp = v, p_imp",
             ("tests/test_mjcf_contactless.py::test_a_body_without_colliding_geom_falls_through_the_floor_on_the_per_body_route",)),
    Mutation("contactless-pairs-kept", "corpus", "jaxcontact/worlds/scene.py",
             "drop |= {p for p in itertools.combinations(range(n), 2) if set(p) & set(contactless)}", "drop |= set()",
             ("tests/test_mjcf_contactless.py::test_contactless_bodies_write_back_and_are_refused_in_pairs",)),
    Mutation("offset-round-centred", "corpus", "jaxcontact/worlds/mjcf.py",
             'return kind in ("cylinder", "ellipsoid") and not _centred(model, g)', "return False",
             ("tests/test_mjcf_offset_round.py::test_off_centre_and_turned_round_geoms_load_roll_as_mujoco_and_write_back",)),
    Mutation("part-com-check-centres-only", "corpus", "jaxcontact/validation.py",
             "pts = np.concatenate([pts, _part_surface_points(", "pts = pts if True else np.concatenate([pts, _part_surface_points(",
             ("tests/test_mjcf_offset_round.py::test_off_centre_and_turned_round_geoms_load_roll_as_mujoco_and_write_back",)),
    Mutation("mocap-not-fixed", "corpus", "jaxcontact/worlds/mjcf.py",
             "return bool(model.body_weldid[b] == 0 or model.body_mocapid[b] >= 0)", "return bool(model.body_weldid[b] == 0)",
             ("tests/test_mjcf_mocap.py::test_a_mocap_body_is_fixed_scenery_where_its_mocap_pose_puts_it",)),
    Mutation("condim-one-rule-ignored", "corpus", "jaxcontact/worlds/mjcf.py",
             'return (0.0, "condim 1: frictionless") if dim == 1 else (float(mu), rule)', "return float(mu), rule",
             ("tests/test_mjcf_friction_rules.py::test_condim_one_beside_friction_loads_slides_as_mujoco_and_names_the_frictionless_pair",)),
    Mutation("priority-rule-ignored", "corpus", "jaxcontact/worlds/mjcf.py",
             "    if priority_a != priority_b:\n        mu, dim = ", "    if False:\n        mu, dim = ",
             ("tests/test_mjcf_friction_rules.py::test_geom_priority_loads_and_its_friction_rule_is_compared",)),
    # fast hits moved out (issue 62 item 5: contacts.separate_fast_pairs, the position solve after integrate)
    Mutation("separate-fast-pairs-skipped", "fast hits", "jaxcontact/worlds/pipeline.py",
             "if scene.fast_hits and scene.pairs:  # the fast pairs' overlap", "if False:  # the fast pairs' overlap",
             ("tests/test_fast_hits.py::test_a_small_census_of_fast_throws_holds_the_overlap_bound",)),
    Mutation("separate-slow-pairs-too", "fast hits", "jaxcontact/worlds/contacts.py",
             "valid.reshape(S, n) & fast[slot_pair][:, None]", "valid.reshape(S, n) | fast[slot_pair][:, None]",
             ("tests/test_fast_hits.py::test_a_resting_stack_is_bitwise_the_same_with_fast_hits",)),
    Mutation("separate-to-half-depth", "fast hits", "jaxcontact/worlds/contacts.py",
             "jnp.maximum(lam[:, i] - (c + SEPARATE_SLOP) / K[:, i], 0.0)", "jnp.maximum(lam[:, i] - 0.5 * (c + SEPARATE_SLOP) / K[:, i], 0.0)",
             ("tests/test_fast_hits.py::test_a_small_census_of_fast_throws_holds_the_overlap_bound",)),
    # roundspeed (issue 62 item 9: the convex pairs' axis search in native/convex.cc, the heap's broad phase)
    Mutation("convex-kernel-not-default", "roundspeed", "jaxcontact/collision.py",
             'kernel = lambda *x: _native_best_axis(a.kind, b.kind, *x)\n    return jax.lax.platform_dependent(*args, cpu=kernel, default=reference)',
             'kernel = lambda *x: _native_best_axis(a.kind, b.kind, *x)\n    return reference(*args)',
             ("tests/test_convex_kernel.py::test_the_kernel_is_the_default_here",)),
    Mutation("convex-kernel-round-radius", "roundspeed", "jaxcontact/native/convex.cc",
             "return kind == kHull ? w[best] : add(w[best], mul(n, radius));", "return w[best];",
             ("tests/test_convex_kernel.py::test_pairs_apart_beyond_the_margin_have_no_contacts_either_way",)),
    Mutation("convex-kernel-cylinder-support", "roundspeed", "jaxcontact/native/convex.cc",
             "s = {dims[0] * (nl.x / r), dims[0] * (nl.y / r), dims[1] * sz};",
             "s = {dims[0] * (nl.x / r), dims[0] * (nl.y / r), dims[0] * sz};",
             ("tests/test_convex_kernel.py::test_kernel_finds_the_reference_axis",)),
    Mutation("convex-kernel-search-never-improves", "roundspeed", "jaxcontact/native/convex.cc",
             "if (vj > f) {", "if (vj > f + 1.0) {",
             ("tests/test_convex_kernel.py::test_kernel_finds_the_reference_axis",)),
    Mutation("convex-kernel-support-steps-dropped", "roundspeed", "jaxcontact/native/convex.cc",
             "      dirs.push_back(fp[0]);\n      dirs.push_back(fp[1]);\n", "",
             ("tests/test_convex_kernel.py::test_kernel_finds_the_reference_axis",)),
    Mutation("convex-kernel-exits-near-pairs", "roundspeed", "jaxcontact/native/convex.cc",
             "if (Separation(a, b, centres) > beyond) return centres;", "if (Separation(a, b, centres) > -beyond) return centres;",
             ("tests/test_convex_kernel.py::test_pairs_apart_beyond_the_margin_have_no_contacts_either_way",
              "tests/test_convex_kernel.py::test_kernel_finds_the_reference_axis")),
    Mutation("convex-kernel-exit-wrong-axis", "roundspeed", "jaxcontact/native/convex.cc",
             "if (vals[order[0]] > beyond) return cand[order[0]];", "if (vals[order[0]] > beyond) return cand[0];",
             ("tests/test_convex_kernel.py::test_pairs_apart_beyond_the_margin_have_no_contacts_either_way",)),
    Mutation("heap-broad-phase-never", "roundspeed", "jaxcontact/worlds/scenes.py",
             "if scene.max_pairs is None and scene.num_pairs > 3 * N:", "if scene.max_pairs is None and scene.num_pairs > 30 * N:",
             ("tests/test_convex_kernel.py::test_heap_broad_phase",)),
    # robots (issue 63 item 6: gradients through an arm's per-step controls, tests/test_arm_trajopt.py)
    Mutation("robots-ctrl-gradient-cut", "robots", "jaxcontact/worlds/pipeline.py",
             "ap = params.joints.actuators.replace(ctrl=jnp.asarray(control, params.joints.actuators.ctrl.dtype))",
             "ap = params.joints.actuators.replace(ctrl=jax.lax.stop_gradient(jnp.asarray(control, params.joints.actuators.ctrl.dtype)))",
             ("tests/test_arm_trajopt.py::test_adam_on_an_arms_torques_pushes_the_box_towards_its_target",)),
    Mutation("robots-motor-torque-reversed", "robots", "jaxcontact/worlds/actuation.py",
             "explicit = jnp.zeros((num_joints,), q.dtype).at[idx].add(g * f)",
             "explicit = jnp.zeros((num_joints,), q.dtype).at[idx].add(-g * f)",
             ("tests/test_arm_trajopt.py::test_adam_on_an_arms_torques_pushes_the_box_towards_its_target",)),
    # corpus2 (issue 63 item 4): jointless bodies folded into their host (mjcf.FoldedModel), gravity off the
    # vertical (Model.gravity_xy), a file of fixed scenery alone, approximate=True keeping compounds
    Mutation("corpus2-fold-pose-uncomposed", "corpus", "jaxcontact/worlds/mjcf.py",
             "pos[b] = pos[p] + R @ model.body_pos[b]", "pos[b] = model.body_pos[b]",
             ("tests/test_mjcf_fold.py::test_a_massless_jointless_frame_folds_into_its_host_and_follows_mujoco_c",)),
    Mutation("corpus2-fold-turn-uncomposed", "corpus", "jaxcontact/worlds/mjcf.py",
             "M.mju_mulQuat(q, quat[p], np.asarray(model.body_quat[b], float))",
             "M.mju_mulQuat(q, np.array([1.0, 0.0, 0.0, 0.0]), np.asarray(model.body_quat[b], float))",
             ("tests/test_mjcf_fold.py::test_a_massless_jointless_frame_folds_into_its_host_and_follows_mujoco_c",)),
    Mutation("corpus2-fold-com-the-hosts-own", "corpus", "jaxcontact/worlds/mjcf.py",
             "c = sum(m * x for m, x in zip(ms, cs)) / total if total > 0 else cs[0]", "c = cs[0]",
             ("tests/test_mjcf_fold.py::test_a_massless_jointless_frame_folds_into_its_host_and_follows_mujoco_c",)),
    Mutation("corpus2-fold-no-parallel-axes", "corpus", "jaxcontact/worlds/mjcf.py",
             "I = sum(Ik + m * (np.dot(x - c, x - c) * np.eye(3) - np.outer(x - c, x - c)) for m, x, Ik in zip(ms, cs, Is))",
             "I = sum(Ik for m, x, Ik in zip(ms, cs, Is))",
             ("tests/test_mjcf_fold.py::test_a_massless_jointless_frame_folds_into_its_host_and_follows_mujoco_c",)),
    Mutation("corpus2-fold-massless-host-kept", "corpus", "jaxcontact/worlds/mjcf.py",
             "if _proper(model.body_mass[b], model.body_inertia[b]) and _proper(mass[h], inertia[h]):",
             "if _proper(model.body_mass[b], model.body_inertia[b]):",
             ("tests/test_mjcf_fold.py::test_a_massless_jointless_frame_folds_into_its_host_and_follows_mujoco_c",)),
    Mutation("corpus2-fold-hinge-on-the-folded-parent", "corpus", "jaxcontact/worlds/mjcf.py",
             "p = model.host[int(model.body_parentid[b])]\n            # the parent",
             "p = int(model.body_parentid[b])\n            # the parent",
             ("tests/test_mjcf_fold.py::test_a_massless_jointless_frame_folds_into_its_host_and_follows_mujoco_c",)),
    Mutation("corpus2-fold-equality-anchor-unmoved", "corpus", "jaxcontact/worlds/mjcf.py",
             "on1, on2 = model.on_host(b1, on1), model.on_host(b2, on2)", "on1, on2 = on1, on2",
             ("tests/test_mjcf_fold.py::test_an_equality_on_a_folded_body_and_a_folded_site_name_the_host",)),
    Mutation("corpus2-fold-velocity-at-the-hosts-own-com", "corpus", "jaxcontact/worlds/mjcf.py",
             "vel.append(v6[3:] + np.cross(v6[:3], pos[-1] - d.xipos[b]))", "vel.append(v6[3:].copy())",
             ("tests/test_mjcf_fold.py::test_a_massless_jointless_frame_folds_into_its_host_and_follows_mujoco_c",)),
    Mutation("corpus2-fold-geoms-and-sites-unmoved", "corpus", "jaxcontact/worlds/mjcf.py",
             "at[g] = pos[b] + np.asarray(quat_to_mat(quat[b])) @ at[g]", "at[g] = at[g]",
             ("tests/test_mjcf_fold.py::test_a_massless_jointless_frame_folds_into_its_host_and_follows_mujoco_c", "tests/test_mjcf_fold.py::test_an_equality_on_a_folded_body_and_a_folded_site_name_the_host")),
    Mutation("corpus2-fold-xipos-the-hosts-own", "corpus", "jaxcontact/worlds/mjcf.py",
             "return np.asarray(d.xpos[b], float) + np.asarray(d.xmat[b], float).reshape(3, 3) @ self.body_ipos[b]",
             "return np.asarray(d.xipos[b], float)",
             ("tests/test_mjcf_fold.py::test_a_massless_jointless_frame_folds_into_its_host_and_follows_mujoco_c",)),
    Mutation("corpus2-gravity-xy-dropped", "corpus", "jaxcontact/stages.py",
             "g = g.at[:2].set(jnp.asarray(model.gravity_xy, dtype))", "g = g.at[:2].set(jnp.zeros(2, dtype))",
             ("tests/test_mjcf_scenery_gravity.py::test_gravity_off_the_vertical_follows_mujoco_c_and_writes_back",)),
    Mutation("corpus2-gravity-xy-energy-dropped", "corpus", "jaxcontact/stages.py",
             "ke = ke - body.mass * (model.gravity_xy[0] * state.pos[0] + model.gravity_xy[1] * state.pos[1])", "ke = ke",
             ("tests/test_mjcf_scenery_gravity.py::test_gravity_off_the_vertical_follows_mujoco_c_and_writes_back",)),
    Mutation("corpus2-gravity-xy-not-loaded", "corpus", "jaxcontact/worlds/mjcf.py",
             "xy = {} if off or not np.any(model.opt.gravity[:2] != 0) else", "xy = {} if True else",
             ("tests/test_mjcf_scenery_gravity.py::test_gravity_off_the_vertical_follows_mujoco_c_and_writes_back",)),
    Mutation("corpus2-gravity-xy-not-written", "corpus", "jaxcontact/worlds/mjcf.py",
             "gravity=\"{_f([*model.gravity_xy, -float(model.gravity)])}\"", "gravity=\"{_f([0.0, 0.0, -float(model.gravity)])}\"",
             ("tests/test_mjcf_scenery_gravity.py::test_gravity_off_the_vertical_follows_mujoco_c_and_writes_back",)),
    Mutation("corpus2-scenery-alone-refused", "corpus", "jaxcontact/worlds/mjcf.py",
             "if model.nbody < 2 and not scenery:", "if model.nbody < 2:",
             ("tests/test_mjcf_scenery_gravity.py::test_a_file_of_fixed_scenery_alone_loads_and_one_of_nothing_is_refused_by_name",)),
    Mutation("corpus2-approximate-part-not-reduced", "corpus", "jaxcontact/worlds/mjcf.py",
             "approximate)\n            hull = shapes.convex_hull(pts, 1.0)", "False)\n            hull = shapes.convex_hull(pts, 1.0)",
             ("tests/test_mjcf.py::test_approximate_reduces_a_large_mesh_part_of_a_body_of_several_geoms",)),
    Mutation("corpus2-offset-hinges-second-point-unturned", "corpus", "jaxcontact/worlds/joints.py",
             "e = Rp @ (quat_to_mat(_axis_angle(b1, q1)) @ (jp.anchor_parent[h2] - jp.anchor_parent[h1]))",
             "e = Rp @ (jp.anchor_parent[h2] - jp.anchor_parent[h1])",
             ("tests/test_offset_hinges.py::test_two_hinges_through_different_points_follow_mujoco_c_and_write_back",)),
    Mutation("corpus2-offset-hinges-rate-term-dropped", "corpus", "jaxcontact/worlds/joints.py",
             "Jc = Jc.at[:3, 3:].add(-turn @ Rc)", "Jc = Jc",
             ("tests/test_offset_hinges.py::test_two_hinges_through_different_points_follow_mujoco_c_and_write_back",)),
    Mutation("corpus2-offset-hinges-parent-point", "corpus", "jaxcontact/worlds/joints.py",
             "Jp = on(parent, jp.anchor_parent[hinges[0]] + Rp.T @ e, Rp).at[:3, 3:].add(-turn @ Rp)",
             "Jp = on(parent, jp.anchor_parent[hinges[0]], Rp).at[:3, 3:].add(-turn @ Rp)",
             ("tests/test_offset_hinges.py::test_two_hinges_through_different_points_follow_mujoco_c_and_write_back",)),
    Mutation("corpus2-offset-hinges-loaded-at-one-point", "corpus", "jaxcontact/worlds/mjcf.py",
             "if int(model.jnt_bodyid[j]) in offset:  # each hinge's own point", "if False:  # each hinge's own point",
             ("tests/test_offset_hinges.py::test_two_hinges_through_different_points_follow_mujoco_c_and_write_back",)),
    Mutation("corpus2-offset-hinges-written-at-the-child-point", "corpus", "jaxcontact/worlds/mjcf.py",
             "if offset and j == hinges[0]:  # two hinges through different points", "if False:  # two hinges through different points",
             ("tests/test_offset_hinges.py::test_two_hinges_through_different_points_follow_mujoco_c_and_write_back",)),
    # robots2 (issue 63 items 6-7): a stalled world solve polished in the forward, coupled rows swept
    Mutation("robots2-stall-polish-never", "solvers", "jaxcontact/solvers/lcp.py",
             "return jax.lax.cond(sweeps >= cap, active, keep, z, A, b, coupling)",
             "return jax.lax.cond(sweeps > cap, active, keep, z, A, b, coupling)",
             ("tests/test_robot_gradients.py::test_a_stalled_solve_is_polished_and_only_where_it_stalled_also_under_vmap",
              "tests/test_robot_gradients.py::test_arm_strike_gradient_follows_central_differences_at_the_defaults")),
    Mutation("robots2-stall-polish-batch-misses-one", "solvers", "jaxcontact/solvers/lcp.py",
             "return jax.lax.fori_loop(0, jnp.sum(hit), one, z)", "return jax.lax.fori_loop(0, jnp.sum(hit) - 1, one, z)",
             ("tests/test_robot_gradients.py::test_a_stalled_solve_is_polished_and_only_where_it_stalled_also_under_vmap",)),
    Mutation("robots2-stall-polish-off-in-worlds", "worlds", "jaxcontact/worlds/scenes.py",
             "tol=1e-7, stall_active_set=3,", "tol=1e-7, stall_active_set=0,",
             ("tests/test_robot_gradients.py::test_arm_strike_gradient_follows_central_differences_at_the_defaults",)),
    Mutation("robots2-world-polish-under-differentiation-only", "worlds", "jaxcontact/worlds/scenes.py",
             "                                            forward_active_set=0))",
             "                                            forward_active_set=None))",
             ("tests/test_robot_gradients.py::test_arm_strike_gradient_follows_central_differences_at_the_defaults",)),
    Mutation("robots2-visit-last-coupled-row-skipped", "solvers", "jaxcontact/solvers/lcp.py",
             "return order.astype(jnp.int32), jnp.sum(~skip).astype(jnp.int32)",
             "return order.astype(jnp.int32), (jnp.sum(~skip) - 1).astype(jnp.int32)",
             ("tests/test_robot_gradients.py::test_looped_sweeps_visiting_coupled_rows_only_give_the_same_iterates",)),
    Mutation("robots2-visit-order-unstable", "solvers", "jaxcontact/solvers/lcp.py",
             "order = jnp.argsort(skip, stable=True)  # the visited rows first, in their order",
             "order = jnp.argsort(skip.astype(jnp.int32) * 2 - jnp.arange(skip.shape[0]) % 2)  # the visited rows first, in their order",
             ("tests/test_robot_gradients.py::test_looped_sweeps_visiting_coupled_rows_only_give_the_same_iterates",)),
)
def _copy_repo(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split("\n")
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _env(root: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))
    env.setdefault("JAXCONTACT_SHARED", str(REPO.parent / "shared"))
    return env


def _check_default_tier(root: Path, tests) -> None:
    """Every listed test must be in the default tier (pyproject's ``-m "not slow"``): a slow test
    would be deselected, run nothing and pass for a mutation it never saw."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", *tests], cwd=root,
                         env=_env(root), capture_output=True, text=True)
    collected = {line.strip() for line in out.stdout.splitlines() if "::" in line}
    missing = [t for t in tests if not any(c == t or c.startswith((t + "::", t + "[")) for c in collected)]
    if out.returncode != 0 or missing:
        raise SystemExit("not in the default tier (marked slow, or not found): " + ", ".join(missing or tests)
                         + "\n" + out.stdout[-2000:] + out.stderr[-2000:])


def _run_tests(root: Path, tests, timeout: float) -> tuple[bool, float, str]:
    env = _env(root)
    # the default tier only (pyproject's addopts deselect the slow tier); exit status 5 (nothing
    # ran) is an error, never a catch
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", *tests]
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
        passed, tail = out.returncode == 0, (out.stdout + out.stderr).strip().splitlines()[-1:]
        if out.returncode == 5:
            raise SystemExit(f"no test ran for {tests}: {tail}")
    except subprocess.TimeoutExpired:
        passed, tail = False, ["timed out"]
    return passed, time.perf_counter() - t0, tail[0] if tail else ""


def _commit() -> str:
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True,
                           text=True).stdout.strip()
    return rev + ("+dirty" if dirty else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated mutation names (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--jobs", type=int, default=1, help="mutations tested at once, each in its own copy (default 1)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per pytest run (a timeout counts as caught)")
    ap.add_argument("--out", default=str(RESULTS / "mutations"), help="results path without suffix (.json and .md written)")
    args = ap.parse_args(argv)
    chosen = list(MUTATIONS)
    if args.only:
        names = args.only.split(",")
        unknown = sorted(set(names) - {m.name for m in MUTATIONS})
        if unknown:
            raise SystemExit(f"unknown mutation(s): {', '.join(unknown)} (see --list)")
        chosen = [m for m in MUTATIONS if m.name in names]
    if args.list:
        for m in chosen:
            print(f"{m.name:32s} {m.area:12s} {m.path}: {m.old!r} -> {m.new!r}")
        return 0
    commit = _commit()  # what is copied, before anything runs
    command = "python -m benchmarks.mutations" + (f" --only {args.only}" if args.only else "") \
        + (f" --jobs {args.jobs}" if args.jobs > 1 else "")
    jobs = max(1, min(args.jobs, len(chosen)))
    with tempfile.TemporaryDirectory(prefix="jaxcontact-mutations-") as tmp:
        roots = [Path(tmp) / f"copy{j}" for j in range(jobs)]  # one copy per job: a mutation at a time in each
        for root in roots:
            _copy_repo(root)
        root = roots[0]
        for m in chosen:  # every target must be present before anything runs
            text = (root / m.path).read_text()
            if text.count(m.old) != m.count:
                m.apply(root)  # raises, naming the mutation
        tests = sorted({t for m in chosen for t in m.tests})
        _check_default_tier(root, tests)
        ok, secs, tail = _run_tests(root, tests, args.timeout)
        print(f"baseline ({len(tests)} test ids): {'pass' if ok else 'FAIL'} in {secs:.0f} s: {tail}", flush=True)
        if not ok:
            raise SystemExit("the unmutated copy fails its tests: fix that first")

        def run(j: int) -> list[dict]:
            out = []
            for m in chosen[j::jobs]:
                where = roots[j]
                original = (where / m.path).read_text()
                m.apply(where)
                try:
                    passed, secs, tail = _run_tests(where, m.tests, args.timeout)
                finally:
                    (where / m.path).write_text(original)
                out.append(dict(name=m.name, area=m.area, path=m.path, old=m.old, new=m.new, tests=list(m.tests),
                                caught=not passed, seconds=round(secs, 1), pytest=tail))
                print(f"{m.name:32s} {'caught' if not passed else 'SURVIVED'} ({secs:.0f} s): {tail}", flush=True)
            return out

        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:  # each job runs pytest subprocesses
            done = {r["name"]: r for rs in pool.map(run, range(jobs)) for r in rs}
        rows = [done[m.name] for m in chosen]  # in the list's order
    survived = [r["name"] for r in rows if not r["caught"]]
    result = dict(commit=commit, command=command, date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  mutations=len(rows), caught=len(rows) - len(survived), survived=survived, results=rows)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [f"# Mutation check ({result['date']})", "",
             f"`{command}` at commit {result['commit']}: **{result['caught']} of {len(rows)} mutations caught**"
             + (f"; survived: {', '.join(survived)}" if survived else "") + ".", "",
             "| mutation | area | file | change | caught by | result | s |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        change = f"`{r['old'].strip()}` → `{r['new'].strip()}`".replace("|", "\\|")
        by = ", ".join(t.split("::")[-1] for t in r["tests"])
        lines.append(f"| {r['name']} | {r['area']} | `{r['path']}` | {change} | {by} | "
                     f"{'caught' if r['caught'] else '**survived**'} | {r['seconds']:.0f} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"{result['caught']} of {len(rows)} caught; wrote {out}.json and {out}.md")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
