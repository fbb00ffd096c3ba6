"""What the output kinds' groups in a netCDF export share (``simulator export``, :mod:`simulator.results.export`): a
variable with its attributes, a group's clock, a group of particles (no JAX; the groups are h5netcdf's, made
by the export)."""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np

#: a vector's components
COMPONENTS = ("x", "y", "z")
#: other clocks a snapshot may carry (a cosmological run's scale factor and redshift, attributes of its field and
#: particle snapshots): coordinates along time beside ``step`` wherever snapshots are exported
CLOCKS = ("a", "redshift")


def variable(f: Any, name: str, dims: tuple[str, ...], data: Any = None, dtype: Any = None, **attrs: Any) -> Any:
    """A variable of the netCDF group ``f`` holding ``data``, with the attributes that are not None."""
    var = f.create_variable(name, dims, data=data, dtype=dtype)
    var.attrs.update({k: v for k, v in attrs.items() if v is not None})
    return var


def clock(units: dict[str, str]) -> dict[str, str]:
    """The attributes of a group's ``time`` coordinate in the run's ``units``."""
    return {"units": units["time"], "axis": "T"}


def clocks_of(attrs: list[Any]) -> dict[str, np.ndarray]:
    """The :data:`CLOCKS` that every one of the snapshots' attributes ``attrs`` holds, each along time (float64)."""
    return {c: np.array([a[c] for a in attrs], float) for c in CLOCKS if attrs and all(c in a for a in attrs)}


def clock_coordinates(g: Any, clocks: dict[str, np.ndarray]) -> list[str]:
    """Each of ``clocks`` (:func:`clocks_of`) as a variable of ``g`` along its ``time``; returns their names, for
    the ``coordinates`` attribute of the variables along time."""
    for name, values in clocks.items():
        variable(g, name, ("time",), values, long_name=f"{name} of each snapshot")
    return list(clocks)


def time_and_step(g: Any, time: np.ndarray, step: np.ndarray, units: dict[str, str], row: str) -> None:
    """A group's ``time`` and ``step`` variables along its ``time`` dimension (``row``: what one row is)."""
    variable(g, "time", ("time",), time, long_name=f"simulation time of each {row}", **clock(units))
    variable(g, "step", ("time",), np.asarray(step, np.int64), long_name=f"time step number of each {row}")


def particle_group(g: Any, time: np.ndarray, ids: np.ndarray, units: dict[str, str], row: str) -> Any:
    """``g`` given the dimensions time, particle and component and their coordinates."""
    g.dimensions.update({"time": len(time), "particle": len(ids), "component": 3})
    variable(g, "time", ("time",), time, long_name=f"simulation time of each {row}", **clock(units))
    variable(g, "particle", ("particle",), np.asarray(ids, np.int64), long_name="index of the particle in its species")
    variable(g, "component", ("component",), np.array(COMPONENTS, dtype=object), h5py.string_dtype(),
             long_name="vector component along")
    return g
