"""``tasks.h5``: the user-defined outputs (``output.tasks``), one group per task and one row per time its
schedule is due; the writers, the reader and the output kind (no JAX: the computation is
:mod:`simulator.observables.tasks`, the kind's device program; the config section, the entries of ``output.tasks``, is
:mod:`.task_entries`).

One file for every task, a group each, since each task has a schedule of its own (its own rows and
``time`` axis): a group is a netCDF-4 group, so ``xr.open_dataset(path, engine="h5netcdf",
group=NAME)`` gives the task with named coordinates. Group ``<name>``:

* ``time``, ``step`` ``(rows,)``: of each row (``time`` a dimension scale; ``step`` written last: it
  counts the complete rows);
* ``<name>`` ``(rows, ...)`` float64: a slice ``(time, a, b)`` over the two axes other than its normal,
  in order (normal to z: ``(time, x, y)``); a profile ``(time, <axis>)``; a box reduction ``(time,)``; on a plane
  the axes are the plane's (:mod:`.task_entries`), a slice normal to x or y is the line ``(time, y)`` or
  ``(time, x)`` of it, and a profile along z (its one cell) the plane's mean ``(time,)``: no dimension of one entry
  (between plates a plane is x-z, its one cell y); across plates the coordinate is the grid's heights;
  attributes ``field``, ``component``, ``reduce``, ``axis``, ``index`` and ``position`` (the plane's
  coordinate) where they apply, ``units``, ``long_name``;
* ``x``, ``y``, ``z`` (those its dimensions use): the grid points i L/N (across plates their heights), in length
  units, dimension scales.

The group's ``definition`` attribute (JSON: field, component, reduction, axis, index, grid) is what its
rows mean. Root attributes: ``description``, ``units`` (JSON: the run's), ``equation``, ``shape``, ``box``.

The file is written by process 0, opened only while a row is appended and without HDF5's file lock, so it
can be read while the run goes on. On a restart, every group's rows after the checkpoint's step are
dropped; a task whose definition changed keeps its old rows whole in the group ``<name>.until-<step>``
(attribute ``until``) and starts a new ``<name>`` at the restart; a file that cannot be continued is
set aside whole as ``aside/tasks.h5.damaged`` (:mod:`simulator.output.rows`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from simulator.errors import reading
from simulator.fft.bases import Basis, domain
from simulator.fft.plane import axis_names, holds_plane
from simulator.log import get_logger
from simulator.output import rows
from simulator.output.base import CODE_UNITS, Moment, OutputKind, Program, Schedule, Writer, WriterContext
from simulator.output.hdf5 import OutputWriteError, describe_os_error
from simulator.output.netcdf import time_and_step, variable
from simulator.output.rows import open_for_reading
from simulator.output.task_entries import TaskOutput, check as check_tasks, definition, units_of

FILE = "tasks.h5"
#: a group kept aside by a restart that changed its task: ``<name>.until-<step>``
ASIDE = rows.UNTIL
COMPONENT_NAMES = {"x": "x component", "y": "y component", "z": "z component", "magnitude": "magnitude"}


@dataclass(frozen=True)
class TaskLayout:
    """What ``tasks.h5`` records of one task: its ``name``, ``definition`` (JSON), the ``dims`` of one row
    and their coordinates (grid points, length units), and the attributes of its dataset."""

    name: str
    definition: str
    dims: tuple[str, ...]
    coords: Mapping[str, np.ndarray]
    attrs: Mapping[str, Any]


def describe(task: TaskOutput, shape: Sequence[int], box: Sequence[float], units: Mapping[str, str],
             field_doc: str, axis_bases: Sequence[Basis] | None = None) -> TaskLayout:
    """The layout of a resolved task on the box ``shape`` (the grid's cells: a plane's ``(1, Nx, Ny)``) of lengths
    ``box``; ``units``: the run's (the clock's); ``field_doc``: what its field is (the equation's declaration);
    ``axis_bases``: the grid's bases (:meth:`simulator.config.grid.GridConfig.domain`; default Fourier on every
    axis), whose points are each axis's coordinates (between plates the heights across them, z). The axes
    are named as the box's (:func:`simulator.fft.plane.axis_names`: a plane's z, x, y, between plates y, x, z); a
    plane's one-cell axis is no dimension of a slice normal to another axis (a line of the plane), nor of a profile
    along it (the plane's mean, one number a row)."""
    axis_bases = axis_bases or domain(shape, box, None)
    axes = axis_names(shape, walled=axis_bases[2].bounded)
    cell = axes[0] if holds_plane(shape) else ""  # a plane's one cell: no dimension
    flat = cell if task.axis != cell else ""
    dims = (tuple(a for a in axes if a not in (task.axis, flat)) if task.reduce == "slice"
            else (task.axis,) if task.reduce == "profile" and task.axis != cell else ())
    coords = {a: axis_bases[axes.index(a)].points() for a in dims}
    what = task.field if task.component is None else (
        f"{task.field} {COMPONENT_NAMES.get(task.component, f'[{task.component}]')}")
    attrs: dict[str, Any] = {"field": task.field, "reduce": task.reduce, "units": units_of(task, units),
                             "field_description": field_doc}
    if task.component is not None:
        attrs["component"] = task.component
    if task.reduce == "slice":
        a = axes.index(task.axis)
        position = float(axis_bases[a].points()[task.index])  # its grid point's (across plates: its height)
        attrs.update(axis=task.axis, index=task.index, position=position)
        attrs["long_name"] = f"{what} on the {'line' if flat else 'plane'} {task.axis} = {position:.6g} (index " \
                             f"{task.index})"
    elif task.reduce == "profile":
        attrs["axis"] = task.axis
        others = " and ".join(a for a in axes if a not in (task.axis, flat))
        against = f"its one cell along {cell}" if task.axis == cell else f"against {task.axis}"
        attrs["long_name"] = f"{what} averaged over {others}, {against}"
    else:
        attrs["long_name"] = f"{task.reduce} of {what} over the box"
    return TaskLayout(task.name, json.dumps(definition(task, shape)), dims, coords, attrs)


class TasksFile:
    """``tasks.h5`` of one run segment (process 0; see the module docstring): prepared once for all the
    tasks' writers, a row appended per task as each is due."""

    def __init__(self, layouts: Sequence[TaskLayout], attrs: Mapping[str, Any], units: Mapping[str, str]):
        self.layouts = {layout.name: layout for layout in layouts}
        self.attrs, self.units = dict(attrs), {**CODE_UNITS, **units}
        self.path: Path | None = None
        self.usable = False

    def open(self, run_dir: Path, keep_through: int | None) -> None:
        """Prepare ``run_dir/tasks.h5`` (the first call; the other writers' calls find it prepared): a new
        file, or for a restart from step ``keep_through`` the old one, cut back to it once every file of the
        segment is open (:func:`simulator.output.rows.later`)."""
        if self.path is not None:
            return
        path = self.path = run_dir / FILE
        try:
            rows.resume(path, keep_through, rows.unchanged, lambda f: self._continue(f, keep_through), self._new)
        except OutputWriteError:
            raise
        except (OSError, RuntimeError) as err:
            raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err
        self.usable = True

    def _new(self, target: Path) -> None:
        """A new file at ``target``: every task's group, no rows yet."""
        with h5py.File(target, "w", rdcc_nbytes=0, locking=False) as f:  # no chunk cache: see output.hdf5
            self._describe(f)

    def _describe(self, f: h5py.File) -> None:
        """The file's attributes, and a group for each task it lacks."""
        f.attrs["description"] = "user-defined outputs (output.tasks), one group per task, a row per output"
        f.attrs["units"] = json.dumps(self.units)
        f.attrs.update({k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in self.attrs.items()})
        for layout in self.layouts.values():
            if layout.name not in f:
                self._create(f, layout)

    def _continue(self, f: h5py.File, keep_through: int) -> None:
        """Drop every group's rows after step ``keep_through``; set aside a group whose task changed; add the
        groups of new tasks."""
        for name in list(f):
            group = f[name]
            if "until" in group.attrs:  # rows an earlier restart kept aside: left whole
                continue
            layout = self.layouts.get(name)
            if layout is not None and group.attrs["definition"] != layout.definition:
                aside = rows.distinct(name + rows.until(keep_through), "", lambda taken: taken in f)
                f.move(name, aside)
                f[aside].attrs["until"] = keep_through
                get_logger().warning("output.tasks %s changed: its rows so far are kept in the group %s of %s, a new "
                                     "%s starts at step %d", name, aside, FILE, name, keep_through)
                continue
            rows.trim(group, keep_through, ("time", "step", name))
        self._describe(f)

    def _create(self, f: h5py.File, layout: TaskLayout) -> None:
        group = f.create_group(layout.name)
        group.attrs["definition"] = layout.definition
        for name, dtype in (("time", np.float64), ("step", np.int64)):
            group.create_dataset(name, shape=(0,), maxshape=(None,), dtype=dtype)
        group["time"].attrs.update({"long_name": "simulation time of each row", "units": self.units["time"]})
        group["step"].attrs["long_name"] = "time step number of each row"
        group["time"].make_scale("time")
        group["step"].dims[0].attach_scale(group["time"])
        shape = tuple(len(layout.coords[a]) for a in layout.dims)
        values = group.create_dataset(layout.name, shape=(0, *shape), maxshape=(None, *shape), dtype=np.float64)
        values.attrs.update(layout.attrs)
        values.dims[0].attach_scale(group["time"])
        for i, axis in enumerate(layout.dims, start=1):
            scale = group.create_dataset(axis, data=layout.coords[axis])
            scale.attrs.update({"long_name": f"{axis} of the grid points", "units": self.units["length"]})
            scale.make_scale(axis)
            values.dims[i].attach_scale(scale)

    def append(self, name: str, step: int, t: float, value: np.ndarray) -> None:
        """Add a row to task ``name`` (its values, then ``time``, then ``step``)."""
        if not self.usable or self.path is None:
            raise OutputWriteError(f"writing {self.path} failed: the file was closed after an earlier error")

        def add(f: h5py.File) -> None:
            group = f[name]
            row = group["step"].shape[0]
            # a line of a plane comes as the box's slice, one cell along the plane's normal: the row is the line (a
            # profile across the plane, one cell, is its mean)
            row_value = np.reshape(value, group[name].shape[1:])
            for ds, v in ((group[name], row_value), (group["time"], t), (group["step"], step)):
                ds.resize(row + 1, axis=0)
                ds[row] = v

        try:
            rows.append_row(self.path, add, name)
        except OutputWriteError:
            self.usable = False
            raise


@dataclass(frozen=True)
class TaskSeries:
    """One task read back: its rows' ``step`` and ``time``, ``values`` ``(rows, ...)`` over ``dims`` (after
    the row axis) with their ``coords``, and the dataset's attributes (field, reduce, units, ...)."""

    name: str
    step: np.ndarray
    time: np.ndarray
    values: np.ndarray
    dims: tuple[str, ...]
    coords: dict[str, np.ndarray]
    attrs: dict[str, Any]


def read_tasks(path: Path) -> dict[str, TaskSeries]:
    """Every group of a ``tasks.h5`` by name (a group set aside by a restart under its ``<name>.until-<step>``),
    the rows all its datasets have (a run may be appending). DamagedFileError naming a file cut short or not as
    a run writes it."""
    out = {}
    with reading(path), open_for_reading(path) as f:
        for name, group in f.items():
            values = group[name.split(ASIDE)[0]]
            count = min(values.shape[0], group["time"].shape[0], group["step"].shape[0])
            dims = tuple(values.dims[i].keys()[0] for i in range(1, values.ndim))
            attrs = {k: (v.decode() if isinstance(v, bytes) else v.item() if isinstance(v, np.generic) else v)
                     for k, v in values.attrs.items() if k not in ("DIMENSION_LIST", "REFERENCE_LIST")}
            out[name] = TaskSeries(name, group["step"][:count], group["time"][:count], values[:count], dims,
                                   {d: group[d][:] for d in dims}, attrs)
    return out


class TaskWriter(Writer):
    """A row of one task on its schedule, from the kind's program ``tasks``, every task's values as host arrays
    (collective: computed on every process; the writers due at one chunk end share one evaluation);
    ``file`` is process 0's (None elsewhere)."""

    def __init__(self, layout: TaskLayout, schedule: Schedule, file: TasksFile | None):
        super().__init__()
        self.name = f"tasks.{layout.name}"  # its own wall-clock trigger, agreed between processes
        self.layout, self.schedule, self.file = layout, schedule, file

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
        if self.file is not None:
            self.file.open(run_dir, resumed_step)

    def write(self, moment: Moment) -> None:
        values = moment.get("tasks")
        if self.file is not None:
            self.file.append(self.layout.name, moment.step, moment.time, values[self.layout.name])


def writers(cfg: Any, sim: Any, ctx: WriterContext) -> list[Writer]:
    """The writers of ``cfg.output.tasks``, one per task (each on its own schedule; those due at one chunk end
    share one evaluation of all of them)."""
    units = cfg.physics.clock().units()
    cells = cfg.grid.cells
    layouts = [describe(entry, cells, cfg.grid.lengths, units, sim.equation.field_info[entry.field].doc,
                        cfg.grid.domain())
               for entry in cfg.output.section("tasks")]
    file = TasksFile(layouts, {"equation": cfg.physics.name, "shape": list(cfg.grid.shape),
                               "box": [float(b) for b in cfg.grid.lengths]}, units) if ctx.rank0 else None
    return [TaskWriter(layout, Schedule.of(entry), file)
            for layout, entry in zip(layouts, cfg.output.section("tasks"), strict=True)]


def host_values(values: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The tasks' values on the host, float64 (what ``tasks.h5`` stores)."""
    return {k: np.asarray(v, np.float64) for k, v in values.items()}


def read(run_dir: Path) -> dict[str, TaskSeries]:
    """``tasks.h5`` by task ({} when the run wrote none)."""
    return read_tasks(run_dir / FILE) if (run_dir / FILE).is_file() else {}


def export(group: Any, data: Mapping[str, TaskSeries], units: dict[str, str]) -> None:
    """The ``tasks`` group of a netCDF export: a group ``<name>`` per task (``<name>.until-<step>``: rows a
    restart kept aside): time, step (time); x, y, z as its dimensions use them (grid points); ``<name>`` over
    (time[, a, b | axis]) with the task's attributes."""
    for name, task in data.items():
        g = group.create_group(name)
        g.dimensions.update({"time": len(task.time), **{d: len(task.coords[d]) for d in task.dims}})
        time_and_step(g, task.time, task.step, units, "row")
        for d in task.dims:
            variable(g, d, (d,), task.coords[d], units=units["length"], long_name=f"{d} of the grid points",
                     axis=d.upper())
        variable(g, name.split(ASIDE)[0], ("time", *task.dims), task.values, coordinates="step", **task.attrs)


#: the output kind (:mod:`simulator.output.kinds`)
KIND = OutputKind(
    name="tasks", doc="tasks.h5: slices, profiles and reductions of fields (output.tasks), each on its schedule",
    active=lambda cfg: any(entry.on for entry in cfg.output.section("tasks")), writers=writers,
    programs=(Program("tasks", "simulator.observables.tasks:program", host=host_values),), files=(FILE,),
    check=check_tasks, read=read, export=export)
