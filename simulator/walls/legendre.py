"""The Legendre basis of a direction between two plates, on the Legendre-Gauss-Lobatto points, and its
Shen-Legendre Galerkin Helmholtz solves: the second basis of :mod:`simulator.walls.bases`, with
:mod:`simulator.walls.chebyshev`'s functions and signatures.

A field on [a, b] is f(z) = sum_k a_k L_k(x), x = (2 z - a - b)/(b - a), k = 0..N, sampled on the N + 1
Legendre-Gauss-Lobatto points (the roots of L_N' and both plates, ascending: :func:`simulator.fft.bases.
legendre_nodes`). Arrays hold the direction on their last axis, whole; every leading axis is batched over. The
transforms are the dense Vandermonde matrix V_jk = L_k(x_j) and its inverse, built once per size in NumPy
(:func:`simulator.fft.bases.legendre_matrices`): N^2 work per column, fine at the few dozen points across a Legendre
run takes (the Chebyshev basis's FFT is N log N). Derivatives by the recurrence a'_k = (2k + 1) sum_{p > k, p + k
odd} a_p, parity-split cumulative sums: O(N).

The Helmholtz problems (alpha - d^2/dz^2) u = f (Shen 1994, "Efficient spectral-Galerkin method I: direct solvers
of second- and fourth-order equations using Legendre polynomials"): u = u_b + sum_j u_j phi_j with phi_j = L_j -
L_{j+2} (Dirichlet) or phi_j = L_j - j(j + 1)/((j + 2)(j + 3)) L_{j+2} (Neumann), j = 0..N-2, and a lift u_b of
the plates' values in L_0..L_2; the residual is orthogonal to every phi_j (Galerkin, exact for a polynomial
solution of degree N). Its stiffness (phi_k', phi_j') is diagonal (4j + 6 for Dirichlet) and its mass (phi_k,
phi_j) has entries at j - k in {-2, 0, 2} alone: per parity a tridiagonal system, factored by
:mod:`simulator.walls.banded` once per mode and dt; the matrices are formed exactly in NumPy from the Legendre
norms 2/(2k + 1) and the derivative matrix. Mixed plates take :class:`simulator.walls.helmholtz.Helmholtz`'s
influence function on the Dirichlet factors.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from simulator.fft import bases, walls
from simulator.walls import banded, helmholtz
from simulator.walls.chebyshev import DEALIAS, boundary_values, pad
from simulator.walls.helmholtz import DIRICHLET, from_parity_rows, parity_rows

#: the basis's name (``grid.walls.basis``, :mod:`simulator.walls.bases`)
NAME = "legendre"
__all__ = ["NAME", "Helmholtz", "backward", "boundary_values", "derivative", "forward", "integrals", "pad",
           "padded_size", "points", "product", "slopes", "weights"]


def points(n: int, interval: tuple[float, float] = (-1.0, 1.0)) -> np.ndarray:
    """The ``n`` Legendre-Gauss-Lobatto points of ``interval`` (n >= 2), ascending: shape ``(n,)``."""
    a, b = interval
    return 0.5 * (a + b) + 0.5 * (b - a) * bases.legendre_nodes(n)[0]


def forward(values: jnp.ndarray) -> jnp.ndarray:
    """Legendre coefficients ``a[..., k]`` of the values ``values[..., j]`` at the points (same shape), exact for
    polynomials of degree N (the transform the bounded axis's backends run: :func:`simulator.fft.walls.
    legendre_forward`)."""
    return walls.legendre_forward(values)


def backward(coefficients: jnp.ndarray) -> jnp.ndarray:
    """Values at the points of the series ``coefficients[..., k]`` (same shape)."""
    return walls.legendre_backward(coefficients)


def derivative(coefficients: jnp.ndarray, length: float = 2.0, order: int = 1) -> jnp.ndarray:
    """The coefficients of d^order/dz^order of a series on an interval of ``length`` (same shape; the top
    coefficient of a derivative is 0): a'_k = (2k + 1) sum_{p > k, p + k odd} a_p."""
    a = coefficients
    n = a.shape[-1]
    for _ in range(order):
        w = jnp.concatenate([a, jnp.zeros_like(a[..., :1])], axis=-1) if n % 2 else a
        pairs = w.reshape(*w.shape[:-1], -1, 2)  # [..., m, parity]: a_{2m + parity}
        tails = jax.lax.cumsum(pairs, axis=pairs.ndim - 2, reverse=True).reshape(w.shape)  # sum_{q >= p, same parity}
        scale = (2.0 * np.arange(n - 1) + 1.0) * (2.0 / length)
        a = jnp.concatenate([tails[..., 1:n] * scale, jnp.zeros_like(a[..., :1])], axis=-1)
    return a.astype(coefficients.dtype)


def padded_size(n: int) -> int:
    """The points a product of two series of ``n`` coefficients is formed on: M >= 3n/2, so that the Gauss-Lobatto
    quadrature (exact to degree 2M - 3) gives the product's (degree 2(n - 1)) first n coefficients exactly."""
    return math.floor(DEALIAS * (n - 1)) + 2


def product(a: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    """The first n coefficients of the product of two series of n coefficients (the last axis), exactly."""
    n = a.shape[-1]
    m = padded_size(n)
    return forward(backward(pad(a, m)) * backward(pad(b, m)))[..., :n]


def integrals(n: int) -> np.ndarray:
    """The integral over [-1, 1] of each L_k, k < n: 2 for k = 0, else 0; shape ``(n,)``."""
    return np.where(np.arange(n) == 0, 2.0, 0.0)


def weights(n: int, length: float = 2.0) -> np.ndarray:
    """The Gauss-Lobatto weights on the ``n`` points of an interval of ``length`` (exact for degree 2n - 3), summing
    to ``length``: shape ``(n,)``."""
    return 0.5 * length * bases.legendre_nodes(n)[1]


def slopes(coefficients: jnp.ndarray, length: float) -> tuple[jnp.ndarray, jnp.ndarray]:
    """du/dz at the lower and the upper plate of the series ``coefficients[..., N + 1]`` on an interval of
    ``length``: L_k'(1) = k(k + 1)/2, L_k'(-1) = (-1)^(k+1) k(k + 1)/2, as two dot products."""
    k = np.arange(coefficients.shape[-1], dtype=float)
    upper = 0.5 * k * (k + 1) * (2.0 / length)
    lower = np.where(k % 2 == 1, 1.0, -1.0) * upper
    return coefficients @ lower.astype(coefficients.real.dtype), coefficients @ upper.astype(coefficients.real.dtype)


def _derivative_matrix(n: int) -> np.ndarray:
    """D ``(n, n)``: the Legendre coefficients of d/dx of L_p in column p (on [-1, 1]): 2k + 1 at the rows k < p of
    the other parity."""
    k, p = np.arange(n)[:, None], np.arange(n)[None, :]
    return np.where((p > k) & ((p - k) % 2 == 1), 2.0 * k + 1.0, 0.0)


@functools.lru_cache(maxsize=32)
def galerkin(n: int, condition: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The Galerkin basis and its matrices for ``n`` coefficients: ``P`` ``(n, n - 2)``, the L_k coefficients of each
    phi_j; ``T`` ``(n, n - 2)``, the test by phi_j of a series' coefficients ((f, phi_j) = f @ T); the mass
    (phi_k, phi_j) and the stiffness (phi_k', phi_j'), ``(n - 2, n - 2)`` each (module docstring)."""
    j = np.arange(n - 2, dtype=float)
    beta = -np.ones(n - 2) if condition == DIRICHLET else -j * (j + 1) / ((j + 2) * (j + 3))
    basis = np.zeros((n, n - 2))
    basis[np.arange(n - 2), np.arange(n - 2)] = 1.0
    basis[np.arange(2, n), np.arange(n - 2)] = beta
    norms = 2.0 / (2 * np.arange(n) + 1.0)  # (L_k, L_k), exact
    d = _derivative_matrix(n)
    test = norms[:, None] * basis
    return basis, test, basis.T @ test, (d @ basis).T @ (norms[:, None] * (d @ basis))


def _parity_bands(alpha: jnp.ndarray, n: int, condition: str) -> jnp.ndarray:
    """The tridiagonal system of each parity of alpha mass + stiffness, :mod:`simulator.walls.banded`'s layout
    ``(..., 2, n_p, 3)`` (the odd one padded by an identity row when it is the shorter)."""
    _, _, mass, stiffness = galerkin(n, condition)
    m, size = n - 2, (n - 1) // 2
    parts = []
    for parity in (0, 1):
        rows = np.arange(parity, m, 2)
        coefficient = []
        for matrix in (mass, stiffness):
            band = np.zeros((size, 3))
            for i, r in enumerate(rows):
                for d, c in ((0, r - 2), (1, r), (2, r + 2)):
                    if 0 <= c < m:
                        band[i, d] = matrix[r, c]
            coefficient.append(band)
        if rows.size < size:
            coefficient[1][-1, 1] = 1.0  # the padding row's identity (its mass row is zero)
        parts.append(alpha[..., None, None] * coefficient[0] + coefficient[1])
    return jnp.stack(parts, -3)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Helmholtz(helmholtz.Helmholtz):
    """:class:`simulator.walls.helmholtz.Helmholtz`'s problems in the Legendre basis: the Shen-Legendre Galerkin
    solves (module docstring) on its mixed plates' influence function; the same pytree and the same calls."""

    @staticmethod
    def _bands(alpha: jnp.ndarray, n: int, condition: str) -> jnp.ndarray:
        return _parity_bands(alpha, n, condition)

    @staticmethod
    def _slopes(coefficients: jnp.ndarray, length: float) -> tuple[jnp.ndarray, jnp.ndarray]:
        return slopes(coefficients, length)

    def _solve(self, f: jnp.ndarray, lower: jnp.ndarray | float, upper: jnp.ndarray | float, condition: str
               ) -> jnp.ndarray:
        """The Galerkin solution for right-hand sides ``f[..., N + 1]`` and the plates' values (Dirichlet) or
        z-derivatives (Neumann), both plates of ``condition``."""
        n, half = self.n, 0.5 * self.length
        lower, upper = jnp.asarray(lower), jnp.asarray(upper)
        zero = jnp.zeros_like(upper + lower)
        if condition == DIRICHLET:  # u_b = (g_+ + g_-)/2 L_0 + (g_+ - g_-)/2 L_1, u_b'' = 0
            lift = [0.5 * (upper + lower), 0.5 * (upper - lower), zero]
            curvature = zero
        else:  # u_b' = a_1 + 3 a_2 x takes the slopes h (in x's units) at x = -1, 1; u_b'' = 3 a_2 L_0
            h_up, h_low = upper * half, lower * half
            lift = [zero, 0.5 * (h_up + h_low), (h_up - h_low) / 6.0]
            curvature = 3.0 * lift[2]
        lift = jnp.stack(jnp.broadcast_arrays(*lift), -1)
        basis, test, _, _ = galerkin(n, condition)
        # (f + u_b'' - alpha u_b, phi_j): the lift's terms in L_0..L_2
        ends = jnp.broadcast_to(curvature, lift.shape[:-1])[..., None] * np.array([1.0, 0.0, 0.0]) \
            - self.alpha[..., None] * lift
        g = (half**2 * f).at[..., :3].add(ends.astype(jnp.result_type(f, ends)))
        rhs = jnp.matmul(g, test.astype(jnp.finfo(g.dtype).dtype), precision=jax.lax.Precision.HIGHEST)
        hat = from_parity_rows(banded.solve(self.factors, *parity_rows(rhs, self.factors.rows),
                                           self._bands(self.alpha, n, condition)), n - 2)
        u = jnp.matmul(hat, basis.T.astype(jnp.finfo(hat.dtype).dtype), precision=jax.lax.Precision.HIGHEST)
        return u.at[..., :3].add(lift.astype(u.dtype))
