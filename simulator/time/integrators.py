"""Time integrators: step factories over an equation (the schemes' data is in :mod:`.schemes`).

Each factory is ``make(equation) -> step`` where ``step(state, t, dt, params) -> state`` is a pure
function of the equation's state pytree (jit-able, no Python state). ``dt`` and ``params`` are traced,
so changing them never recompiles. Two families, by the protocol the equation follows:

* Runge-Kutta schemes for a semi-linear equation: a diagonal ``linear(params)`` operator, treated
  exactly with an integrating factor (exp(L dt) per mode), so the viscous term imposes no stability
  limit and a purely linear problem is integrated exactly, plus ``nonlinear(u, t, params)``.
* The kick-drift-kick split step for a split-step equation (Schrodinger-Poisson).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Step = Callable[[Any, jax.Array, jax.Array, Any], Any]


def _axpy(a: Any, x: Any, y: Any) -> Any:
    """a * x + y over matching state pytrees (a single array is a pytree of one leaf)."""
    return jax.tree.map(lambda xi, yi: a * xi + yi, x, y)


def _scale(a: Any, x: Any) -> Any:
    return jax.tree.map(lambda xi: a * xi, x)


def make_rk4(eq: Any) -> Step:
    """Classical 4th-order Runge-Kutta with an integrating factor (IF-RK4; Canuto et al. 2006, §4.4).

    ``E(v, tau) = eq.exp_linear(v, tau, params)`` applies exp(L tau) exactly. Memory: the state plus
    four stage derivatives.
    """

    def step(u, t, dt, params):
        def E(v, tau):
            return eq.exp_linear(v, tau, params)

        k1 = eq.nonlinear(u, t, params)
        k2 = eq.nonlinear(E(_axpy(dt / 2, k1, u), dt / 2), t + dt / 2, params)
        k3 = eq.nonlinear(_axpy(dt / 2, k2, E(u, dt / 2)), t + dt / 2, params)
        k4 = eq.nonlinear(_axpy(dt, E(k3, dt / 2), E(u, dt)), t + dt, params)
        stages = _axpy(2.0, E(jax.tree.map(jnp.add, k2, k3), dt / 2), jax.tree.map(jnp.add, E(k1, dt), k4))
        return _axpy(dt / 6, stages, E(u, dt))

    return step


# Carpenter & Kennedy (1994), NASA TM-109112: five-stage, fourth-order, 2N-storage Runge-Kutta.
_CK_A = (0.0, -567301805773 / 1357537059087, -2404267990393 / 2016746695238,
         -3550918686646 / 2091501179385, -1275806237668 / 842570457699)
_CK_B = (1432997174477 / 9575080441755, 5161836677717 / 13612068292357, 1720146321549 / 2090206949498,
         3134564353537 / 4481467310338, 2277821191437 / 14882151754819)
_CK_C = (0.0, 1432997174477 / 9575080441755, 2526269341429 / 6820363962896,
         2006345519317 / 3224310063776, 2802321613138 / 2924317926251, 1.0)


def make_lsrk4(eq: Any) -> Step:
    """Low-storage (2N) RK4 of Carpenter & Kennedy with an integrating factor.

    Two registers (state and accumulated increment) plus one derivative. The integrating factor is
    applied by moving both registers from stage time c_i to c_{i+1} (exp(L (c_{i+1} - c_i) dt),
    ``eq.exp_linear``), which is exact for a linear part that commutes with itself. The five stages
    run as a loop, not unrolled, so the compiler holds one stage's temporaries at a time.
    """

    def step(u, t, dt, params):
        a, b, c = (jnp.asarray(v, jnp.result_type(dt)) for v in (_CK_A, _CK_B, _CK_C))

        def stage(i, carry):
            u, q = carry
            q = _axpy(a[i], q, _scale(dt, eq.nonlinear(u, t + c[i] * dt, params)))
            u = _axpy(b[i], q, u)
            tau = (c[i + 1] - c[i]) * dt
            return eq.exp_linear(u, tau, params), eq.exp_linear(q, tau, params)

        return jax.lax.fori_loop(0, 5, stage, (u, jax.tree.map(jnp.zeros_like, u)))[0]

    return step


def make_kdk(eq: Any) -> Step:
    """Kick-drift-kick Strang splitting: second order, time-reversible, and unitary when both parts
    are (Strang 1968; for Schrodinger-Poisson e.g. Mocz et al. 2017, MNRAS 471, 4559).

    Each part acts over its own interval: kicks over [t, t + dt/2] and [t + dt/2, t + dt], the drift
    over [t, t + dt] (``eq.at(t)``: an explicitly time-dependent equation integrates its coefficients
    over exactly these intervals; the scheme stays symmetric, hence second order). An autonomous
    equation is the same at every time. Memory: the state and one transform's temporaries.
    """

    def step(state, t, dt, params):
        start = eq.at(t)
        state = start.kick(state, dt / 2, params)
        state = start.drift(state, dt, params)
        return eq.at(t + dt / 2).kick(state, dt / 2, params)

    return step


def integrator(name: str) -> Callable[[Any], Step]:
    """The step factory of scheme ``name`` (see :data:`simulator.time.schemes.SCHEMES`)."""
    from simulator.time.schemes import SCHEMES

    return SCHEMES[name].load()
