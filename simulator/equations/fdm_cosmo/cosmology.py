"""The background cosmology and the unit system of a cosmological run, without JAX.

Every function takes its array module ``xp`` (NumPy by default, ``jax.numpy`` inside compiled code),
so the host (config resolution, output attributes, plots, tests) and the compiled step evaluate the
same formulas: one implementation of each.

Code units: comoving length 1 Mpc/h; time 1/H0 (9.778/h Gyr), so H0 = 1; mass density rho_crit,0 =
3 H0^2 / (8 pi G) (2.775e11 h^2 Msun/Mpc^3), so G = 3/(8 pi), 4 pi G = 3/2 and the mean comoving
density of the matter is omega_m; velocity (Mpc/h) H0 = 100 km/s; the boson's hbar/m is
nu = 1.917e-4 h / m22 (Mpc/h)^2 H0. The run's clock is s = ln(a / a_start): a = a_start e^s.

Background: H(a) = H0 E(a), E^2 = omega_m a^-3 + omega_k a^-2 + omega_lambda with omega_k = 1 -
omega_m - omega_lambda (flat when omega_m + omega_lambda = 1); radiation is neglected (a few per cent
of H^2 at z ~ 100, as in most cosmological N-body and FDM initial conditions). Linear growth of the
growing mode (Heath 1977; Peebles 1980, §10): D(a) = (5 omega_m / 2) E(a) int_0^a da' / (a' E)^3,
which is a in the matter era, and its rate f = dln D / dln a = dln E / dln a + 1 / (a^2 E^3 I).

Integrals over a are done by Gauss-Legendre quadrature: from 0 to a after a' = a u^2 (which makes the
matter-era integrands smooth polynomials in u), and over a step in s directly (the integrands are
smooth there): exact to round-off for any step a run takes (error ~ h^11 / 10^8 for a step h in ln a).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

# ---- physical constants (CODATA 2018, IAU 2015) -------------------------------------------------------------
HBAR = 1.054571817e-34  # J s
EV = 1.602176634e-19  # J
C = 299792458.0  # m/s
MPC = 3.0856775814913673e22  # m
MSUN = 1.98840987e30  # kg (IAU 2015 nominal GM_sun / G)
GRAV = 6.67430e-11  # m^3 / (kg s^2)
GEV = 1e9 * EV
GYR = 3.15576e16  # s (Julian)

#: G in code units: 4 pi G rho_crit,0 = (3/2) H0^2 with H0 = rho_crit,0 = 1
G_CODE = 3.0 / (8.0 * math.pi)
#: the code's velocity unit, (Mpc/h) H0, in m/s
VELOCITY = 1e5


def hubble_si(h: float) -> float:
    """H0 in 1/s."""
    return 100.0 * h * 1e3 / MPC


def rho_crit0_si(h: float) -> float:
    """The critical density today, 3 H0^2 / (8 pi G), in kg/m^3."""
    return 3.0 * hubble_si(h) ** 2 / (8.0 * math.pi * GRAV)


def nu_code(m22: Any, h: Any) -> Any:
    """hbar/m of a boson of mass m22 x 1e-22 eV/c^2 in code units (Mpc/h)^2 H0 = 100 Mpc km/s / h."""
    nu_si = HBAR * C**2 / (1e-22 * EV)  # m^2/s for m22 = 1
    return nu_si / (VELOCITY * MPC) * h / m22


def self_interaction_of_decay_constant(f_a_gev: float, m22: float, h: float) -> float:
    """g (code units) of the attractive quartic term of an axion-like cosine potential with decay
    constant f_a (GeV): lambda = -(m c^2 / f_a)^2, g_n = lambda (hbar c)^3 / (8 (m c^2)^2) =
    -(hbar c)^3 / (8 f_a^2) (J m^3), g = g_n / m^2 per unit mass density (m^5 kg^-1 s^-2), in code units
    (100 km/s)^2 / rho_crit,0."""
    mass = m22 * 1e-22 * EV / C**2
    g_n = -((HBAR * C) ** 3) / (8.0 * (f_a_gev * GEV) ** 2)
    return g_n / mass**2 * rho_crit0_si(h) / VELOCITY**2


def scattering_length_of_self_interaction(g: float, m22: float, h: float) -> float:
    """The s-wave scattering length a_s (m) of g in code units: g_n = 4 pi hbar^2 a_s / m."""
    mass = m22 * 1e-22 * EV / C**2
    g_n = g * VELOCITY**2 / rho_crit0_si(h) * mass**2
    return g_n * mass / (4.0 * math.pi * HBAR**2)


# ---- the background -------------------------------------------------------------------------------------------

#: the round-off of z = 1/a - 1 near a = 1, in epsilons of a's precision: a = a_start e^s, the exponential and
#: 1/a each round to about an ulp, so a run that ends today reaches z = 0 only to a few eps (2.2e-16 in float64);
#: 8 bounds that with room, and no redshift a run asks for is that small (1.8e-15 in float64, 9.5e-7 in float32)
REDSHIFT_ROUND_OFF = 8


def redshift(a: Any, xp: Any = np) -> Any:
    """z = 1/a - 1, exactly 0 where a is 1 up to round-off (|z| within :data:`REDSHIFT_ROUND_OFF` epsilons of a's
    precision): the one rule of every redshift a run writes or draws (snapshot and spectra attributes, the time
    series, titles and the redshift axis), which read 0 today rather than 2.22e-16. Elsewhere z is 1/a - 1 as
    computed (its relative round-off is a few eps)."""
    z = 1.0 / a - 1.0
    return xp.where(xp.abs(z) <= REDSHIFT_ROUND_OFF * xp.finfo(xp.asarray(z).dtype).eps, 0.0, z)


def hubble(a: Any, om: Any, ol: Any, xp: Any = np) -> Any:
    """E(a) = H(a)/H0."""
    return xp.sqrt(om / a**3 + (1.0 - om - ol) / a**2 + ol)


def dlnh_dlna(a: Any, om: Any, ol: Any, xp: Any = np) -> Any:
    """dln E / dln a."""
    return -(1.5 * om / a**3 + (1.0 - om - ol) / a**2) / hubble(a, om, ol, xp) ** 2


@functools.cache
def _legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes on [0, 1] and their weights."""
    x, w = np.polynomial.legendre.leggauss(n)
    return 0.5 * (x + 1.0), 0.5 * w


def _from_zero(a: Any, integrand: Any, xp: Any, n: int = 48) -> Any:
    """int_0^a integrand(a') da' with a' = a u^2 (da' = 2 a u du), by n-point Gauss-Legendre in u."""
    u, w = (xp.asarray(v, dtype=xp.result_type(a, 0.0)) for v in _legendre(n))
    a = xp.asarray(a)[..., None]
    return xp.sum(w * integrand(a * u**2) * 2.0 * a * u, axis=-1)


def growth(a: Any, om: Any, ol: Any, xp: Any = np) -> Any:
    """The linear growth factor D(a), normalised to D = a in the matter era (not to D(1) = 1)."""
    inner = _from_zero(a, lambda x: (x * hubble(x, om, ol, xp)) ** -3.0, xp)
    return 2.5 * om * hubble(a, om, ol, xp) * inner


def growth_rate(a: Any, om: Any, ol: Any, xp: Any = np) -> Any:
    """f = dln D / dln a of the growing mode."""
    inner = _from_zero(a, lambda x: (x * hubble(x, om, ol, xp)) ** -3.0, xp)
    return dlnh_dlna(a, om, ol, xp) + 1.0 / (a**2 * hubble(a, om, ol, xp) ** 3 * inner)


def cosmic_time(a: Any, om: Any, ol: Any, xp: Any = np) -> Any:
    """The age t(a) = int_0^a da' / (a' H), in units of 1/H0."""
    return _from_zero(a, lambda x: 1.0 / (x * hubble(x, om, ol, xp)), xp)


def step_integrals(s: Any, h: Any, a_start: Any, om: Any, ol: Any, powers: tuple[int, ...], xp: Any = np,
                   n: int = 5) -> list[Any]:
    """int dt / a^p = int_s^{s+h} ds' / (a^p E(a)) over a step [s, s + h] of the clock s = ln(a/a_start),
    for each p of ``powers`` (units of 1/H0): the kick (p = 1, 3) and drift (p = 2) factors of the
    comoving Schrodinger equation. n-point Gauss-Legendre in s: the integrands are smooth, so the error
    is ~ 4e-9 h^11 (n = 5) relative, far below round-off for the steps a run takes."""
    x, w = (xp.asarray(v, dtype=xp.result_type(s, h, 0.0)) for v in _legendre(n))
    a = a_start * xp.exp(s + h * x)
    e = hubble(a, om, ol, xp)
    return [h * xp.sum(w / (a**p * e)) for p in powers]


def check_expansion(om: float, ol: float, a_start: float, a_end: float) -> str | None:
    """Why (om, ol) gives no monotonic expansion from a_start to a_end, or None if it does."""
    a = np.geomspace(a_start, a_end, 512)
    e2 = om / a**3 + (1.0 - om - ol) / a**2 + ol
    if np.any(e2 <= 0):
        return (f"H^2 = H0^2 (omega_m a^-3 + omega_k a^-2 + omega_lambda) turns negative at "
                f"a = {a[np.argmax(e2 <= 0)]:.3g}")
    return None


#: what only a run with the wave writes (its fields and, in a mixed run, its own spectrum), only one with cold
#: particles (their density, own spectrum and velocity), and only a mixed run (the total density)
WAVE_UNITS = ("density", "abs_psi", "phase", "power_fdm")
COLD_UNITS = ("cdm_density", "power_cdm", "velocity")
MIXED_UNITS = ("total_density", "power_fdm", "power_cdm")


def describe_units(h: float, m22: float | None, z_start: float, cold: bool = True) -> dict[str, str]:
    """The unit system of a run, as written into every output's attributes (JSON strings), with the quantities
    the run writes: ``m22`` None for a run without the wave (no boson: no hbar/m, none of the wave's fields),
    ``cold`` False for one without cold particles (none of theirs); the total density and the components'
    own spectra only in a mixed run."""
    absent = (() if m22 is not None else WAVE_UNITS) + (() if cold else COLD_UNITS) + (
        () if m22 is not None and cold else MIXED_UNITS)
    return {k: v for k, v in _all_units(h, m22, z_start).items() if k not in absent}


def _all_units(h: float, m22: float | None, z_start: float) -> dict[str, str]:
    rho = rho_crit0_si(h) * MPC**3 / MSUN
    return {
        "length": "Mpc/h",
        "k": "h/Mpc",
        "time": f"ln(a/a_start), a_start = 1/(1 + {z_start:g})",
        # the age t(a): the time series' column and the snapshots' attribute of that name
        "cosmic_time": "Gyr",
        # each density its own share of the matter: the wave's f, the particles' 1 - f (f = physics.fdm_fraction)
        "density": f"rho_crit,0 = {rho:.6g} Msun/Mpc^3 (comoving density of the wave; mean = fdm_fraction omega_m)",
        "cdm_density": f"rho_crit,0 = {rho:.6g} Msun/Mpc^3 (comoving density of the cold particles; mean = "
                       "(1 - fdm_fraction) omega_m)",
        "total_density": f"rho_crit,0 = {rho:.6g} Msun/Mpc^3 (comoving density of all the matter; mean = omega_m)",
        "power": "(Mpc/h)^3",
        "power_fdm": "(Mpc/h)^3",
        "power_cdm": "(Mpc/h)^3",
        "power_linear": "(Mpc/h)^3",
        "velocity": "100 km/s (the cold particles' peculiar velocity a dx/dt)",
        "potential": "(100 km/s)^2 (peculiar potential V)",
        "phase": "radian",
        "abs_psi": "sqrt(rho_crit,0)",
        "code_length": "1 Mpc/h (comoving)",
        "code_time": f"1/H0 = {1.0 / hubble_si(h) / GYR:.6g} Gyr",
        "code_mass": f"rho_crit,0 (Mpc/h)^3 = {rho / h**3:.6g} Msun",
        "code_velocity": "(Mpc/h) H0 = 100 km/s",
        "code_G": f"3/(8 pi) = {G_CODE:.10g}",
        **({} if m22 is None else {"code_hbar_over_m": f"{nu_code(m22, h):.10g} (Mpc/h)^2 H0 for m22 = {m22:g}"}),
    }
