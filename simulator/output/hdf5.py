"""Distributed HDF5 output: per-process shard files, a virtual-dataset index, and readers.

Writing (collective; every process calls the same function with the same fields):

* every process writes the blocks of each field that its devices own to its own file ``<stem>/p<rank>.h5``,
  each block as a dataset ``<field>/b<i>`` with its global ``start`` and ``stop`` as attributes, the group
  ``<field>`` with the ``global_shape``, and the file with the shared attributes (step, time, config,
  versions, schema version); a block held by several devices is written once, by the lowest-numbered device
  holding it (a rule every process evaluates alone: nothing is exchanged or gathered);
* each file is written under a temporary name and renamed when complete (attribute ``complete``);
  the chunk cache is off, so a failed write (a full disk) fails in its call and closing stays safe
  (HDF5 crashes flushing a cached chunk at close); ``checksum=True`` (checkpoints) stores blocks in
  chunks of at most 1 MiB with HDF5's Fletcher-32 checksum, verified by HDF5 on every read;
* after a barrier, process 0 writes ``<stem>.h5``: one HDF5 virtual dataset per field, of the global
  shape, stitched from the blocks by relative paths (the directory can be moved), with the shared
  attributes (step, time, resolved config, versions, schema version). The block layout comes from the
  arrays' shardings, which every process knows. It then removes the stem's shards of processes past the
  run's count, left by an earlier write of the stem on more processes (:func:`remove_stale_shards`).

Axis order on disk. By default an array is stored in canonical order ``(*batch, x, y, z)``: spectral
arrays of a backend whose k-space axes are permuted are transposed block by block on the way out and
back on the way in (checkpoints). A field may name another storage order (:attr:`Field.storage`, the
canonical axes in the order they are stored): snapshots store ``(z, y, x)`` and ``(z, y, x, component)``,
the order ParaView reads natively (see :mod:`simulator.output.snapshots`). Each block is transposed on
the host before it is written, so the data is stored once, in that order; the index dataset's attribute
``storage_order`` records it (absent: canonical, as in every schema-1 file). A storage order may leave out axes of
one entry, and a field may be the leading part of a longer one (:attr:`Field.canonical`, the rest zero): a plane is
stored as a plane (:mod:`simulator.output.storage` reads it back canonical).

Coordinates (:class:`Coordinate`) are 1D datasets of the index made HDF5 dimension scales and attached
to the axes of the fields that name them (:attr:`Field.dims`), so netCDF readers (xarray with
h5netcdf) see named dimensions with coordinates.

Reading: :class:`IndexedFile` (:class:`Snapshot` for snapshots) opens the index, refuses one whose shards are
missing, incomplete or of another write (:class:`IncompleteOutputError`; their ``writer``, the writing run segment's
identity, is not the index's: a restart stopped while rewriting it), and reads a field, a slice of it (only the
blocks it touches) or all of it, in canonical order whatever the storage order; :func:`read_into` fills a sharded
array of any layout, each process reading only its own blocks (re-sharding on read). The writer and the readers
share one file layout (blocks with their bounds, the index, completion and checksums), so they live together.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import h5py
import numpy as np

from simulator.output import storage, summary

if TYPE_CHECKING:  # writing and re-sharding need JAX; reading a written file does not
    import jax

#: 3: a field's storage order may leave out axes of one entry and its leading axis zero entries (the dataset's
#: ``canonical_shape``: a plane stored as a plane). 2: fields may be stored in another axis order
#: (``storage_order``), coordinates as dimension scales, lists of numbers as numeric attributes. 1: canonical order
#: only, lists as JSON text.
SCHEMA_VERSION = 3
Index = tuple[slice, ...]


class IncompleteOutputError(RuntimeError):
    """A snapshot or checkpoint whose shard files are missing, unreadable or incomplete."""


class OutputWriteError(RuntimeError):
    """Writing an output file failed (disk full, permissions, quota); names the file."""


@dataclass(frozen=True)
class Field:
    """One array to write: the array, its backend axis order ``perm`` (spectral arrays) and attributes.

    ``dims`` names the canonical axes ``(*batch, x, y, z)``, e.g. ``("component", "x", "y", "z")``: each
    axis gets the index's coordinate of that name as its dimension scale. ``storage`` lists the
    canonical axes in the order they are stored, e.g. ``(3, 2, 1, 0)``, an axis of one entry it leaves out not
    stored, e.g. ``(3, 2, 0)`` of a plane's ``(2, 1, Nx, Ny)``; None stores canonical order. ``canonical``: the shape
    readers return, where it is longer than the array's along an axis (the entries past the array's zero: a plane's
    vector stored without its third component) or the storage leaves an axis out.
    """

    array: jax.Array
    perm: tuple[int, int, int] = (0, 1, 2)
    attrs: Mapping[str, Any] | None = None
    dims: tuple[str, ...] | None = None
    storage: tuple[int, ...] | None = None
    canonical: tuple[int, ...] | None = None

    def stored_axes(self) -> tuple[int, ...]:
        """The backend array's axes in stored order, those the storage leaves out first: ``np.transpose(backend_block,
        this)`` is the stored block with those axes (of one entry) ahead of it."""
        to_canonical = np.argsort(canonical_order(self.array.ndim, self.perm))
        storage = list(self.storage) if self.storage is not None else list(range(self.array.ndim))
        storage = [a for a in range(self.array.ndim) if a not in storage] + storage
        return tuple(int(to_canonical[a]) for a in storage)

    def kept(self) -> int:
        """How many axes are stored (the last so many of :meth:`stored_axes`)."""
        return self.array.ndim if self.storage is None else len(self.storage)


@dataclass(frozen=True)
class Parts:
    """An array of global ``shape``, ``(n, Nx, Ny, Nz)`` or ``(Nx, Ny, Nz)``, never held whole: ``part(i)``
    computes its slice ``i`` along the leading axis, ``(Nx, Ny, Nz)`` sharded as the whole is along the grid
    axes (the whole itself for a 3D array, i = 0). ``sharding``: the whole's, unsplit along the leading axis.

    :func:`write` stores it as it stores the whole array, bit for bit, asking for one slice at a time: a run's
    snapshots, so that no device holds more than one component of one field
    (:meth:`simulator.run.simulation.Simulation.snapshot_parts`). Each process keeps its blocks of the whole
    on the host until the last slice is in (one field's share at a time)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    sharding: jax.sharding.Sharding
    part: Callable[[int], jax.Array]

    @property
    def ndim(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Coordinate:
    """A 1D coordinate of the index file (numbers or strings), stored as an HDF5 dimension scale."""

    values: np.ndarray
    attrs: Mapping[str, Any] | None = None


def _bounds(index: Index, shape: Sequence[int]) -> tuple[tuple[int, int], ...]:
    return tuple(s.indices(n)[:2] for s, n in zip(index, shape, strict=True))


def canonical_order(ndim: int, perm: Sequence[int]) -> tuple[int, ...]:
    """Axes of a canonical (*batch, x, y, z) array taken in the backend's order: ``np.transpose(c, this)``
    gives the backend layout; ``np.argsort(this)`` undoes it."""
    nb = ndim - 3  # below 0: not a field on the grid (particles' (Np, 3) arrays), stored as it is
    return tuple(range(ndim)) if nb < 0 else (*range(nb), *(nb + p for p in perm))


def blocks(array: jax.Array) -> list[tuple[tuple[tuple[int, int], ...], Any]]:
    """Distinct blocks of a sharded array, in backend axis order, sorted by start: (bounds, owner device).

    The owner of a replicated block is the lowest-numbered device holding it. Every process computes
    the same list from the sharding alone.
    """
    owners: dict[tuple[tuple[int, int], ...], Any] = {}
    for device, index in sorted(array.sharding.devices_indices_map(array.shape).items(), key=lambda kv: kv[0].id):
        owners.setdefault(_bounds(index, array.shape), device)
    return sorted(owners.items(), key=lambda kv: kv[0])


def describe_os_error(err: Exception) -> str:
    """A one-line reason for a failed write (HDF5's messages span lines and bury the errno)."""
    if getattr(err, "errno", None):
        return os.strerror(err.errno)  # type: ignore[attr-defined]
    found = re.search(r"errno = (\d+)", str(err))
    return os.strerror(int(found.group(1))) if found else (str(err).splitlines() or [type(err).__name__])[0]


def write_atomically(path: Path, fill: Callable[[h5py.File], None]) -> None:
    """Write an HDF5 file under a temporary name, mark it complete, then rename it into place."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with h5py.File(tmp, "w", rdcc_nbytes=0) as f:  # no chunk cache: see the module docstring
            fill(f)
            f.attrs["complete"] = True
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:  # h5py reports some failed writes as RuntimeError
        tmp.unlink(missing_ok=True)
        raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err


#: the largest chunk of a checksummed block
CHUNK_BYTES = 1 << 20


def checksum_chunks(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """Chunks of a block of ``shape`` that tile it exactly and hold at most CHUNK_BYTES: the trailing
    axes whole, the first axis that does not fit cut into equal parts, the axes before it cut to 1."""
    chunks, size = list(shape), itemsize
    for axis in range(len(shape) - 1, -1, -1):
        if size * shape[axis] <= CHUNK_BYTES:
            size *= shape[axis]
            continue
        rows = max(1, CHUNK_BYTES // size)
        chunks[axis] = max(d for d in range(1, rows + 1) if shape[axis] % d == 0)
        chunks[:axis] = [1] * axis
        break
    return tuple(max(1, c) for c in chunks)


def barrier(name: str) -> None:
    """Wait for every process (no-op in a single-process run)."""
    import jax

    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def process_file(stem: Path, rank: int) -> Path:
    return stem / f"p{rank:04d}.h5"


def remove_stale_shards(stem: Path, processes: int) -> None:
    """Remove the shard files of ``stem`` of processes ``processes`` and up, once its new index is written
    (process 0): an earlier write of this stem on more processes left them (a restart on fewer rewrites the
    outputs past its checkpoint), and the index no longer names them."""
    for path in stem.glob("p*.h5"):
        rank = path.stem[1:]
        if rank.isdigit() and int(rank) >= processes:
            try:
                path.unlink()
            except OSError:  # one left behind misleads but harms no reader: not a reason to fail the run
                pass


def write(stem: Path, fields: Mapping[str, Field], attrs: Mapping[str, Any],
          coordinates: Mapping[str, Coordinate] | None = None, *, checksum: bool = False) -> Path:
    """Write ``fields`` as ``stem/p<rank>.h5`` on every process and the index ``stem.h5`` on process 0.

    Collective. ``attrs`` values must be HDF5-storable: numbers, strings, lists of numbers (stored as
    numeric arrays); mappings and other lists are stored as JSON text. ``coordinates`` become dimension
    scales of the index, attached to the field axes that name them. ``checksum``: store each block
    with Fletcher-32 checksums (see :func:`checksum_chunks`). Returns the index path.
    """
    import jax

    clash = sorted(set(coordinates or {}) & set(fields))
    if clash:
        raise ValueError(f"coordinate names {clash} are also field names")

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
            axes = field.stored_axes()
            kept = axes[len(axes) - field.kept():]
            group.attrs["global_shape"] = [arr.shape[i] for i in kept]
            if field.storage is not None:
                group.attrs["storage_order"] = list(field.storage)
            for i, bounds, data in _local_blocks(arr, axes):
                data = data.reshape(data.shape[len(axes) - len(kept):])  # the left-out axes of one entry
                extra = {"chunks": checksum_chunks(data.shape, data.itemsize), "fletcher32": True} if checksum else {}
                ds = group.create_dataset(f"b{i}", data=data, **extra)
                ds.attrs["start"] = [bounds[a][0] for a in kept]
                ds.attrs["stop"] = [bounds[a][1] for a in kept]

    write_atomically(process_file(stem, rank), fill_process)
    barrier(f"write {stem}")
    index = stem.with_suffix(".h5")
    if rank == 0:
        write_atomically(index, lambda f: _fill_index(f, stem, fields, attrs, coordinates or {}))
        remove_stale_shards(stem, jax.process_count())
    barrier(f"index {stem}")
    return index


def _local_blocks(arr: jax.Array | Parts, axes: Sequence[int]
                  ) -> Iterator[tuple[int, tuple[tuple[int, int], ...], np.ndarray]]:
    """The blocks of ``arr`` this process writes (:func:`blocks`: each by its owner) as ``(number, bounds,
    stored block)``, the block transposed to the stored ``axes``, one at a time. Of :class:`Parts` one slice
    at a time (a collective call each, made by every process in the same order), each slice's blocks put in
    place in the host's copies of the whole blocks."""
    import jax

    if isinstance(arr, Parts) and arr.ndim == 3:
        whole, arr = arr, arr.part(0)
        if arr.sharding.devices_indices_map(arr.shape) != whole.sharding.devices_indices_map(whole.shape):
            raise ValueError(f"a {list(whole.shape)} array is not laid out as its declared sharding {whole.sharding}")
    if not isinstance(arr, Parts):
        local = {s.device: s for s in arr.addressable_shards}
        for i, (bounds, owner) in enumerate(blocks(arr)):
            if owner in local:
                yield i, bounds, storage.transposed(np.asarray(local[owner].data), axes)
        return
    owned = [(i, bounds, owner) for i, (bounds, owner) in enumerate(blocks(arr))
             if owner.process_index == jax.process_index()]
    slot = list(axes).index(0)  # where the leading axis is stored
    rest = [a - 1 for a in axes if a != 0]  # a slice's axes in stored order
    out = {i: np.empty([bounds[a][1] - bounds[a][0] for a in axes], arr.dtype) for i, bounds, _ in owned}
    for j in range(arr.shape[0]):
        part = arr.part(j)
        where = part.sharding.devices_indices_map(part.shape)
        local = {s.device: s for s in part.addressable_shards}
        for i, bounds, owner in owned:
            if bounds[0] != (0, arr.shape[0]) or _bounds(where[owner], part.shape) != bounds[1:]:
                raise ValueError(f"slice {j} of a {list(arr.shape)} array is not laid out as the whole: its "
                                 f"{_bounds(where[owner], part.shape)} on {owner}, the whole's {bounds}")
            out[i][(slice(None),) * slot + (j,)] = storage.transposed(np.asarray(local[owner].data), rest)
    for i, bounds, _ in owned:
        yield i, bounds, out.pop(i)


def _numbers(value: Any) -> bool:
    return (isinstance(value, (list, tuple)) and len(value) > 0
            and all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in value))


def _set_attrs(obj: h5py.HLObject, attrs: Mapping[str, Any]) -> None:
    for key, value in {**attrs, "schema_version": SCHEMA_VERSION}.items():
        if _numbers(value):
            obj.attrs[key] = np.asarray(value)
        elif isinstance(value, (dict, list, tuple)):
            obj.attrs[key] = json.dumps(value)
        else:
            obj.attrs[key] = value


def _fill_index(f: h5py.File, stem: Path, fields: Mapping[str, Field], attrs: Mapping[str, Any],
                coordinates: Mapping[str, Coordinate]) -> None:
    _set_attrs(f, attrs)
    for name, coord in coordinates.items():
        values = np.asarray(coord.values)
        if values.dtype.kind in "OUS":  # text: variable-length UTF-8, what netCDF readers decode as strings
            f.create_dataset(name, data=values.astype(object), dtype=h5py.string_dtype())
        else:
            f.create_dataset(name, data=values)
        f[name].make_scale(name)
        for key, value in (coord.attrs or {}).items():
            f[name].attrs[key] = value
    sources = sorted({process_file(stem, d.process_index).name
                      for field in fields.values() for _, d in blocks(field.array)})
    f.attrs["sources"] = json.dumps([f"{stem.name}/{s}" for s in sources])
    for name, field in fields.items():
        arr = field.array
        axes = field.stored_axes()[arr.ndim - field.kept():]
        shape = [arr.shape[i] for i in axes]
        # every element is mapped, so the fill value never shows; NaN would flag a layout bug in floats
        ds = _virtual(f, name, stem, name, arr, axes, shape, np.nan if arr.dtype.kind == "f" else None)
        whole = [field.canonical[i] for i in axes] if field.canonical is not None else shape
        if whole != shape:  # stored shorter than it is: its whole, the rest zero, for readers that need it (ParaView)
            _virtual(f, f"{storage.PADDED}/{name}", stem, name, arr, axes, whole, 0).attrs["description"] = (
                f"/{name} whole: its entries past the stored ones are the fill value, 0, not stored")
        for key, value in (field.attrs or {}).items():
            ds.attrs[key] = value
        if field.storage is not None:
            ds.attrs["storage_order"] = list(field.storage)
        if field.canonical is not None or field.kept() < arr.ndim:
            ds.attrs["canonical_shape"] = list(field.canonical or arr.shape)
        for j, axis in enumerate(field.storage if field.storage is not None else range(arr.ndim)):
            dim = field.dims[axis] if field.dims else None
            if dim is not None and dim in coordinates:
                ds.dims[j].attach_scale(f[dim])


def _virtual(f: h5py.File, path: str, stem: Path, name: str, arr: jax.Array | Parts, axes: Sequence[int],
             shape: Sequence[int], fill: Any) -> h5py.Dataset:
    """The virtual dataset ``path`` of ``shape`` in ``f``: the blocks of field ``name`` (:func:`blocks` of ``arr``, its
    ``axes`` stored) from the shard files, where they lie; any element outside them reads as ``fill``."""
    layout = h5py.VirtualLayout(shape=tuple(shape), dtype=arr.dtype)
    for i, (bounds, owner) in enumerate(blocks(arr)):
        stored = [bounds[a] for a in axes]
        source = h5py.VirtualSource(f"{stem.name}/{process_file(stem, owner.process_index).name}",
                                    f"{name}/b{i}", shape=tuple(b - a for a, b in stored))
        layout[tuple(slice(a, b) for a, b in stored)] = source
    return f.create_virtual_dataset(path, layout, fillvalue=fill)


class IndexedFile:
    """A snapshot or checkpoint read through its index ``.h5`` file with plain h5py: checks that every shard
    file the index refers to exists, opens, is complete and records the index's ``writer`` (none in files
    written before writers were recorded), else raises IncompleteOutputError naming it."""
    __repr__ = summary.indexed_file  # one line for a notebook's print (summary.py: this module is at its size)

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
        writer = self.file.attrs.get("writer")
        for rel in json.loads(self.file.attrs["sources"]):
            source = self.path.parent / rel
            try:
                with h5py.File(source, "r") as s:
                    ok, by = bool(s.attrs.get("complete", False)), s.attrs.get("writer")
            except OSError:
                raise IncompleteOutputError(f"{self.path}: shard file {source} is missing or unreadable") from None
            if not ok:
                raise IncompleteOutputError(f"{self.path}: shard file {source} is incomplete")
            if by != writer:  # a rewrite stopped between the shards and the index: the index stitches two writes
                raise IncompleteOutputError(f"{self.path}: shard file {source} is of another write (writer {by}, the "
                                            f"index's {writer}): a rewrite of it stopped part way")

    @property
    def attrs(self) -> dict[str, Any]:
        """The index's attributes; JSON text decoded, numeric arrays as lists (schema 1 stored those as JSON)."""
        out = {}
        for key, value in self.file.attrs.items():
            if isinstance(value, str) and value[:1] in "{[":
                value = json.loads(value)
            elif isinstance(value, np.ndarray) and value.ndim == 1:
                value = value.tolist()
            out[key] = value.item() if isinstance(value, np.generic) else value
        return out

    @property
    def fields(self) -> list[str]:
        """The stored fields (coordinates, which are dimension scales, left out)."""
        return [name for name, ds in self.file.items() if isinstance(ds, h5py.Dataset) and not ds.is_scale]

    def storage_order(self, name: str) -> tuple[int, ...]:
        """The canonical axes of field ``name`` in the order they are stored (identity for schema 1)."""
        ds = self._dataset(name)
        return tuple(int(a) for a in ds.attrs.get("storage_order", range(ds.ndim)))

    def shape(self, name: str) -> tuple[int, ...]:
        """The canonical shape ``(*batch, Nx, Ny, Nz)`` of field ``name`` (a plane's ``(*batch, 1, Nx, Ny)``, its
        vectors' three components, however it is stored: :mod:`simulator.output.storage`)."""
        ds = self._dataset(name)
        return storage.canonical_shape(ds.shape, self.storage_order(name), ds.attrs.get("canonical_shape"))

    def slowest_axis(self, name: str) -> int:
        """The canonical axis stored slowest, whose planes are contiguous (cheap to read one at a time)."""
        return self.storage_order(name)[0]

    def read(self, name: str, index: Any = ()) -> np.ndarray:
        """Field ``name`` in canonical order ``(*batch, x, y, z)``, or ``index`` of it (integers, slices and
        one Ellipsis, in canonical axes), e.g. ``(0, slice(None), slice(None), 5)`` for one z-plane of the
        first component; only the shard blocks the slice touches are read."""
        ds = self._dataset(name)
        order = self.storage_order(name)
        if order == tuple(range(ds.ndim)) and "canonical_shape" not in ds.attrs:
            return ds[index]
        return storage.read(ds, order, self.shape(name), index)

    def _dataset(self, name: str) -> h5py.Dataset:
        if name not in self.fields:
            raise KeyError(f"{self.path} has no field {name!r}; it has {', '.join(self.fields)}")
        return self.file[name]

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> IndexedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Snapshot(IndexedFile, Mapping[str, np.ndarray]):
    """A snapshot (``snapshots/sNNNNNNNN.h5``) read back: :class:`IndexedFile`, and a mapping of its fields by name,
    ``snap["vorticity"]`` the whole field as ``snap.read("vorticity")``, ``list(snap)`` its :attr:`fields`."""

    __eq__, __hash__ = object.__eq__, object.__hash__  # a file, not its fields' values: Mapping's would read them

    def __getitem__(self, name: str) -> np.ndarray:
        return self.read(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __contains__(self, name: object) -> bool:  # Mapping's would read the field to know
        return name in self.fields


def read_into(snapshot: IndexedFile, name: str, shape: Sequence[int], sharding: jax.sharding.Sharding,
              perm: Sequence[int] = (0, 1, 2), dtype: Any = None) -> jax.Array:
    """A sharded array of global ``shape`` (backend axis order ``perm``) filled from field ``name``.

    Each process reads only the blocks of its own devices, whatever layout wrote the file and whatever
    axis order it is stored in. The stored field may be larger along an axis (a full spectrum read into
    a half one): the leading part is taken.
    """
    import jax

    ds = snapshot.file[name]
    stored, whole = snapshot.storage_order(name), snapshot.shape(name)
    order = canonical_order(len(shape), perm)
    inverse = np.argsort(order)

    def block(index: Index) -> np.ndarray:
        bounds = _bounds(index, shape)
        canon = tuple(slice(*bounds[i]) for i in inverse)
        return np.transpose(storage.read(ds, stored, whole, canon), order).astype(dtype or ds.dtype, copy=False)

    return jax.make_array_from_callback(tuple(shape), sharding, block, dtype=dtype or ds.dtype)
