"""Snapshots: the real-space output fields of one moment, per-process shards, an index and XDMF files.

Layout under the run directory::

    snapshots/s00000120/p0000.h5 ...  each process's blocks of every field
    snapshots/s00000120.h5            the index: one virtual dataset per field, coordinates, attributes
    snapshots/s00000120.xdmf          this snapshot for ParaView/VisIt
    snapshots/series.xdmf             every snapshot of the run so far, a temporal collection

``series.xdmf`` is rewritten by process 0 after each snapshot; a snapshot at an earlier step than the
series' last drops the later ones, and :func:`truncate_series` (for the run loop, on a restart) drops
those past the resumed step at once.

Fields are stored in the axis order ParaView reads natively: scalars ``(Nz, Ny, Nx)``, vectors
``(Nz, Ny, Nx, 3)`` with the component fastest (see :mod:`simulator.output.xdmf` for why).
A *stacked* field (n scalar fields in one array, e.g. passive scalars) is stored like a vector,
``(Nz, Ny, Nx, n)``, with its own index coordinate ``<name>_index`` (0 .. n-1) instead of ``component``.
:meth:`simulator.output.hdf5.Snapshot.read` still returns canonical ``(*batch, x, y, z)``.

The index is also a netCDF-4 file for h5py and xarray users: ``x``, ``y``, ``z`` (grid points
``i * L / N``, length units; between plates the bounded axis's points) and ``component`` (``"x" "y" "z"``) are
dimension scales attached to the fields, so ``xr.open_dataset(index, engine="h5netcdf")`` gives ``velocity(z, y, x,
component)``. A plane (the box ``(1, Nx, Ny)`` it runs as) is stored as a plane (schema 3): scalars ``(Ny, Nx)``,
vectors ``(Ny, Nx, 2)`` of its two components (the third, across it, is zero: not stored), stacks ``(Ny, Nx, n)``,
coordinates ``x`` and ``y``, components ``"x" "y"``; a plane between plates is an x-z plane, ``(Nz, Nx)``, ``x`` and
``z``, components ``"x" "z"`` (:data:`simulator.fft.plane.WALLED_AXES`). Its vectors' whole, ``padded/<name>``
``(Ny, Nx, 3)``, is a virtual dataset whose third component is the fill value (for ParaView:
:mod:`simulator.output.xdmf`). Files of schema 2 and before stored it one cell deep, ``(1, Ny, Nx)`` and ``(1, Ny,
Nx, 3)``; the readers take either from the file's own layout (:mod:`simulator.output.storage`).
Attributes: ``step``, ``time``, ``box`` (the lengths along x, y, z, named by ``box_axes``: a plane's x and y, or x
and z; schema 2 added its z, the depth of its one cell, max(Lx, Ly)), ``units`` (JSON: at least length and time),
``config`` and ``versions`` (JSON), ``writer`` (the writing run segment's identity, in every shard too: a
snapshot of two writes is refused by its readers), and each variable's ``units`` (the run's unit system's, where its
equation has one: free-fall units of convection, outer units of a channel; ``units["system"]`` says them in words)
and ``description``.

A snapshot a later run segment superseded (a restart from an earlier step that has not written that step
again: :func:`simulator.output.segments.superseded`) stays in place, and the readers leave it out
(:func:`snapshot_files`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from simulator.errors import reading
from simulator.fft.bases import domain
from simulator.fft.plane import FILE_ORDER, axis_names, holds_plane, stored_lengths, stored_names
from simulator.output import hdf5, segments
from simulator.output.base import CODE_UNITS, Moment, OutputKind, Program, Schedule, Scheduled, Writer, WriterContext
from simulator.output.rows import open_for_reading
from simulator.output.xdmf import SeriesWriter, snapshot_grid, truncate_series, update_series, write_xdmf

if TYPE_CHECKING:
    import jax

__all__ = ["SnapshotOutput", "SnapshotRef", "SnapshotWriter", "lengths", "names", "snapshot_files", "storage_order",
           "truncate_series", "write_snapshot"]

DIR = "snapshots"

AXES = ("x", "y", "z")


@dataclass(frozen=True)
class SnapshotOutput(Scheduled):
    """Snapshots of the equation's real-space output fields (per-process HDF5, index, XDMF)."""


@dataclass(frozen=True)
class SnapshotRef:
    """A snapshot on disk: its index file ``path``, its ``step`` (from the file's name) and its ``time`` (read
    when first asked); :meth:`open` reads its fields. ``[s.time for s in run.snapshots]`` is the snapshots' times."""

    path: Path
    step: int

    @cached_property
    def time(self) -> float:
        """The snapshot's run time, the index file's attribute ``time``: only the index's attributes are read
        (no shard file, no field), once. DamagedFileError naming the index when it cannot be read."""
        with reading(self.path), open_for_reading(self.path) as f:
            return float(f.attrs["time"])

    def __repr__(self) -> str:
        """``SnapshotRef(outputs/run/snapshots/s00000200.h5, step 200, t = 0.5)``: its time read as :attr:`time`
        reads it, ``t unreadable`` for an index that does not read (printing a run's snapshots still works)."""
        try:
            when = f"t = {self.time:.6g}"
        except OSError:  # DamagedFileError, or the file gone since the run was loaded
            when = "t unreadable"
        return f"SnapshotRef({self.path}, step {self.step}, {when})"

    def open(self) -> hdf5.Snapshot:
        """The snapshot opened for reading (:class:`~simulator.output.hdf5.Snapshot`: its shard files checked);
        IncompleteOutputError naming a missing, damaged or incomplete file and what to do, as a damaged file's
        :class:`~simulator.errors.DamagedFileError` says it."""
        try:
            return hdf5.Snapshot(self.path)
        except hdf5.IncompleteOutputError as err:
            stem = self.path.with_suffix("")
            raise hdf5.IncompleteOutputError(
                f"{err}; restore the snapshot from a copy, or move {self.path.name} and {stem.name}/ out of "
                f"{self.path.parent} to read the rest of the run") from err


def storage_order(ndim: int) -> tuple[int, ...]:
    """The canonical axes of a snapshot field in stored order: (z, y, x), or (z, y, x, component)."""
    return tuple(range(ndim))[::-1]


def plane_storage_order(ndim: int) -> tuple[int, ...]:
    """A plane's field (canonical ``(*batch, 1, Nx, Ny)``) in stored order: ``(Ny, Nx)``, or ``(Ny, Nx, component)``,
    its one cell left out (:mod:`simulator.output.storage`), so that ParaView's x and y (the fastest axes) are the
    plane's."""
    return (2, 1) if ndim == 3 else (3, 2, 0)


def write_snapshot(stem: Path, fields: Mapping[str, jax.Array | hdf5.Parts], attrs: Mapping[str, Any],
                   box: Sequence[float], time: float, *, units: Mapping[str, str] | None = None,
                   stacked: Collection[str] = (), bounded: str | None = None,
                   descriptions: Mapping[str, str] | None = None) -> Path:
    """Write real-space ``fields`` (global shapes ``(Nx, Ny, Nz)`` or ``(3, Nx, Ny, Nz)``, and ``(n, Nx, Ny,
    Nz)`` for the names in ``stacked``) as the snapshot
    ``stem`` (collective): shard files, the index ``stem.h5`` and, on process 0, ``stem.xdmf`` and the
    updated ``series.xdmf`` beside it. A field given as :class:`~simulator.output.hdf5.Parts` is computed
    and written a component at a time (a run's snapshots: no device holds more than one component).

    ``attrs`` must hold ``step``. ``units`` names the run's units (``length``, ``time``, and a field's
    name for that field); anything not named is in code units; ``descriptions`` says what each field is (its
    ``description`` attribute). ``bounded``: the last axis lies between plates, its points those of the bounded basis
    so named (a key of :data:`simulator.fft.bases.BOUNDED`: the free-slip basis's
    cell centres, the no-slip basis's Gauss-Lobatto points), written as coordinates and as a rectilinear XDMF grid;
    None: periodic. Returns the index path.
    """
    import jax

    units = {**CODE_UNITS, **(units or {})}
    grid = next(iter(fields.values())).shape[-3:]
    plane = holds_plane(grid)
    axes, order = tuple(axis_names(grid, walled=bounded is not None)), plane_storage_order if plane else storage_order
    # the axes as a reader takes them: x, y, z, or a plane's x, then y (between plates z): its one cell is not stored
    along = [axes[i] for i in FILE_ORDER[:2]] if plane else list(axes)
    for name, field in fields.items():
        if name in stacked and (field.ndim != 4 or field.shape[1:] != grid):
            raise ValueError(f"snapshot field {name!r} has shape {list(field.shape)}; a stack needs [n, *{list(grid)}]")
        if name not in stacked and field.shape not in (grid, (3, *grid)):
            raise ValueError(f"snapshot field {name!r} has shape {list(field.shape)}; allowed: {list(grid)} "
                             f"or {[3, *grid]}")
    axis_bases = domain(grid, box, bounded)  # each axis's basis gives its points
    points = [basis.points() for basis in axis_bases]
    coordinates = {axis: hdf5.Coordinate(values, {"units": units["length"], "long_name": f"{axis} of the grid points"})
                   for axis, values in zip(axes, points, strict=True) if axis in along}  # a plane's cell has none
    if any(field.ndim == 4 and name not in stacked for name, field in fields.items()):
        coordinates["component"] = hdf5.Coordinate(np.array(along), {"long_name": "vector component along"})
    for name in stacked:
        coordinates[f"{name}_index"] = hdf5.Coordinate(np.arange(fields[name].shape[0]),
                                                       {"long_name": f"index of each {name} field"})
    batch = {name: ((f"{name}_index",) if name in stacked else ("component",)) if field.ndim == 4 else ()
             for name, field in fields.items()}
    described = {name: {"description": text} for name, text in (descriptions or {}).items()}
    stored = {name: hdf5.Field(plane_components(field) if plane and batch[name] == ("component",) else field,
                               attrs={"units": units.get(name, "code units"), **described.get(name, {})},
                               dims=batch[name] + axes, storage=order(field.ndim),
                               canonical=tuple(field.shape) if plane else None)
              for name, field in fields.items()}
    # the lengths in that order, as box_axes names them (f.attrs["box"][1] is a plane's y or z), not its box's
    sides = [float(box[i]) for i in FILE_ORDER[:2]] if plane else [float(b) for b in box]
    index = hdf5.write(stem, stored, {**attrs, "time": float(time), "box": sides, "box_axes": along,
                                      "units": units}, coordinates)
    if jax.process_index() == 0:
        shapes = {name: (tuple(stored[name].array.shape[a] for a in order(field.ndim)), field.dtype)
                  for name, field in fields.items()}
        # XDMF takes the lengths fastest axis first (it reverses them): the file's x, y, z (a plane's x, y, then its
        # one point deep at 0)
        rectilinear = [points[i] for i in FILE_ORDER[:2]] + [np.zeros(1)] if plane else points
        regular = all(basis.regular for basis in axis_bases)  # else each point's coordinate: a rectilinear grid
        grid_xml = snapshot_grid(index.name, shapes, [float(box[i]) for i in FILE_ORDER] if plane else sides, time,
                                 int(attrs["step"]), stacked, None if regular else rectilinear, plane)
        write_xdmf(index, grid_xml)
        update_series(index.parent, grid_xml)
    return index


def plane_components(field: jax.Array | hdf5.Parts) -> jax.Array | hdf5.Parts:
    """A plane's field as it is stored: a scalar as it is, a vector ``(3, 1, Nx, Ny)`` its two components in the
    plane, ``(2, 1, Nx, Ny)`` (the third, across the plane, is zero: readers put it back)."""
    if field.ndim == 3:
        return field
    if isinstance(field, hdf5.Parts):
        return hdf5.Parts((2, *field.shape[1:]), field.dtype, field.sharding, field.part)
    return field[:2]


def lengths(snap: hdf5.IndexedFile) -> tuple[float, float, float]:
    """An open snapshot's box lengths along the canonical axes of its fields (a plane's ``(z, x, y)``, between plates
    ``(y, x, z)``), from its ``box`` attribute, which gives them along the axes ``box_axes`` names."""
    attrs = snap.attrs
    return stored_lengths(attrs["box"], attrs.get("box_axes"), snap.shape(snap.fields[0])[-3:])


def names(snap: hdf5.IndexedFile) -> str:
    """The names of an open snapshot's canonical axes (``xyz``; a plane's ``zxy``, between plates ``yxz``)."""
    return stored_names(snap.attrs.get("box_axes"), snap.shape(snap.fields[0])[-3:])


def snapshot_files(run_dir: Path) -> list[Path]:
    """The snapshot index files of a run, oldest first, those a later segment superseded left out
    (:func:`simulator.output.segments.superseded`: a restart from an earlier step wrote, or will write, that
    step again)."""
    return segments.current(run_dir, sorted((run_dir / DIR).glob("s*.h5")))


class SnapshotWriter(SeriesWriter):
    """The fields named ``names`` on the snapshot schedule (collective: every process writes its blocks), from
    the moment's ``fields`` (:meth:`~simulator.run.simulation.Simulation.snapshot_parts`: a component at a time).

    On a restart, process 0 drops the snapshots past the resumed step from ``series.xdmf`` at once."""

    name = "snapshots"
    directory = DIR

    def __init__(self, schedule: Schedule, names: Sequence[str], attrs: Callable[[Moment], dict[str, Any]],
                 box: Sequence[float], log: Callable[[str], None], rank0: bool,
                 units: Mapping[str, str] | None = None, stacked: Collection[str] = (), bounded: str | None = None,
                 descriptions: Mapping[str, str] | None = None):
        super().__init__(rank0)
        self.schedule, self.names, self.attrs, self.box, self.log = schedule, tuple(names), attrs, box, log
        self.units, self.stacked, self.bounded, self.descriptions = units, tuple(stacked), bounded, descriptions

    def write(self, moment: Moment) -> None:
        assert self.run_dir is not None
        fields = moment.get("fields")
        stem = self.run_dir / DIR / f"s{moment.step:08d}"
        index = write_snapshot(stem, {n: fields[n] for n in self.names}, self.attrs(moment), self.box, moment.time,
                               units=self.units, stacked=self.stacked, bounded=self.bounded,
                               descriptions=self.descriptions)
        self.log(f"snapshot {index}")


def component(sim: Any, eq: Any, state: Any, params: Any, t: Any, dt: Any, field: Any, index: Any) -> Any:
    """The device program, a part at a time: component ``index`` of the snapshot field
    ``sim.snapshot_fields[field]`` (both traced int32) at run time ``t``, ``(Nx, Ny, Nz)`` sharded like the
    real-space layout (:meth:`~simulator.equations.base.Equation.field`): one branch per field, every field's
    components of one shape and dtype, so that a snapshot needs one program and holds one component at once."""
    import jax

    at = eq.at(t)
    branches = [lambda s, p, i, name=name: at.field(s, p, name, i) for name in sim.snapshot_fields]
    return jax.lax.switch(field, branches, state, params, index)


def parts(sim: Any, state: Any, t: float, dt: float, params: Any) -> dict[str, Any]:
    """What the snapshot writer gets: every snapshot field as parts computed as they are written
    (:meth:`~simulator.run.simulation.Simulation.snapshot_parts`)."""
    return sim.snapshot_parts(state, t, params)


def writers(cfg: Any, sim: Any, ctx: WriterContext) -> list[Writer]:
    """The field snapshots on ``output.snapshots``'s schedule (the writer is made even when none is
    scheduled: a restart trims the series past its step)."""
    info, names = sim.equation.field_info, list(sim.snapshot_fields)
    schedule = Schedule.of(cfg.output.section("snapshots"))
    return [SnapshotWriter(schedule, names, ctx.snapshot_attrs, cfg.grid.lengths, ctx.info, ctx.rank0,
                           cfg.physics.clock().units() or None, stacked=[n for n in names if info[n].stacked],
                           bounded=cfg.grid.walls.bounded,
                           descriptions={n: described(info[n].doc) for n in names})]


def described(doc: str) -> str:
    """A field's declared ``doc`` as its stored ``description``: the array layout it ends with, ``(1, Nx, Nz)``,
    left out (the stored axes are the dimension scales' order, not the canonical one it names)."""
    return re.sub(r"\s*\([^()]*\bN[xyz]\b[^()]*\)$", "", doc)


def read(run_dir: Path) -> tuple[SnapshotRef, ...]:
    """The run's snapshots, oldest first (those a later segment superseded left out), each read when opened."""
    return tuple(SnapshotRef(p, int(p.stem[1:])) for p in snapshot_files(run_dir))


#: the output kind (:mod:`simulator.output.kinds`): a writer in every run (a restart trims ``series.xdmf``
#: past its step even when it writes no more snapshots), the fields program only when snapshots are scheduled
KIND = OutputKind(
    name="snapshots", doc="snapshots/: the fields, one file per process and a virtual-dataset index per output",
    active=lambda cfg: True, writers=writers, files=(DIR,), section=SnapshotOutput, schedules=("snapshots",),
    programs=(Program("fields", component, computes=lambda cfg: cfg.output.section("snapshots").on, parts=parts),),
    read=read)
