"""The groups of a netCDF export (:mod:`simulator.export`): the outputs with a clock of their own,
each a netCDF-4 group with its own ``time`` dimension, read through :func:`~simulator.results.load_run`
(no JAX). ``xr.open_dataset(path, group="tasks/w_mid")`` opens one. Layout::

    statistics              statistics.h5 (output.statistics): time, step (time); the coordinates orders,
                            r_x, r_y, r_z, pdf_centres, pdf_edges, pdf_separations (their own dimensions);
                            each statistic over (time, *its axes) (:func:`~simulator.output.statistics.dimensions`);
                            the file's attributes (equation, shape, box, spacing)
    tasks/<name>            a task of tasks.h5 (output.tasks; ``<name>.until-<step>`` rows a restart kept
                            aside): time, step (time); x, y, z as its dimensions use them (grid points);
                            <name> over (time[, a, b | axis]) with the task's attributes
    particles/<species>     the particle snapshots: time, step (time); particle (0 .. N-1); component;
                            position (wrapped into the box), unwrapped, velocity (time, particle, component),
                            in the run's precision
    trajectories/<species>  particles/trajectories.h5: time; particle (the particles' ids in the snapshots);
                            component; position (unwrapped) and velocity (time, particle, component), float64

Time is in the run's time units, positions in its length units, velocities in the units of its
velocity field. What the export leaves out, each with its reason, is :func:`plan_groups`'s second result.
"""

from __future__ import annotations

from typing import Any

import h5netcdf
import h5py
import numpy as np

from simulator.errors import ConfigError
from simulator.output import kinds
from simulator.output.hdf5 import IncompleteOutputError
from simulator.output.statistics import COORDINATES, dimensions
from simulator.output.tasks import ASIDE
from simulator.results import RunResults

#: the groups written here, in the order they are given room under the size limit (registered kinds' first)
KINDS = ("statistics", "tasks", "particles", "trajectories")
#: the output kinds whose data the export writes itself (the rest declare their own ``export``)
SHIPPED = ("timeseries", "spectra", "snapshots", "particles", "statistics", "tasks")
#: a vector's components
COMPONENTS = ("x", "y", "z")


def variable(f: h5netcdf.Group, name: str, dims: tuple[str, ...], data: Any = None, dtype: Any = None,
             **attrs: Any) -> h5netcdf.Variable:
    """A variable of ``f`` holding ``data``, with the attributes that are not None."""
    var = f.create_variable(name, dims, data=data, dtype=dtype)
    var.attrs.update({k: v for k, v in attrs.items() if v is not None})
    return var


def _statistics_axes(run: RunResults) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """Each statistic's axes after time, and the statistics whose shape their names do not explain."""
    data = run.statistics
    axes, odd = {}, []
    for name, values in data.items():
        if name in (*COORDINATES, "attrs", "time", "step"):
            continue
        dims = dimensions(name)
        if np.shape(values)[1:] == tuple(len(data.get(d, ())) for d in dims):
            axes[name] = dims
        else:
            odd.append(name)
    return axes, odd


def size_text(nbytes: float) -> str:
    """``nbytes`` for people: 12.3 MiB, 8 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if nbytes < 1024:
            return f"{nbytes:.3g} {unit}"
        nbytes /= 1024
    return f"{nbytes:.3g} TiB"


def _arrays(data: Any) -> list[Any]:
    """The arrays in a reader's result (a mapping of arrays, possibly nested)."""
    if isinstance(data, dict):
        return [a for v in data.values() for a in _arrays(v)]
    return [data] if isinstance(data, np.ndarray) else []


def _nbytes(*arrays: Any) -> int:
    return sum(np.asarray(a).nbytes for a in arrays)


def registered(run: RunResults) -> dict[str, kinds.OutputKind]:
    """The registered output kinds (:mod:`simulator.output.kinds`) whose files the run holds and whose
    groups this module does not write itself: those of plug-ins."""
    return {kind.name: kind for kind in kinds.written(run.path) if kind.name not in SHIPPED}


def sizes(run: RunResults) -> dict[str, int]:
    """The bytes of data each group would hold (0: the run wrote none of it); a registered kind's, the
    arrays its reader returns, when it declares an export."""
    stats = {k: v for k, v in run.statistics.items() if k != "attrs"}
    plugins = {name: _nbytes(*_arrays(run.output(name))) for name, kind in registered(run).items() if kind.export}
    return {**plugins, "statistics": _nbytes(*stats.values()),
            "tasks": sum(_nbytes(t.step, t.time, t.values, *t.coords.values()) for t in run.tasks.values()),
            "particles": sum(_nbytes(p.step, p.time, p.position, p.unwrapped, p.velocity)
                             for p in run.particles.values()),
            "trajectories": sum(_nbytes(t.time, t.x, t.v, t.ids) for t in run.trajectories.values())}


def plan_groups(run: RunResults, room: int) -> tuple[tuple[str, ...], int, tuple[str, ...]]:
    """(the groups to write, their bytes, what is left out and why): each group the run has, in the order of
    :data:`KINDS`, while the export stays within ``room`` bytes; a group that does not fit is left out, and so
    are statistics of an unknown shape and the row files restarts set aside (``aside/``). ConfigError naming
    a damaged particle snapshot or trajectory file."""
    chosen, used = [], 0
    try:
        needed = sizes(run)
    except (IncompleteOutputError, OSError) as err:
        raise ConfigError("RUN_DIR", str(run.path), "restore or remove the damaged file",
                          f"cannot be exported: {err}") from None
    left = [f"{name} ({', '.join(kind.files)}: the output kind declares no export)"
            for name, kind in registered(run).items() if not kind.export]
    for kind, size in needed.items():
        if not size:
            continue
        if used + size > room:
            left.append(f"{kind} ({size_text(size)}: over --max-size)")
            continue
        chosen.append(kind)
        used += size
    odd = _statistics_axes(run)[1] if "statistics" in chosen else []
    if odd:
        left.append(f"statistics {', '.join(odd)} (axes of unknown meaning)")
    if run.aside:
        left.append(f"aside/ ({len(run.aside)} row file(s) restarts set aside: load_run(...).aside lists them)")
    return tuple(chosen), used, tuple(left)


def write_groups(f: h5netcdf.File, run: RunResults, groups: tuple[str, ...], units: dict[str, str]) -> None:
    """The groups ``groups`` (:func:`plan_groups`) into the export ``f``; ``units`` the run's. A registered
    kind's group is written by its ``export``, ``(group, data, units)``, with ``data`` its reader's."""
    clock = {"units": units["time"], "axis": "T"}
    for name, kind in registered(run).items():
        if name in groups:
            kind.call("export", f.create_group(name), run.output(name), units)
    if "statistics" in groups:
        _statistics(f.create_group("statistics"), run, clock)
    for name, task in run.tasks.items() if "tasks" in groups else ():
        g = _group(f, "tasks", name)
        g.dimensions.update({"time": len(task.time), **{d: len(task.coords[d]) for d in task.dims}})
        _clock(g, task.time, task.step, clock, "row")
        for d in task.dims:
            variable(g, d, (d,), task.coords[d], units=units["length"], long_name=f"{d} of the grid points",
                     axis=d.upper())
        variable(g, name.split(ASIDE)[0], ("time", *task.dims), task.values, coordinates="step", **task.attrs)
    velocity = units.get("velocity", "code units")  # as the snapshots' velocity field
    for name, p in run.particles.items() if "particles" in groups else ():
        g = _particle_group(_group(f, "particles", name), p.time, np.arange(p.position.shape[1]), clock, "snapshot")
        variable(g, "step", ("time",), p.step, long_name="time step number of each snapshot")
        for key, values, what, unit in (("position", p.position, "position wrapped into the box", units["length"]),
                                        ("unwrapped", p.unwrapped, "continuous (unwrapped) position", units["length"]),
                                        ("velocity", p.velocity, "velocity", velocity)):
            variable(g, key, ("time", "particle", "component"), values, units=unit, coordinates="step",
                     long_name=f"{what} of each {name} particle")
    for name, t in run.trajectories.items() if "trajectories" in groups else ():
        g = _particle_group(_group(f, "trajectories", name), t.time, t.ids, clock, "row")
        g["particle"].attrs["long_name"] = "the particle's row (id) in the particle snapshots"
        variable(g, "position", ("time", "particle", "component"), t.x, units=units["length"],
                 long_name=f"continuous (unwrapped) position of each recorded {name} particle")
        variable(g, "velocity", ("time", "particle", "component"), t.v, units=velocity,
                 long_name=f"velocity of each recorded {name} particle")


def _clock(g: h5netcdf.Group, time: np.ndarray, step: np.ndarray, clock: dict[str, str], row: str) -> None:
    variable(g, "time", ("time",), time, long_name=f"simulation time of each {row}", **clock)
    variable(g, "step", ("time",), np.asarray(step, np.int64), long_name=f"time step number of each {row}")


def _group(f: h5netcdf.File, kind: str, name: str) -> h5netcdf.Group:
    """The group ``kind/name`` (``kind`` made by the first)."""
    return (f.groups[kind] if kind in f.groups else f.create_group(kind)).create_group(name)


def _particle_group(g: h5netcdf.Group, time: np.ndarray, ids: np.ndarray, clock: dict[str, str],
                    row: str) -> h5netcdf.Group:
    """``g`` given the dimensions time, particle and component and their coordinates."""
    g.dimensions.update({"time": len(time), "particle": len(ids), "component": 3})
    variable(g, "time", ("time",), time, long_name=f"simulation time of each {row}", **clock)
    variable(g, "particle", ("particle",), np.asarray(ids, np.int64), long_name="index of the particle in its species")
    variable(g, "component", ("component",), np.array(COMPONENTS, dtype=object), h5py.string_dtype(),
             long_name="vector component along")
    return g


def _statistics(g: h5netcdf.Group, run: RunResults, clock: dict[str, str]) -> None:
    """statistics.h5 as :func:`~simulator.output.statistics.read_statistics` reads it."""
    data = run.statistics
    g.attrs.update(data["attrs"])
    coords = [c for c in COORDINATES if c in data]
    g.dimensions.update({"time": len(data["time"]), **{c: len(data[c]) for c in coords}})
    _clock(g, data["time"], data["step"], clock, "row")
    for c in coords:
        variable(g, c, (c,), data[c])
    for name, axes in _statistics_axes(run)[0].items():
        variable(g, name, ("time", *axes), data[name], coordinates="step")
