"""One-file exports of a run, read through the run's own readers (no JAX): ``simulator export``.

**netCDF** (:func:`plan_netcdf`, :func:`write_netcdf`; default ``RUN_DIR/export/run.nc``): the
snapshots, spectra and time series in one netCDF-4 file (HDF5 with dimension scales, written by
h5netcdf: xarray and the netCDF-C library read it), for small and medium runs (refused above a size
limit, 8 GiB by default), with the statistics, tasks and particles that fit as groups
(:mod:`simulator.results.export_groups`; :attr:`NetcdfPlan.left_out` names the rest, and a time series or
spectra file without a row). The root group::

    dimensions   time (one per snapshot), component (3; a plane's 2), <field>_index (a stack's n), x, y, z,
                 time_spectra (rows of spectra.h5), k (shells), k_h and k_z (Boussinesq's map bins),
                 time_series (rows of timeseries.csv)
    coordinates  time, step (along time); a, redshift (along time) when the snapshots carry them
                 x, y, z: the grid points i L / N in length units (where the XDMF places the values)
                 component ("x", "y", "z"); <field>_index (0 .. n - 1)
                 time_spectra, step_spectra, and a_spectra, z_spectra when spectra.h5 has a and z; k
                 time_series (the column time); step_series and the clock columns (a_series, ...)
    variables    <field> (time, [component | <field>_index,] x, y, z): each snapshot field as
                 Snapshot.read returns it (canonical order, not the (z, y, x) order the shards keep
                 for ParaView), in the run's precision (the widest a restart left); a plane's as a
                 plane, (time, [component,] x, y) or between plates (time, [component,] x, z), its
                 vectors' two components (results/export_fields.py), whichever layout its files have
                 <spectrum>_spectra (time_spectra, k): each spectrum of spectra.h5 (a map (time_spectra, k_h, k_z))
                 <column>_series (time_series): each other column of timeseries.csv
    attributes   title (the run's name), config (the resolved config as YAML), units (JSON: the run's
                 unit system); per variable units, long_name and description where the run's files
                 or the equation's declarations give them

The suffixes keep the three tables apart (the time series' ``energy`` is E, spectra.h5's is E(k)).
Conventions: CF (Eaton et al., NetCDF Climate and Forecast Metadata Conventions, 1.8) where they
apply: a numeric coordinate variable bears its dimension's name and is monotonic (ch. 1, Terminology),
auxiliary coordinates are listed in a variable's ``coordinates`` attribute (ch. 5), ``units`` and
``long_name`` (ch. 3), ``axis`` X, Y, Z, T (ch. 4). Departures, hence no ``Conventions`` attribute:
"code units" (a run without a unit system) is not a UDUNITS unit; ``component`` is a coordinate
variable of strings (xarray's labels; CF keeps labels in auxiliary coordinates); fields keep this
code's axis order (x, y, z) where CF recommends (z, y, x).

**Merge** (:func:`plan_merge`, :func:`write_merge`): each snapshot's virtual-dataset index materialised
as ``snapshots/merged/sNNNNNNNN.h5``: the same datasets (stored order), dimension scales and attributes,
the data copied in from the shards (``sources`` is empty), readable by :class:`~simulator.output.hdf5.Snapshot`
without the shard files, beside a copy of the snapshot's XDMF and a ``series.xdmf`` of the merged
snapshots (the XDMF names its index by relative path, so the copies read the merged files). The shards
and the index stay as they are: the run's snapshots remain the virtual ones.

Both refuse (ConfigError, before anything is written) to replace an existing output without
``overwrite``; ``overwrite`` replaces only a netCDF file that carries the attribute ``simulator_export``
(:data:`MARK`, written into every export), never another file such as one of a run. Each file is written
under a temporary name and renamed when complete; a netCDF file is begun only where the filesystem has
room for it (:data:`HEADROOM`), and a failed or interrupted write leaves no temporary file.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import h5netcdf
import h5py
import numpy as np
import yaml

from simulator.errors import ConfigError, counted
from simulator.fft.plane import holds_plane
from simulator.output.hdf5 import IncompleteOutputError, OutputWriteError, Snapshot, describe_os_error, write_atomically
from simulator.output.netcdf import clock_coordinates, clocks_of, variable
from simulator.output.snapshots import AXES, CODE_UNITS, DIR, lengths, names  # CODE_UNITS the run-wide one
from simulator.output.storage import PADDED
from simulator.output.xdmf import write_series, write_xdmf
from simulator.planning.cost import human_bytes
from simulator.results.export_fields import exported_shape, field_dims, in_plane
from simulator.results.export_groups import (
    has_rows,
    plan_groups,
    read_output,
    spectra_group,
    stored_attrs,
    timeseries_group,
    write_groups,
)
from simulator.results.load import RunResults, SnapshotRef, load_run
from simulator.version import __version__

#: the default limit of a netCDF export (``--max-size``)
MAX_SIZE = 8 * 1024**3
#: the netCDF file of ``simulator export RUN_DIR``, relative to the run directory
NETCDF = Path("export") / "run.nc"
#: merged snapshots, under the run's snapshot directory
MERGED = "merged"
#: rows of a merged field copied at a time (bounds the memory a merge takes)
SLAB_BYTES = 64 * 1024**2
#: the attribute that marks a netCDF file as an export (its value: the simulator's version)
MARK = "simulator_export"
#: free space asked for beyond a netCDF file's data: its metadata (attributes, dimension scales: ~30 KiB for
#: 20 variables and a config of 2 kB) with room to spare. HDF5 2.0 cannot fail cleanly once its metadata no
#: longer fits (the failed flush is only reported when h5py frees an object, "Exception ignored", and a
#: later call crashes the process: a segmentation fault), so a file that may not fit is not begun.
HEADROOM = 256 * 1024


@dataclass(frozen=True)
class NetcdfPlan:
    """A checked netCDF export: the run read back, the target, the fields with their canonical dimension
    names and shapes (one snapshot), the file's size in bytes (its data), the groups it writes
    (the output kinds' own: :mod:`simulator.results.export_groups`) and what it leaves out, each ``"what (why)"``."""

    run: RunResults
    path: Path
    fields: Mapping[str, tuple[tuple[str, ...], tuple[int, ...], np.dtype]]
    size: int
    groups: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class MergePlan:
    """A checked merge: each snapshot index with its merged file, in step order."""

    pairs: tuple[tuple[Path, Path], ...]


def _open(ref: SnapshotRef) -> Snapshot:
    """A snapshot of the run opened (which checks its shard files), with the attributes an export reads; ConfigError
    naming a damaged one (and the export's advice, not :meth:`SnapshotRef.open`'s)."""
    try:
        snap = Snapshot(ref.path)
        missing = [key for key in ("step", "time", "box") if key not in snap.file.attrs]
        if missing:  # not as the run writes it: the export would fail on them part way, naming no file
            snap.close()
            raise IncompleteOutputError(f"{ref.path} has no attribute {', '.join(missing)}")
        return snap
    except IncompleteOutputError as err:
        raise ConfigError("RUN_DIR", str(ref.path.parent.parent), "restore or remove the damaged snapshot",
                          f"cannot be exported: {err}") from None


def _refuse_existing(key: str, path: Path, overwrite: bool, allowed: str) -> None:
    if path.is_dir():
        raise ConfigError(key, str(path), "give a file name", "is a directory")
    if path.exists() and not overwrite:
        raise ConfigError(key, str(path), allowed, "already exists")


def is_export(path: Path) -> bool:
    """Whether ``path`` is a netCDF file :func:`write_netcdf` wrote (its attribute :data:`MARK`): the only
    kind of file ``--overwrite`` replaces, so no file of a run (its time series, config, a checkpoint) is."""
    try:
        with h5py.File(path, "r", locking=False) as f:
            return MARK in f.attrs
    except Exception:  # not HDF5, truncated, unreadable: not an export, whatever h5py raises about it
        return False


def _check_room(path: Path, size: int) -> None:
    """OutputWriteError naming ``path`` when the filesystem that will hold it (that of its nearest existing
    directory) is read-only or has less than ``size`` bytes free to this user."""
    directory = path.parent
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    stat = os.statvfs(directory)
    free = stat.f_bavail * stat.f_frsize
    if stat.f_flag & os.ST_RDONLY:
        raise OutputWriteError(f"writing {path} failed: {os.strerror(errno.EROFS)}")
    if free < size:
        raise OutputWriteError(f"writing {path} failed: {os.strerror(errno.ENOSPC)} ({human_bytes(size)} needed, "
                               f"{human_bytes(free)} free)")


def plan_netcdf(run_dir: Path, path: Path | None = None, *, fields: Sequence[str] | None = None,
                max_size: int = MAX_SIZE, overwrite: bool = False) -> NetcdfPlan:
    """Check a netCDF export of ``run_dir`` to ``path`` (default ``run_dir/export/run.nc``) of the snapshot
    ``fields`` (default: every field all snapshots hold) and of the groups that fit in ``max_size`` with them;
    reads only. ConfigError when the run cannot be read, a field is not in every snapshot, the fields,
    spectra and time series would exceed ``max_size`` bytes, or ``path`` exists and not ``overwrite``."""
    run = load_run(run_dir)
    path = Path(path) if path is not None else run_dir / NETCDF
    _refuse_existing("--netcdf", path, overwrite, "give --overwrite to replace it, or another --netcdf FILE")
    if path.exists() and not is_export(path):
        raise ConfigError("--netcdf", str(path), f"--overwrite replaces only a file `simulator export` wrote (with "
                          f"the attribute {MARK}): give another --netcdf FILE", "is not an earlier export")
    first: dict[str, tuple[tuple[str, ...], tuple[int, ...], np.dtype]] = {}
    held: list[set[str]] = []
    dtypes: dict[str, list[np.dtype]] = {}
    for ref in run.output("snapshots"):  # a run directory holds one grid: a restart on another one must branch
        with _open(ref) as snap:
            first = first or {n: (field_dims(snap, n), exported_shape(snap, n), snap.file[n].dtype)
                              for n in snap.fields}
            held.append(set(snap.fields))
            for n in snap.fields:
                dtypes.setdefault(n, []).append(snap.file[n].dtype)
    # a restart may change the precision: each variable in the widest of its snapshots' types, so that the
    # float64 snapshots of a float32 run continued in float64 are not rounded to float32
    first = {n: (dims, shape, np.result_type(*dtypes[n])) for n, (dims, shape, _) in first.items()}
    common = [n for n in first if all(n in names for names in held)]
    for name in fields or ():
        if name not in common:
            raise ConfigError("--fields", name, f"allowed: {', '.join(common) or 'none (the run has no snapshots)'}",
                              "is not a field of every snapshot")
    chosen = {n: first[n] for n in (fields or common)}
    size = sum(len(held) * math.prod(shape) * dtype.itemsize for _, shape, dtype in chosen.values())
    size += sum(np.asarray(v).nbytes for kind in ("spectra", "timeseries") for v in read_output(run, kind).values())
    if size > max_size:
        raise ConfigError("--max-size", human_bytes(max_size), f"give --max-size {math.ceil(size / 2**20)}MiB or "
                          "more, fewer --fields, or --merge (any size)", f"is below the export's {human_bytes(size)} "
                          f"({counted(len(held), 'snapshot')} of {', '.join(chosen) or 'no field'})")
    groups, extra, left_out = plan_groups(run, max_size - size)
    return NetcdfPlan(run, path, chosen, size + extra, groups, left_out)


def _written(path: Path, fill: Callable[[Path], None], size: int = 0) -> Path:
    """``fill(temporary path)``, then the file renamed to ``path``; OutputWriteError naming it if that fails,
    or before anything is written when the filesystem is read-only or has less than ``size`` bytes free
    (:func:`_check_room`). Nothing written
    stays behind: the temporary file and the directories made for it are removed, whatever stopped the
    write (an interrupt too)."""
    tmp = path.with_name(path.name + ".tmp")
    made = [d for d in (path.parent, *path.parent.parents) if not d.exists()]
    try:
        _check_room(path, size)
        path.parent.mkdir(parents=True, exist_ok=True)
        fill(tmp)
        os.replace(tmp, path)
    except BaseException as err:
        with contextlib.suppress(OSError):  # a read-only filesystem refuses even the unlink of a missing file
            tmp.unlink(missing_ok=True)
            for directory in made:
                directory.rmdir()
        if isinstance(err, (OSError, RuntimeError)) and not isinstance(err, OutputWriteError):
            # h5py reports some failed writes as RuntimeError
            raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err
        raise
    return path


def write_netcdf(plan: NetcdfPlan) -> Path:
    """Write the export :func:`plan_netcdf` checked (one snapshot field in memory at a time); returns its path."""
    run = plan.run
    refs = run.output("snapshots") if plan.fields else ()

    def fill(tmp: Path) -> None:
        with h5netcdf.File(tmp, "w") as f:
            f.attrs.update({"title": run.config["name"], "config": yaml.safe_dump(run.config, sort_keys=False),
                            MARK: __version__})
            units = dict(CODE_UNITS)
            if refs:
                _snapshot_fields(f, plan, units)
            if has_rows(run.output("spectra")):  # one without rows is named in the plan's left_out
                spectra_group(f, run, units)
            if has_rows(run.output("timeseries")):
                timeseries_group(f, run, units)
            write_groups(f, run, plan.groups, units)

    return _written(plan.path, fill, plan.size + HEADROOM)


def _snapshot_fields(f: h5netcdf.File, plan: NetcdfPlan, units: dict[str, str]) -> None:
    """The fields of every snapshot along time, their grid and their clocks."""
    refs = plan.run.output("snapshots")
    with refs[0].open() as first:
        head, box, axes = first.attrs, lengths(first), names(first)
        components = first.file["component"].asstr()[...] if "component" in first.file else np.array(AXES)
        plane = holds_plane(first.shape(first.fields[0])[-3:])
        # the points the snapshots hold (between plates the bounded axis's cell centres or Gauss-Lobatto heights)
        stored = {axis: np.asarray(first.file[axis][...]) for axis in AXES if axis in first.file}
    units.update(head.get("units", {}))
    f.attrs["units"] = json.dumps(units)
    sizes = {d: n for dims, shape, _ in plan.fields.values() for d, n in zip(dims, shape, strict=True)}
    batch = sorted(sizes.keys() - set(AXES))
    f.dimensions.update({"time": len(refs), **{d: sizes[d] for d in (*batch, *AXES) if d in sizes}})
    # a plane's box (1, Nx, Ny) has its axes named z, x, y (simulator.fft.plane.AXES), a walled one's (1, Nx, Nz)
    # y, x, z (WALLED_AXES): the file's names, its one cell left out
    for axis, length in list(zip(axes, box, strict=True))[1 if plane else 0:]:
        # a snapshot holding no coordinates (written before they were stored) is on the uniform grid
        points = stored.get(axis, np.arange(sizes[axis]) * (float(length) / sizes[axis]))
        variable(f, axis, (axis,), points, units=units["length"], long_name=f"{axis} of the grid points",
                 axis=axis.upper())
    for d in batch:
        if d == "component":  # a plane's first two (an earlier file's third was across the plane)
            variable(f, d, (d,), components[:sizes[d]].astype(object), h5py.string_dtype(),
                     long_name="vector component along")
        else:
            variable(f, d, (d,), np.arange(sizes[d]), long_name=f"index of each {d.removesuffix('_index')} field")
    variables = {name: variable(f, name, ("time", *dims), dtype=dtype)
                 for name, (dims, _, dtype) in plan.fields.items()}
    metas = []
    for i, ref in enumerate(refs):
        with ref.open() as snap:
            metas.append(snap.attrs)
            for name, var in variables.items():
                if i == 0:
                    var.attrs.update(stored_attrs(snap.file[name], drop=("storage_order", "canonical_shape")))
                var[i] = in_plane(snap.read(name), plan.fields[name][0])
    variable(f, "time", ("time",), np.array([m["time"] for m in metas], float), units=units["time"],
             long_name="simulation time of each snapshot", axis="T")
    variable(f, "step", ("time",), np.array([m["step"] for m in metas], np.int64),
             long_name="time step number of each snapshot")
    clocks = clock_coordinates(f, clocks_of(metas))
    for var in variables.values():
        var.attrs["coordinates"] = " ".join(["step", *clocks])


def export_netcdf(run_dir: Path, path: Path | None = None, *, fields: Sequence[str] | None = None,
                  max_size: int = MAX_SIZE, overwrite: bool = False) -> Path:
    """:func:`plan_netcdf` then :func:`write_netcdf`: the run's one netCDF file; returns its path."""
    return write_netcdf(plan_netcdf(run_dir, path, fields=fields, max_size=max_size, overwrite=overwrite))


def plan_merge(run_dir: Path, *, overwrite: bool = False) -> MergePlan:
    """Check a merge of every snapshot of ``run_dir`` into ``snapshots/merged/`` (reads only): ConfigError
    when the run cannot be read, a snapshot's shards are missing, or a merged file exists and not ``overwrite``."""
    run = load_run(run_dir)
    if not run.output("snapshots"):
        raise ConfigError("--merge", str(run_dir), "give a run that has written snapshots", "has no snapshots")
    for ref in run.output("snapshots"):
        _open(ref).close()
    merged = run_dir / DIR / MERGED
    pairs = tuple((ref.path, merged / ref.path.name) for ref in run.output("snapshots"))
    for target in [t for _, m in pairs for t in (m, m.with_suffix(".xdmf"))] + [merged / "series.xdmf"]:
        _refuse_existing("--merge", target, overwrite, "give --overwrite to merge the snapshots again")
    return MergePlan(pairs)


def _copy_index(src: h5py.File, dst: h5py.File) -> None:
    """Every dataset of the index ``src`` into ``dst`` as stored, data included, with its attributes and scales."""
    dst.attrs.update(stored_attrs(src, drop=("complete", "sources")))
    dst.attrs["sources"] = json.dumps([])  # nothing outside this file
    scales = [n for n, ds in src.items() if isinstance(ds, h5py.Dataset) and ds.is_scale]
    for name in scales:
        dst.create_dataset(name, data=src[name][()], dtype=src[name].dtype)
        dst[name].attrs.update(stored_attrs(src[name]))
        dst[name].make_scale(name)
    for name in [n for n in src if n not in scales and n != PADDED]:
        ds = src[name]
        out = dst.create_dataset(name, shape=ds.shape, dtype=ds.dtype)
        out.attrs.update(stored_attrs(ds))
        rows = max(1, SLAB_BYTES // max(1, ds.dtype.itemsize * math.prod(ds.shape[1:])))
        for start in range(0, ds.shape[0], rows):
            out[start:start + rows] = ds[start:start + rows]
        for j, dim in enumerate(ds.dims):
            for scale in dim.values():
                out.dims[j].attach_scale(dst[scale.name])
    for name, ds in src[PADDED].items() if PADDED in src else ():  # a field's whole, its zeros unstored: of this file
        layout = h5py.VirtualLayout(shape=ds.shape, dtype=ds.dtype)
        layout[tuple(slice(0, n) for n in dst[name].shape)] = h5py.VirtualSource(".", name, shape=dst[name].shape)
        dst.create_virtual_dataset(f"{PADDED}/{name}", layout, fillvalue=0).attrs.update(ds.attrs)


def write_merge(plan: MergePlan) -> list[Path]:
    """Write the merged snapshots :func:`plan_merge` checked, their XDMF and series; returns the files written."""
    directory = plan.pairs[0][1].parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputWriteError(f"creating {directory} failed: {describe_os_error(err)}") from err
    written, grids = [], []
    for index, target in plan.pairs:
        with Snapshot(index) as snap:
            try:
                write_atomically(target, partial(_copy_index, snap.file))
            except BaseException as err:  # an interrupt too: no partial file stays
                with contextlib.suppress(OSError):
                    target.with_name(target.name + ".tmp").unlink(missing_ok=True)
                if isinstance(err, OSError):  # write_atomically's own clean-up failed (a read-only filesystem)
                    raise OutputWriteError(f"writing {target} failed: {describe_os_error(err)}") from err
                raise
        written.append(target)
        try:
            grid = ET.parse(index.with_suffix(".xdmf")).getroot().find("Domain/Grid")
        except (OSError, ET.ParseError):
            grid = None  # a snapshot without its XDMF: its merged file still serves h5py, xarray and Snapshot
        if grid is not None:
            written.append(write_xdmf(target, grid))
            grids.append(grid)
    if grids:
        written.append(write_series(directory, grids))
    return written
