"""``statistics.h5``: the Eulerian small-scale statistics of a flow, one row per output; its writer and
its reader (no JAX: the computation is :mod:`simulator.statistics`, handed to the writer as a function).

Datasets, each with one leading row axis (``time`` is attached to it as a dimension scale, as in
``spectra.h5``):

* ``step``, ``time``: of each row (``step`` is written last: it counts the complete rows);
* scalars ``(rows,)``: ``skewness``, ``flatness`` (pooled over the three longitudinal derivatives),
  ``skewness_dudx``, ``..._dvdy``, ``..._dwdz``, ``flatness_*``, ``derivative_variance``; with passive
  scalars ``scalar{i}_gradient_{skewness,flatness}[_x|_y|_z|_parallel]``;
* ``pdf_dudx`` ``(rows, bins)`` (a density: sum * bin width + ``pdf_dudx_outside`` = 1) over the bins of
  ``pdf_centres`` (units of the rms); ``pdf_increment`` ``(rows, separations, bins)`` at the separations
  ``pdf_separations`` (cells), ``pdf_increment_outside`` ``(rows, separations)``;
* ``structure_longitudinal_<a>``, ``structure_transverse_<a>`` ``(rows, orders, separations)`` along axis
  a = x, y, z at the separations ``r_<a>`` (cells; ``spacing`` attribute: the cell size), orders
  ``orders``; ``structure_signed3_<a>`` ``(rows, separations)``: <du_L^3>.

The file is written by process 0, opened only while a row is appended and without HDF5's file lock, so
it can be read while the run goes on; on a restart, rows after the checkpoint's step are dropped, and a
file of other orders, separations or bins, or a damaged one, is set aside whole (:mod:`simulator.output.rows`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from simulator.output import rows
from simulator.output.base import Moment, Schedule, Writer
from simulator.output.hdf5 import OutputWriteError, describe_os_error
from simulator.output.spectra import open_for_reading

FILE = "statistics.h5"
#: datasets that are coordinates (no row axis)
COORDINATES = ("orders", "r_x", "r_y", "r_z", "pdf_centres", "pdf_edges", "pdf_separations")


def _other_coordinates(f: h5py.File, coordinates: Mapping[str, np.ndarray]) -> str | None:
    """Why the file ``f`` cannot take rows of ``coordinates`` (other orders, separations or bins), or None."""
    other = [name for name, values in coordinates.items()
             if name not in f or f[name].shape != np.shape(values) or not np.array_equal(f[name][...], values)]
    return f"output.statistics changed ({', '.join(other)})" if other else None


class StatisticsFile:
    """``statistics.h5`` (see the module docstring): ``coordinates`` written once, rows appended. A
    restart continues the file or sets it aside whole (:mod:`simulator.output.rows`): other orders,
    separations or bins cannot join the old table."""

    def __init__(self, path: Path, coordinates: Mapping[str, np.ndarray], keep_through: int | None,
                 attrs: Mapping[str, Any] | None = None):
        self.path = path
        self.usable = False
        try:
            if not rows.resume(path, keep_through, lambda f: _other_coordinates(f, coordinates),
                               lambda f: rows.trim(f, keep_through, [n for n in f if n not in COORDINATES])):
                self._create(coordinates, attrs)
        except (OSError, RuntimeError) as err:
            raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err
        self.usable = True

    def _create(self, coordinates: Mapping[str, np.ndarray], attrs: Mapping[str, Any] | None) -> None:
        with h5py.File(self.path, "w", locking=False) as f:
            f.attrs["description"] = "Eulerian small-scale statistics of the flow, one row per output"
            f.attrs.update({k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in (attrs or {}).items()})
            for name, values in coordinates.items():
                f.create_dataset(name, data=np.asarray(values))
            for name, dtype in (("step", np.int64), ("time", np.float64)):
                f.create_dataset(name, shape=(0,), maxshape=(None,), dtype=dtype)
            f["time"].make_scale("time")
            f["step"].dims[0].attach_scale(f["time"])

    def append(self, step: int, t: float, values: Mapping[str, np.ndarray]) -> None:
        """Add a row: every dataset grows by one (``step`` last)."""
        if not self.usable:
            raise OutputWriteError(f"writing {self.path} failed: the file was closed after an earlier error")
        try:
            with h5py.File(self.path, "a", locking=False) as f:
                row = f["step"].shape[0]
                for name, value in values.items():
                    value = np.asarray(value, np.float64)
                    if name not in f:
                        f.create_dataset(name, shape=(0, *value.shape), maxshape=(None, *value.shape),
                                         dtype=np.float64)
                        f[name].dims[0].attach_scale(f["time"])
                    f[name].resize(row + 1, axis=0)
                    f[name][row] = value
                for name, value in (("time", t), ("step", step)):
                    f[name].resize((row + 1,))
                    f[name][row] = value
        except (OSError, RuntimeError) as err:
            self.usable = False
            raise OutputWriteError(f"writing {self.path} failed: {describe_os_error(err)}") from err


def read_statistics(path: Path) -> dict[str, Any]:
    """Every dataset of a ``statistics.h5`` (the rows all of them have: a run may be appending), and
    its attributes under ``attrs``."""
    with open_for_reading(path) as f:
        rows = [f[n].shape[0] for n in f if n not in COORDINATES]
        count = min(rows) if rows else 0
        out: dict[str, Any] = {n: f[n][:] if n in COORDINATES else f[n][:count] for n in f}
        out["attrs"] = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
    return out


def dimensions(name: str) -> tuple[str, ...]:
    """The axes of dataset ``name`` after its row axis, named by the coordinate datasets that label them
    (the module docstring's layout): ``()`` for a scalar row."""
    if name.startswith("structure_signed3_"):
        return (f"r_{name[-1]}",)
    if name.startswith("structure_"):
        return ("orders", f"r_{name[-1]}")
    return {"pdf_dudx": ("pdf_centres",), "pdf_increment": ("pdf_separations", "pdf_centres"),
            "pdf_increment_outside": ("pdf_separations",)}.get(name, ())


def coordinates(shape: tuple[int, ...], lay: Any) -> dict[str, np.ndarray]:
    """The coordinate datasets of a statistics layout (:class:`simulator.statistics.StatisticsLayout`)."""
    edges = np.asarray(lay.edges)
    out = {"orders": np.asarray(lay.orders, np.int64), "pdf_edges": edges,
           "pdf_centres": 0.5 * (edges[1:] + edges[:-1]), "pdf_separations": np.asarray(lay.pdf_separations, np.int64)}
    for a, seps in zip("xyz", lay.separations, strict=True):
        out[f"r_{a}"] = np.asarray(seps, np.int64)
    return out


class StatisticsWriter(Writer):
    """A row of statistics on its schedule; ``compute(state, time)`` returns them as host arrays (the
    reductions are collective: called on every process; process 0 writes)."""

    name = "statistics"

    def __init__(self, schedule: Schedule, compute: Callable[[Any, float], Mapping[str, np.ndarray]],
                 coords: Mapping[str, np.ndarray], rank0: bool, attrs: Mapping[str, Any] | None = None):
        super().__init__()
        self.schedule, self.compute, self.coords, self.rank0, self.attrs = schedule, compute, coords, rank0, attrs
        self.file: StatisticsFile | None = None

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
        if self.rank0:
            self.file = StatisticsFile(run_dir / FILE, self.coords, resumed_step, self.attrs)

    def write(self, moment: Moment) -> None:
        values = self.compute(moment.state, moment.time)
        if self.file is not None:
            self.file.append(moment.step, moment.time, values)

    def close(self) -> None:
        self.file = None
