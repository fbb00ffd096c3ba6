"""``statistics.h5``: the Eulerian small-scale statistics of a flow, one row per output; its writer and
its reader, and its output kind (no JAX: the computation is :mod:`simulator.observables.statistics`, the kind's device
program).

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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulator import equations
from simulator.errors import ConfigError, reading
from simulator.output import rows
from simulator.output.base import Moment, OutputKind, Program, Schedule, Scheduled, Writer, WriterContext, host_arrays
from simulator.output.netcdf import time_and_step, variable
from simulator.schema import setting

FILE = "statistics.h5"
#: datasets that are coordinates (no row axis)
COORDINATES = ("orders", "r_x", "r_y", "r_z", "pdf_centres", "pdf_edges", "pdf_separations")
#: the export's units and long names of the coordinates
COORDINATE_ATTRS = {
    "orders": {"long_name": "order p of the structure functions <|du|^p>"},
    **{f"r_{a}": {"units": "cells",
                  "long_name": f"separation r in grid cells along {a} (r_{a}_length: in length units)"} for a in "xyz"},
    "pdf_separations": {"units": "cells",
                        "long_name": "separation r in grid cells of the increments' PDFs, along each axis"},
    "pdf_centres": {"units": "rms", "long_name": "bin centre, in units of the rms"},
    "pdf_edges": {"units": "rms", "long_name": "bin edge, in units of the rms"},
}


@dataclass(frozen=True)
class StatisticsOutput(Scheduled):
    """Small-scale flow statistics appended to statistics.h5 (:mod:`simulator.observables.statistics`): derivative
    skewness and flatness, PDFs, structure functions, scalar-gradient moments. Off by default: each row
    costs about one shift of the velocity per separation and axis: ~6 RK4 steps at 64^3 with every r = 1..N/2."""

    orders: tuple[int, ...] = setting((2, 3, 4, 5, 6), "orders p of the structure functions S_p(r) = <|du|^p>",
                                      min=1, max=12)
    separations: tuple[int, ...] | None = setting(None, "separations r of the structure functions, in grid cells "
                                                  "along each axis (each <= N/2; a sparse set, e.g. log-spaced, "
                                                  "costs one shift each); null = every r = 1..N/2", min=1)
    pdf_separations: tuple[int, ...] | None = setting(None, "separations (cells, each <= N/2) of the PDFs of "
                                                      "longitudinal increments; null = 1, N/8 and N/2", min=1)
    pdf_bins: int = setting(81, "bins of every PDF", min=2, max=100_000)
    pdf_range: float = setting(10.0, "the PDFs' bins span [-pdf_range, pdf_range] in units of the rms", gt=0.0)


class StatisticsFile(rows.RowFile):
    """``statistics.h5`` (see the module docstring): a :class:`~simulator.output.rows.RowFile` whose
    coordinates are the orders, separations and bins (other ones cannot join the old table: a restart
    that changes them sets the file aside whole)."""

    what = "output.statistics"
    description = "Eulerian small-scale statistics of the flow, one row per output"

    @staticmethod
    def axes(name: str) -> tuple[str, ...]:
        return dimensions(name)


def read_statistics(path: Path) -> dict[str, Any]:
    """Every dataset of a ``statistics.h5`` (the rows all of them have: a run may be appending), and
    its attributes under ``attrs``. DamagedFileError naming a file cut short or not as a run writes it (one
    without ``step``, ``time`` or a coordinate its statistics are over, which a run creates it with, among them)."""
    with reading(path):
        data = rows.read_rows(path, COORDINATES)
        over = {d for name in data if name not in (*COORDINATES, "attrs") for d in dimensions(name)}
        needed = {"step", "time", *over}
        missing = [name for name in ("step", "time", *COORDINATES) if name in needed and name not in data]
        if missing:  # read without, its statistics would be left out as of unknown axes, or fail unnamed
            raise ValueError(f"it has no dataset {', '.join(missing)}")
    return data


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
    """The coordinate datasets of a statistics layout (:class:`simulator.observables.statistics.StatisticsLayout`)."""
    edges = np.asarray(lay.edges)
    out = {"orders": np.asarray(lay.orders, np.int64), "pdf_edges": edges,
           "pdf_centres": 0.5 * (edges[1:] + edges[:-1]), "pdf_separations": np.asarray(lay.pdf_separations, np.int64)}
    for a, seps in zip("xyz", lay.separations, strict=True):
        out[f"r_{a}"] = np.asarray(seps, np.int64)
    return out


class StatisticsWriter(Writer):
    """A row of statistics on its schedule, the kind's program's values as host arrays (the reductions are
    collective: computed on every process; process 0 writes)."""

    name = "statistics"

    def __init__(self, schedule: Schedule, coords: Mapping[str, np.ndarray], rank0: bool,
                 attrs: Mapping[str, Any] | None = None):
        super().__init__()
        self.schedule, self.coords, self.rank0, self.attrs = schedule, coords, rank0, attrs
        self.file: StatisticsFile | None = None

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
        if self.rank0:
            self.file = StatisticsFile(run_dir / FILE, self.coords, resumed_step, self.attrs)

    def write(self, moment: Moment) -> None:
        values = moment.get("statistics")
        if self.file is not None:
            self.file.append(moment.step, moment.time, values)

    def close(self) -> None:
        self.file = None


def _check_statistics(cfg: Any) -> None:
    """Flow statistics need a velocity, and separations the grid holds (at most N/2 cells on every axis)."""
    stats = cfg.output.section("statistics")
    if not stats.on:
        return
    if "velocity" not in equations.registry()[cfg.physics.name].fields:
        raise ConfigError("output.statistics", "enabled", "enable it only for an equation with a velocity field",
                          f"is undefined for physics.name = {cfg.physics.name}")
    if cfg.grid.plane:  # its box's one-cell axis has no increments: the statistics are a box's (x, y and z)
        raise ConfigError("output.statistics", "enabled", "leave it off for a plane (grid.shape of two entries): "
                          "its statistics are a box's; a plane writes spectra, fluxes and its time series",
                          f"is not available for the plane grid.shape = {list(cfg.grid.shape)}")
    if cfg.grid.walls.on:  # its increments and derivatives are the periodic box's
        raise ConfigError("output.statistics", "enabled", "leave it off between plates (grid.walls): the flow "
                          "statistics are a periodic box's; profiles are output.profiles", "is not available")
    half = min(cfg.grid.cells) // 2
    for key in ("separations", "pdf_separations"):
        values = getattr(stats, key) or ()
        if any(r > half for r in values):
            raise ConfigError(f"output.statistics.{key}", list(values), f"every separation must be <= N/2 = {half} "
                              f"cells (the smallest axis of grid.shape {list(cfg.grid.shape)})", "is too large")




def axes_of(data: Mapping[str, Any]) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """Each statistic's axes after time (:func:`dimensions`) in what :func:`read_statistics` read, and the
    statistics whose shape their names do not explain."""
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


def export(g: Any, data: Mapping[str, Any], units: dict[str, str]) -> None:
    """The ``statistics`` group of a netCDF export: statistics.h5 as :func:`read_statistics` reads it, time and
    step (time); the coordinates orders, r_x, r_y, r_z, pdf_centres, pdf_edges, pdf_separations (their own
    dimensions); each statistic over (time, *its axes); the file's attributes (equation, shape, box, spacing)."""
    # the file's lists (shape, box, spacing) as netCDF number arrays; a mapping, which netCDF cannot hold, as JSON
    g.attrs.update({k: json.dumps(v) if isinstance(v, dict) else v for k, v in data["attrs"].items()})
    coords = [c for c in COORDINATES if c in data]
    g.dimensions.update({"time": len(data["time"]), **{c: len(data[c]) for c in coords}})
    time_and_step(g, data["time"], data["step"], units, "row")
    for c in coords:
        variable(g, c, (c,), data[c], **COORDINATE_ATTRS[c])
    # the separations are counted in cells (r_x = 1, 2, ...): beside them, r in the run's length units, so that a
    # structure function is not plotted against a count of cells taken for a length
    spacing = dict(zip("xyz", data["attrs"].get("spacing", []), strict=False))  # older files may lack it
    for a in (a for a in "xyz" if f"r_{a}" in data and a in spacing):
        variable(g, f"r_{a}_length", (f"r_{a}",), np.asarray(data[f"r_{a}"]) * spacing[a], units=units["length"],
                 long_name=f"separation r along {a} in length units (r_{a} cells times the spacing {spacing[a]:.6g})")
    for name, axes in axes_of(data)[0].items():
        lengths = " ".join(f"{d}_length" for d in axes if d.startswith("r_") and d[-1] in spacing)
        variable(g, name, ("time", *axes), data[name], coordinates=" ".join(filter(None, ("step", lengths))))


def writers(cfg: Any, sim: Any, ctx: WriterContext) -> list[Writer]:
    """The ``statistics.h5`` writer of a run of ``cfg`` on ``output.statistics``'s schedule."""
    from simulator.observables.statistics import layout_of

    spacing = [float(b) / n for b, n in zip(cfg.grid.lengths, cfg.grid.cells, strict=True)]
    attrs = {"equation": cfg.physics.name, "shape": list(cfg.grid.shape), "box": list(cfg.grid.box), "spacing": spacing}
    coords = coordinates(tuple(cfg.grid.cells), layout_of(cfg))
    return [StatisticsWriter(Schedule.of(cfg.output.section("statistics")), coords, ctx.rank0, attrs)]


def read(run_dir: Path) -> dict[str, Any]:
    """``statistics.h5`` by dataset ({} when the run wrote none)."""
    return read_statistics(run_dir / FILE) if (run_dir / FILE).is_file() else {}


#: the output kind (:mod:`simulator.output.kinds`)
KIND = OutputKind(
    name="statistics", doc="statistics.h5: derivative moments, PDFs, structure functions, one row per output",
    writers=writers, programs=(Program("statistics", "simulator.observables.statistics:program", host=host_arrays),),
    files=(FILE,), section=StatisticsOutput, schedules=("statistics",), check=_check_statistics, read=read,
    export=export)
