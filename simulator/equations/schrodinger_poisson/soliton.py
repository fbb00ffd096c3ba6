"""The Schrodinger-Poisson ground state (the soliton), by shooting, with NumPy (no JAX)."""

from __future__ import annotations

import functools
import math

import numpy as np


@functools.lru_cache(maxsize=1)
def soliton_profile(r_max: float = 12.0, dr: float = 4e-3) -> tuple[np.ndarray, np.ndarray, float]:
    """The Schrodinger-Poisson ground state in units nu = G = 1 with psi(0) = 1, by shooting.

    Solves phi'' + 2 phi'/r = 2 U phi, U'' + 2 U'/r = 4 pi phi^2 (U = V - E) from phi(0) = 1,
    bisecting on U(0) for the nodeless solution that decays. Returns (r, phi, r0) with r0 the radius
    where phi^2 = 1/2; phi is set to 0 past the point where the shot leaves the bound state (phi is
    below 1e-3 there). Scaling: lambda^2 phi(lambda r) is also a solution.
    """

    def rhs(r, y):
        p, dp, u, du = y
        return (dp, 2 * u * p - 2 * dp / r, du, 4 * math.pi * p * p - 2 * du / r)

    def shoot(u0):
        r, y, rs, ps = dr * 1e-3, (1.0, 0.0, u0, 0.0), [0.0], [1.0]
        while r < r_max:
            k1 = rhs(r, y)
            k2 = rhs(r + dr / 2, [a + dr / 2 * b for a, b in zip(y, k1, strict=True)])
            k3 = rhs(r + dr / 2, [a + dr / 2 * b for a, b in zip(y, k2, strict=True)])
            k4 = rhs(r + dr, [a + dr * b for a, b in zip(y, k3, strict=True)])
            y = tuple(a + dr / 6 * (b + 2 * c + 2 * d + e) for a, b, c, d, e in zip(y, k1, k2, k3, k4, strict=True))
            r += dr
            rs.append(r)
            ps.append(y[0])
            if y[0] < 0 or y[1] > 0:  # crossed zero (U(0) too deep) or turned up (too shallow)
                return (-1 if y[0] < 0 else 1), rs, ps
        return 0, rs, ps

    lo, hi = -5.0, 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        sign, rs, ps = shoot(mid)
        lo, hi = (mid, hi) if sign < 0 else (lo, mid)
    r, phi = np.array(rs), np.clip(np.array(ps), 0.0, None)
    phi[-1] = 0.0
    r0 = float(np.interp(-0.5, -(phi**2), r))  # phi^2 decreases monotonically on the kept range
    return r, phi, r0
