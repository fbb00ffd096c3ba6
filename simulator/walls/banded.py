"""Batched banded linear solves: matrices with one sub-diagonal and ``upper`` super-diagonals, one per leading
index (a horizontal mode), factored by Gaussian elimination with partial pivoting and solved in O(n) per matrix.

Storage is banded throughout (LAPACK's ``gbtrf`` in the manner of Golub & Van Loan 2013, sec. 4.3.5, for one
sub-diagonal): ``bands[..., i, d]`` is the entry of row i at column i - 1 + d, d = 0..upper + 1 (d = 0 the
sub-diagonal, d = 1 the diagonal); the factors hold, per row, the row interchange (whether row i + 1 was taken as
the pivot), the multiplier and the row of U, whose pivoting fills one more super-diagonal, rows first:
``(n, ...)``, ``(n, ...)`` and ``(n, ..., upper + 2)``; a solve's vectors are rows first too. Nothing of size n^2
is formed. The elimination runs down the rows with ``lax.scan``, every matrix of the batch at once.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

#: rows eliminated per trip of the sweeps' loops: two halve the trips, whose fixed cost is most of a sweep's time at
#: a few hundred modes, and measured fastest (a 1536 x 384 plane's stage solves 39 -> 28 CPU ms on one core; four
#: or eight slower again, their larger bodies fused worse)
UNROLL = 2


class Factors(NamedTuple):
    """A batch of banded LU factorisations, rows first (arrays ``(n, ...)``, ``(n, ...)``, ``(n, ..., upper +
    2)``): the order the solves' sweeps read them in, so a solve moves no factor."""

    swapped: jnp.ndarray
    multipliers: jnp.ndarray
    upper: jnp.ndarray


def factor(bands: jnp.ndarray) -> Factors:
    """The factorisation of the banded matrices ``bands[..., n, upper + 2]`` (see the module's layout)."""
    rows = jnp.moveaxis(bands, -2, 0)
    zero = jnp.zeros_like(rows[0][..., :1])
    # the first row has no sub-diagonal: its entries from the diagonal on, with room for the pivoting's fill
    first = jnp.concatenate([rows[0][..., 1:], zero], -1)

    def step(current, below):
        swap = jnp.abs(below[..., 0]) > jnp.abs(current[..., 0])
        pivot = jnp.where(swap[..., None], below, current)
        other = jnp.where(swap[..., None], current, below)
        multiplier = other[..., 0] / pivot[..., 0]
        reduced = other - multiplier[..., None] * pivot
        return jnp.concatenate([reduced[..., 1:], zero], -1), (swap, multiplier, pivot)

    last, (swapped, multipliers, pivots) = jax.lax.scan(step, first, rows[1:], unroll=UNROLL)
    pivots = jnp.concatenate([pivots, last[None]], 0)
    return Factors(jnp.concatenate([swapped, jnp.zeros_like(swapped[:1])], 0),
                   jnp.concatenate([multipliers, jnp.zeros_like(multipliers[:1])], 0), pivots)


def solve(factors: Factors, rhs: jnp.ndarray) -> jnp.ndarray:
    """The solutions x[n, ...] of the factored systems for right-hand sides ``rhs[n, ...]``, rows first as the
    factors (real or complex; the factors' batch axes broadcast against the right-hand side's)."""
    swapped, multipliers, upper = factors

    def down(current, row):
        swap, multiplier, below = row
        pivot = jnp.where(swap, below, current)
        other = jnp.where(swap, current, below)
        return other - multiplier * pivot, pivot

    last, y = jax.lax.scan(down, rhs[0], (swapped[:-1], multipliers[:-1], rhs[1:]), unroll=UNROLL)
    y = jnp.concatenate([y, last[None]], 0)
    width = upper.shape[-1]
    after = jnp.zeros((width - 1, *jnp.broadcast_shapes(y.shape[1:], upper.shape[1:-1])), jnp.result_type(y, upper))

    def up(later, row):
        u, value = row  # later: x_{i+1}..x_{i+width-1}
        x = (value - jnp.einsum("...d,d...->...", u[..., 1:], later)) / u[..., 0]
        return jnp.concatenate([x[None], later[:-1]], 0), x

    return jax.lax.scan(up, after, (upper, y), reverse=True, unroll=UNROLL)[1]
