"""End-to-end commands that check physics, not only exit status: each option of ``jaxcontact
simulate`` that sets physics changes the saved trajectories the way physics says (``--mu``: the
friction impulse of a flat sliding step saturates at exactly μ m g h; ``--restitution``: more
energy kept through the landing; ``--dt``: semi-implicit Euler's closed-form free flight at that
step, the landing at the same time), ``--shape pentagon|link`` save the textbook mass properties
and conserve momentum in flight, ``--x64`` writes float64 states exact to round-off, and
``sysid --data --method nelder-mead`` recovers the μ a simulate file was made with."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxcontact.cli import main

G = 9.81
REPO = Path(__file__).resolve().parents[1]


def _simulate(tmp_path, tag, *extra, throws=6, steps=400):
    out = tmp_path / f"{tag}.npz"
    argv = ["simulate", "--throws", str(throws), "--steps", str(steps), "--seed", "1", "--out", str(out),
            "--no-progress", *extra]
    assert main(argv) == 0
    return dict(np.load(out))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Six random box throws, 0.8 s: the defaults (μ 0.18, ε 0, dt 2 ms), one option changed at a
    time (μ and ε are parameters: one compiled program; --dt compiles a second)."""
    tmp = tmp_path_factory.mktemp("simulate")
    return {
        "base": _simulate(tmp, "base"),
        "mu": _simulate(tmp, "mu", "--mu", "0.05"),
        "eps": _simulate(tmp, "eps", "--restitution", "0.8"),
        "dt": _simulate(tmp, "dt", "--dt", "0.004", steps=200),
    }


def _first_touch(states):
    """Per throw, the first saved state whose centre is within the cube's half-diagonal (0.0866 m)
    of the ground: nothing touches before it."""
    return np.argmax(states[..., 2] < 0.05 * np.sqrt(3) + 1e-3, axis=1)


def test_simulate_mu_sets_the_friction_bound(runs):
    # Flat on a face and sliding (centre 0.05 m up, no vertical motion, before and after a step),
    # the normal impulse of a step is m (g h + Δv_z) and Coulomb's disc bounds the horizontal
    # friction impulse by μ times it: |Δv_xy| ≤ μ (g h + Δv_z) in every step, reached while every
    # corner slips the same way; with the corners' slips within 5.7° of each other (|ω| × half-diagonal
    # < 0.1 |v|) it is within 1 − cos 5.7° = 5e-3 of it. The saved files say so for their μ.
    for tag, mu in (("base", 0.18), ("mu", 0.05)):
        d = runs[tag]
        assert float(d["mu"]) == mu
        s, h = d["states"].astype(np.float64), float(d["dt"])
        z, v = s[..., 2], s[..., 7:10]
        flat = (np.abs(z - 0.05) < 1e-6) & (np.abs(v[..., 2]) < 1e-5)
        sliding = flat[:, :-1] & flat[:, 1:] & (np.linalg.norm(v[:, 1:, :2], axis=-1) > 0.05)
        assert sliding.sum() > 100, tag
        dv = np.diff(v, axis=1)
        ratio = np.linalg.norm(dv[..., :2], axis=-1) / (G * h + dv[..., 2])
        assert ratio[sliding].max() < mu * (1 + 1e-4), (tag, ratio[sliding].max(), mu)
        spin = np.linalg.norm(s[..., 10:13], axis=-1) * 0.05 * np.sqrt(2) < 0.1 * np.linalg.norm(v[..., :2], axis=-1)
        straight = sliding & spin[:, :-1] & spin[:, 1:]
        assert straight.sum() > 5, (tag, straight.sum())
        assert ratio[straight].min() > mu * (1 - 5e-3), (tag, ratio[straight].min(), mu)
    # and the slides are longer on the slipperier ground
    travel = {t: np.linalg.norm(runs[t]["states"][:, -1, :2] - runs[t]["states"][:, 0, :2], axis=1).sum()
              for t in ("base", "mu")}
    assert travel["mu"] > 1.1 * travel["base"], travel


def _energy(d):
    s, m, I = d["states"], float(d["mass"]), np.asarray(d["inertia"])
    return (0.5 * m * (s[..., 7:10] ** 2).sum(-1) + 0.5 * np.einsum("...i,ij,...j->...", s[..., 10:13], I, s[..., 10:13])
            + m * float(d["gravity"]) * s[..., 2])


def test_simulate_restitution_keeps_energy_through_the_landing(runs):
    base, eps = runs["base"], runs["eps"]
    assert float(eps["restitution"]) == 0.8 and float(base["restitution"]) == 0.0
    k = _first_touch(base["states"])
    assert np.all(k > 5) and np.all(k < 380)
    rows = np.arange(len(k))
    np.testing.assert_array_equal(base["states"][rows, k - 1], eps["states"][rows, k - 1])  # same flight
    E0, E8 = _energy(base), _energy(eps)
    before, after0, after8 = E0[rows, k - 5], E0[rows, k + 10], E8[rows, k + 10]
    assert np.all(after0 <= before * (1 + 1e-6)) and np.all(after8 <= before * (1 + 1e-4))  # no gain
    # ε = 0.8 returns much of the impact energy that ε = 0 dissipates (×1.2 to ×9 per throw, ×2.5 in
    # all, when written)
    assert np.all(after8 > after0) and after8.sum() > 1.8 * after0.sum(), (after0, after8)


def test_simulate_dt_sets_the_time_step(runs):
    # before any contact, semi-implicit Euler's free flight is exact at the saved step:
    # z_k = z_0 + k h v_z0 − g h² k (k + 1)/2; the landing comes at the same time for both steps
    landing = {}
    for tag, h in (("base", 0.002), ("dt", 0.004)):
        d = runs[tag]
        assert float(d["dt"]) == h
        s = d["states"]
        k = _first_touch(s)
        for i in range(len(s)):
            j = np.arange(k[i])
            z = s[i, 0, 2] + j * h * s[i, 0, 9] - G * h * h * j * (j + 1) / 2
            np.testing.assert_allclose(s[i, : k[i], 2], z, rtol=0, atol=1e-9)
        landing[tag] = k * h
    assert np.abs(landing["dt"] - landing["base"]).max() <= 0.004 + 1e-12


@pytest.mark.parametrize("shape", ["pentagon", "link"])
def test_simulate_shapes_save_their_mass_properties_and_fly_freely(shape, tmp_path):
    d = _simulate(tmp_path, shape, "--shape", shape, throws=2, steps=20)
    m, I = float(d["mass"]), np.asarray(d["inertia"])
    if shape == "link":  # 0.2 x 0.05 x 0.05 m box of 0.185 kg: I = m/12 (b² + c², a² + c², a² + b²)
        a, b, c = 0.2, 0.05, 0.05
        assert m == 0.185
        np.testing.assert_allclose(I, m / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b]), rtol=1e-12)
    else:  # regular pentagon prism, circumradius R, height H: I_zz = m R² (1 + 2cos²(π/5))/6
        R, H = 0.06, 0.1
        J = m * R * R * (1 + 2 * np.cos(np.pi / 5) ** 2) / 6
        assert m == 0.37
        np.testing.assert_allclose(I, np.diag([J / 2 + m * H * H / 12] * 2 + [J]), rtol=1e-12, atol=1e-15)
    s, h = d["states"], float(d["dt"])
    assert np.all(s[..., 2] > 0.3)  # in the air all along: 0.04 s of flight from at least 0.4 m
    k = np.arange(s.shape[1])
    np.testing.assert_allclose(s[..., 7:9], s[:, :1, 7:9] * np.ones_like(s[..., 7:9]), rtol=0, atol=1e-12)
    np.testing.assert_allclose(s[..., 9], s[:, :1, 9] - G * h * k, rtol=0, atol=1e-12)
    # free flight: the world angular momentum R I ω of the tumbling body is conserved
    from jaxcontact.rotations import quat_to_mat

    L = np.einsum("ntij,jk,ntk->nti", np.asarray(quat_to_mat(s[..., 3:7])), I, s[..., 10:13])
    assert np.abs(L - L[:, :1]).max() < 1e-3 * np.abs(L[:, 0]).max()


@pytest.mark.slow
def test_x64_writes_float64_states_exact_to_round_off(tmp_path):
    out = tmp_path / "x64.npz"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "jaxcontact.cli", "--x64", "simulate", "--throws", "2", "--steps", "5",
                        "--out", str(out), "--no-progress"], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    s = np.load(out)["states"]
    assert s.dtype == np.float64
    k = np.arange(6)  # free fall from at least 0.4 m: exact in float64 (float32 would be off by 1e-8)
    np.testing.assert_allclose(s[..., 2], s[:, :1, 2] + 0.002 * k * s[:, :1, 9] - G * 0.002**2 * k * (k + 1) / 2,
                               rtol=0, atol=1e-13)


@pytest.mark.slow
def test_sysid_recovers_the_mu_that_simulate_was_run_with(runs, tmp_path, capsys):
    # simulate (μ = 0.05, ε = 0) → sysid --data with the simulator's step (--substeps 1) and its ε:
    # the friction coefficient Nelder–Mead identifies from the saved trajectories is the one the
    # throws were simulated with (to 1e-3 in 40 iterations)
    path = tmp_path / "mu.npz"
    np.savez(path, **runs["mu"])
    assert main(["sysid", "--data", str(path), "--params", "mu", "--init", "mu=0.2,restitution=0", "--substeps", "1",
                 "--method", "nelder-mead", "--max-iter", "40", "--max-trajectories", "2", "--json", "--no-progress"]) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "nelder-mead" and out["trajectories"] == 2
    assert abs(out["values"]["mu"] - 0.05) < 1e-3, out["values"]
    # the gradient path (optax Adam through the rollout) from the same start moves μ toward 0.05
    assert main(["sysid", "--data", str(path), "--params", "mu", "--init", "mu=0.2,restitution=0", "--substeps", "1",
                 "--method", "adam", "--max-iter", "60", "--max-trajectories", "2", "--json", "--no-progress"]) == 0
    adam = json.loads(capsys.readouterr().out)
    assert adam["method"] == "adam"
    assert abs(adam["values"]["mu"] - 0.05) < 0.6 * abs(0.2 - 0.05), adam["values"]  # measured: 0.116 after 60 steps
