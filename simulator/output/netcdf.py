"""What the output kinds' groups in a netCDF export share (``simulator export``, :mod:`simulator.results.export`): a
variable with its attributes, a group's clock, a group of particles (no JAX; the groups are h5netcdf's, made
by the export)."""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np

#: a vector's components
COMPONENTS = ("x", "y", "z")


def variable(f: Any, name: str, dims: tuple[str, ...], data: Any = None, dtype: Any = None, **attrs: Any) -> Any:
    """A variable of the netCDF group ``f`` holding ``data``, with the attributes that are not None."""
    var = f.create_variable(name, dims, data=data, dtype=dtype)
    var.attrs.update({k: v for k, v in attrs.items() if v is not None})
    return var


def clock(units: dict[str, str]) -> dict[str, str]:
    """The attributes of a group's ``time`` coordinate in the run's ``units``."""
    return {"units": units["time"], "axis": "T"}


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
