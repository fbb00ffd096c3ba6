"""The compact real-to-complex spectrum: only the modes the 2/3 rule keeps, cut as early as a transform
can and padded back as late as it can.

A compact spectrum has sizes ``(Kx, Ky, Kz)`` (:meth:`simulator.fft.layouts.Layout.compact_sizes`): each
signed axis holds the modes of a K-point FFT in NumPy's order (``0 .. ceil(K/2)-1``, then
``-(K//2) .. -1``), the half axis ``kz = 0 .. Kz-1``. Under the 2/3 rule that is about 4/27 of the real
cells instead of the half spectrum's 1/2, so every elementwise pass of a step, every register and every
all-to-all shrinks with it.

Pruning (the distributed transforms of :mod:`.slab` and :mod:`.pencil`): the forward transform runs z
first and keeps Kz planes, so the transforms along the other axes run over Kz lines instead of Nz/2, and
each axis is cut right after its own transform, before the all-to-all that follows it; the inverse
transforms the kept lines first and pads each axis only just before its own transform. One device
(:mod:`.single`) does the same on CPUs and cuts the spectrum from one fused 3D transform on GPUs, where
cuFFT's 3D plan beats three strided passes (:func:`simulator.fft.single.stages_pay` gives the
measurements). An axis's cut is a slice (half axis) or two slices joined (signed axis), its pad the
reverse with zeros between: copies, never a gather.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax import lax


def join(pieces: Sequence[tuple[jax.Array, int]], axis: int, size: int) -> jax.Array:
    """An axis of ``size`` entries along ``axis`` holding each ``(piece, start)`` of ``pieces`` from ``start`` on,
    zeros elsewhere (the pieces do not overlap), as a pad per piece and their sum: XLA fuses it into one
    elementwise kernel, and it is no concatenate (a complex concatenate past 2^30 elements is what
    :mod:`simulator.equations.assembly` keeps out of GPU programs; a concatenate of slices compiles to a larger
    kernel than the pads' sum)."""
    axis %= pieces[0][0].ndim
    zero = jnp.zeros((), pieces[0][0].dtype)
    out = None
    for piece, start in pieces:
        widths = [(0, 0, 0)] * piece.ndim
        widths[axis] = (start, size - start - piece.shape[axis], 0)
        placed = lax.pad(piece, zero, widths)
        out = placed if out is None else out + placed
    return out


def truncate(x: jax.Array, axis: int, size: int, half: bool = False) -> jax.Array:
    """The first ``size`` entries of a half axis, or the ``size`` modes of a signed axis in NumPy's order
    (``0 .. ceil(size/2)-1`` and ``-(size//2) .. -1``) from a full FFT axis, along ``axis``."""
    axis = axis % x.ndim
    if half:
        return lax.slice_in_dim(x, 0, size, axis=axis)
    n, pos, neg = x.shape[axis], (size + 1) // 2, size // 2
    first = lax.slice_in_dim(x, 0, pos, axis=axis)
    if not neg:
        return first
    return join(((first, 0), (lax.slice_in_dim(x, n - neg, n, axis=axis), pos)), axis, size)


def pad(k: jax.Array, axis: int, n: int, half: bool = False) -> jax.Array:
    """The inverse of :func:`truncate`: ``k`` along ``axis`` placed in an axis of ``n`` entries, zeros
    elsewhere (for a half axis, the zeros after the kept planes)."""
    axis = axis % k.ndim
    size = k.shape[axis]
    if size == n:
        return k
    if half:
        return join(((k, 0),), axis, n)
    pos = (size + 1) // 2
    return join(((lax.slice_in_dim(k, 0, pos, axis=axis), 0), (lax.slice_in_dim(k, pos, size, axis=axis),
                                                                n - size + pos)), axis, n)


def _blocks(size: int, n: int) -> list[tuple[int, int, int]]:
    """The blocks of consecutive modes of a signed compact axis of ``size`` entries in a full axis of ``n``:
    ``(start in the compact axis, start in the full axis, length)``, non-negative modes then negative ones."""
    pos, neg = (size + 1) // 2, size // 2
    return [(0, 0, pos)] + ([(pos, n - neg, neg)] if neg else [])


def from_full(k: jax.Array, sizes: Sequence[int]) -> jax.Array:
    """The compact spectrum ``(*b, Kx, Ky, Kz)`` of a half spectrum ``(*b, Nx, Ny, P)`` with ``P >= Kz`` planes
    (an unsharded block: ``Nz/2``, or a 3D transform's own ``Nz/2 + 1``).

    All three axes are cut at once, as the sum of the (up to) four blocks of kept (x, y) lines, each sliced
    and padded into place: one elementwise kernel of XLA's reading the transform's output, where a cut per
    axis writes a buffer per axis. On one GPU's route (XLA's programs compiled on the CPU, as the planner
    does without a GPU compiler) it took the lsrk4 float32 chunk from 40.1 to 36.1 B/cell at 64^3 and the
    1024^3 plan from 39.2 to 35.2 (``scripts/bench_compact.py``). The same for the inverse's padding was
    measured and not kept: compiled for an H100 it took the chunk at 128^3 from 35.4 to 32.6 B/cell but the
    step's counted memory traffic from 655 to 684 bytes per cell, and on the CPU's compile the snapshot fields
    program from 49.4 to 52.5; :func:`to_full` pads axis by axis."""
    lead = k.ndim - 3
    zero = jnp.zeros((), k.dtype)
    out = None
    for cx, fx, lx in _blocks(sizes[0], k.shape[-3]):
        for cy, fy, ly in _blocks(sizes[1], k.shape[-2]):
            part = k[(Ellipsis, slice(fx, fx + lx), slice(fy, fy + ly), slice(0, sizes[2]))]
            widths = [(0, 0, 0)] * lead + [(cx, sizes[0] - cx - lx, 0), (cy, sizes[1] - cy - ly, 0), (0, 0, 0)]
            placed = lax.pad(part, zero, widths)
            out = placed if out is None else out + placed
    return out


def to_full(k: jax.Array, shape: Sequence[int]) -> jax.Array:
    """The half spectrum ``(*b, Nx, Ny, Nz/2)`` of a compact one: zeros at every mode it does not hold."""
    k = pad(pad(k, -3, shape[0]), -2, shape[1])
    return pad(k, -1, shape[2] // 2, half=True)
