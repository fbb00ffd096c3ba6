"""Shell-summed spectra: sum a k-space quantity over spherical shells of |k|.

Shell ``j`` collects the modes with ``round(|k| / dk) == j``, where ``dk = 2*pi / max(L)`` is the
smallest fundamental wavenumber of the box; shell 0 holds the mean (k = 0). The sum is a scatter-add
into a short, replicated vector of shell totals: under jit each device adds its own modes and XLA
finishes with one all-reduce, so no field is ever gathered (checked in the tests from the HLO).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


def shell_width(box: Sequence[float]) -> float:
    """dk = 2*pi / max(L): the spacing of the shells."""
    return 2.0 * math.pi / max(float(b) for b in box)


def shell_count(shape: Sequence[int], box: Sequence[float]) -> int:
    """Number of shells needed to hold every mode of the grid (the corner of the k-space box included)."""
    k_max = math.sqrt(sum((math.pi * n / float(b)) ** 2 for n, b in zip(shape, box, strict=True)))
    return int(k_max / shell_width(box)) + 2


def shell_wavenumbers(shape: Sequence[int], box: Sequence[float]) -> np.ndarray:
    """Centre |k| of each shell, ``j * dk``."""
    return np.arange(shell_count(shape, box)) * shell_width(box)


def shell_sum(power: jax.Array, k: Sequence[jax.Array], shape: Sequence[int], box: Sequence[float]) -> jax.Array:
    """Sum ``power`` (a spectral array, leading batch axes allowed) over shells of |k|.

    ``k`` are the backend's wavenumbers for the layout of ``power`` (they broadcast against it); the
    caller folds Parseval weights and normalisation into ``power``. Returns a replicated vector of
    length :func:`shell_count`.
    """
    index = jnp.rint(jnp.sqrt(k[0] ** 2 + k[1] ** 2 + k[2] ** 2) / shell_width(box)).astype(jnp.int32)
    if power.ndim > 3:
        power = jnp.sum(power, axis=tuple(range(power.ndim - 3)))
    index = jnp.broadcast_to(index, power.shape)
    return jnp.zeros(shell_count(shape, box), power.dtype).at[index].add(power)
