"""A field's stored layout against its canonical one (no JAX): how :mod:`simulator.output.hdf5` reads back a
dataset whose axes are stored in another order, some of one entry left out, and whose leading axis may hold fewer
entries than the field, the rest zero.

A field is canonical ``(*batch, x, y, z)``. Its dataset holds the canonical axes its ``storage_order`` attribute
lists, in that order; a canonical axis it does not list has one entry and is not stored (a plane's one cell), and
where the dataset's attribute ``canonical_shape`` gives a longer axis than the dataset holds, the entries past the
stored ones are zero (a plane's vectors store their two in-plane components, the third, across the plane, is
identically zero). Without ``canonical_shape`` the dataset holds every axis whole (schema 1 and 2 files).

Such a shorter field has beside it, in the index, the virtual dataset ``padded/<name>`` of the stored axes at their
whole length, the entries past the stored ones HDF5's fill value, zero (nothing stored): what the XDMF gives ParaView,
whose vectors have three components.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: the group of an index holding the whole of each field stored shorter than it is (its zero entries unstored)
PADDED = "padded"


def transposed(data: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """``np.transpose(data, axes)`` as a contiguous array, copied one slice (along the result's axis 1) at a
    time so that each slice's copy stays in cache: reversing a (3, 128, 128, 128) float32 block took 27 ms
    against 96 ms as one strided copy (2 cores), (3, 256, 256, 256) 305 ms against 724 ms."""
    axes = tuple(axes)
    if axes == tuple(range(data.ndim)):
        return data
    if data.ndim < 3:
        return np.ascontiguousarray(np.transpose(data, axes))
    out = np.empty(tuple(data.shape[a] for a in axes), data.dtype)
    loop = axes[1]
    rest = [a - (a > loop) for a in axes if a != loop]  # the axes of one slice of data, in the result's order
    index: list[Any] = [slice(None)] * data.ndim
    for i in range(data.shape[loop]):
        index[loop] = i
        out[:, i] = np.transpose(data[tuple(index)], rest)
    return out


def full_index(index: Any, ndim: int) -> list[int | slice]:
    """``index`` (an integer, a slice, or a tuple of them with at most one Ellipsis) as one entry per axis."""
    entries = list(index) if isinstance(index, tuple) else [index]
    if entries.count(Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis")
    for entry in entries:
        if entry is not Ellipsis and not isinstance(entry, (int, np.integer, slice)):
            raise TypeError(f"index entries must be integers or slices, not {type(entry).__name__}")
    if Ellipsis in entries:
        at = entries.index(Ellipsis)
        entries[at:at + 1] = [slice(None)] * (ndim - len(entries) + 1)
    if len(entries) > ndim:
        raise IndexError(f"too many indices ({len(entries)}) for a field of {ndim} axes")
    return entries + [slice(None)] * (ndim - len(entries))


def canonical_shape(stored: Sequence[int], order: Sequence[int], shape: Sequence[int] | None) -> tuple[int, ...]:
    """The canonical shape of a dataset of shape ``stored`` whose axes are the canonical ``order``: ``shape``
    (its ``canonical_shape`` attribute) where it has one, else the stored axes put back in canonical order."""
    if shape is not None:
        return tuple(int(n) for n in shape)
    return tuple(int(stored[j]) for j in np.argsort(order))


def read(ds: Any, order: Sequence[int], shape: Sequence[int], index: Any = ()) -> np.ndarray:
    """``index`` (canonical axes, as :func:`full_index` takes it) of the canonical array of ``shape`` stored in the
    dataset ``ds`` (an h5py dataset, or any array) whose axes are the canonical ``order``; only the part of ``ds``
    the index touches is read, but an axis stored shorter than ``shape`` (the zero entries left out), which is read
    whole and padded."""
    canonical = full_index(index, len(shape))
    order = [int(a) for a in order]
    padded = {a for j, a in enumerate(order) if ds.shape[j] < shape[a]}
    later = padded | (set(range(len(shape))) - set(order))  # indexed once put back: left-out and padded axes
    data = np.asarray(ds[tuple(slice(None) if a in later else canonical[a] for a in order)])
    kept = [a for a in order if a in later or isinstance(canonical[a], slice)]
    data = np.transpose(data, np.argsort(kept))
    held = sorted(kept)
    for a in sorted(set(range(len(shape))) - set(order)):  # a left-out axis of one entry, where it stood
        data = np.expand_dims(data, sum(h < a for h in held))
        held = sorted([*held, a])
    for a in padded:  # the entries past the stored ones are zero
        width = [(0, 0)] * data.ndim
        width[held.index(a)] = (0, shape[a] - data.shape[held.index(a)])
        data = np.pad(data, width)
    return data[tuple(canonical[a] if a in later else slice(None) for a in held)]
