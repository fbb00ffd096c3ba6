"""The stratified plane (``boussinesq2d``) against exact solutions, on every backend that takes a plane, on 1, 2 and
4 devices, in float64: internal gravity waves, their viscous decay, the inviscid energy, distributed runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_plane import BOX, CASES, SHAPE

from simulator.api import load_config
from simulator.errors import ConfigError

from support import advance, case_id, relative_error, simulation


def plane(devices, case=("single", 1, None), **overrides):
    values = {"physics.name": "boussinesq2d", "grid.shape": SHAPE, "grid.box": BOX, **overrides}
    return simulation(devices, case, **values)


def fields(sim, state) -> tuple[np.ndarray, np.ndarray]:
    got = sim.fields(state, "vorticity", "buoyancy")
    return sim.to_numpy(got["vorticity"]), sim.to_numpy(got["buoyancy"])


def exact_wave(modes, amplitude, n, t, decay=0.0):
    """omega = A |k| cos(phi - N k_x t/|k|), b = -A N cos(...) (derived in the package's docstring), times
    exp(-decay t): the (1, Nx, Ny) fields."""
    kx, ky = (2 * math.pi * m / length for m, length in zip(modes, BOX, strict=True))
    k = math.hypot(kx, ky)
    x = np.arange(SHAPE[0])[:, None] * BOX[0] / SHAPE[0]
    y = np.arange(SHAPE[1])[None, :] * BOX[1] / SHAPE[1]
    phase = np.cos(kx * x + ky * y - n * kx / k * t)[None] * math.exp(-decay * t)
    return amplitude * k * phase, -amplitude * n * phase


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_an_internal_wave_runs_at_its_frequency(devices, case):
    """One internal wave, inviscid: its nonlinear term is zero, so the run is the linear solution of frequency
    omega_w = N k_x/|k| (a wrong sign of either coupling term gives growth, or b against omega the wrong way round).
    By t = 1 the phase has turned by about 1.3 rad; RK4's error at dt = 0.004 is below 1e-11."""
    n, amplitude, modes = 1.5, 0.3, (1, -2)
    sim = plane(devices, case, initial__modes=modes, initial__amplitude=amplitude, physics__brunt_vaisala=n,
                physics__viscosity=0.0, physics__diffusivity=0.0)
    state = sim.initial_state()
    start = exact_wave(modes, amplitude, n, 0.0)
    assert relative_error(fields(sim, state), start) < 1e-13
    end = fields(sim, advance(sim, state, 0.004, 250))
    assert relative_error(end, exact_wave(modes, amplitude, n, 1.0)) < 1e-10
    assert relative_error(end, start) > 0.5  # it moved


@pytest.mark.parametrize("case", CASES[::3], ids=case_id)
def test_a_wave_decays_exactly_when_viscosity_equals_diffusivity(devices, case):
    """nu = kappa and nu_p = kappa_p: the wave decays as exp(-(nu k^2 + nu_p k^4) t) as it oscillates (each rate of
    its own size, so that the sign of each term shows)."""
    n, amplitude, modes, nu, hyper = 2.0, 0.1, (2, 3), 0.013, 0.0021
    sim = plane(devices, case, initial__modes=modes, initial__amplitude=amplitude, physics__brunt_vaisala=n,
                physics__viscosity=nu, physics__diffusivity=nu, physics__hyperviscosity=hyper,
                physics__hyperdiffusivity=hyper, physics__hyperviscosity_order=2)
    k2 = sum((2 * math.pi * m / length) ** 2 for m, length in zip(modes, BOX, strict=True))
    end = fields(sim, advance(sim, sim.initial_state(), 0.004, 250))
    assert relative_error(end, exact_wave(modes, amplitude, n, 1.0, nu * k2 + hyper * k2**2)) < 1e-10


def test_inviscid_energy_is_conserved_to_the_schemes_order(devices):
    """nu = kappa = 0: the 2/3 rule conserves E_K + E_P of the semi-discrete equations exactly while buoyancy trades
    them, so what changes is RK4's time error: halving dt divides it by about 2^4."""
    sim = plane(devices, initial__name="random", physics__viscosity=0.0, physics__diffusivity=0.0,
                physics__brunt_vaisala=2.0)
    state = sim.initial_state()
    d0 = sim.diagnostics(state, 0.02)
    drift, exchanged = [], []
    for dt, steps in ((0.02, 25), (0.01, 50)):
        d = sim.diagnostics(advance(sim, state, dt, steps), dt)
        drift.append(abs(float(d["total_energy"]) / float(d0["total_energy"]) - 1))
        exchanged.append(abs(float(d["potential_energy"]) / float(d0["potential_energy"]) - 1))
    assert 0 < drift[0] < 1e-5 and drift[0] / drift[1] > 10, drift
    assert min(exchanged) > 1e-2  # the parts do change


@pytest.fixture(scope="module")
def reference(devices):
    """A nonlinear, viscous, stratified run on one device (the reference of the distributed ones)."""
    sim = plane(devices, initial__name="random")
    return fields(sim, advance(sim, sim.initial_state(), 0.01, 12))


@pytest.mark.parametrize("case", CASES[1:], ids=case_id)
def test_a_distributed_stratified_plane_equals_the_single_device_one(devices, case, reference):
    sim = plane(devices, case, initial__name="random")
    assert relative_error(fields(sim, advance(sim, sim.initial_state(), 0.01, 12)), reference) < 1e-12


def test_the_energy_budget_of_a_step_closes(devices):
    """d(E_K + E_P)/dt = -(kinetic + potential dissipation) at the start, from a short step of a random flow: the
    diagnostics' dissipation rates, hyperviscous parts included, are the ones the run applies."""
    sim = plane(devices, initial__name="random", physics__viscosity=0.02, physics__diffusivity=0.005,
                physics__hyperviscosity=1e-4, physics__hyperdiffusivity=3e-4, physics__hyperviscosity_order=2)
    state = sim.initial_state()
    d0, dt = sim.diagnostics(state, 1e-4), 1e-4
    d1 = sim.diagnostics(advance(sim, state, dt, 1), dt)
    rate = (float(d1["total_energy"]) - float(d0["total_energy"])) / dt
    loss = float(d0["kinetic_dissipation"]) + float(d0["potential_dissipation"])
    assert abs(rate + loss) < 1e-3 * loss


@pytest.mark.parametrize("modes, allowed", [((0, 2), "m_x != 0"), ((6, 1), "below N_i/3"), ((0, 0), "!= (0, 0)")])
def test_a_wave_that_is_no_wave_or_not_resolved_is_refused(modes, allowed):
    with pytest.raises(ConfigError, match=r"^initial\.modes = \[") as err:
        load_config(None, {"physics.name": "boussinesq2d", "grid.shape": SHAPE, "initial.modes": list(modes)})
    assert allowed in str(err.value) and "\n" not in str(err.value)
