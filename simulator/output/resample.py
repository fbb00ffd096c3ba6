"""Spectral interpolation on read: a full (complex-to-complex) spectrum stored on one grid read into the
spectrum of another, block by block, each process reading only the stored modes its own blocks need.

Per axis, stored size n0 and wanted size n1, with NumPy's unnormalised forward transform (so every
coefficient is scaled by n1/n0, which keeps the field's values at the grid points):

* n1 > n0 (zero padding, a finer grid): mode m comes from stored mode m for |m| < n0/2, zero beyond;
  the stored Nyquist mode -n0/2 (even n0), which stands for both +n0/2 and -n0/2, is split half to
  each, so a real field stays real and the interpolant is the symmetric trigonometric one;
* n1 < n0 (truncation, a coarser grid): modes |m| < n1/2 are kept; the new Nyquist mode -n1/2 (even
  n1) gets the sum of the stored modes +n1/2 and -n1/2 (what sampling that pair on the coarse grid
  gives), so padding then truncating returns the stored spectrum exactly;
* n1 = n0: the stored modes.

Each wanted mode is a weighted sum of at most two stored ones, so a block is read as the few contiguous
runs of stored modes it needs and combined axis by axis: no global array is formed. Dealiasing and
projections of the wanted grid are the reader's business (an equation's ``from_fields``).

The same reading relays a spectrum on ONE grid between layouts (:func:`exact_map`): the half spectrum
``(Nx, Ny, Nz/2)``, the compact one ``(Kx, Ky, Kz)`` of :mod:`simulator.fft.compact` and the full complex
one ``(Nx, Ny, Nz)``. There every wanted mode is the stored mode of the same number, or zero where the
stored layout does not hold it (weight 1 or 0, no scaling): a pure index mapping, exact.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from simulator.output.hdf5 import IndexedFile, canonical_order

if TYPE_CHECKING:
    import jax


def _modes(n: int) -> np.ndarray:
    """Signed mode numbers of the n entries of a spectrum axis, NumPy order (-n/2 for even n at n/2)."""
    return np.fft.fftfreq(n, 1.0 / n).round().astype(np.int64)


def mode_map(n0: int, n1: int) -> tuple[np.ndarray, np.ndarray]:
    """Stored indices ``(n1, 2)`` and weights ``(n1, 2)``: wanted entry j = sum_i w[j, i] * stored[idx[j, i]]
    (weights include the n1/n0 scaling; unused pairs have weight 0)."""
    idx = np.zeros((n1, 2), np.int64)
    w = np.zeros((n1, 2))
    for j, m in enumerate(_modes(n1)):
        if n1 == n0 or abs(m) < min(n0, n1) / 2:
            idx[j, 0], w[j, 0] = m % n0, 1.0
        elif n1 > n0 and n0 % 2 == 0 and abs(m) == n0 // 2:  # the stored Nyquist, split between +-n0/2
            idx[j, 0], w[j, 0] = n0 // 2, 0.5
        elif n1 < n0 and n1 % 2 == 0 and m == -n1 // 2:  # the new Nyquist: both stored modes +-n1/2 land here
            idx[j] = (n1 // 2, n0 - n1 // 2)
            w[j] = (1.0, 1.0)
    return idx, w * (n1 / n0)


def spectrum_modes(n: int, half: bool) -> np.ndarray:
    """Mode numbers of the n entries of a spectrum axis: ``0 .. n-1`` on a half axis (a real-to-complex
    z axis, half or compact), else the signed ones of an n-point FFT in NumPy order (full or compact)."""
    return np.arange(n, dtype=np.int64) if half else _modes(n)


def exact_map(stored: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The map of :func:`mode_map` (indices and weights, ``(len(wanted), 2)``) from an axis holding mode
    numbers ``stored`` to one holding ``wanted`` on the same grid: each wanted mode is the stored entry of
    that number (weight 1), or zero where there is none."""
    where = {int(m): i for i, m in enumerate(stored)}
    idx = np.zeros((len(wanted), 2), np.int64)
    w = np.zeros((len(wanted), 2))
    for j, m in enumerate(wanted):
        if int(m) in where:
            idx[j, 0], w[j, 0] = where[int(m)], 1.0
    return idx, w


def _runs(values: np.ndarray) -> list[slice]:
    """Sorted distinct indices as slices of consecutive ones."""
    breaks = np.flatnonzero(np.diff(values) != 1) + 1
    return [slice(int(run[0]), int(run[-1]) + 1) for run in np.split(values, breaks)]


def remapped_block(snap: IndexedFile, name: str, batch: Sequence[slice], wanted: Sequence[slice],
                   maps: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The block of the remapped spectrum with canonical batch slices ``batch`` and spatial index ranges
    ``wanted``, read from field ``name`` (a stored spectrum, canonical axes) through ``maps``."""
    idx = [m[0][s] for m, s in zip(maps, wanted, strict=True)]
    w = [m[1][s] for m, s in zip(maps, wanted, strict=True)]
    needed = [np.unique(i[wi != 0]) for i, wi in zip(idx, w, strict=True)]
    shape = snap.shape(name)
    batch_shape = [len(range(*s.indices(n))) for s, n in zip(batch, shape, strict=False)]
    if any(n.size == 0 for n in needed):  # the block lies wholly in the zero padding
        return np.zeros((*batch_shape, *(len(i) for i in idx)), complex)
    sub = np.empty((*batch_shape, *(n.size for n in needed)), complex)
    starts = [np.searchsorted(n, [r.start for r in _runs(n)]) for n in needed]
    for runs, at in zip(itertools.product(*(_runs(n) for n in needed)), itertools.product(*starts), strict=True):
        into = tuple(slice(int(a), int(a) + (r.stop - r.start)) for a, r in zip(at, runs, strict=True))
        sub[(Ellipsis, *into)] = snap.read(name, (*batch, *runs))
    nb = len(batch_shape)
    for axis in range(3):  # wanted entry j = w0 * stored[idx0] + w1 * stored[idx1], one axis at a time
        where = np.searchsorted(needed[axis], np.where(w[axis] != 0, idx[axis], needed[axis][0]))
        shape_w = [1] * sub.ndim
        shape_w[nb + axis] = len(idx[axis])
        sub = sum(np.take(sub, where[:, i], axis=nb + axis) * w[axis][:, i].reshape(shape_w) for i in range(2))
    return sub


def read_remapped(snap: IndexedFile, name: str, shape: Sequence[int], sharding: jax.sharding.Sharding,
                  perm: Sequence[int] = (0, 1, 2), dtype: Any = np.complex128) -> jax.Array:
    """The full spectrum of global ``shape`` (backend axis order ``perm``) interpolated from the full
    spectrum ``name`` stored on another grid; each process reads only what its own blocks need."""
    stored = snap.shape(name)[len(shape) - 3:]
    canonical = [shape[i] for i in np.argsort(canonical_order(len(shape), perm))][len(shape) - 3:]
    maps = [mode_map(n0, n1) for n0, n1 in zip(stored, canonical, strict=True)]
    return read_mapped(snap, name, shape, sharding, maps, perm, dtype)


def read_mapped(snap: IndexedFile, name: str, shape: Sequence[int], sharding: jax.sharding.Sharding,
                maps: Sequence[tuple[np.ndarray, np.ndarray]], perm: Sequence[int] = (0, 1, 2),
                dtype: Any = np.complex128) -> jax.Array:
    """The spectrum of global ``shape`` (backend axis order ``perm``) read from the stored spectrum ``name``
    (canonical axes) through per-axis ``maps`` in canonical order (x, y, z: :func:`mode_map` or
    :func:`exact_map`); each process reads only what its own blocks need."""
    import jax

    stored = snap.shape(name)
    nb = len(shape) - 3
    order = canonical_order(len(shape), perm)  # backend axis -> canonical axis
    canonical = [shape[i] for i in np.argsort(order)]
    if list(stored[:nb]) != canonical[:nb]:
        raise ValueError(f"{snap.path}: {name!r} has batch axes {list(stored[:nb])}, wanted {canonical[:nb]}")

    def block(index: tuple[slice, ...]) -> np.ndarray:
        canon = [index[b] for b in np.argsort(order)]  # the block's slices in canonical axis order
        data = remapped_block(snap, name, canon[:nb], canon[nb:], maps)
        return np.transpose(data, order).astype(dtype, copy=False)

    return jax.make_array_from_callback(tuple(shape), sharding, block, dtype=dtype)
