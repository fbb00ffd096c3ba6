"""Time integrators, chosen by name from :data:`INTEGRATORS`.

Each entry is a factory ``make(equation) -> step`` where ``step(state, t, dt, params) -> state`` is a
pure function of the equation's state pytree (jit-able, no Python state). ``dt`` and ``params`` are
traced, so changing them never recompiles. Two families:

* Runge-Kutta schemes for a :class:`SemiLinear` equation: a diagonal ``linear(params)`` operator,
  treated exactly with an integrating factor (exp(L dt) per mode), so the viscous term imposes no
  stability limit and a purely linear problem is integrated exactly, plus ``nonlinear(u, t, params)``.
* The kick-drift-kick split step for a :class:`SplitStep` equation (Schrodinger-Poisson).

Which equation takes which scheme is declared by the equation (``integrators``; the first is its
default) and checked when the config is validated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import jax
import jax.numpy as jnp

Step = Callable[[Any, jax.Array, jax.Array, Any], Any]


class SemiLinear(Protocol):
    """du/dt = L u + N(u, t): L diagonal in k-space (broadcasts against u_hat), N nonlinear."""

    def linear(self, params: Any) -> jax.Array: ...

    def nonlinear(self, u_hat: jax.Array, t: jax.Array, params: Any) -> jax.Array: ...


def make_rk4(eq: SemiLinear) -> Step:
    """Classical 4th-order Runge-Kutta with an integrating factor (IF-RK4; Canuto et al. 2006, §4.4).

    Memory: the state plus four stage derivatives.
    """

    def step(u, t, dt, params):
        lin = eq.linear(params)
        half = jnp.exp(lin * (dt / 2))
        full = half * half
        k1 = eq.nonlinear(u, t, params)
        k2 = eq.nonlinear(half * (u + (dt / 2) * k1), t + dt / 2, params)
        k3 = eq.nonlinear(half * u + (dt / 2) * k2, t + dt / 2, params)
        k4 = eq.nonlinear(full * u + dt * half * k3, t + dt, params)
        return full * u + (dt / 6) * (full * k1 + 2 * half * (k2 + k3) + k4)

    return step


# Carpenter & Kennedy (1994), NASA TM-109112: five-stage, fourth-order, 2N-storage Runge-Kutta.
_CK_A = (0.0, -567301805773 / 1357537059087, -2404267990393 / 2016746695238,
         -3550918686646 / 2091501179385, -1275806237668 / 842570457699)
_CK_B = (1432997174477 / 9575080441755, 5161836677717 / 13612068292357, 1720146321549 / 2090206949498,
         3134564353537 / 4481467310338, 2277821191437 / 14882151754819)
_CK_C = (0.0, 1432997174477 / 9575080441755, 2526269341429 / 6820363962896,
         2006345519317 / 3224310063776, 2802321613138 / 2924317926251, 1.0)


def make_lsrk4(eq: SemiLinear) -> Step:
    """Low-storage (2N) RK4 of Carpenter & Kennedy with an integrating factor.

    Two registers (state and accumulated increment) plus one derivative. The integrating factor is
    applied by moving both registers from stage time c_i to c_{i+1} (multiplying by
    exp(L (c_{i+1} - c_i) dt)), which is exact for the diagonal L. The five stages run as a loop, not
    unrolled, so the compiler holds one stage's temporaries at a time.
    """

    def step(u, t, dt, params):
        lin = eq.linear(params)
        a, b, c = (jnp.asarray(v, jnp.result_type(dt)) for v in (_CK_A, _CK_B, _CK_C))

        def stage(i, carry):
            u, q = carry
            q = a[i] * q + dt * eq.nonlinear(u, t + c[i] * dt, params)
            u = u + b[i] * q
            shift = jnp.exp(lin * ((c[i + 1] - c[i]) * dt))
            return shift * u, shift * q

        return jax.lax.fori_loop(0, 5, stage, (u, jnp.zeros_like(u)))[0]

    return step


class SplitStep(Protocol):
    """H = T + W with exactly solvable parts: ``drift`` evolves under T alone, ``kick`` under W alone."""

    def kick(self, state: Any, dt: jax.Array, params: Any) -> Any: ...

    def drift(self, state: Any, dt: jax.Array, params: Any) -> Any: ...


def make_kdk(eq: SplitStep) -> Step:
    """Kick-drift-kick Strang splitting: second order, time-reversible, and unitary when both parts
    are (Strang 1968; for Schrodinger-Poisson e.g. Mocz et al. 2017, MNRAS 471, 4559).

    Memory: the state and one transform's temporaries.
    """

    def step(state, t, dt, params):
        state = eq.kick(state, dt / 2, params)
        state = eq.drift(state, dt, params)
        return eq.kick(state, dt / 2, params)

    return step


INTEGRATORS: dict[str, Callable[[Any], Step]] = {"rk4": make_rk4, "lsrk4": make_lsrk4, "kdk": make_kdk}
ORDERS: dict[str, int] = {"rk4": 4, "lsrk4": 4, "kdk": 2}
