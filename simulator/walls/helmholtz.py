"""Helmholtz problems across the plates, (alpha - d^2/dz^2) u = f on [a, b] with u or du/dz given at each plate,
one per horizontal mode (alpha = 1/(gamma dt nu) + k^2 in an implicit viscous stage), banded and batched.

The method: a Galerkin basis that satisfies homogeneous conditions exactly (Shen 1994, 1995), phi_j = T_j +
beta_j T_{j+2}, j = 0..N-2, beta_j = -1 for Dirichlet and -(j/(j+2))^2 for Neumann, plus a lift of the plates'
values into T_0..T_2; the equation is multiplied by the quasi-inverse B of d^2/dx^2 (B d^2/dx^2 = I on T_k, k >=
2: Julien & Watson 2009), whose rows k = 2..N are banded, c_{k-2}/(4k(k-1)), -1/(2(k^2-1)), 1/(4k(k+1)) on
T_{k-2}, T_k, T_{k+2} (Gottlieb & Orszag 1977). Rows and unknowns split by parity, each system has one sub-diagonal
and two super-diagonals: :mod:`simulator.walls.banded` factors it once per mode and dt, O(N) in storage and work.
The solution is exact for a polynomial solution of degree N (the residual lies in the span of T_{N+1}'' and
T_{N+2}'', a tau method's).

Mixed plates (a value at one plate, a slope at the other: a free-slip plate's tangential velocity, a fixed flux
above a fixed temperature) are the Dirichlet problem plus one homogeneous solution (an influence function:
Kleiser & Schumann 1980): u = u_D + c h, u_D solved with the given value at the Dirichlet plate and 0 at the other,
h the solution of (alpha - d^2/dz^2) h = 0 with h = 0 at the Dirichlet plate and h' = 1 at the Neumann one, and c
the slope still missing there. The Dirichlet factors serve both, so a mixed problem stores N + 1 more coefficients
per mode and costs one dot product more per solve.

Layout: coefficients ``(..., N + 1)`` on the last axis (:mod:`simulator.walls.chebyshev`), ``alpha`` of the
leading shape ``(...)``; the factors (:class:`simulator.walls.banded.Factors`, rows first) ``(n_p, ..., 2, 4)`` for
the two parities of ceil((N - 1)/2) rows each, n_p that count padded to :func:`simulator.walls.banded.padded`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from simulator.walls import banded
from simulator.walls.chebyshev import slopes

DIRICHLET = "dirichlet"
NEUMANN = "neumann"
CONDITIONS = (DIRICHLET, NEUMANN)


def plate_conditions(condition: str | tuple[str, str]) -> tuple[str, str]:
    """The (lower, upper) conditions of ``condition``: one for both plates, or one per plate."""
    pair = (condition, condition) if isinstance(condition, str) else tuple(condition)
    if len(pair) != 2 or any(c not in CONDITIONS for c in pair):
        raise ValueError(f"condition {condition!r}: one of {', '.join(CONDITIONS)}, or a pair of them (lower, upper)")
    return pair


def galerkin_beta(n: int, condition: str) -> np.ndarray:
    """beta_j of the basis phi_j = T_j + beta_j T_{j+2}, j = 0..n-3, for ``n`` coefficients: shape ``(n - 2,)``."""
    j = np.arange(n - 2, dtype=float)
    return -np.ones(n - 2) if condition == DIRICHLET else -((j / (j + 2)) ** 2)


def quasi_inverse(n: int) -> np.ndarray:
    """The rows k = 0..n-1 of the second-integral quasi-inverse on T_{k-2}, T_k, T_{k+2}: shape ``(n, 3)``, zero
    for k < 2 (those rows carry the boundary conditions instead)."""
    k = np.arange(n, dtype=float)
    rows = np.zeros((n, 3))
    inner = k >= 2
    kk = k[inner]
    rows[inner, 0] = np.where(kk == 2, 2.0, 1.0) / (4 * kk * (kk - 1))
    rows[inner, 1] = -1.0 / (2 * (kk**2 - 1))
    rows[inner, 2] = 1.0 / (4 * kk * (kk + 1))
    return rows


def apply_quasi_inverse(f: jnp.ndarray) -> jnp.ndarray:
    """(B f)_k for k = 2..N of coefficients ``f[..., N + 1]``: shape ``(..., N - 1)``."""
    q = quasi_inverse(f.shape[-1])[2:]
    zeros = jnp.zeros_like(f[..., :2])
    above = jnp.concatenate([f[..., 4:], zeros], -1)
    return q[:, 0] * f[..., :-2] + q[:, 1] * f[..., 2:] + q[:, 2] * above


def _parity_bands(alpha: jnp.ndarray, n: int, condition: str) -> jnp.ndarray:
    """The banded systems of rows k = 2..N (module's layout): ``(..., 2, n_p, 4)``, the odd system padded by an
    identity row when it is the shorter."""
    beta = galerkin_beta(n, condition)
    q = quasi_inverse(n)
    big_n = n - 1
    a = alpha[..., None]
    k = np.arange(2, n)
    # the coefficient of the unknown j = k - 4, k - 2, k, k + 2 in row k (zero where j is not in 0..N-2)
    beta_at = np.concatenate([beta, np.zeros(4)])  # beta_j, zero past the basis
    qm, q0, qp = q[k, 0], q[k, 1], q[k, 2]
    entries = jnp.stack([
        a * (qm * np.where(k >= 4, beta_at[np.maximum(k - 4, 0)], 0.0)),
        a * qm - beta_at[k - 2] + a * (q0 * beta_at[k - 2]),
        jnp.where(k <= big_n - 2, -1.0 + a * q0 + a * (qp * beta_at[k]), 0.0),
        jnp.where(k + 2 <= big_n - 2, a * qp, 0.0),
    ], -1)  # (..., N - 1, 4)
    size = (n - 1) // 2  # the even rows' count, of the n - 2 rows k = 2..N
    parts = []
    for parity in (0, 1):
        part = entries[..., parity::2, :]
        if part.shape[-2] < size:
            identity = jnp.zeros((*part.shape[:-2], 1, 4)).at[..., 1].set(1.0)
            part = jnp.concatenate([part, identity], -2)
        parts.append(part)
    return jnp.stack(parts, -3)


def parity_rows(v: jnp.ndarray, size: int) -> tuple[jnp.ndarray, jnp.ndarray]:
    """``v[..., m]`` as the banded solves' right-hand side (:func:`simulator.walls.banded.solve`): its row 0
    ``(..., 2)`` and its rows 1..size-1 with a zero row after them ``(size, ..., 2)``, entry 2 i + p at row i of
    parity p, the shorter parity padded with zeros."""
    later = jnp.concatenate([v[..., 2:], jnp.zeros((*v.shape[:-1], 2 * size - v.shape[-1] + 2), v.dtype)], -1)
    return v[..., :2], jnp.moveaxis(later.reshape(*v.shape[:-1], size, 2), -2, 0)


def from_parity_rows(v: jnp.ndarray, m: int) -> jnp.ndarray:
    """The inverse of :func:`parity_rows` for ``m`` entries."""
    v = jnp.moveaxis(v, 0, -2)
    return v.reshape(*v.shape[:-2], -1)[..., :m]


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Helmholtz:
    """The factored Helmholtz problems (alpha - d^2/dz^2) u = f of the boundary ``condition`` (one for both plates,
    or a (lower, upper) pair) on an interval of ``length``, one per entry of ``alpha``'s shape: build with
    :meth:`build`, then :meth:`solve` as often as the right-hand sides change (an implicit stage). A pytree: the
    factors, alpha (on [-1, 1]) and a mixed problem's influence function are its leaves."""

    factors: banded.Factors
    alpha: jnp.ndarray
    influence: jnp.ndarray | None  # mixed plates: h (..., N + 1), h = 0 at the Dirichlet plate, h' = 1 at the other
    n: int = field(metadata={"static": True})
    condition: str | tuple[str, str] = field(metadata={"static": True})
    length: float = field(metadata={"static": True})

    @classmethod
    def build(cls, alpha: jnp.ndarray | float, n: int, condition: str | tuple[str, str] = DIRICHLET,
              length: float = 2.0) -> Helmholtz:
        """Factor the problems for ``n`` coefficients (n >= 4) and each alpha (a Neumann problem at both plates
        needs alpha > 0: at alpha = 0 its constant is undetermined)."""
        lower, upper = plate_conditions(condition)
        scaled = jnp.asarray(alpha, float) * (0.25 * length**2)  # on x in [-1, 1]: d/dz = (2/length) d/dx
        first = lower if lower == upper else DIRICHLET
        return cls(banded.factor(cls._bands(scaled, n, first)), scaled, None, n, first, length).with_conditions(
            (lower, upper))

    @staticmethod
    def _bands(alpha: jnp.ndarray, n: int, condition: str) -> jnp.ndarray:
        """The parity-split banded systems of ``alpha`` (on [-1, 1]) for ``n`` coefficients and ``condition`` at both
        plates, in :mod:`simulator.walls.banded`'s layout: the Chebyshev quasi-inverse's (a basis's own)."""
        return _parity_bands(alpha, n, condition)

    @staticmethod
    def _slopes(coefficients: jnp.ndarray, length: float) -> tuple[jnp.ndarray, jnp.ndarray]:
        """du/dz at the lower and the upper plate of a series of this basis (:func:`slopes`)."""
        return slopes(coefficients, length)

    def with_conditions(self, condition: str | tuple[str, str]) -> Helmholtz:
        """The problems of the same alpha with ``condition`` (one for both plates or a (lower, upper) pair): this one
        where it is the same; a mixed one on this Dirichlet problem's own factors and an influence function; another
        condition at both plates factored anew."""
        lower, upper = pair = plate_conditions(condition)
        if pair == plate_conditions(self.condition):
            return self
        if lower == upper:
            return type(self)(banded.factor(self._bands(self.alpha, self.n, lower)), self.alpha, None, self.n, lower,
                              self.length)
        if self.condition != DIRICHLET:
            raise ValueError(f"mixed conditions {pair} are built on a Dirichlet problem, not {self.condition!r}")
        at_upper = upper == NEUMANN
        one = jnp.ones(self.alpha.shape)
        h = self.solve(jnp.zeros((*self.alpha.shape, self.n)), 0.0 if at_upper else one, one if at_upper else 0.0)
        slope = self._slopes(h, self.length)[1 if at_upper else 0]  # > 0 at the upper plate, < 0 at the lower
        return type(self)(self.factors, self.alpha, h / slope[..., None], self.n, pair, self.length)

    def solve(self, f: jnp.ndarray, lower: jnp.ndarray | float = 0.0, upper: jnp.ndarray | float = 0.0
              ) -> jnp.ndarray:
        """The coefficients u[..., N + 1] for right-hand sides ``f[..., N + 1]`` (coefficients) and the values
        (Dirichlet) or z-derivatives (Neumann) ``lower`` and ``upper`` at the plates z = a and z = b."""
        if self.influence is not None:
            at_upper = self.condition[1] == NEUMANN
            u = self._solve(f, 0.0 if not at_upper else lower, upper if not at_upper else 0.0, DIRICHLET)
            missing = jnp.asarray(upper if at_upper else lower) - self._slopes(u, self.length)[1 if at_upper else 0]
            return u + missing[..., None] * self.influence
        return self._solve(f, lower, upper, self.condition)

    def _solve(self, f: jnp.ndarray, lower: jnp.ndarray | float, upper: jnp.ndarray | float, condition: str
               ) -> jnp.ndarray:
        """:meth:`solve` by the factors alone, both plates of ``condition`` (a basis's own: the Chebyshev tau rows)."""
        n, half = self.n, 0.5 * self.length
        lower, upper = jnp.asarray(lower), jnp.asarray(upper)
        # the lift u_b of the plates' values, in T_0..T_2 alone: (..., 3)
        if condition == DIRICHLET:  # u_b = (g_+ + g_-)/2 + (g_+ - g_-)/2 x
            lift = [0.5 * (upper + lower), 0.5 * (upper - lower), jnp.zeros_like(upper + lower)]
        else:  # du_b/dx = (h_+ + h_-)/2 + (h_+ - h_-)/2 x, h in x's units; d^2 u_b/dx^2 = (h_+ - h_-)/2
            h_up, h_low = upper * half, lower * half
            lift = [jnp.zeros_like(h_up + h_low), 0.5 * (h_up + h_low), 0.125 * (h_up - h_low)]
        lift = jnp.stack(jnp.broadcast_arrays(*lift), -1)
        # rows k = 2, 3, 4 of -alpha B u_b + u_b's own rows k >= 2 (B d^2/dx^2 u_b), B's entries on T_0..T_2
        q = quasi_inverse(5)
        alpha = self.alpha[..., None]
        ends = jnp.stack([lift[..., 2] - alpha[..., 0] * (q[2, 0] * lift[..., 0] + q[2, 1] * lift[..., 2]),
                          -alpha[..., 0] * q[3, 0] * lift[..., 1], -alpha[..., 0] * q[4, 0] * lift[..., 2]], -1)
        rhs = apply_quasi_inverse(half**2 * f)
        rhs = rhs.at[..., :3].add(ends[..., :rhs.shape[-1]].astype(jnp.result_type(rhs, ends)))
        hat = from_parity_rows(banded.solve(self.factors, *parity_rows(rhs, self.factors.rows),
                                           self._bands(self.alpha, n, condition)), n - 2)
        u = jnp.concatenate([hat, jnp.zeros_like(hat[..., :2])], -1)
        u = u.at[..., 2:].add(hat * galerkin_beta(n, condition))
        return u.at[..., :3].add(lift.astype(u.dtype))
