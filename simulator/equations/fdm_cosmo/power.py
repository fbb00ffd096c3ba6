"""The linear matter power spectrum of a cosmological run, without JAX (array module ``xp`` as in
:mod:`.cosmology`, so initial conditions and output spectra use the same formulas as the host).

    P(k, a) = A S(k) T_F(k)^2 (D(a) / D(1))^2,      k in h/Mpc, P in (Mpc/h)^3,

* S(k): the shape, either k^n_s T(k)^2 with T Eisenstein & Hu's no-wiggle CDM transfer function
  (1998, ApJ 496, 605, eqs. 26-31: the zero-baryon form with the baryon suppression of the shape
  parameter) or a two-column text file k [h/Mpc], P [(Mpc/h)^3] as CAMB and CLASS write it
  (log-log interpolation; continued as a power law of each end's slope beyond the table);
* A: normalises S so that sigma(8 Mpc/h) = sigma8 at a = 1 (top-hat window);
* T_F: the fuzzy-dark-matter cut-off of Hu, Barkana & Gruzinov (2000, PRL 85, 1158, eq. 4),
  T_F = cos(x^3) / (1 + x^8), x = 1.61 m22^(1/18) k / k_Jeq, k_Jeq = 9 m22^(1/2) / Mpc (k in 1/Mpc:
  k h here), applied on top of S when ``fdm_transfer`` (half power at k ~ 4.5 m22^(4/9) / Mpc);
* D: the linear growth factor (:func:`.cosmology.growth`).

sigma8 therefore normalises the cold-dark-matter (or file) spectrum before the FDM cut-off, the
convention of FDM simulations that start from a CDM spectrum (e.g. Schive, Chiueh & Broadhurst 2014).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simulator.equations.fdm_cosmo.cosmology import growth

#: the rms linear density contrast of the grid's modes at z_start above which a run starts non-perturbative
#: (:func:`start_cautions`): the Zel'dovich and 2LPT displacements and the wave's initial phase are expansions in it
NONLINEAR_START = 0.5

T_CMB = 2.7255  # K (Fixsen 2009)
#: ln k grid of the sigma8 integral (h/Mpc): the integrand is negligible outside 1e-5..1e3
_SIGMA_LNK = (math.log(1e-5), math.log(1e3), 1201)


def read_table(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """ln k and ln P of a two-column text file (``#`` comments; further columns ignored). Raises
    ValueError saying what is wrong (fewer than 2 rows, a number not finite, k not increasing, P not positive)."""
    data = np.loadtxt(path, ndmin=2, comments="#")
    if data.shape[0] < 2 or data.shape[1] < 2:
        raise ValueError(f"it holds {data.shape[0]} row(s) of {data.shape[1]} column(s); expected two columns, "
                         "k [h/Mpc] and P(k) [(Mpc/h)^3]")
    k, p = data[:, 0], data[:, 1]
    # first: NaN passes the comparisons below (each is False), and the run would start and stop not finite
    bad = ~(np.isfinite(k) & np.isfinite(p))
    if np.any(bad):
        row = int(np.argmax(bad))
        raise ValueError(f"row {row + 1} of its data holds k = {k[row]:g}, P(k) = {p[row]:g}: not a finite number")
    if np.any(np.diff(k) <= 0) or k[0] <= 0:
        raise ValueError("its first column k is not positive and increasing")
    if np.any(p <= 0):
        raise ValueError("its second column P(k) is not positive everywhere")
    return np.log(k), np.log(p)


def eisenstein_hu(k: Any, om: Any, ob: Any, h: Any, xp: Any = np) -> Any:
    """Eisenstein & Hu's no-wiggle transfer function T(k), k in h/Mpc (their eqs. 26-31)."""
    theta2 = (T_CMB / 2.7) ** 2
    wm, wb, fb = om * h**2, ob * h**2, ob / om
    s = 44.5 * xp.log(9.83 / wm) / xp.sqrt(1.0 + 10.0 * wb**0.75)  # sound horizon, Mpc
    alpha = 1.0 - 0.328 * xp.log(431.0 * wm) * fb + 0.38 * xp.log(22.3 * wm) * fb**2
    gamma = om * h * (alpha + (1.0 - alpha) / (1.0 + (0.43 * k * h * s) ** 4))
    q = k * theta2 / gamma
    l0 = xp.log(2.0 * math.e + 1.8 * q)
    c0 = 14.2 + 731.0 / (1.0 + 62.5 * q)
    return l0 / (l0 + c0 * q**2)


def fdm_transfer(k: Any, m22: Any, h: Any, xp: Any = np) -> Any:
    """Hu, Barkana & Gruzinov's T_F(k) = cos(x^3) / (1 + x^8), k in h/Mpc."""
    x = 1.61 * m22 ** (1.0 / 18.0) * (k * h) / (9.0 * xp.sqrt(m22))
    return xp.cos(x**3) / (1.0 + x**8)


def tophat(x: Any, xp: Any = np) -> Any:
    """The Fourier transform of a unit top-hat sphere, 3 (sin x - x cos x) / x^3 (a series below 0.1)."""
    small = x < 0.1
    xs = xp.where(small, 1.0, x)
    exact = 3.0 * (xp.sin(xs) - xs * xp.cos(xs)) / xs**3
    return xp.where(small, 1.0 - x**2 / 10.0 + x**4 / 280.0, exact)


def shape(k: Any, p: Any, table: tuple[Any, Any] | None, xp: Any = np) -> Any:
    """S(k): k^n_s T_EH(k)^2, or the file's P(k) (``table`` = (ln k, ln P)) continued as power laws."""
    if table is None:
        return k ** p["n_s"] * eisenstein_hu(k, p["omega_m"], p["omega_b"], p["h"], xp) ** 2
    lnk, lnp = table
    x = xp.log(k)
    low = lnp[0] + (lnp[1] - lnp[0]) / (lnk[1] - lnk[0]) * (x - lnk[0])
    high = lnp[-1] + (lnp[-1] - lnp[-2]) / (lnk[-1] - lnk[-2]) * (x - lnk[-1])
    inside = xp.interp(x, lnk, lnp)
    return xp.exp(xp.where(x < lnk[0], low, xp.where(x > lnk[-1], high, inside)))


def _sigma8_terms(p: Any, table: tuple[Any, Any] | None, xp: Any = np) -> tuple[Any, Any]:
    """``(k, terms)``: the sigma(8 Mpc/h)^2 integral of the shape S, int dln k k^3 S W(kR)^2 / (2 pi^2), as the
    terms of Simpson's rule on 1201 points in ln k from 1e-5 to 1e3 h/Mpc (their sum is the integral)."""
    lo, hi, n = _SIGMA_LNK
    dtype = xp.result_type(p["h"], 0.0)
    lnk = xp.linspace(lo, hi, n, dtype=dtype)
    k = xp.exp(lnk)
    integrand = k**3 * shape(k, p, table, xp) * tophat(8.0 * k, xp) ** 2 / (2.0 * math.pi**2)
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return k, xp.asarray(w, dtype=dtype) * integrand * (hi - lo) / (n - 1) / 3.0


def amplitude(p: Any, table: tuple[Any, Any] | None, xp: Any = np) -> Any:
    """A such that A S(k) has sigma(R = 8 Mpc/h) = sigma8 (:func:`_sigma8_terms`)."""
    return p["sigma8"] ** 2 / xp.sum(_sigma8_terms(p, table, xp)[1])


def table_cautions(table: tuple[np.ndarray, np.ndarray], p: Any, cells: Sequence[int], box: Sequence[float]
                   ) -> list[str]:
    """What a spectrum file leaves to its power-law continuation (:func:`shape`), in one line each: the grid's
    modes (2 pi / L to the corner of the grid's cube of modes, h/Mpc) past the table's ends, and more than 1% of
    the sigma8 integral from k outside the table (sigma8 then normalises the continuation)."""
    k0, k1 = math.exp(float(table[0][0])), math.exp(float(table[0][-1]))
    lo = 2.0 * math.pi / max(box)
    hi = math.pi * math.sqrt(sum((n / length) ** 2 for n, length in zip(cells, box, strict=True)))
    out = []
    if lo < k0 or hi > k1:
        out.append(f"physics.spectrum_file covers k = {k0:.3g} to {k1:.3g} h/Mpc, the grid's modes k = {lo:.3g} to "
                   f"{hi:.3g} h/Mpc: P(k) past the table's ends is its end slopes continued as power laws (give a "
                   "table over the grid's modes)")
    k, terms = _sigma8_terms(p, table)
    outside = float(np.sum(terms[(k < k0) | (k > k1)]) / np.sum(terms))
    if outside > 0.01:
        out.append(f"physics.spectrum_file: {100 * outside:.3g}% of the sigma8 integral comes from k outside the "
                   f"table ({k0:.3g} to {k1:.3g} h/Mpc), where P(k) is continued as a power law: sigma8 normalises "
                   "the continuation (give a table from about 1e-3 to 10 h/Mpc)")
    return out


def linear_power(k: Any, a: Any, p: Any, table: tuple[Any, Any] | None, fdm: bool, xp: Any = np) -> Any:
    """P(k, a) in (Mpc/h)^3 for k in h/Mpc (0 at k = 0), see the module docstring."""
    om, ol = p["omega_m"], p["omega_lambda"]
    grown = (growth(a, om, ol, xp) / growth(xp.asarray(1.0, dtype=xp.result_type(a, 0.0)), om, ol, xp)) ** 2
    kk = xp.where(k > 0, k, 1.0)
    power = amplitude(p, table, xp) * shape(kk, p, table, xp) * grown
    if fdm:
        power = power * fdm_transfer(kk, p["m22"], p["h"], xp) ** 2
    return xp.where(k > 0, power, 0.0)


def grid_contrast(a: float, p: Any, table: tuple[Any, Any] | None, fdm: bool, cells: Sequence[int],
                  box: Sequence[float]) -> float:
    """The rms linear density contrast of a grid's modes at scale factor ``a``: sqrt(int P(k, a) d^3k / (2 pi)^3)
    over the sphere as large as the grid's cube of modes (prod 2 pi / dx_i = 4 pi k^3 / 3), from the box's
    fundamental 2 pi / max(L) on. Within 1% of the sum over the cube's modes (64^3 in 100 Mpc/h at z = 49:
    0.0701 against 0.0697; 32^3 at z = 9: 0.262 against 0.261), without an array of the grid's size."""
    volume = math.prod(2.0 * math.pi * n / length for n, length in zip(cells, box, strict=True))
    k_top = (3.0 * volume / (4.0 * math.pi)) ** (1.0 / 3.0)
    k = np.exp(np.linspace(math.log(2.0 * math.pi / max(box)), math.log(k_top), 2001))
    integrand = linear_power(k, a, p, table, fdm) * k**3 / (2.0 * math.pi**2)
    return math.sqrt(float(np.sum((integrand[1:] + integrand[:-1]) * np.diff(np.log(k))) / 2.0))


def start_cautions(p: Any, table: tuple[Any, Any] | None, fdm: bool, cells: Sequence[int], box: Sequence[float]
                   ) -> list[str]:
    """A start whose linear density contrast on the grid (:func:`grid_contrast` at z_start) exceeds
    :data:`NONLINEAR_START`, in one line with the z_start that brings it to half that: there the initial
    conditions' perturbation theory no longer holds (particles cross shells before the first step), and a run
    steps on, at a time step shrunk by the displacements, from a state that is not the spectrum asked for."""
    z = p["z_start"]
    sigma = grid_contrast(1.0 / (1.0 + z), p, table, fdm, cells, box)
    if not sigma > NONLINEAR_START:
        return []
    om, ol = p["omega_m"], p["omega_lambda"]
    # D grows with a: the a at which sigma is half the threshold, by bisection in ln a below a_start
    want = growth(1.0 / (1.0 + z), om, ol) * NONLINEAR_START / 2.0 / sigma
    lo, hi = math.log(1e-12), -math.log1p(z)
    for _ in range(100):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if growth(math.exp(mid), om, ol) < want else (lo, mid)
    earlier = math.exp(-lo) - 1.0
    return [f"physics.z_start = {z:g}: the linear density contrast of the grid's modes has rms {sigma:.3g} there, "
            f"above {NONLINEAR_START:g}: the initial conditions' perturbation theory does not hold there (shells "
            f"cross before the first step); start at z_start >= {earlier:.3g} (rms {NONLINEAR_START / 2:g}), "
            f"or check sigma8 = {p['sigma8']:g}"]
