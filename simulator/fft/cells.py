"""The cell of a position, one definition for every path that takes it: the windows' stencils
(:mod:`simulator.fft.window`, XLA's; the native kernels in simulator/fft/native/ compute the same, operation for
operation) and the owner of a particle in the hand-over (:mod:`simulator.fft.owned`). A point on a cell face must
fall in the same cell for its window and for the device that holds it: the window reads the device's block only.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp


def cell_of(x: jax.Array, spacing: float | Sequence[float], shape: int | Sequence[int]
            ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(s, floor(s), cell)`` of positions ``x`` (any shape; per-axis ``spacing`` and ``shape`` broadcast over its
    last axis): s = x (1/dx), one product in x's precision (XLA compiles a division by a constant as this
    product, so every path multiplies), and the cell floor(s) wrapped into [0, n) in floating point (integers'
    remainder is a division per element on CPU) with the quotient's floor corrected once: exact while
    |floor(s)| < 2^24 in float32. The cell is NaN where x is not finite."""
    inverse = [1.0 / d for d in spacing] if isinstance(spacing, Sequence) else 1.0 / spacing
    s = x * jnp.asarray(inverse, x.dtype)
    base, n = jnp.floor(s), jnp.asarray(shape, x.dtype)
    cell = base - n * jnp.floor(base * (1 / n))
    return s, base, jnp.where(cell >= n, cell - n, jnp.where(cell < 0, cell + n, cell))
