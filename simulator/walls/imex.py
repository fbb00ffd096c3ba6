"""The implicit-explicit Runge-Kutta scheme (2,2,2) of Ascher, Ruuth & Spiteri (1997, sec. 2.6), Dedalus's RK222:
second order, two implicit stages of one diagonal gamma = 1 - 1/sqrt(2) (one factorisation per time step size),
L-stable and stiffly accurate, for M dX/dt = L X + F(X, t) with M and L linear (the walls' viscous and diffusive
terms, and the mass operator of a fourth-order formulation) and F explicit (advection, buoyancy, forcing).

Tableaux (c; A_explicit; A_implicit), delta = 1 - 1/(2 gamma):

    0     | 0                  | 0
    gamma | gamma  0           | 0  gamma
    1     | delta  1-delta  0  | 0  1-gamma  gamma

Each stage solves (M - gamma dt L) X_i = M X_0 + dt sum_{j<i} (a^E_ij F_j + a^I_ij L X_j), with the boundary
conditions the solve imposes. L X_j is never formed: dt L X_j = (M X_j - R_j)/gamma from the stage's own equation
(R_j its right-hand side), so no fourth derivative of a Chebyshev series multiplies round-off by N^8.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax

#: the implicit stages' diagonal, which the stage solve is built for: (M - GAMMA dt L) X = R
GAMMA = 1.0 - 1.0 / math.sqrt(2.0)
DELTA = 1.0 - 1.0 / (2.0 * GAMMA)
ORDER = 2


def _combine(*terms: tuple[float, Any]) -> Any:
    """sum_i c_i x_i over pytrees ``x_i``."""
    return jax.tree.map(lambda *xs: sum(c * x for (c, _), x in zip(terms, xs, strict=True)), *(x for _, x in terms))


def rk222(mass: Callable[[Any], Any], explicit: Callable[[Any, Any], Any], solve: Callable[[Any], Any],
          dt: float) -> Callable[[Any, Any], Any]:
    """One step of ARS (2,2,2), ``step(state, t) -> state``, a pure jitted function of pytrees of arrays (the
    per-mode solves batched inside ``solve``). ``mass(X)`` is M X, ``explicit(X, t)`` is F(X, t), and ``solve(R)``
    solves (M - GAMMA dt L) X = R with the boundary conditions, built for this ``dt``."""

    @jax.jit
    def step(state: Any, t: Any) -> Any:
        base = mass(state)
        f0 = explicit(state, t)
        rhs1 = _combine((1.0, base), (dt * GAMMA, f0))
        x1 = solve(rhs1)
        # the second stage's right-hand side but for F(X_1), summed before F(X_1) is formed: M X_0, F_0, X_1's
        # right-hand side and (1 - gamma) dt L X_1 (= (1 - gamma)(M X_1 - R_1)/gamma) are then no longer held beside
        # the explicit terms' work space
        known = _combine((1.0, base), (dt * DELTA, f0), ((1.0 - GAMMA) / GAMMA, mass(x1)),
                         (-(1.0 - GAMMA) / GAMMA, rhs1))
        f1 = explicit(x1, t + GAMMA * dt)
        return solve(_combine((1.0, known), (dt * (1.0 - DELTA), f1)))

    return step
