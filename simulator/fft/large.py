"""XLA's FFT in pieces, so that no single FFT call sees 2^31 or more elements.

Measured on an H100 (JAX 0.11.2, CUDA 13, ``scripts/gpu_campaign.sh``): XLA's GPU FFT returned garbage
from a complex-to-real transform whose real result had 2^31 or more points. The 3D ``irfftn`` of three
896^3 components at once (2.16e9 points) came back with a round-trip error of 4e9, and so did the
batched 1D ``irfft`` along the last axis; the same transforms one component at a time, or two at once
(1.44e9 points), were exact to round-off. A Navier-Stokes run on one GPU became non-finite at its first
step at 896^3 and ran at 864^3 (1.93e9 points).

:func:`transform` is ``jnp.fft`` with that limit kept: a call past it is split along its largest
untransformed axis into pieces below it, and a multi-axis transform with no such axis is done one axis
at a time (NumPy's definition of the n-D transforms: r2c along the last axis then c2c along the others,
the inverse in reverse order). Each piece is the same transform of fewer rows, so results are those of
the whole call; below the limit nothing changes. It applies on every platform (it is only ever needed
for a device's local array past 2^31 points: one GPU at 896^3 and more).

Not covered: ``vmap`` adds its axis after this decision, so an ensemble whose batched transform passes
the limit while each member's stays below it is not split (members x components x N^3 >= 2^31).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp

#: the most elements (real or complex) one XLA FFT call may see
LIMIT = 2**31 - 1
KINDS = ("rfftn", "irfftn", "fftn", "ifftn")


def transform(kind: str, x: jax.Array, axes: Sequence[int], n: int | None = None) -> jax.Array:
    """``jnp.fft.<kind>`` of ``x`` over ``axes`` (negative, as counted from the end), with NumPy's
    normalisation; ``n`` is the real length of the last axis of an ``irfftn``. Never more than
    :data:`LIMIT` elements per XLA FFT call."""
    axes = tuple(axes)
    size = max(x.size, _result_size(kind, x, axes, n))
    if size <= LIMIT:
        return _whole(kind, x, axes, n)
    free = [a for a in range(-x.ndim, 0) if a not in axes and x.shape[a] > 1]
    if free:
        axis = max(free, key=lambda a: x.shape[a])
        pieces = min(x.shape[axis], math.ceil(size / LIMIT))
        parts = jnp.array_split(x, pieces, axis=axis)
        return jnp.concatenate([transform(kind, p, axes, n) for p in parts], axis=axis)
    if len(axes) == 1:
        raise ValueError(f"one FFT of {size} points: past the {LIMIT} that XLA's FFT transforms correctly")
    if kind == "rfftn":
        return transform("fftn", transform("rfftn", x, axes[-1:]), axes[:-1])
    if kind == "irfftn":
        return transform("irfftn", transform("ifftn", x, axes[:-1]), axes[-1:], n)
    for axis in axes:
        x = transform(kind, x, (axis,))
    return x


def _result_size(kind: str, x: jax.Array, axes: tuple[int, ...], n: int | None) -> int:
    last = x.shape[axes[-1]]
    if kind == "rfftn":
        return x.size // last * (last // 2 + 1)
    if kind == "irfftn":
        return x.size // last * int(n)
    return x.size


def _whole(kind: str, x: jax.Array, axes: tuple[int, ...], n: int | None) -> jax.Array:
    if kind == "irfftn":
        return jnp.fft.irfftn(x, s=[x.shape[a] for a in axes[:-1]] + [int(n)], axes=axes)
    return getattr(jnp.fft, kind)(x, axes=axes)
