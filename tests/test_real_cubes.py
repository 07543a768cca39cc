"""The data-only friction measurement (``sysid.kinematic.kinematic_mu``) of the real-cube study and the
friction-cone benchmark."""

import numpy as np

from jaxcontact.sysid.kinematic import kinematic_mu


def _slide(theta, mu, g=187.2, dt=1 / 148, v0=6.0, n=20):
    """A unit-half-width cube flat on the table (z = 1), sliding in direction theta and decelerated
    by mu * g along it (semi-implicit samples, as in the data)."""
    d = np.array([np.cos(theta), np.sin(theta)])
    X = np.zeros((n, 13))
    X[:, 2], X[:, 3] = 1.0, 1.0
    p, v = np.zeros(2), v0
    for k in range(n):
        X[k, 0:2], X[k, 7:9] = p, v * d
        v -= mu * g * dt
        p = p + dt * v * d
    return X


def test_kinematic_mu_recovers_the_deceleration_and_the_pyramid_factor():
    V = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    thetas = np.linspace(0.1, 6.0, 9)
    r = kinematic_mu([_slide(t, 0.2) for t in thetas], V, 187.2, 1 / 148)
    assert r["runs"] == len(thetas)
    assert abs(r["mu_circular_mean"] - 0.2) < 1e-9 and abs(r["mu_circular_with_tilt"] - 0.2) < 1e-9
    assert np.allclose(r["tilt_accel_over_g"], 0.0, atol=1e-9)
    factor = np.mean(np.abs(np.cos(thetas)) + np.abs(np.sin(thetas)))
    assert abs(r["pyramid_factor_mean"] - factor) < 1e-9
