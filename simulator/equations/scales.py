"""Derived physical scales of a run: what a physicist computes from the parameters and the diagnostics
before reading a figure (no JAX: the formulas take numbers, so :meth:`simulator.Simulation.scales`
evaluates them for a state and :meth:`simulator.RunResults.scales` for every row of a time series).

Each equation's parameters say which apply (``EquationParams.scales``) and its declaration names and
describes them (``EquationInfo.scales``). The formulas:

* turbulence (Pope, Turbulent Flows, 2000, §5.2 and §6.1): Kolmogorov length eta = (nu^3/eps)^(1/4) and
  time tau_eta = (nu/eps)^(1/2); with u' = (2E/3)^(1/2) the rms velocity of one component, the Taylor
  microscale lambda = (15 nu u'^2/eps)^(1/2) and its Reynolds number Re_lambda = u' lambda/nu;
* stratified and rotating flows (e.g. Brethouwer et al. 2007, JFM 585, 343): the buoyancy period 2 pi/N,
  the inertial period 2 pi/|f|, the Ozmidov length (eps/N^3)^(1/2) (the largest scale overturning
  against the stratification) and the buoyancy Reynolds number eps/(nu N^2);
* self-gravitating bosons: linearising Schrodinger-Poisson about a uniform density rho gives
  gamma^2 = 4 pi G rho - nu^2 k^4/4 (nu = hbar/m): the quantum Jeans wavenumber k_J = (16 pi G rho/nu^2)^(1/4),
  Jeans length 2 pi/k_J (Khlopov et al. 1985; Hu, Barkana & Gruzinov 2000); in comoving coordinates
  4 pi G rho is (3/2) Omega_m H0^2 a^-3 and k = a k_phys, so k_J^4 = 6 Omega_m H0^2 a/nu^2, in h/Mpc
  with code units H0 = 1 (Hu et al.'s 66.5 a^(1/4) (Omega_m h^2/0.12)^(1/4) m22^(1/2)/Mpc); the de
  Broglie length 2 pi/k_rms of the rms de Broglie wavenumber (:mod:`simulator.equations.resolution`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from simulator.equations import resolution


def initial_velocity(initial: Any) -> tuple[float, str] | None:
    """(U, what it is in words) of an initial condition (its schema dataclass): its ``amplitude`` (a velocity's), or
    the rms speed of its ``energy`` E = <u^2>/2; None where it declares neither (what
    ``EquationParams.velocity_scale`` gives by default)."""
    amplitude, energy = getattr(initial, "amplitude", None), getattr(initial, "energy", None)
    if isinstance(amplitude, (int, float)) and amplitude > 0:
        return float(amplitude), f"initial.amplitude = {amplitude:g}"
    if isinstance(energy, (int, float)) and energy > 0:
        return math.sqrt(2 * energy), f"sqrt(2 initial.energy) = {math.sqrt(2 * energy):.3g}"
    return None


def faster(own: tuple[float, str], initial: Any) -> tuple[float, str]:
    """``own``, a flow's velocity scale (U, in words), or the initial condition's (:func:`initial_velocity`) where
    that one is faster: a start stronger than the flow it settles into sets the first steps."""
    start = initial_velocity(initial)
    return start if start is not None and start[0] > own[0] else own


TURBULENCE = {
    "kolmogorov_length": "Kolmogorov length eta = (nu^3/epsilon)^(1/4)",
    "kolmogorov_time": "Kolmogorov time tau_eta = (nu/epsilon)^(1/2)",
    "taylor_microscale": "Taylor microscale lambda = (15 nu u'^2/epsilon)^(1/2), u' = (2E/3)^(1/2)",
    "taylor_reynolds": "Taylor-scale Reynolds number Re_lambda = u' lambda/nu",
}
STRATIFIED = {
    "buoyancy_frequency": "Brunt-Vaisala frequency N",
    "buoyancy_period": "buoyancy period 2 pi/N (inf without stratification)",
    "inertial_period": "inertial period 2 pi/|f| (inf without rotation)",
    "ozmidov_length": "Ozmidov length (epsilon_K/N^3)^(1/2) (inf without stratification)",
    "buoyancy_reynolds": "buoyancy Reynolds number epsilon_K/(nu N^2) (inf without stratification)",
}
QUANTUM = {
    "jeans_length": "quantum Jeans length 2 pi/k_J, k_J = (16 pi G rho_mean/nu^2)^(1/4), nu = hbar/m "
                    "(inf without gravity)",
    "de_broglie_length": "de Broglie length 2 pi/k_rms, k_rms^2 = <|grad psi|^2>/<|psi|^2>",
}


def _over(a: float, b: float) -> float:
    """a/b, and inf for b = 0 (a scale a process without that term never reaches)."""
    return a / b if b else math.inf


def turbulence(nu: float, epsilon: float, energy: float) -> dict[str, float]:
    """:data:`TURBULENCE` of a flow of viscosity ``nu``, dissipation ``epsilon`` and kinetic energy ``energy``."""
    u = math.sqrt(max(2 * energy / 3, 0.0))
    taylor = math.sqrt(_over(15 * nu * u**2, epsilon))
    return {"kolmogorov_length": float(resolution.kolmogorov(np.float64(nu), np.float64(epsilon), np)),
            "kolmogorov_time": math.sqrt(_over(nu, epsilon)), "taylor_microscale": taylor,
            "taylor_reynolds": _over(u * taylor, nu)}


def stratified(n: float, f: float, nu: float, epsilon: float) -> dict[str, float]:
    """:data:`STRATIFIED` for buoyancy frequency ``n``, Coriolis parameter ``f``, viscosity and dissipation."""
    return {"buoyancy_frequency": n, "buoyancy_period": _over(2 * math.pi, n),
            "inertial_period": _over(2 * math.pi, abs(f)), "ozmidov_length": math.sqrt(_over(epsilon, n**3)),
            "buoyancy_reynolds": _over(epsilon, nu * n**2)}


def jeans_wavenumber(four_pi_g_rho: float, nu: float) -> float:
    """k_J = (4 (4 pi G rho)/nu^2)^(1/4): where gravity and quantum pressure balance."""
    return (4 * four_pi_g_rho / nu**2) ** 0.25


def quantum(k_j: float, kmax_de_broglie: float, shape: Sequence[int], box: Sequence[float]) -> dict[str, float]:
    """:data:`QUANTUM` from the Jeans wavenumber and the diagnostic kmax_de_broglie = k_max/k_rms."""
    k_rms = _over(resolution.nyquist(shape, box), kmax_de_broglie)
    return {"jeans_length": _over(2 * math.pi, k_j), "de_broglie_length": _over(2 * math.pi, k_rms)}
