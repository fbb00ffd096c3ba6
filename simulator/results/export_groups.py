"""The groups of a netCDF export (:mod:`simulator.results.export`): every output kind the run wrote beside the root
group's (the snapshot fields, spectra and time series, :data:`ROOT`) is a netCDF-4 group with its own ``time``
dimension, written by the kind's ``export`` from what its reader returns (:mod:`simulator.output.kinds`; no
JAX). ``xr.open_dataset(path, group="tasks/w_mid")`` opens one. The shipped kinds' groups::

    statistics              statistics.h5 (output.statistics): time, step (time); the coordinates orders,
                            r_x, r_y, r_z, pdf_centres, pdf_edges, pdf_separations (their own dimensions);
                            each statistic over (time, *its axes) (:func:`~simulator.output.statistics.dimensions`);
                            the file's attributes (equation, shape, box, spacing)
    tasks/<name>            a task of tasks.h5 (output.tasks; ``<name>.until-<step>`` rows a restart kept
                            aside): time, step (time); x, y, z as its dimensions use them (grid points);
                            <name> over (time[, a, b | axis]) with the task's attributes
    particles/<species>     the particle snapshots: time, step (time), and a, redshift (time) for a cosmological
                            run; particle (0 .. N-1); component; position (wrapped into the box), unwrapped,
                            velocity (time, particle, component), in the run's precision
    trajectories/<species>  particles/trajectories.h5: time, step (time); particle (indexes within the species, as
                            particles/); component; position (wrapped into the box), unwrapped and velocity
                            (time, particle, component), float64: particles/'s names for the same quantities

Time is in the run's time units, positions in its length units, velocities in the units of its
velocity field; a cosmological run's groups have ``a`` and ``redshift`` along time too (:func:`with_clocks`). A
kind whose file holds no row yet (its coordinates alone) is no group, and a table of no row within a kind's (a task
of no row beside tasks with rows) is left out of its group. What the export leaves out, each with its reason, is
:func:`plan_groups`'s third result. The root's time series and spectra are written here too
(:func:`timeseries_group`, :func:`spectra_group`), with the attributes a stored dataset carries over
(:func:`stored_attrs`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

import h5netcdf
import h5py
import numpy as np

from simulator.errors import ConfigError, DamagedFileError
from simulator.output import kinds
from simulator.output.hdf5 import IncompleteOutputError
from simulator.output.netcdf import variable
from simulator.output.rows import open_for_reading
from simulator.output.spectra import AXES as SPECTRA_AXES, FILE as SPECTRA_FILE, wavenumber_axes
from simulator.output.statistics import axes_of
from simulator.planning.cost import human_bytes
from simulator.results.load import RunResults

#: HDF5's dimension-scale bookkeeping: written anew by make_scale / attach_scale, never copied
SCALE_ATTRS = {"CLASS", "NAME", "DIMENSION_LIST", "REFERENCE_LIST"}

#: the output kinds whose data make the export's root group (written by :mod:`simulator.results.export` itself: the
#: snapshot fields it chooses, the spectra and the time series, one netCDF file of the run)
ROOT = ("timeseries", "spectra", "snapshots")


def _entries(data: Any) -> dict[str, Any] | None:
    """A reader's mapping, or dataclass as a mapping of its fields; None for anything else (an array)."""
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return {f.name: getattr(data, f.name) for f in dataclasses.fields(data)}
    return data if isinstance(data, dict) else None


def _arrays(data: Any) -> list[Any]:
    """The arrays in a reader's result (mappings and dataclasses of arrays, possibly nested; not the
    attributes, ``attrs``, which a group keeps as attributes)."""
    entries = _entries(data)
    if entries is not None:
        return [a for k, v in entries.items() if k != "attrs" for a in _arrays(v)]
    return [data] if isinstance(data, np.ndarray) else []


def _times(data: Any) -> list[np.ndarray]:
    """The ``time`` arrays in a reader's result, nested as :func:`_arrays` finds arrays: the rows of each
    table it holds (the statistics', each task's, each species')."""
    found: list[np.ndarray] = []
    for key, value in (_entries(data) or {}).items():
        if key == "time" and isinstance(value, np.ndarray):
            found.append(value)
        elif key != "attrs":
            found += _times(value)
    return found


def _rowless(data: Any) -> bool:
    """Whether every table of a reader's result holds no row (its coordinates alone: a run stopped before
    the output's first row); False for a result without ``time`` arrays, whose rows cannot be told."""
    times = _times(data)
    return bool(times) and not any(len(t) for t in times)


def _with_rows(data: Any) -> tuple[Any, list[str]]:
    """A reader's result that is a mapping of tables (the tasks by name, the species), some of them with rows,
    without the tables that hold none (a task whose schedule's first time was not reached), and the names of
    those left out; any other result as it is."""
    if not isinstance(data, dict) or _rowless(data):
        return data, []
    empty = [key for key, value in data.items() if _rowless(value)]
    return {key: value for key, value in data.items() if key not in empty}, empty


def _nbytes(*arrays: Any) -> int:
    return sum(np.asarray(a).nbytes for a in arrays)


def groups(run: RunResults) -> dict[str, kinds.OutputKind]:
    """The output kinds whose files the run holds, outside the root group (:data:`ROOT`), in registry order."""
    return {kind.name: kind for kind in kinds.written(run.path) if kind.name not in ROOT}


def read_output(run: RunResults, name: str) -> Any:
    """``run.output(name)``; ConfigError naming the damaged file when its reader fails on one (cut short, zero
    length: the file a DamagedFileError names, else the kind's files)."""
    try:
        return run.output(name)
    except DamagedFileError as err:
        raise ConfigError("RUN_DIR", str(run.path), "restore or remove the damaged file",
                          f"cannot be exported: {err.path}: {err.reason}") from None
    except (IncompleteOutputError, OSError) as err:
        files = ", ".join(str(run.path / f) for f in kinds.registry()[name].files) or name
        raise ConfigError("RUN_DIR", str(run.path), "restore or remove the damaged file",
                          f"cannot be exported: {files}: {err}") from None


def has_rows(table: dict[str, Any]) -> bool:
    """Whether a root group's table (the time series, the spectra, as their readers return them) holds a row."""
    return len(table.get("time", ())) > 0


def empty_root(run: RunResults) -> list[str]:
    """The root group's row files the run holds without a row (zero length, or a header only: a run stopped
    before its first row, a file emptied), each ``"file (why)"``: the export leaves them out and says so."""
    return [f"{kind.files[0]} (holds no row: zero length, or a header only)" for kind in kinds.written(run.path)
            if kind.name in ROOT and kind.name != "snapshots" and not has_rows(read_output(run, kind.name))]


def _exported(run: RunResults) -> dict[str, Any]:
    """What the reader of each kind that declares an export returns, by kind (read once). ConfigError naming a
    damaged file (:func:`read_output`)."""
    return {name: read_output(run, name) for name, kind in groups(run).items() if kind.export}


def sizes(run: RunResults) -> dict[str, int]:
    """The bytes of data each group would hold (0: the run wrote none of it): the arrays its kind's reader
    returns, of the kinds that declare an export. ConfigError naming a damaged file (:func:`read_output`)."""
    return {name: _nbytes(*_arrays(data)) for name, data in _exported(run).items()}


def plan_groups(run: RunResults, room: int) -> tuple[tuple[str, ...], int, tuple[str, ...]]:
    """(the groups to write, their bytes, what is left out and why): each group the run has, in registry order,
    while the export stays within ``room`` bytes; a group that does not fit is left out, and so are a kind that
    declares no export, statistics of an unknown shape, the root group's row files that hold no row
    (:func:`empty_root`) and a group's file that holds none (its coordinates alone: a group of no time),
    what restarts set aside (``aside/``) and the snapshots a later segment superseded.
    ConfigError naming a damaged file a group is read from."""
    chosen, used = [], 0
    held = groups(run)
    left = [*empty_root(run), *(f"{name} ({', '.join(kind.files)}: the output kind declares no export)"
                                for name, kind in held.items() if not kind.export)]
    for kind, everything in _exported(run).items():
        data, empty = _with_rows(everything)
        size = _nbytes(*_arrays(data))
        if not size:
            continue
        if _rowless(data):
            left.append(f"{kind} ({', '.join(held[kind].files)} holds no row)")
            continue
        left += [f"{kind}/{key} ({', '.join(held[kind].files)} holds no row of it)" for key in empty]
        if used + size > room:
            left.append(f"{kind} ({human_bytes(size)}: over --max-size)")
            continue
        chosen.append(kind)
        used += size
    odd = axes_of(run.output("statistics"))[1] if "statistics" in chosen else []
    if odd:
        left.append(f"statistics {', '.join(odd)} (axes of unknown meaning)")
    if run.aside:
        left.append(f"aside/ ({len(run.aside)} file(s) restarts set aside: load_run(...).aside lists them)")
    if run.superseded:
        left.append(f"superseded snapshots ({len(run.superseded)} file(s) of the trajectory before a restart from an "
                    "earlier step: load_run(...).superseded lists them)")
    return tuple(chosen), used, tuple(left)


def write_groups(f: h5netcdf.File, run: RunResults, chosen: tuple[str, ...], units: dict[str, str]) -> None:
    """The groups ``chosen`` (:func:`plan_groups`) into the export ``f``; ``units`` the run's. Each is written by
    its kind's ``export``, ``(group, data, units)``, with ``data`` its reader's less its tables of no row
    (:func:`plan_groups` names them)."""
    coordinates = run.clock().time_coordinates
    for name, kind in groups(run).items():
        if name in chosen:
            kind.call("export", f.create_group(name), _with_rows(run.output(name))[0], units)
            with_clocks(f[name], coordinates)


def with_clocks(g: Any, coordinates: Callable[[float], dict[str, float]]) -> None:
    """A cosmological run's ``a`` and ``redshift`` along the ``time`` of ``g`` and of each group under it that lacks
    them (a task's), from its run time as the snapshots' (``coordinates``: :meth:`Clock.time_coordinates`), made
    coordinates of its variables along time; nothing for a run without other clocks."""
    if "time" in g.variables:
        rows = [coordinates(float(t)) for t in g.variables["time"][:]]
        added = []
        for name, key in (("a", "a"), ("redshift", "z")):  # the names of the root group's (z is an axis there)
            if rows and key in rows[0] and name not in g.variables:
                variable(g, name, ("time",), np.array([r[key] for r in rows]), long_name=f"{name} of each row")
                added.append(name)
        for name, var in g.variables.items():
            if added and var.dimensions[:1] == ("time",) and name not in ("time", "step", *added):
                var.attrs["coordinates"] = " ".join([*str(var.attrs.get("coordinates", "")).split(), *added])
    for sub in g.groups.values():
        with_clocks(sub, coordinates)


def stored_attrs(obj: h5py.HLObject, drop: Sequence[str] = ()) -> dict[str, Any]:
    """The attributes of ``obj`` worth carrying over (not HDF5's dimension-scale bookkeeping)."""
    return {k: v for k, v in obj.attrs.items() if k not in SCALE_ATTRS and k not in drop}


def timeseries_group(f: h5netcdf.File, run: RunResults, units: dict[str, str]) -> None:
    """timeseries.csv's columns along its own time, named as the equation declares them; ``step_series`` and the clock
    columns (a cosmological run's a, z, cosmic_time) coordinates of the others, as the snapshots' are of theirs."""
    from simulator.equations import registry
    from simulator.equations.templates import declared

    info = registry()[run.config["physics"]["name"]]
    described = info.diagnostics
    rows = run.output("timeseries")
    f.dimensions["time_series"] = len(rows["time"])
    variable(f, "time_series", ("time_series",), rows["time"], units=units["time"],
             long_name="simulation time of each row of timeseries.csv", axis="T")
    coordinates = [c for c in rows if c == "step" or c in info.clocks]
    for column, values in rows.items():
        if column != "time":
            variable(f, f"{column}_series", ("time_series",), values,
                     # a clock column (a cosmological run's age) in the unit the run's units give it
                     units=units["time"] if column == "dt" else units.get(column) if column in info.clocks else None,
                     long_name={"step": "time step number", "dt": "time step"}.get(column)
                     or declared(described, column) or column,
                     coordinates=None if column in coordinates else " ".join(f"{c}_series" for c in coordinates))


def spectra_group(f: h5netcdf.File, run: RunResults, units: dict[str, str]) -> None:
    """spectra.h5's rows (as :func:`~simulator.output.spectra.read_spectra` reads them) and attributes."""
    data = run.output("spectra")
    axes = [name for name in SPECTRA_AXES if name in data]  # k, and Boussinesq's k_h and k_z: the maps' axes
    f.dimensions.update({"time_spectra": len(data["time"]), **{name: len(data[name]) for name in axes}})
    with open_for_reading(run.path / SPECTRA_FILE) as src:
        units.update(json.loads(src.attrs.get("units", "{}")))
        f.attrs["units"] = json.dumps(units)
        # an axis the reader adds beside a spectrum binned by it (k_h where the file stores only k) has k's attributes
        attrs = {name: stored_attrs(src[name if name in src else "k"]) for name in data}
    for name in axes:
        variable(f, name, (name,), data[name], **attrs[name])
    variable(f, "time_spectra", ("time_spectra",), data["time"], axis="T", **attrs["time"])
    clocks = [name for name, values in data.items() if np.ndim(values) == 1 and name not in (*axes, "time")]
    for name in clocks:
        variable(f, f"{name}_spectra", ("time_spectra",), data[name], **attrs[name])
    for name, values in data.items():  # (rows, k) spectra (or k_h, k_z: Boussinesq's), and (rows, k_h, k_z) maps
        if np.ndim(values) >= 2:
            dims = ("time_spectra", *wavenumber_axes(name, np.ndim(values), run.config))
            variable(f, f"{name}_spectra", dims, values, coordinates=" ".join(f"{c}_spectra" for c in clocks),
                     **attrs[name])
