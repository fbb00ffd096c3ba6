"""The snapshot fields of a netCDF export (:mod:`simulator.results.export`; no JAX): their dimension names, shapes
and values as exported, read from each file's own layout. A box's fields are exported as :meth:`Snapshot.read`
gives them, canonical ``(*batch, x, y, z)``; a plane's as a plane, ``(*batch, x, y)`` (between plates ``(*batch, x,
z)``), its vectors' two components in the plane, whether its file stores it as a plane or, as files before schema 3
did, one cell deep with a zero third component."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simulator.fft.plane import holds_plane
from simulator.output.hdf5 import Snapshot
from simulator.output.snapshots import names


def field_dims(snap: Snapshot, name: str) -> tuple[str, ...]:
    """The dimension names of field ``name`` as exported, in canonical order ``(*batch, x, y, z)``: a batch axis's
    the scale's attached to it, else component (schema 1 attached none), the grid's the snapshot's axis names
    (:func:`~simulator.output.snapshots.names`); a plane's one cell left out (:func:`in_plane`)."""
    ds, order, shape = snap.file[name], snap.storage_order(name), snap.shape(name)
    attached = {a: dim[0].name.rsplit("/", 1)[-1] for a, dim in zip(order, ds.dims, strict=True) if len(dim)}
    nb = len(shape) - 3
    dims = (*(attached.get(a, "component") for a in range(nb)), *names(snap))
    return (*dims[:nb], *dims[nb + 1:]) if holds_plane(shape[-3:]) else dims


def in_plane(values: np.ndarray, dims: Sequence[str]) -> np.ndarray:
    """A field as :meth:`Snapshot.read` gives it, canonical, as exported (dimensions ``dims``: :func:`field_dims`):
    a box's as it is, a plane's ``(*batch, 1, Nx, Ny)`` without its one cell, its vectors their two components in the
    plane (the third, across it, is zero), whichever layout its file has."""
    if values.ndim - len(dims) != 1:
        return values
    plane = values[..., 0, :, :]
    return plane[:2] if dims[0] == "component" else plane


def exported_shape(snap: Snapshot, name: str) -> tuple[int, ...]:
    """The shape of field ``name`` as exported (:func:`in_plane`), read from the file's layout alone."""
    shape, dims = snap.shape(name), field_dims(snap, name)
    return shape if len(shape) == len(dims) else ((2,) if dims[0] == "component" else shape[:-3]) + shape[-2:]
