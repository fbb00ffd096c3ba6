"""Derived physical scales (simulator/equations/scales.py, Simulation.scales, RunResults.scales): the
formulas against the diagnostics they come from, the comoving Jeans scale against Hu, Barkana & Gruzinov
(2000), the quantum Jeans wavenumber where the linear growth rate vanishes, and every equation's scales
are the ones it declares."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import simulator
from simulator import equations
from simulator.equations.boussinesq import BoussinesqParams
from simulator.equations.fdm_cosmo import FDMCosmoParams
from simulator.equations.mhd import MHDParams
from simulator.equations.schrodinger_poisson import SchrodingerPoissonParams

from support import on_grid

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {"navier_stokes": "taylor_green", "boussinesq": "stratified_turbulence", "mhd": "orszag_tang",
           "schrodinger_poisson": "jeans", "fdm_cosmo": "fdm_cosmo", "ns2d": "forced_2d",
           "boussinesq2d": "stratified_plane", "mhd2d": "orszag_tang_2d",
           "sw1l": "geostrophic_adjustment", "convection2d": "convection_2d", "convection": "convection_3d",
           "convection2d_noslip": "convection_2d_noslip", "channel2d": "channel_poiseuille",
           "channel": "channel_retau180", "convection_noslip": "convection_3d_noslip"}


@pytest.mark.parametrize("name", sorted(equations.registry()))
def test_every_equation_computes_the_scales_it_declares(devices, name):
    if name not in CONFIGS:
        pytest.fail(f"{name}: add a shipped config of it to CONFIGS")
    sim = simulator.Simulation(simulator.load_config(ROOT / "configs" / f"{CONFIGS[name]}.yaml",
                                                     {**on_grid(ROOT / "configs" / f"{CONFIGS[name]}.yaml", 8),
                                                      "precision": "float64"}), devices[:1])
    scales = sim.scales(sim.initial_state(), dt=1e-3)
    assert set(scales) == set(sim.info.scales) and scales, name
    assert all(isinstance(v, float) and v > 0 for v in scales.values()), scales


def test_turbulence_scales_of_taylor_green_and_a_changed_viscosity(devices):
    sim = simulator.Simulation(simulator.load_config(ROOT / "configs" / "taylor_green.yaml",
                                                     {"grid.shape": 16, "precision": "float64"}), devices[:1])
    state = sim.initial_state()
    for nu in (1 / 1600, 1e-2):
        p = sim.parameters(viscosity=nu)
        d, s = sim.report(state, 0.01, params=p), sim.scales(state, 0.01, params=p)
        eps = d["dissipation"]
        assert eps == pytest.approx(2 * nu * 0.375, rel=1e-12)  # Taylor-Green: enstrophy 3/8
        assert s["kolmogorov_length"] == pytest.approx((nu**3 / eps) ** 0.25, rel=1e-12)
        assert s["kolmogorov_time"] == pytest.approx((nu / eps) ** 0.5, rel=1e-12)
        u = (2 * d["energy"] / 3) ** 0.5
        assert s["taylor_microscale"] == pytest.approx((15 * nu * u**2 / eps) ** 0.5, rel=1e-12)
        assert s["taylor_reynolds"] == pytest.approx(u * s["taylor_microscale"] / nu, rel=1e-12)


@pytest.mark.parametrize("a", [1 / 128, 0.25, 1.0])
def test_comoving_jeans_length_against_hu_barkana_gruzinov(a):
    """k_J = 66.5 a^(1/4) (Omega_m h^2/0.12)^(1/4) m22^(1/2) / Mpc (Hu, Barkana & Gruzinov 2000, PRL 85,
    1158, eq. 4: three digits)."""
    for h, omega_m, m22 in ((0.7, 0.3, 1.0), (0.67, 0.31, 4.0)):
        physics = FDMCosmoParams(h=h, omega_m=omega_m, omega_lambda=1 - omega_m, m22=m22)
        s = physics.scales({"a": a, "kmax_de_broglie": 3.0}, [32] * 3, [2.0] * 3)
        k_j = 66.5 * a**0.25 * (omega_m * h**2 / 0.12) ** 0.25 * m22**0.5 / h  # h/Mpc
        assert s["jeans_length"] == pytest.approx(2 * math.pi / k_j, rel=2e-3)
        assert s["de_broglie_length"] == pytest.approx(2 * math.pi * 3.0 / (math.pi * 32 / 2.0), rel=1e-14)


def test_quantum_jeans_wavenumber_is_where_the_linear_growth_rate_vanishes():
    """gamma^2 = 4 pi G rho - nu^2 k^4/4 (the Jeans initial condition's linear theory) is 0 at 2 pi/jeans_length,
    positive above the Jeans length, negative below."""
    physics = SchrodingerPoissonParams(hbar_over_m=0.03, G=0.7)
    box = [2.0, 2.0, 2.0]
    rho = 1.3
    s = physics.scales({"mass": rho * 8.0, "kmax_de_broglie": 4.0}, [16] * 3, box)
    k_j = 2 * math.pi / s["jeans_length"]

    def gamma2(k):
        return 4 * math.pi * 0.7 * rho - 0.03**2 * k**4 / 4

    assert gamma2(k_j) == pytest.approx(0.0, abs=1e-12 * 4 * math.pi * 0.7 * rho)
    assert gamma2(0.9 * k_j) > 0 > gamma2(1.1 * k_j)
    assert SchrodingerPoissonParams(G=0.0).scales({"mass": 1.0, "kmax_de_broglie": 4.0}, [16] * 3, box)[
        "jeans_length"] == math.inf


def test_stratified_and_magnetic_scales():
    d = {"kinetic_dissipation": 0.02, "kinetic_energy": 0.3}
    s = BoussinesqParams(viscosity=1e-3, brunt_vaisala=2.0, coriolis=0.5).scales(d, [8] * 3, [1.0] * 3)
    assert s["buoyancy_period"] == pytest.approx(math.pi) and s["inertial_period"] == pytest.approx(4 * math.pi)
    assert s["ozmidov_length"] == pytest.approx((0.02 / 8.0) ** 0.5)
    assert s["buoyancy_reynolds"] == pytest.approx(0.02 / (1e-3 * 4.0))
    unstratified = BoussinesqParams(brunt_vaisala=0.0, coriolis=0.0).scales(d, [8] * 3, [1.0] * 3)
    assert (unstratified["buoyancy_period"] == unstratified["ozmidov_length"] == unstratified["inertial_period"]
            == math.inf)
    m = MHDParams(viscosity=0.02, resistivity=0.01).scales(
        {"viscous_dissipation": 0.1, "ohmic_dissipation": 0.3, "kinetic_energy": 1.0, "magnetic_energy": 0.5},
        [8] * 3, [1.0] * 3)
    assert m["magnetic_prandtl"] == 2.0 and m["alfven_speed"] == pytest.approx(1.0)
    assert m["kolmogorov_length"] == pytest.approx((0.02**3 / 0.4) ** 0.25)  # the total dissipation
