"""Channel flows between two no-slip plates: the laminar profiles, the start-up of Couette flow, the
Tollmien-Schlichting initial condition and the checks of a channel's settings.

Coordinates and units. The wall-normal direction is the last one of the grid (a plane's y, a box's z, between
``grid.walls``' plates); here it is called y and measured from the centre line, so the plates lie at y = -h and
y = +h (h the half gap; a grid whose plates lie at 0 and H = 2 h is shifted by h). x is streamwise, along the
first axis, and a box's second direction is spanwise. Velocities are scaled by the centre-line velocity U_c of
Poiseuille flow or the plate velocity U of Couette flow, lengths by h, so nu = 1 / Re with Re = U h / nu, as
Orszag (1971) and :func:`simulator.walls.eigen.orr_sommerfeld` use.

The equations (docs/explanation/channels.md): du/dt + (u . grad) u = -grad p + G e_x + nu lap u, div u = 0,
u = (+-U, 0[, 0]) at y = +-h for Couette flow (G = 0), u = 0 at the plates for Poiseuille flow, driven either by a
fixed mean pressure gradient G = -dP/dx or by G(t) chosen at each step so that the bulk velocity
U_b = (1 / 2h) int <u> dy stays at its set value (a fixed flux). Their laminar solutions:

* Couette: U(y) = U y / h;
* Poiseuille: U(y) = U_c (1 - y^2 / h^2), with G = 2 nu U_c / h^2 and U_b = 2 U_c / 3.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from simulator.errors import ConfigError

#: how a channel is driven: plates moving at -U and +U (Couette), a fixed mean pressure gradient or a fixed flux
#: (Poiseuille); the pressure gradient is the default of a Poiseuille channel, as in Kim, Moin & Moser (1987)
DRIVES = ("couette", "pressure", "flux")
#: the Chebyshev degree of the Orr-Sommerfeld solve a Tollmien-Schlichting initial condition is computed at,
#: enough for c to 1e-10 at Re = 10^4 (Orszag 1971 used 50 polynomials for 8 digits)
TS_DEGREE = 120
#: how close the Orr-Sommerfeld growth rate alpha Im(c) on a grid's own points across the plates must come to the
#: converged one (degree TS_DEGREE) for that grid to resolve the wave: 1% of it, or 1e-6 U_c/h near neutral
#: stability. At Re = 10^4, alpha = 1 that takes 41 points: runs on 25, 28 and 33 points grew at rates off the
#: exact one by -49%, +68% and -1.8% (on 9 and 17 points the wave decayed), on 41, 42 and 44 by at most 0.13%
TS_TOLERANCE, TS_FLOOR = 0.01, 1e-6


@functools.cache
def ts_growth_rate(reynolds: float, alpha: float, points: int) -> float:
    """alpha Im(c) of the least stable Orr-Sommerfeld mode of plane Poiseuille flow (:func:`simulator.walls.eigen.
    orr_sommerfeld`) from Chebyshev series on ``points`` Gauss-Lobatto points (degree points - 1): the growth rate
    the grid across the plates gives the Tollmien-Schlichting wave (nan below 5 points: degree 3 holds no mode
    clamped at both plates)."""
    from simulator.walls import eigen  # numpy and scipy alone, loaded by the channels that start from the wave

    if points < 5:
        return math.nan
    return alpha * float(eigen.orr_sommerfeld(reynolds, alpha, "poiseuille", points - 1)[0][0].imag)


def ts_resolved(reynolds: float, alpha: float, points: int) -> bool:
    """Whether ``points`` across the plates resolve the Tollmien-Schlichting wave: its Orr-Sommerfeld growth rate on
    them within :data:`TS_TOLERANCE` of the converged one (or :data:`TS_FLOOR`); a grid finer than the converged
    solve's always does."""
    if points > TS_DEGREE:
        return True
    exact = ts_growth_rate(reynolds, alpha, TS_DEGREE + 1)
    return abs(ts_growth_rate(reynolds, alpha, points) - exact) <= max(TS_TOLERANCE * abs(exact), TS_FLOOR)


def check_ts_across(reynolds: float, alpha: float, shape: tuple[int, ...]) -> None:
    """The Tollmien-Schlichting wave resolved across the plates (grid ``shape``'s last entry, :func:`ts_resolved`),
    else the one-line refusal naming ``grid.shape`` and the fewest points above it that resolve it (a larger count
    may not: the rate's error oscillates as it falls)."""
    points = shape[-1]
    if ts_resolved(reynolds, alpha, points):
        return
    fewest = next((n for n in range(points + 1, TS_DEGREE + 1) if ts_resolved(reynolds, alpha, n)), TS_DEGREE + 1)
    exact, rate = ts_growth_rate(reynolds, alpha, TS_DEGREE + 1), ts_growth_rate(reynolds, alpha, points)
    given = f"give {rate:.3g}" if math.isfinite(rate) else "hold no mode"
    raise ConfigError("grid.shape", list(shape), f"a count across the plates on which the wave's Orr-Sommerfeld "
                      f"growth rate comes within {TS_TOLERANCE:.0%} of the converged {exact:.3g} (Re = {reynolds:g}, "
                      f"alpha = {alpha:g}; {points} points {given}, {fewest} are the fewest above that do)",
                      "does not resolve the Tollmien-Schlichting wave across the plates")


def couette(y: np.ndarray, plate_velocity: float = 1.0, h: float = 1.0) -> np.ndarray:
    """Laminar plane Couette flow U(y) = U y / h between plates moving at -U (y = -h) and +U (y = +h); same shape
    as ``y``."""
    return plate_velocity * np.asarray(y) / h


def poiseuille(y: np.ndarray, centreline: float = 1.0, h: float = 1.0) -> np.ndarray:
    """Laminar plane Poiseuille flow U(y) = U_c (1 - y^2 / h^2) between plates at rest at y = -h, +h; same shape
    as ``y``."""
    return centreline * (1.0 - (np.asarray(y) / h) ** 2)


def poiseuille_gradient(nu: float, centreline: float = 1.0, h: float = 1.0) -> float:
    """The mean pressure gradient G = -dP/dx = 2 nu U_c / h^2 that holds laminar Poiseuille flow steady."""
    return 2.0 * nu * centreline / h**2


def couette_startup(y: np.ndarray, t: float, nu: float, plate_velocity: float = 1.0, h: float = 1.0,
                    terms: int = 2000) -> np.ndarray:
    """The exact start-up of plane Couette flow: fluid at rest until t = 0, when the plates start moving at -U and
    +U. With eta = (y + h) / 2h, u(y, t) = U (2 eta - 1) + sum over even n of (4 U / n pi) sin(n pi eta)
    exp(-nu (n pi / 2h)^2 t) (separation of variables: the departure from the steady profile diffuses with zero
    values at both plates). Same shape as ``y``; ``terms`` even terms are summed, so at t = 0 the series is
    truncated (Gibbs at the plates), while at t > 0 the dropped terms are below exp(-nu (2 pi terms / 2h)^2 t)."""
    eta = (np.asarray(y, dtype=float) + h) / (2.0 * h)
    n = 2.0 * np.arange(1, terms + 1)
    decay = np.exp(-nu * (n * np.pi / (2.0 * h)) ** 2 * t)
    series = np.sin(np.pi * np.multiply.outer(eta, n)) @ (4.0 * plate_velocity / (n * np.pi) * decay)
    return plate_velocity * (2.0 * eta - 1.0) + series


def tollmien_schlichting(x: np.ndarray, y: np.ndarray, reynolds: float = 1e4, alpha: float = 1.0,
                         amplitude: float = 1e-4, h: float = 1.0) -> tuple[complex, np.ndarray, np.ndarray]:
    """The Tollmien-Schlichting wave of plane Poiseuille flow (U_c = 1) at Reynolds number ``reynolds`` and
    streamwise wavenumber ``alpha`` (in 1/h), as a velocity perturbation: (u', v') = Re[A (D phi, -i alpha phi)
    exp(i alpha x)], phi the least stable Orr-Sommerfeld mode (:func:`simulator.walls.eigen.tollmien_schlichting`,
    degree :data:`TS_DEGREE`), interpolated onto ``y`` by its Chebyshev series, and A real, chosen so that the
    peak of |u'| is ``amplitude`` (in U_c). Divergence-free and zero at the plates with phi's own accuracy.

    ``x`` (shape ``(Nx,)``) and ``y`` (shape ``(Ny,)``, from the centre line) give the grid; returns the wave
    speed c (growth rate alpha Im c) and u', v' of shape ``(Nx, Ny)``.

    NumPy alone, in float64 whatever the run's precision: it runs on the host, in a start's callback, where a
    JAX transform would compile a few dozen small programs of its own."""
    # the solve's module holds SciPy: imported here, so that a config's checks (check_channel) load none
    from simulator.walls import eigen

    c, points, phi = eigen.tollmien_schlichting(reynolds, alpha * h, TS_DEGREE)
    # the interpolant on the Gauss-Lobatto points (a fit of full degree), its slope d/dy = (1/h) d/ds
    series = np.polynomial.chebyshev.Chebyshev.fit(points, phi, len(points) - 1, domain=[-1.0, 1.0])
    slope = series.deriv() / h
    s = np.asarray(y, dtype=float) / h
    mode, dmode = series(s), slope(s)
    wave = np.exp(1j * alpha * np.asarray(x, dtype=float))[:, None]
    scale = amplitude / np.abs(slope(points)).max()
    u = (scale * dmode[None, :] * wave).real
    v = (scale * -1j * alpha * mode[None, :] * wave).real
    return complex(c), u, v


@dataclass(frozen=True)
class WallProfiles:
    """A channel's mean profiles in wall units (:mod:`simulator.walls.channel_stats`' docstring), each ``(Ny,)`` on
    the ascending points ``y`` from the centre line; ``spanwise`` None on a plane."""

    y: np.ndarray
    tau_bottom: float
    tau_top: float
    u_tau: float
    re_tau: float
    viscous_length: float
    y_plus: np.ndarray
    u_plus: np.ndarray
    streamwise: np.ndarray
    wall_normal: np.ndarray
    spanwise: np.ndarray | None
    shear: np.ndarray
    total_shear_stress: np.ndarray


def wall_units(y: np.ndarray, mean: np.ndarray, streamwise: np.ndarray, wall_normal: np.ndarray, shear: np.ndarray,
               total_shear_stress: np.ndarray, nu: float, spanwise: np.ndarray | None = None,
               h: float = 1.0) -> WallProfiles:
    """The wall-unit profiles of a mean velocity <u>, the Reynolds stresses <u'u'>, <v'v'> (across the plates),
    <u'v'> (a box's <w'w'>) and the total shear stress nu d<u>/dy - <u'v'>, each ``(Ny,)`` at the ascending heights
    ``y`` of [-h, h] with both plates: the wall stresses are the total shear stress at the plates (the Reynolds
    stress is zero there), tau = its value at the bottom and minus it at the top; u_tau = (mean |tau|)^(1/2),
    Re_tau = u_tau h / nu, y+ from the nearer plate, U+ and the stresses over u_tau^2 (Pope 2000, sec. 7.1)."""
    total = np.asarray(total_shear_stress, dtype=float)
    tau_bottom, tau_top = float(total[0]), float(-total[-1])
    u_tau = math.sqrt(0.5 * (abs(tau_bottom) + abs(tau_top)))
    viscous_length = nu / u_tau
    u2 = u_tau**2
    return WallProfiles(
        y=np.asarray(y, dtype=float), tau_bottom=tau_bottom, tau_top=tau_top, u_tau=u_tau, re_tau=u_tau * h / nu,
        viscous_length=viscous_length, y_plus=(h - np.abs(y)) / viscous_length, u_plus=np.asarray(mean) / u_tau,
        streamwise=np.asarray(streamwise) / u2, wall_normal=np.asarray(wall_normal) / u2,
        spanwise=None if spanwise is None else np.asarray(spanwise) / u2, shear=np.asarray(shear) / u2,
        total_shear_stress=total)


def check_channel(drive: str, reynolds: float, velocity_walls: tuple[str, str], flux: float | None = None,
                  alpha: float | None = None, length: float | None = None, nx: int | None = None) -> None:
    """A channel's settings, or the one-line refusal naming the key (``physics.drive``, ``physics.reynolds``,
    ``physics.flux``, ``grid.walls.velocity``, ``initial.alpha``): a drive of :data:`DRIVES`; Re > 0; a fixed
    flux > 0; no-slip plates (a pressure gradient or a flux along free-slip plates accelerates the flow for ever:
    there is no wall stress to balance it); a Tollmien-Schlichting wavenumber that the streamwise period ``length``
    holds (alpha = 2 pi m / Lx, m a whole number) and its ``nx`` points resolve (m < Nx / 3, inside the 2/3 rule)."""
    if drive not in DRIVES:
        raise ConfigError("physics.drive", drive, f"one of {', '.join(DRIVES)}", "is not a channel's drive")
    if not (isinstance(reynolds, (int, float)) and math.isfinite(reynolds) and reynolds > 0):
        raise ConfigError("physics.reynolds", reynolds, "a number > 0 (Re = U h / nu)", "is out of range")
    if drive == "flux" and not (isinstance(flux, (int, float)) and math.isfinite(flux) and flux > 0):
        raise ConfigError("physics.flux", flux, "a bulk velocity > 0 for physics.drive = flux", "is out of range")
    if any(condition != "no-slip" for condition in velocity_walls):
        raise ConfigError("grid.walls.velocity", list(velocity_walls), f"[no-slip, no-slip] for physics.drive = "
                          f"{drive}: along free-slip plates nothing balances the drive", "is not a channel's plates")
    if alpha is None or length is None or nx is None:
        return
    modes = alpha * length / (2.0 * math.pi)
    whole = round(modes)
    if not (alpha > 0 and whole >= 1 and abs(modes - whole) <= 1e-9 * max(1.0, modes)):
        raise ConfigError("initial.alpha", alpha, f"2 pi m / Lx for a whole number m >= 1 (Lx = {length:g}: "
                          f"{2 * math.pi / length:g}, {4 * math.pi / length:g}, ...)", "is not a wavenumber of the box")
    if 3 * whole >= nx:
        raise ConfigError("initial.alpha", alpha, f"2 pi m / Lx with m < Nx / 3 = {nx / 3:g} (grid.shape's Nx = "
                          f"{nx}, dealiased by the 2/3 rule)", "is not resolved by the grid")
