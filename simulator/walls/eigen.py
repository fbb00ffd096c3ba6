"""Linear eigenvalue problems between two plates, solved densely (numpy/scipy) by Chebyshev collocation: the
checks and initial conditions of the walled runs, independent of the banded solvers that step them.

* Rayleigh-Benard onset (Chandrasekhar 1961, ch. II): at marginal stability (D^2 - k^2)^2 W = Ra k^2 Theta,
  (D^2 - k^2) Theta = -W on a layer of unit depth, Theta = 0 at the plates and W = DW = 0 (no-slip) or W = D^2 W = 0
  (free-slip); Ra(k) is the smallest positive eigenvalue, minimised over k: Ra_c = 1707.762 at k_c = 3.117
  (no-slip), 27 pi^4/4 at pi/sqrt(2) (free-slip). Away from onset, the growth rate of a mode in free-fall units
  (the time-dependent problem, a second formulation: it vanishes on the marginal curve).
* The Orr-Sommerfeld problem of a parallel flow U(y) between plates at y = -1, 1 (Orszag 1971): (U - c)(D^2 -
  alpha^2) phi - U'' phi = (D^2 - alpha^2)^2 phi / (i alpha Re), phi = D phi = 0, for perturbations psi = phi(y)
  exp(i alpha (x - c t)); plane Poiseuille flow at Re = 10^4, alpha = 1 has the Tollmien-Schlichting wave c =
  0.23752649 + 0.00373967 i.

Clamped conditions (W = DW = 0) are built in by writing W = (1 - x^2) q(x), q = 0 at the ends, on the interior
points (Trefethen 2000, ch. 14), and the same polynomial's second derivative is used beside its fourth, so no
spurious eigenvalue is made; the collocation derivative is Trefethen's (2000, ch. 6).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.optimize

NO_SLIP = "no-slip"
FREE_SLIP = "free-slip"
WALLS = (NO_SLIP, FREE_SLIP)
PROFILES = {"poiseuille": (lambda y: 1.0 - y**2, lambda y: -2.0 + 0.0 * y),
            "couette": (lambda y: y, lambda y: 0.0 * y),
            "rest": (lambda y: 0.0 * y, lambda y: 0.0 * y)}


def collocation(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The points x_j = cos(pi j / n), j = 0..n (descending) and the derivative matrix on them (Trefethen 2000,
    cheb.m): shapes ``(n + 1,)`` and ``(n + 1, n + 1)``."""
    x = np.cos(np.pi * np.arange(n + 1) / n)
    c = np.ones(n + 1)
    c[[0, -1]] = 2.0
    c *= (-1.0) ** np.arange(n + 1)
    dx = x[:, None] - x[None, :]
    d = np.outer(c, 1.0 / c) / (dx + np.eye(n + 1))
    return x, d - np.diag(d.sum(1))


def _operators(n: int, clamped: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interior points x and d^2/dx^2, d^4/dx^4 on them, of the polynomial vanishing at the ends (``clamped``: its
    slope too, as (1 - x^2) q; else the fourth derivative is the Dirichlet second derivative applied twice)."""
    x, d = collocation(n)
    d2 = d @ d
    inner = slice(1, n)
    if not clamped:
        second = d2[inner, inner]
        return x[inner], second, second @ second
    s = np.diag(np.concatenate([[0.0], 1.0 / (1.0 - x[inner] ** 2), [0.0]]))
    d3, d4 = d2 @ d, d2 @ d2
    second = (np.diag(1 - x**2) @ d2 - 4 * np.diag(x) @ d + -2 * np.eye(n + 1)) @ s
    fourth = (np.diag(1 - x**2) @ d4 - 8 * np.diag(x) @ d3 - 12 * d2) @ s
    return x[inner], second[inner, inner], fourth[inner, inner]


def rayleigh_number(k: float, walls: str = NO_SLIP, n: int = 40) -> float:
    """The marginal Rayleigh number of the horizontal wavenumber ``k`` (layer depth 1), both plates ``walls``."""
    if walls not in WALLS:
        raise ValueError(f"walls {walls!r}: one of {', '.join(WALLS)}")
    _, d2, d4 = _operators(n, walls == NO_SLIP)
    _, t2, _ = _operators(n, False)  # Theta = 0 at the plates
    scale = 2.0  # z = x/2 on a layer of unit depth: d/dz = 2 d/dx
    eye = np.eye(n - 1)
    l4 = scale**4 * d4 - 2 * k**2 * scale**2 * d2 + k**4 * eye
    l2 = scale**2 * t2 - k**2 * eye
    a = np.block([[l4, np.zeros_like(eye)], [eye, l2]])
    b = np.block([[np.zeros_like(eye), k**2 * eye], [np.zeros_like(eye), np.zeros_like(eye)]])
    inverse = scipy.linalg.eigvals(b, a)  # 1/Ra: finite, the largest positive one is the smallest Ra
    real = inverse[np.abs(inverse.imag) < 1e-9 * np.abs(inverse).max()].real
    return float(1.0 / real.max())


def rayleigh_benard_onset(walls: str = NO_SLIP, n: int = 40) -> tuple[float, float]:
    """The critical Rayleigh number and wavenumber (Ra_c, k_c): :func:`rayleigh_number` minimised over k."""
    found = scipy.optimize.minimize_scalar(lambda k: rayleigh_number(k, walls, n), bounds=(1.5, 4.5),
                                           method="bounded", options={"xatol": 1e-9})
    return float(found.fun), float(found.x)


def rayleigh_benard_growth(ra: float, pr: float, k: float, walls: str = NO_SLIP, n: int = 40
                           ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """The fastest-growing linear mode of Rayleigh-Benard convection in free-fall units (Dedalus's example: depth
    1, nu = (Ra/Pr)^(-1/2), kappa = (Ra Pr)^(-1/2), buoyancy b = 1 - z conducting) at horizontal wavenumber ``k``:
    d/dt lap w = nu lap^2 w - k^2 b, d/dt b = kappa lap b + w, b = 0 and no-slip or free-slip plates. Returns the
    growth rate sigma (real: exchange of stabilities), the points z (ascending, 0 to 1) and the mode's w and b
    there, scaled to max |w| = 1; shapes ``(n + 1,)``. sigma = 0 on the marginal curve of
    :func:`rayleigh_number`."""
    if walls not in WALLS:
        raise ValueError(f"walls {walls!r}: one of {', '.join(WALLS)}")
    _, d2, d4 = _operators(n, walls == NO_SLIP)
    _, t2, _ = _operators(n, False)
    nu, kappa = (ra / pr) ** -0.5, (ra * pr) ** -0.5
    eye, zero = np.eye(n - 1), np.zeros((n - 1, n - 1))
    lap_w = 4 * d2 - k**2 * eye  # z = (x + 1)/2: d/dz = 2 d/dx
    a = np.block([[nu * (16 * d4 - 8 * k**2 * d2 + k**4 * eye), -(k**2) * eye], [eye, kappa * (4 * t2 - k**2 * eye)]])
    sigma, vectors = scipy.linalg.eig(a, np.block([[lap_w, zero], [zero, eye]]))
    best = np.argmax(sigma.real)
    mode = np.zeros((2, n + 1), complex)
    mode[:, 1:-1] = vectors[:, best].reshape(2, n - 1)
    mode = mode[:, ::-1] / mode[0, np.argmax(np.abs(mode[0]))]
    return float(sigma[best].real), 0.5 * (collocation(n)[0][::-1] + 1), mode[0].real, mode[1].real


def orr_sommerfeld(re: float, alpha: float, profile: str = "poiseuille", n: int = 120
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The eigenvalues c of the Orr-Sommerfeld problem of ``profile`` (U = 1 - y^2, y, or 0) at Reynolds number
    ``re`` (the centreline or plate velocity and the half gap) and streamwise wavenumber ``alpha``, the least
    stable first (largest Im c, growth rate alpha Im c), with the eigenfunctions phi on the points: shapes
    ``(n - 1,)``, ``(n + 1,)`` (y ascending, -1 to 1) and ``(n - 1, n + 1)``."""
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r}: one of {', '.join(PROFILES)}")
    y, d2, d4 = _operators(n, True)
    u, u2 = (f(y) for f in PROFILES[profile])
    eye = np.eye(n - 1)
    lap = d2 - alpha**2 * eye
    a = np.diag(u) @ lap - np.diag(u2) - (d4 - 2 * alpha**2 * d2 + alpha**4 * eye) / (1j * alpha * re)
    c, vectors = scipy.linalg.eig(a, lap)
    order = np.argsort(-c.imag)
    phi = np.zeros((n - 1, n + 1), complex)
    phi[:, 1:-1] = vectors[:, order].T
    return c[order], collocation(n)[0][::-1], phi[:, ::-1]


def tollmien_schlichting(re: float = 1e4, alpha: float = 1.0, n: int = 120
                         ) -> tuple[complex, np.ndarray, np.ndarray]:
    """The least stable Orr-Sommerfeld mode of plane Poiseuille flow (the Tollmien-Schlichting wave at Re = 10^4):
    c, the points y (ascending) and its stream function phi(y), scaled to max |phi| = 1, real there. The
    velocity is (u, v) = (D phi, -i alpha phi) exp(i alpha (x - c t))."""
    c, y, phi = orr_sommerfeld(re, alpha, "poiseuille", n)
    mode = phi[0]
    peak = mode[np.argmax(np.abs(mode))]
    return complex(c[0]), y, mode / peak
