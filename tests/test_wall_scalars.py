"""Fixed-flux temperature and passive scalars between no-slip plates (simulator.equations.wall_scalars: the
no-slip convection and the channels), in float64 against the exact conductive states and the decay of a mode, on one
device and a slab of 2; restarts bitwise; bad input refused in one line."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simulator.fft.bases import Chebyshev
from simulator.walls import imex

from support import advance, simulation

RA, NX, NZ, DT = 1e4, 8, 24, 0.05
#: a fixed-flux scalar's slope at both plates, a fixed-value scalar's plate values
SLOPE, VALUES = -2.0, [1.5, -0.5]
#: no-slip convection between fixed-flux plates with a fixed-flux passive scalar
FLUX = {"physics__name": "convection2d_noslip", "physics__rayleigh": RA, "grid__shape": [NX, NZ],
        "grid__box": [2.0, 1.0], "grid__walls__temperature": ["fixed-flux", "fixed-flux"],
        "physics__scalars": [{"diffusivity": 0.02, "gradients": [SLOPE, SLOPE]}], "initial__amplitude": 0.0}


def rk222(rate: float, dt: float, steps: int) -> float:
    """The IMEX RK222 amplification of exp(rate t) over ``steps`` steps of ``dt`` (its implicit half alone)."""
    gamma, x = imex.GAMMA, rate * dt
    return ((1 + (1 - gamma) * x / (1 - gamma * x)) / (1 - gamma * x)) ** steps


def grid(sim, state):
    return {k: np.asarray(v) for k, v in sim.fields(state, "velocity", "theta", "scalar").items()}


@pytest.fixture(scope="module")
def flux(devices):
    return simulation(devices, **FLUX)


def test_the_conductive_state_between_fixed_flux_plates_is_steady_and_holds_its_flux(flux):
    """The conductive b = 1 - z (slope -1 at both plates) and the scalar's s = -2 z (its slope at both plates): after
    each of 10 steps the state is the start's to round-off, the temperature's flux 1 and the scalar's -kappa s' at
    both plates, its mean and variance the profile's (-1 and 1/3)."""
    state = start = flux.initial_state()
    z = Chebyshev(NZ, 1.0).points()
    np.testing.assert_allclose(grid(flux, start)["scalar"][0, 0], np.broadcast_to(SLOPE * z, (NX, NZ)), atol=1e-15)
    for _ in range(10):
        state = advance(flux, state, 0.05, 1)
        report = {k: float(v) for k, v in flux.diagnostics(state, 0.05).items()}
        for key, want in (("nusselt_bottom", 1.0), ("nusselt_top", 1.0), ("nusselt", 1.0),
                          ("scalar0_flux_bottom", -0.02 * SLOPE), ("scalar0_flux_top", -0.02 * SLOPE),
                          ("scalar0_mean", SLOPE / 2), ("scalar0_variance", SLOPE**2 / 12)):
            assert report[key] == pytest.approx(want, rel=0, abs=1e-14), key
    got, want = grid(flux, state), grid(flux, start)
    for name in want:
        assert np.abs(got[name] - want[name]).max() < 1e-14, name


def test_a_mode_between_fixed_flux_plates_decays_as_the_scheme_says(flux):
    """theta = cos(pi z) (uniform along the plates: it drives no flow) and the scalar's cos(k x) cos(2 pi z) on its
    conductive profile decay at exp(-kappa (k^2 + (n pi)^2) t) as IMEX RK222 steps it (its amplification per step),
    to the resolution's round-off; the plates hold both slopes (Nu = 1 at both plates)."""
    x = np.arange(NX) * 2.0 / NX
    z = Chebyshev(NZ, 1.0).points()
    k, steps = math.pi, 20
    theta = np.broadcast_to(np.cos(math.pi * z), (1, NX, NZ))
    scalar = (np.cos(k * x)[:, None] * np.cos(2 * math.pi * z))[None, None]
    state = flux.state_from_fields(velocity=np.zeros((3, 1, NX, NZ)), theta=theta, scalar=scalar + SLOPE * z)
    end = advance(flux, state, DT, steps)
    got = grid(flux, end)
    kappa = 1 / math.sqrt(RA)
    assert np.abs(got["theta"] - rk222(-kappa * math.pi**2, DT, steps) * theta).max() < 1e-14
    decayed = rk222(-0.02 * (k**2 + 4 * math.pi**2), DT, steps) * scalar
    assert np.abs(got["scalar"] - SLOPE * z - decayed).max() < 1e-14
    assert np.abs(got["velocity"]).max() == 0.0
    report = flux.diagnostics(end, DT)
    assert float(report["nusselt_bottom"]) == pytest.approx(1.0, abs=1e-13)
    assert float(report["nusselt_top"]) == pytest.approx(1.0, abs=1e-13)
