"""What a channel study reports, from velocity fields between two plates (Pope 2000, ch. 7; Kim, Moin & Moser 1987).

Layout. ``samples`` holds velocity fields in physical space, shape ``(T, C, N1[, N2], Ny)``: T samples of a time
window, C = 2 components (u, v) on a plane (x, y) or C = 3 on a box, whose components follow its axes; the
wall-normal direction is the last axis, on the Ny ascending Gauss-Lobatto points from the plate at y = -h to the
one at y = +h (the run's basis's, :mod:`simulator.walls.bases`: Chebyshev's by default), and its velocity component
the last; x (streamwise) is the first periodic axis. Means <.> are over the periodic axes and the samples, so a
profile is a function of y alone; primes are departures from them. Derivatives across the plates are the basis's,
along the periodic axes Fourier.

* the bulk velocity U_b = (1 / 2h) int <u> dy (the basis's quadrature, exact for the grid's polynomial);
* the wall shear stress the fluid exerts on each plate along x: tau = nu dU/dy at the bottom, -nu dU/dy at the
  top (both positive in a Poiseuille channel; opposite in Couette flow, which drags each plate along the other);
* the friction velocity u_tau = sqrt(mean |tau| of the plates), Re_tau = u_tau h / nu and the viscous length
  delta_nu = nu / u_tau;
* profiles in wall units, y+ = (distance to the nearer plate) / delta_nu, U+ = <u> / u_tau, and the Reynolds
  stresses <u'u'>, <v'v'>, <w'w'>, <u'v'> over u_tau^2 (u along x, v across the plates, w spanwise);
* the total shear stress nu dU/dy - <u'v'> (in a statistically steady pressure-driven channel a straight line,
  tau_w at the bottom plate to -tau_w at the top);
* the kinetic-energy budget of the fluctuations, per unit volume, as profiles: production P = -<u'v'> dU/dy and
  dissipation eps = nu <d_j u'_i d_j u'_i>; of the mean flow, the dissipation nu (dU/dy)^2; and the work of the
  mean pressure gradient G U_b, which a steady channel's total dissipation balances;
* one-dimensional spectra along each periodic direction (:func:`channel_spectra`), one-sided, summing over k to
  the Reynolds stresses <u_i'u_i'>(y) (Parseval).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from simulator.walls.bases import CHEBYSHEV, Basis
from simulator.walls.channel import WallProfiles, wall_units


@dataclass(frozen=True)
class ChannelStatistics(WallProfiles):
    """A channel's statistics over one time window (module docstring): its wall-unit profiles
    (:class:`~simulator.walls.channel.WallProfiles`, each ``(Ny,)`` on the ascending points ``y``; ``spanwise`` None
    on a plane), the bulk velocity and the energy budget."""

    bulk_velocity: float
    production: np.ndarray
    dissipation: np.ndarray
    mean_dissipation: np.ndarray
    pressure_work: float


def _wall_derivative(values: np.ndarray, h: float, basis: Basis) -> np.ndarray:
    """d/dy over the last axis of values on ``basis``'s points of [-h, h] (same shape)."""
    return np.asarray(basis.backward(basis.derivative(basis.forward(values), 2.0 * h)))


def _periodic_derivative(values: np.ndarray, axis: int, length: float) -> np.ndarray:
    """d/dx along a periodic ``axis`` of period ``length`` by FFT; the Nyquist mode, odd-symmetric, dropped."""
    n = values.shape[axis]
    k = 2.0 * np.pi / length * np.fft.fftfreq(n, 1.0 / n)
    if n % 2 == 0:
        k[n // 2] = 0.0
    shape = [1] * values.ndim
    shape[axis] = n
    return np.fft.ifft(1j * k.reshape(shape) * np.fft.fft(values, axis=axis), axis=axis).real


def channel_statistics(samples: np.ndarray, nu: float, lengths: tuple[float, ...], h: float = 1.0,
                       pressure_gradient: float = 0.0, basis: Basis = CHEBYSHEV) -> ChannelStatistics:
    """The statistics of the module docstring from ``samples`` (shape ``(T, C, N1[, N2], Ny)``), the viscosity
    ``nu``, the periods ``lengths`` of the periodic axes (Lx[, Lz]), the half gap ``h`` and the mean pressure
    gradient G = -dP/dx that drove the window (its mean under a fixed flux); the samples on the points of ``basis``
    across the plates (:mod:`simulator.walls.bases`: a run's ``grid.walls.basis``, Chebyshev's by default)."""
    samples = np.asarray(samples, dtype=float)
    components, periodic = samples.shape[1], samples.ndim - 3
    if components != periodic + 1 or len(lengths) != periodic:
        raise ValueError(f"samples of shape {samples.shape}: (T, C, N1[, N2], Ny) with C = the number of axes, "
                         f"and one length per periodic axis (got {len(lengths)})")
    n = samples.shape[-1]
    over = (0, *range(2, 2 + periodic))  # the samples and the periodic axes of one component
    mean = samples.mean(axis=over, keepdims=True)  # (1, C, 1[, 1], Ny)
    fluctuation = samples - mean
    u_mean = mean[0, 0].reshape(n)
    slope = _wall_derivative(u_mean, h, basis)
    bulk = float(basis.weights(n, 2.0 * h) @ u_mean) / (2.0 * h)

    def stress(i: int, j: int) -> np.ndarray:
        return (fluctuation[:, i] * fluctuation[:, j]).mean(axis=tuple(range(0, 1 + periodic)))

    shear = stress(0, components - 1)
    gradients = [_periodic_derivative(fluctuation, 2 + a, lengths[a]) for a in range(periodic)]
    gradients.append(_wall_derivative(fluctuation, h, basis))
    dissipation = nu * sum((g**2).sum(axis=1) for g in gradients).mean(axis=tuple(range(0, 1 + periodic)))
    wall = wall_units(basis.points(n, (-h, h)), u_mean, stress(0, 0), stress(components - 1, components - 1),
                      shear, nu * slope - shear, nu, stress(1, 1) if components == 3 else None, h)
    return ChannelStatistics(
        **{f.name: getattr(wall, f.name) for f in fields(WallProfiles)}, bulk_velocity=bulk,
        production=-shear * slope, dissipation=dissipation,
        mean_dissipation=nu * slope**2, pressure_work=pressure_gradient * bulk)


def channel_spectra(samples: np.ndarray, lengths: tuple[float, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    """One-dimensional spectra of the fluctuations along each periodic axis of ``samples`` (layout of the module
    docstring; ``lengths`` the periods Lx[, Lz]): for axis a, the wavenumbers k = 2 pi m / L_a, m = 0..N_a/2
    (shape ``(M,)``), and E_ii(k; y) of shape ``(C, M, Ny)``, averaged over the samples and the other periodic
    axes, one-sided (the modes +-m added), so that sum_k E_ii(k; y) = <u_i'u_i'>(y)."""
    samples = np.asarray(samples, dtype=float)
    periodic = samples.ndim - 3
    fluctuation = samples - samples.mean(axis=(0, *range(2, 2 + periodic)), keepdims=True)
    found = []
    for a in range(periodic):
        axis, n = 2 + a, samples.shape[2 + a]
        power = np.abs(np.fft.rfft(fluctuation, axis=axis) / n) ** 2
        doubled = np.full(power.shape[axis], 2.0)
        doubled[0] = 1.0
        if n % 2 == 0:
            doubled[-1] = 1.0  # the Nyquist mode is its own partner
        shape = [1] * power.ndim
        shape[axis] = doubled.size
        power = power * doubled.reshape(shape)
        others = tuple(2 + b for b in range(periodic) if b != a)
        found.append((2.0 * np.pi / lengths[a] * np.arange(doubled.size), power.mean(axis=(0, *others))))
    return found
