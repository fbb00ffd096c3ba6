"""Implicit-explicit Runge-Kutta schemes as registered tableaux, for M dX/dt = L X + F(X, t) with M and L linear
(the walls' viscous and diffusive terms, and the mass operator of a fourth-order formulation) and F explicit
(advection, buoyancy, forcing): the ARS family of Ascher, Ruuth & Spiteri (1997), Dedalus's RK111, RK222 and RK443.

Each tableau here is singly diagonally implicit (every implicit stage has the one diagonal ``gamma``: one
factorisation of (M - gamma dt L) per time step size serves every stage) and stiffly accurate (the step's result
is the last stage's, ``b`` the last row of both tableaux). Stage i = 1..s solves

    (M - gamma dt L) X_i = M X_0 + dt sum_{j<i} a^E_ij F(X_j, t + c_j dt) + sum_{0<j<i} a^I_ij dt L X_j,

with the boundary conditions the solve imposes. dt L X_j is never formed from L: it is (M X_j - R_j) / gamma from
stage j's own equation (R_j its right-hand side), so no fourth derivative of a Chebyshev series multiplies
round-off by N^8.

A new scheme is one more :class:`Tableau` here and a line in :data:`simulator.time.schemes.SCHEMES`; the flow
core steps with whichever it is handed (:meth:`Tableau.advance`, which a multistep scheme of
:mod:`simulator.time.multistep` has too). Importable without JAX: :func:`step` imports it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tableau:
    """A singly diagonally implicit, stiffly accurate IMEX Runge-Kutta scheme of ``stages`` implicit stages:
    ``explicit[i - 1]`` the row a^E_i0 .. a^E_i,i-1 of stage i, ``implicit[i - 1]`` the row a^I_i1 .. a^I_i,i-1
    (the diagonal ``gamma`` apart, the column j = 0 zero in the ARS family), ``nodes`` c_0 .. c_(s-1) (the times of
    the explicit evaluations, in steps), ``order`` the order of accuracy."""

    name: str
    order: int
    gamma: float
    explicit: tuple[tuple[float, ...], ...]
    implicit: tuple[tuple[float, ...], ...]
    nodes: tuple[float, ...]

    @property
    def stages(self) -> int:
        return len(self.explicit)

    def empty(self, x: Any) -> None:
        """The history a step keeps for the next: none (a multistep scheme's,
        :meth:`simulator.time.multistep.Multistep.empty`, travels in the state)."""
        return None

    def advance(self, mass: Callable[[Any], Any], explicit: Callable[[Any, Any], Any],
                solve: Callable[[Any], Any] | None, dt: Any, factor: Callable[[Any], Callable[[Any], Any]]
                ) -> Callable[[Any, Any, Any], tuple[Any, Any]]:
        """:func:`step` as every IMEX scheme's step is called, ``advance(state, t, history) -> (state, history)``,
        the history None (:meth:`empty`): ``solve`` that of (M - gamma dt L) for this ``dt`` (None: ``factor(gamma
        dt)`` builds it)."""
        one = step(self, mass, explicit, factor(self.gamma * dt) if solve is None else solve, dt)
        return lambda x, t, history: (one(x, t), history)

    def response(self, forcing: Any, solve: Callable[[Any], Any], dt: Any) -> Any:
        """What one step of ``dt`` makes from rest of the constant explicit term ``forcing`` (a state whose mass
        operator is the identity, the mean flow's), ``solve`` that of (M - gamma dt L) for this ``dt``."""
        import jax

        return step(self, lambda x: x, lambda x, t: forcing, solve, dt)(jax.numpy.zeros_like(forcing), 0.0)


# ARS (2,2,2), sec. 2.6: L-stable, gamma = 1 - 1/sqrt(2), delta = 1 - 1/(2 gamma)
_G2 = 1.0 - 1.0 / math.sqrt(2.0)
_D2 = 1.0 - 1.0 / (2.0 * _G2)
RK222 = Tableau("rk222", 2, _G2, ((_G2,), (_D2, 1.0 - _D2)), ((), (1.0 - _G2,)), (0.0, _G2))

# ARS (4,4,3), sec. 2.8: third order, L-stable, gamma = 1/2 at every stage
RK443 = Tableau("rk443", 3, 0.5,
                ((1 / 2,), (11 / 18, 1 / 18), (5 / 6, -5 / 6, 1 / 2), (1 / 4, 7 / 4, 3 / 4, -7 / 4)),
                ((), (1 / 6,), (-1 / 2, 1 / 2), (3 / 2, -3 / 2, 1 / 2)),
                (0.0, 1 / 2, 2 / 3, 1 / 2))

# ARS (1,1,1), sec. 2.1: forward-backward Euler, first order
RK111 = Tableau("rk111", 1, 1.0, ((1.0,),), ((),), (0.0,))

#: the tableaux by name (:data:`simulator.time.schemes.SCHEMES` registers each as an ``imex`` scheme)
TABLEAUX: dict[str, Tableau] = {t.name: t for t in (RK111, RK222, RK443)}


def step(tableau: Tableau, mass: Callable[[Any], Any], explicit: Callable[[Any, Any], Any],
         solve: Callable[[Any], Any], dt: Any) -> Callable[[Any, Any], Any]:
    """One step of ``tableau``, ``step(state, t) -> state``, a pure function of pytrees of arrays (the per-mode
    solves batched inside ``solve``). ``mass(X)`` is M X, ``explicit(X, t)`` is F(X, t), and ``solve(R)`` solves
    (M - gamma dt L) X = R with the boundary conditions, built for this ``dt`` and the tableau's ``gamma``.

    The stages are one loop over the tableau's rows (``lax.fori_loop``), not s copies of the explicit terms and
    the solves: a step's program is the size of one stage's whatever the scheme. Each stage's contributions to
    the later stages' right-hand sides are summed as soon as they are formed, so that no F_j or dt L X_j is held
    past the stage that made it: the loop carries the s partial sums stacked ``(s, ...)`` on each leaf. A zero
    entry of the tableau adds its term times 0, which leaves the sum as it was."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    s, gamma = tableau.stages, tableau.gamma
    # a_E[k, i]: F_i's weight in stage k + 1; a_I[k, i] / gamma: that of M X_(i+1) - R_(i+1) (later stages only)
    a_e, a_i = np.zeros((s, s)), np.zeros((s, s))
    for k in range(s):
        a_e[k, :k + 1] = tableau.explicit[k]
        a_i[k, :k] = np.asarray(tableau.implicit[k], float) / gamma
    needs_mass = tuple(bool(a_i[:, i].any()) for i in range(s))

    def advance(state: Any, t: Any) -> Any:
        base = mass(state)
        weights_e = dt * jnp.asarray(a_e, jnp.result_type(dt, float))
        nodes = jnp.asarray(tableau.nodes, weights_e.dtype)

        def weighted(weights: jax.Array, x: jax.Array) -> jax.Array:
            return weights.reshape(-1, *[1] * x.ndim).astype(jnp.result_type(weights, x)) * x[None]

        def like(tree: Any, ref: Any) -> Any:
            # the loop's carry keeps the state's dtypes where a term promotes (a float32 state against float64
            # factors or parameters), as the step's result always did
            return jax.tree.map(lambda a, r: a.astype(r.dtype), tree, ref)

        def stage(i: jax.Array, carry: tuple[Any, Any]) -> tuple[Any, Any]:
            x, pending = carry
            f = explicit(x, t + nodes[i] * dt)
            pending = like(jax.tree.map(lambda p, f: p + weighted(weights_e[:, i], f), pending, f), pending)
            rhs = jax.tree.map(lambda p: p[i], pending)
            x = like(solve(rhs), state)
            if any(needs_mass):  # a^I_ki dt L X_i = a^I_ki (M X_i - R_i) / gamma, for the later stages k
                m = jax.lax.cond(jnp.asarray(needs_mass)[i], lambda x: like(mass(x), base),
                                 lambda x: jax.tree.map(jnp.zeros_like, base), x)
                weights_i = jnp.asarray(a_i, weights_e.dtype)[:, i]
                pending = like(jax.tree.map(lambda p, m, r: p + weighted(weights_i, m) + weighted(-weights_i, r),
                                            pending, m, rhs), pending)
            return x, pending

        stacked = jax.tree.map(lambda b: jnp.broadcast_to(b, (s, *b.shape)), base)
        return jax.lax.fori_loop(0, s, stage, (state, stacked))[0]

    return advance


def make_imex(eq: Any, stage_eq: Callable[..., Any], tableau: Any) -> Callable[..., Any]:
    """The step of an ``imex`` equation by ``tableau`` (a :class:`Tableau` or a
    :class:`~simulator.time.multistep.Multistep`; the factory :data:`simulator.time.schemes.SCHEMES` names):
    ``eq.imex_step``, its stage solves (banded) its own, on the layout the equation steps on (``eq.stepping()``: the
    state moved there and back around the step)."""
    def step(state: Any, t: Any, dt: Any, params: Any) -> Any:
        on = eq.stepping()
        return eq.from_stepping(on.imex_step(eq.to_stepping(state), t, dt, params, tableau))

    return step


def make_imex_steps(eq: Any, tableau: Any) -> Callable[..., Any]:
    """An IMEX scheme's chunk: the solves factored once for its dt (``eq.imex_factor``), each step settled as by
    :func:`simulator.time.integrators.bind`, all on the layout the equation steps on (``eq.stepping()``)."""
    from simulator.time.integrators import run_steps

    def steps(state, t, n, dt, params):
        on = eq.stepping()  # the layout the steps run on: the state moved there once a chunk, and back
        factored = on.imex_factor(dt, params, tableau)
        step = lambda s, t, dt, p: on.settle(on.imex_step(s, t, dt, p, tableau, factored), t, dt, p)  # noqa: E731
        return eq.from_stepping(run_steps(step, eq.to_stepping(state), t, n, dt, params))

    return steps
