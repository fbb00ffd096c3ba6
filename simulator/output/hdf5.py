"""Distributed HDF5 output: per-process shard files, a virtual-dataset index, and readers.

Writing (collective; every process calls the same function with the same fields):

* every process writes the blocks of each field that its devices own to its own file
  ``<stem>/p<rank>.h5``, each block as a dataset ``<field>/b<i>`` with its global ``start`` and
  ``stop`` as attributes, the group ``<field>`` with the ``global_shape``, and the file with the
  shared attributes (step, time, config, versions, schema version); a block held by several devices (replication) is written once, by the
  lowest-numbered device holding it, a rule every process evaluates alone, so nothing is exchanged
  and nothing is gathered;
* each file is written under a temporary name and renamed when complete (attribute ``complete``);
* after a barrier, process 0 writes ``<stem>.h5``: one HDF5 virtual dataset per field, of the global
  shape, stitched from the blocks by relative paths (the directory can be moved), with the shared
  attributes (step, time, resolved config, versions, schema version). The block layout comes from the
  arrays' shardings, which every process knows.

Arrays are stored in canonical axis order ``(*batch, x, y, z)``: spectral arrays of a backend whose
k-space axes are permuted are transposed block by block on the way out and back on the way in.

Reading: :class:`Snapshot` opens the index, refuses one whose shard files are missing or incomplete
(:class:`IncompleteOutputError`), and reads one field, a slice of it (only the blocks it touches), or
all of it. :func:`read_into` fills a sharded array of any layout from an index file, each process
reading only its own blocks (re-sharding on read).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import h5py
import numpy as np

if TYPE_CHECKING:  # writing and re-sharding need JAX; reading a written file does not
    import jax

SCHEMA_VERSION = 1
Index = tuple[slice, ...]


class IncompleteOutputError(RuntimeError):
    """A snapshot or checkpoint whose shard files are missing, unreadable or incomplete."""


class OutputWriteError(RuntimeError):
    """Writing an output file failed (disk full, permissions, quota); names the file."""


@dataclass(frozen=True)
class Field:
    """One array to write: the array, its backend axis order ``perm`` (spectral arrays) and attributes."""

    array: jax.Array
    perm: tuple[int, int, int] = (0, 1, 2)
    attrs: Mapping[str, Any] | None = None


def _bounds(index: Index, shape: Sequence[int]) -> tuple[tuple[int, int], ...]:
    return tuple(s.indices(n)[:2] for s, n in zip(index, shape, strict=True))


def _canonical_order(ndim: int, perm: Sequence[int]) -> tuple[int, ...]:
    """Axes of a canonical (*batch, x, y, z) array taken in the backend's order: ``np.transpose(c, this)``
    gives the backend layout; ``np.argsort(this)`` undoes it."""
    nb = ndim - 3
    return (*range(nb), *(nb + p for p in perm))


def blocks(array: jax.Array) -> list[tuple[tuple[tuple[int, int], ...], Any]]:
    """Distinct blocks of a sharded array, in backend axis order, sorted by start: (bounds, owner device).

    The owner of a replicated block is the lowest-numbered device holding it. Every process computes
    the same list from the sharding alone.
    """
    owners: dict[tuple[tuple[int, int], ...], Any] = {}
    for device, index in sorted(array.sharding.devices_indices_map(array.shape).items(), key=lambda kv: kv[0].id):
        owners.setdefault(_bounds(index, array.shape), device)
    return sorted(owners.items(), key=lambda kv: kv[0])


def _to_canonical(bounds: Sequence[tuple[int, int]], perm: Sequence[int]) -> tuple[tuple[int, int], ...]:
    order = np.argsort(_canonical_order(len(bounds), perm))
    return tuple(bounds[i] for i in order)


def describe_os_error(err: OSError) -> str:
    """A one-line reason for a failed write (HDF5's messages span lines and bury the errno)."""
    if err.errno:
        return os.strerror(err.errno)
    found = re.search(r"errno = (\d+)", str(err))
    return os.strerror(int(found.group(1))) if found else str(err).splitlines()[0]


def _write_atomically(path: Path, fill: Callable[[h5py.File], None]) -> None:
    """Write an HDF5 file under a temporary name, mark it complete, then rename it into place."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with h5py.File(tmp, "w") as f:
            fill(f)
            f.attrs["complete"] = True
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err


def barrier(name: str) -> None:
    """Wait for every process (no-op in a single-process run)."""
    import jax

    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def process_file(stem: Path, rank: int) -> Path:
    return stem / f"p{rank:04d}.h5"


def write(stem: Path, fields: Mapping[str, Field], attrs: Mapping[str, Any]) -> Path:
    """Write ``fields`` as ``stem/p<rank>.h5`` on every process and the index ``stem.h5`` on process 0.

    Collective. ``attrs`` values must be HDF5-storable (numbers, strings); mappings are stored as
    JSON text. Returns the index path.
    """
    import jax

    rank = jax.process_index()
    try:
        stem.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputWriteError(f"creating {stem} failed: {describe_os_error(err)}") from err

    def fill_process(f: h5py.File) -> None:
        _set_attrs(f, {**attrs, "process": rank, "processes": jax.process_count()})
        for name, field in fields.items():
            arr = field.array
            group = f.create_group(name)
            order = np.argsort(_canonical_order(arr.ndim, field.perm))
            group.attrs["global_shape"] = [arr.shape[i] for i in order]
            local = {s.device: s for s in arr.addressable_shards}
            for i, (bounds, owner) in enumerate(blocks(arr)):
                if owner not in local:
                    continue
                data = np.transpose(np.asarray(local[owner].data), np.argsort(_canonical_order(arr.ndim, field.perm)))
                ds = group.create_dataset(f"b{i}", data=data)
                canon = _to_canonical(bounds, field.perm)
                ds.attrs["start"] = [b[0] for b in canon]
                ds.attrs["stop"] = [b[1] for b in canon]

    _write_atomically(process_file(stem, rank), fill_process)
    barrier(f"write {stem}")
    index = stem.with_suffix(".h5")
    if rank == 0:
        _write_atomically(index, lambda f: _fill_index(f, stem, fields, attrs))
    barrier(f"index {stem}")
    return index


def _set_attrs(obj: h5py.HLObject, attrs: Mapping[str, Any]) -> None:
    for key, value in {**attrs, "schema_version": SCHEMA_VERSION}.items():
        obj.attrs[key] = json.dumps(value) if isinstance(value, (dict, list)) else value


def _fill_index(f: h5py.File, stem: Path, fields: Mapping[str, Field], attrs: Mapping[str, Any]) -> None:
    _set_attrs(f, attrs)
    sources = sorted({process_file(stem, d.process_index).name
                      for field in fields.values() for _, d in blocks(field.array)})
    f.attrs["sources"] = json.dumps([f"{stem.name}/{s}" for s in sources])
    for name, field in fields.items():
        arr = field.array
        order = np.argsort(_canonical_order(arr.ndim, field.perm))
        shape = tuple(arr.shape[i] for i in order)
        layout = h5py.VirtualLayout(shape=shape, dtype=arr.dtype)
        for i, (bounds, owner) in enumerate(blocks(arr)):
            canon = _to_canonical(bounds, field.perm)
            block_shape = tuple(b - a for a, b in canon)
            source = h5py.VirtualSource(f"{stem.name}/{process_file(stem, owner.process_index).name}",
                                        f"{name}/b{i}", shape=block_shape)
            layout[tuple(slice(a, b) for a, b in canon)] = source
        # every element is mapped, so the fill value never shows; NaN would flag a layout bug in floats
        ds = f.create_virtual_dataset(name, layout, fillvalue=np.nan if arr.dtype.kind == "f" else None)
        for key, value in (field.attrs or {}).items():
            ds.attrs[key] = value


class Snapshot:
    """A written snapshot or checkpoint, read through its index file with plain h5py.

    ``Snapshot(path)`` accepts the index ``.h5`` file. It checks that every shard file the index
    refers to exists, opens, and is complete; otherwise it raises IncompleteOutputError naming the file.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise IncompleteOutputError(f"{self.path} does not exist")
        try:
            self.file = h5py.File(self.path, "r")
        except OSError as err:
            raise IncompleteOutputError(f"{self.path} is not a readable HDF5 file ({err})") from err
        if not self.file.attrs.get("complete", False):
            raise IncompleteOutputError(f"{self.path} is incomplete")
        for rel in json.loads(self.file.attrs["sources"]):
            source = self.path.parent / rel
            try:
                with h5py.File(source, "r") as s:
                    ok = bool(s.attrs.get("complete", False))
            except OSError:
                raise IncompleteOutputError(f"{self.path}: shard file {source} is missing or unreadable") from None
            if not ok:
                raise IncompleteOutputError(f"{self.path}: shard file {source} is incomplete")

    @property
    def attrs(self) -> dict[str, Any]:
        out = {}
        for key, value in self.file.attrs.items():
            if isinstance(value, str) and value[:1] in "{[":
                value = json.loads(value)
            out[key] = value.item() if isinstance(value, np.generic) else value
        return out

    @property
    def fields(self) -> list[str]:
        return list(self.file)

    def read(self, name: str, index: Any = ()) -> np.ndarray:
        """Field ``name`` (canonical order ``(*batch, x, y, z)``), or ``index`` of it, e.g.
        ``(0, slice(None), slice(None), 5)`` for one z-plane of the first component; only the shard
        blocks the slice touches are read."""
        if name not in self.file:
            raise KeyError(f"{self.path} has no field {name!r}; it has {', '.join(self.fields)}")
        return self.file[name][index]

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_into(snapshot: Snapshot, name: str, shape: Sequence[int], sharding: jax.sharding.Sharding,
              perm: Sequence[int] = (0, 1, 2), dtype: Any = None) -> jax.Array:
    """A sharded array of global ``shape`` (backend axis order ``perm``) filled from field ``name``.

    Each process reads only the blocks of its own devices, whatever layout wrote the file. The stored
    field may be larger along an axis (a full spectrum read into a half one): the leading part is taken.
    """
    import jax

    ds = snapshot.file[name]
    order = _canonical_order(len(shape), perm)
    inverse = np.argsort(order)

    def block(index: Index) -> np.ndarray:
        bounds = _bounds(index, shape)
        canon = tuple(slice(*bounds[i]) for i in inverse)
        data = ds[canon]
        return np.transpose(data, order).astype(dtype or ds.dtype, copy=False)

    return jax.make_array_from_callback(tuple(shape), sharding, block, dtype=dtype or ds.dtype)
