"""Implicit-explicit multistep schemes as registered coefficients, for M dX/dt = L X + F(X, t) as the tableaux of
:mod:`simulator.time.imex` solve it: the semi-implicit backward differentiation formula SBDF2 of Ascher, Ruuth &
Wetton (1995), Dedalus's SBDF2. One solve of (M - gamma dt L) X = R a step, the solve the tableaux' stages make, and
one explicit evaluation: the cheapest second-order scheme of the walls' family, at the price of two states' worth of
history (M X and F of the step before).

With w = dt_n / dt_(n-1) (the variable-step form of Wang & Ruuth 2008, J. Comput. Math. 26, 838; w = 1 for a fixed
dt), a step from X^n to X^(n+1) solves

    (M - gamma dt L) X^(n+1) = a_0 M X^n + a_1 M X^(n-1) + dt (b_0 F^n + b_1 F^(n-1)),

    gamma = (1 + w) / (1 + 2 w),  a_0 = b_0 = (1 + w)^2 / (1 + 2 w),  a_1 = -w^2 / (1 + 2 w),
    b_1 = -w (1 + w) / (1 + 2 w);

at w = 1: (M - 2/3 dt L) X^(n+1) = 4/3 M X^n - 1/3 M X^(n-1) + 4/3 dt F^n - 2/3 dt F^(n-1).

The history (M X^(n-1), F^(n-1) and dt_(n-1): a :class:`History`) travels in the state, as leaves of it: a chunk
of steps carries it to the next and a checkpoint stores it, so a run's result does not depend on where its chunks
end and a resumed run continues as the uninterrupted one did. Where none is held (dt_(n-1) = 0: a run's first
step, or a state read from fields, another grid's or a snapshot's) the step is the start step SBDF1, (M - dt L)
X^(n+1) = M X^n + dt F^n, as Dedalus starts; where dt changed (a chunk shortened to land on an output time, a
controlled dt) the step takes the variable-step coefficients and factors its own solve (the chunk's
factorisation is for the fixed dt's gamma), and past the ratio of zero-stability ``max_ratio`` it restarts from
SBDF1.

A new multistep scheme of one step of history is one more :class:`Multistep` here (its coefficients as a function
of w) and a line in :data:`simulator.time.schemes.SCHEMES`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

#: (gamma, (a_0, a_1), (b_0, b_1)) of a step whose dt is w times the previous one's
Coefficients = tuple[Any, tuple[Any, Any], tuple[Any, Any]]


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class History:
    """What a step of a one-step-history scheme keeps for the next: ``mass`` M X^(n-1) and ``explicit`` F^(n-1), each
    shaped as the state, and ``dt`` dt_(n-1), ``(1,)`` of the state's real dtype (0: no history held; one entry, not
    a scalar: a checkpoint's datasets are arrays)."""

    mass: Any
    explicit: Any
    dt: Any


def sbdf2_coefficients(w: Any) -> Coefficients:
    """The variable-step SBDF2's coefficients (module docstring) for the step ratio ``w`` (a scalar, traced)."""
    d = 1 + 2 * w
    return (1 + w) / d, ((1 + w) ** 2 / d, -w**2 / d), ((1 + w) ** 2 / d, -w * (1 + w) / d)


@dataclass(frozen=True)
class Multistep:
    """An IMEX multistep scheme with one step of history: its ``name``, ``order``, ``gamma`` (the diagonal of a step of
    the same dt as the one before, which the chunk's factorisation is built for), ``coefficients(w)`` (its
    :data:`Coefficients` for the step ratio w), and ``max_ratio``: a larger ratio restarts from SBDF1."""

    name: str
    order: int
    gamma: float
    coefficients: Callable[[Any], Coefficients]
    max_ratio: float

    def empty(self, x: Any) -> Any:
        """A :class:`History` of none held for the state ``x`` (a pytree of arrays; zeros shaped as it)."""
        leaf = jax.tree.leaves(x)[0]
        zeros = jax.tree.map(jnp.zeros_like, x)
        return History(zeros, zeros, jnp.zeros((1,), jnp.finfo(leaf.dtype).dtype))

    def advance(self, mass: Callable[[Any], Any], explicit: Callable[[Any, Any], Any],
                solve: Callable[[Any], Any] | None, dt: Any, factor: Callable[[Any], Callable[[Any], Any]]
                ) -> Callable[[Any, Any, Any], tuple[Any, Any]]:
        """One step, ``advance(state, t, history) -> (state, history)``, a pure function of pytrees of arrays (the
        history a :class:`History`). ``mass(X)`` is M X, ``explicit(X, t)`` F(X, t); ``solve(R)`` solves (M - gamma
        dt L) X = R for this scheme's :attr:`gamma` and ``dt`` (None: none built), ``factor(g)`` builds the solve of
        (M - g L) X = R for a traced g (a step of another gamma: the start step, a changed dt)."""

        def advance(x: Any, t: Any, history: Any) -> tuple[Any, Any]:
            m, f = mass(x), explicit(x, t)
            before = history.dt[0].astype(jnp.result_type(dt))
            w = dt / jnp.where(before > 0, before, dt)
            held = (before > 0) & (w <= self.max_ratio)
            gamma, (a0, a1), (b0, b1) = self.coefficients(w)
            # the start step, SBDF1: (M - dt L) X = M X^n + dt F^n
            gamma, a0, a1, b0, b1 = (jnp.where(held, c, s) for c, s in zip((gamma, a0, a1, b0, b1),
                                                                          (1.0, 1.0, 0.0, 1.0, 0.0), strict=True))
            rhs = jax.tree.map(lambda mn, mp, fn, fp: a0 * mn + a1 * mp + dt * (b0 * fn + b1 * fp),
                               m, history.mass, f, history.explicit)
            if solve is None:
                new = factor(gamma * dt)(rhs)
            else:  # the chunk's factorisation where this step's gamma dt is the one it was built for
                new = jax.lax.cond(held & (dt == before), solve, lambda r: factor(gamma * dt)(r), rhs)
            return new, History(m, f, jnp.full_like(history.dt, dt))

        return advance

    def response(self, forcing: Any, solve: Callable[[Any], Any], dt: Any) -> Any:
        """The response of a step of ``dt`` to the constant ``forcing`` taken at the new time level (implicit, as a
        fixed flux's pressure gradient is): solve(gamma dt forcing), ``solve`` that of :meth:`advance` for
        :attr:`gamma`. The step's own gamma where it differs (its start step, a changed dt) is not used: what the
        response is for, a flux held exactly, holds with any, and that one step's drive is off by O(dt^2)."""
        return solve(self.gamma * dt * forcing)


# SBDF2 (Ascher, Ruuth & Wetton 1995, SIAM J. Numer. Anal. 32, 797): second order; variable-step BDF2 is
# zero-stable for step ratios below 1 + sqrt(2) (Grigorieff 1983)
SBDF2 = Multistep("sbdf2", 2, 2 / 3, sbdf2_coefficients, 1 + math.sqrt(2.0))
