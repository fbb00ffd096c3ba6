"""Shell-summed spectra: sum a k-space quantity over spherical shells of |k|, or over rings of
(k_h, |k_z|) for anisotropic flows.

Shell ``j`` collects the modes with ``round(|k| / dk) == j``, where ``dk = 2*pi / max(L)`` is the
smallest fundamental wavenumber of the box; shell 0 holds the mean (k = 0). The sum is a scatter-add
into a short, replicated vector of shell totals: under jit each device adds its own modes and XLA
finishes with one all-reduce, so no field is ever gathered (checked in the tests from the HLO).
:func:`cylinder_sum` does the same on the 2D bins (round(k_h / dk), round(|k_z| / dk)), k_h the
horizontal wavenumber sqrt(k_x^2 + k_y^2): the k_h-k_z spectrum of rotating and stratified turbulence
(e.g. Cambon & Jacquin 1989; Lindborg 2006, JFM 550, 207).
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


def cylinder_sum(power: jax.Array, k: Sequence[jax.Array], shape: Sequence[int], box: Sequence[float]) -> jax.Array:
    """Sum ``power`` (as in :func:`shell_sum`) over bins of (k_h, |k_z|): element ``[i, j]`` holds the modes
    with ``round(k_h / dk) == i`` and ``round(|k_z| / dk) == j`` (z the last spatial axis, gravity's and
    rotation's). Returns a replicated ``(shell_count, shell_count)`` array: both axes are the shells'
    centres :func:`shell_wavenumbers`."""
    n, dk = shell_count(shape, box), shell_width(box)
    horizontal = jnp.rint(jnp.sqrt(k[0] ** 2 + k[1] ** 2) / dk).astype(jnp.int32)
    vertical = jnp.rint(jnp.abs(k[2]) / dk).astype(jnp.int32)
    if power.ndim > 3:
        power = jnp.sum(power, axis=tuple(range(power.ndim - 3)))
    index = jnp.broadcast_to(horizontal * n + vertical, power.shape)
    return jnp.zeros(n * n, power.dtype).at[index].add(power).reshape(n, n)
