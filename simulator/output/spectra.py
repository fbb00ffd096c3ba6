"""``spectra.h5``: shell-summed spectra, one row per output, its writer (no JAX).

The file is also a netCDF-4 file: ``time`` (one value per row) and ``k`` (shell centres) are HDF5
dimension scales, attached to ``step`` and to every spectrum, so ``xr.open_dataset(path,
engine="h5netcdf")`` gives ``energy(time, k)`` with coordinates; a 2D spectrum over (k_h, |k_z|)
(:func:`simulator.observables.spectra.cylinder_sum`) is ``(time, k_h, k_z)``, both scales the shell centres. Every
dataset says what it is
(``long_name``, ``description``) and its ``units``; the file's ``units`` attribute (JSON) names the
run's units (code units unless the run has a unit system).

The file holds every shell, from k = 0 (the mean) to the corner of the grid's cube of modes, so that sums over
shells are sums over every mode. What a run resolves is less: the shells 0 < k <= k_res
(:func:`resolved_wavenumber`: the largest sphere of modes the grid holds, or the dealiasing's), each a whole
sphere of resolved modes; past k_res a shell holds part of its modes or only the dealiased ones, and ratios
there are meaningless (0 to 29 between two runs, or round-off near 1e-35). ``load_run(...).spectra``, the
netCDF export and the figures take those shells only (:func:`resolved`), from files of any version (nothing
is recorded for it: the config says it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from simulator.equations.resolution import RESOLVED
from simulator.equations.spec import EquationInfo
from simulator.equations.templates import declared
from simulator.errors import reading
from simulator.fft import plane
from simulator.output import rows
from simulator.output.base import (
    CODE_UNITS,
    Moment,
    OutputKind,
    Program,
    Schedule,
    Scheduled,
    Writer,
    WriterContext,
    host_arrays,
)
from simulator.output.hdf5 import OutputWriteError, describe_os_error
from simulator.output.rows import open_for_reading
from simulator.output.runconfig import load_run_config
from simulator.schema import setting

FILE = "spectra.h5"


@dataclass(frozen=True)
class SpectraOutput(Scheduled):
    """Shell-summed spectra appended to spectra.h5."""

    every: int | None = setting(None, "steps between spectra rows (a multiple of output.chunk); null = with every "
                                "diagnostics row; 0 = not by steps", min=0)
    at_end: bool = setting(True, "a row at the end of the run")

#: the wavenumber scales (not rows): |k| of the shells, and the axes of the 2D spectra
AXES = ("k", "k_h", "k_z")


class SpectraFile:
    """``spectra.h5``: ``k`` (shell centres), ``step``, ``time``, and one (rows, shells) dataset per
    spectrum, grown by a row at each diagnostics output. Written by process 0 only. On a restart, rows
    after the checkpoint's step are dropped; a file that cannot be continued (damaged, other shells,
    other spectra in a row) is set aside whole (:mod:`simulator.output.rows`). The file is open only
    while a row is written, and without HDF5's file lock, so h5py and xarray open it at any time while the run goes on
    (an exclusive lock held for the whole run made them fail with BlockingIOError); readers take the rows every dataset
    has.

    ``units`` names the run's units (``length``, ``time``, ``k`` when not 1/length, and a spectrum's
    name for that spectrum);
    ``descriptions`` says what each spectrum is and how it is normalised (the equation's declaration).
    """

    def __init__(self, path: Path, k: np.ndarray, keep_through: int | None, *, units: Mapping[str, str] | None = None,
                 descriptions: Mapping[str, str] | None = None):
        self.path, self.k = path, np.asarray(k)
        self.units = {**CODE_UNITS, **(units or {})}
        self.descriptions = dict(descriptions or {})
        try:
            # which spectra a row holds is known at the first row: the restart is settled there (output.rows)
            self.pending = rows.Pending(path, keep_through, self._cut, self._create)
        except OutputWriteError:
            raise
        except (OSError, RuntimeError) as err:
            raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err
        self.usable = True

    @staticmethod
    def _rows(f: h5py.File) -> list[str]:
        """The datasets of ``f`` with a row axis (all but the wavenumber scales)."""
        return [name for name in f if name not in AXES]

    def _create(self, target: Path) -> None:
        """A new file at ``target``: the shells ``k``, no rows yet."""
        with h5py.File(target, "w", rdcc_nbytes=0, locking=False) as f:  # no chunk cache: see output.hdf5
            f.create_dataset("k", data=self.k)
            for name, dtype in (("step", np.int64), ("time", np.float64)):
                f.create_dataset(name, shape=(0,), maxshape=(None,), dtype=dtype)
            self._describe(f)

    def _cut(self, f: h5py.File, keep_through: int) -> None:
        """The restart's file continued: its rows after ``keep_through`` dropped, described as new files are."""
        rows.trim(f, keep_through, self._rows(f))
        self._describe(f)

    def _changed(self, f: h5py.File, names: set[str]) -> str | None:
        """Why the restart's file cannot take rows of the spectra (and clocks) ``names``, or None."""
        if f["k"].shape != self.k.shape or not np.array_equal(f["k"][:], self.k):
            return f"{self.path.name}: the shells changed (another grid or box)"
        held = {name for name in self._rows(f) if name not in ("step", "time")}
        if held != names:
            return f"{self.path.name}: the spectra of a row changed ({', '.join(sorted(held ^ names))})"
        return None

    def _describe(self, f: h5py.File) -> None:
        """Attributes and dimension scales (also added to a file written before they existed)."""
        f.attrs["description"] = "shell-summed spectra, one row per diagnostics output"
        f.attrs["units"] = json.dumps(self.units)
        length, time = self.units["length"], self.units["time"]
        f["k"].attrs.update({"long_name": "shell wavenumber |k|", "units": self.units.get("k", f"1/({length})"),
                             "doc": "shell centre |k| = j * 2 pi / max(box); shell j holds round(|k|/dk) = j"})
        f["time"].attrs.update({"long_name": "simulation time of each row", "units": time})
        f["step"].attrs.update({"long_name": "time step number of each row"})
        for scale in ("k", "time"):
            if not f[scale].is_scale:
                f[scale].make_scale(scale)
        if not f["step"].dims[0].values():
            f["step"].dims[0].attach_scale(f["time"])
        for name in f:
            if name not in (*AXES, "step", "time") and f[name].ndim >= 2:  # 1-D: a clock (a, z)
                self._describe_spectrum(f, name)

    def _describe_spectrum(self, f: h5py.File, name: str) -> None:
        ds = f[name]
        ds.attrs.update({"long_name": f"{name} spectrum", "units": self.units.get(name, "code units")})
        doc = declared(self.descriptions, name)  # a family's template (scalar{i}_variance) describes each member
        if doc is not None:
            ds.attrs["description"] = doc
        if not ds.dims[0].values():
            ds.dims[0].attach_scale(f["time"])
            for axis, scale in enumerate(("k",) if ds.ndim == 2 else ("k_h", "k_z"), start=1):
                ds.dims[axis].attach_scale(self._axis(f, scale))

    @staticmethod
    def _axis(f: h5py.File, name: str) -> h5py.Dataset:
        """The wavenumber scale ``name`` (``k_h`` and ``k_z`` are made from ``k`` when first needed)."""
        if name not in f:
            ds = f.create_dataset(name, data=f["k"][:])
            ds.attrs.update({"long_name": {"k_h": "horizontal", "k_z": "vertical"}[name] + " wavenumber bin "
                             f"{'(k_x^2 + k_y^2)^(1/2)' if name == 'k_h' else '|k_z|'}",
                             "units": f["k"].attrs["units"]})
            ds.make_scale(name)
        return f[name]

    def append(self, step: int, t: float, spectra: dict[str, np.ndarray],
               coordinates: Mapping[str, float] | None = None) -> None:
        """Add a row (every dataset grows by one; a reader takes the rows all datasets have);
        ``coordinates``: other clocks of the row (``a``, ``z``), one value each, beside ``time``."""
        if not self.usable:
            raise OutputWriteError(f"writing {self.path} failed: the file was closed after an earlier error")

        def add(f: h5py.File) -> None:
            row = f["step"].shape[0]
            for name, values in spectra.items():
                if name not in f:
                    f.create_dataset(name, shape=(0, *values.shape), maxshape=(None, *values.shape), dtype=np.float64)
                    self._describe_spectrum(f, name)
                f[name].resize((row + 1, *values.shape))
                f[name][row] = values
            for name, value in (coordinates or {}).items():
                if name not in f:
                    f.create_dataset(name, shape=(0,), maxshape=(None,), dtype=np.float64)
                    f[name].attrs["long_name"] = f"{name} of each row (another clock than time)"
                    f[name].dims[0].attach_scale(f["time"])
                f[name].resize((row + 1,))
                f[name][row] = value
            for name, value in (("time", t), ("step", step)):  # step last: it counts the complete rows
                f[name].resize((row + 1,))
                f[name][row] = value

        try:
            if self.pending:
                self.pending.settle(lambda f: self._changed(f, {*spectra, *(coordinates or {})}), self._create)
            rows.append_row(self.path, add)
        except OutputWriteError:
            self.usable = False
            raise
        except (OSError, RuntimeError) as err:
            self.usable = False
            raise OutputWriteError(f"writing {self.path} failed: {describe_os_error(err)}") from err

    def close(self) -> None:
        """Close the file; a restart's file that got no row is cut back to the restart's step."""
        try:
            if self.pending:
                self.pending.settle()
        except OutputWriteError:
            raise
        except (OSError, RuntimeError) as err:
            raise OutputWriteError(f"writing {self.path} failed: {describe_os_error(err)}") from err


def read_spectra(path: Path, rows: Any = slice(None)) -> dict[str, np.ndarray]:
    """``k``, ``step``, ``time`` and every spectrum of a ``spectra.h5`` (``rows`` selects rows, e.g. a
    list of indices), read while a run may be appending, and beside an h5py/xarray handle of this process.
    DamagedFileError naming a file cut short or not as a run writes it (one without ``k``, ``step`` or ``time``,
    which a run creates it with, among them)."""
    with reading(path), open_for_reading(path) as f:
        missing = [name for name in ("k", "step", "time") if name not in f]
        if missing:  # read as a file of no row, or of no shells, its spectra would be lost or fail unnamed
            raise ValueError(f"it has no dataset {', '.join(missing)}")
        count = min(f[name].shape[0] for name in f if name not in AXES)  # a row being appended may be partial
        index = np.arange(count)[rows]
        return {name: (f[name][:] if name in AXES else f[name][:count][index]) for name in f}


#: the grid axes each wavenumber axis of the file spans: |k| all three, k_h the horizontal ones, k_z the last
SPANS = {"k": (0, 1, 2), "k_h": (0, 1), "k_z": (2,)}


def resolved_wavenumber(config: Mapping[str, Any], info: EquationInfo | None, axis: str = "k") -> float:
    """The largest wavenumber a run resolves (``config`` its resolved config, as a dict): ``info.plot.resolved``
    (2/3 under the 2/3 rule; 1 for an equation ``info`` None, unknown here) of the grid's Nyquist wavenumber
    min_i pi N_i / L_i over the grid axes ``axis`` spans (:data:`SPANS`), or the fraction of the run's
    ``physics.dealias`` where the equation lets it choose (0.8 under the Hou-Li filter:
    :data:`simulator.equations.resolution.RESOLVED`)."""
    grid = config["grid"]
    fraction = RESOLVED.get(config.get("physics", {}).get("dealias"), 1.0 if info is None else info.plot.resolved)
    cells, lengths = plane.cells(grid["shape"]), plane.lengths(grid["shape"], grid["box"])
    return fraction * min(math.pi * cells[i] / lengths[i] for i in SPANS[axis] if cells[i] > 1)


def resolved_shells(k: np.ndarray, config: Mapping[str, Any], info: EquationInfo | None, axis: str = "k"
                    ) -> np.ndarray:
    """Which bins of ``k`` (the shell centres along ``axis``) a run resolves, up to :func:`resolved_wavenumber`:
    0 < k for |k| (its k = 0 is the mean), 0 <= k for k_h and |k_z|, whose bin 0 holds modes of the flow."""
    return (k > 0 if axis == "k" else k >= 0) & (k <= resolved_wavenumber(config, info, axis) * (1 + 1e-9))


def axis_of(name: str, info: EquationInfo | None) -> str:
    """The wavenumber axis a 1-D spectrum ``name`` is binned by: ``k`` (|k|), or ``k_h`` / ``k_z`` where the
    equation declares it (``EquationInfo.spectrum_axes``)."""
    return "k" if info is None else info.spectrum_axes.get(name, "k")


def wavenumber_axes(name: str, ndim: int, config: Mapping[str, Any]) -> tuple[str, ...]:
    """The wavenumber axes of spectrum ``name`` of :func:`read` (``ndim`` dimensions, the rows first) in a run of
    ``config``: ``(k_h, k_z)`` for a map, else its one axis (:func:`axis_of`)."""
    from simulator.equations import registry

    return ("k_h", "k_z") if ndim == 3 else (axis_of(name, registry().get(config.get("physics", {}).get("name"))),)


def resolved(spectra: Mapping[str, np.ndarray], config: Mapping[str, Any], info: EquationInfo | None
             ) -> dict[str, np.ndarray]:
    """:func:`read_spectra`'s ``spectra`` on the resolved bins (:func:`resolved_shells`): ``k``, ``k_h`` and
    ``k_z`` cut to theirs, each (rows, bins) spectrum along its own axis (:func:`axis_of`; the file stores them all
    along ``k``, the same centres; an axis a spectrum is binned along is added where the file holds only ``k``), the
    (rows, k_h, k_z) maps along both; the rows' clocks (``step``, ``time``, ``a``, ``z``) as they are."""
    if "k" not in spectra:
        return dict(spectra)
    keep = {axis: resolved_shells(np.asarray(spectra.get(axis, spectra["k"])), config, info, axis) for axis in SPANS}
    out = {}
    for name, values in spectra.items():
        if name in SPANS:
            out[name] = values[keep[name]]
        elif np.ndim(values) == 2:
            out[name] = values[:, keep[axis_of(name, info)]]
        else:
            out[name] = values[:, keep["k_h"]][:, :, keep["k_z"]] if np.ndim(values) == 3 else values
    # a spectrum binned along k_h or k_z in a file that stores only k (the same centres): its own axis beside it, so
    # that each spectrum's columns have their wavenumbers (k's start at its first shell, k_h's and k_z's at 0)
    for axis in {axis_of(name, info) for name, values in spectra.items() if np.ndim(values) == 2} - set(out):
        out[axis] = np.asarray(spectra["k"])[keep[axis]]
    return out


class SpectraWriter(Writer):
    """A row of every shell spectrum on its schedule (computed on every process: the shell sums are
    collective; process 0 writes)."""

    name = "spectra"

    def __init__(self, schedule: Schedule, k: np.ndarray, rank0: bool, descriptions: Mapping[str, str],
                 units: Mapping[str, str] | None = None,
                 coordinates: Callable[[float], Mapping[str, float]] | None = None):
        super().__init__()
        self.schedule, self.k, self.rank0 = schedule, k, rank0
        self.coordinates = coordinates
        self.descriptions, self.units = descriptions, units
        self.file: SpectraFile | None = None

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
        if self.rank0 and self.schedule.active:
            self.file = SpectraFile(run_dir / FILE, self.k, resumed_step, units=self.units,
                                    descriptions=self.descriptions)

    def write(self, moment: Moment) -> None:
        shells = moment.get("spectra")
        if self.file is not None:
            self.file.append(moment.step, moment.time, shells,
                             self.coordinates(moment.time) if self.coordinates else None)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def spectra(sim: Any, eq: Any, state: Any, params: Any, t: Any, dt: Any) -> dict[str, Any]:
    """The device program: the equation's shell spectra at run time ``t`` (replicated vectors)."""
    return eq.at(t).spectra(state, params)


def writers(cfg: Any, sim: Any, ctx: WriterContext) -> list[Writer]:
    """``spectra.h5`` on ``output.spectra``'s schedule, in the equation's units and clocks."""
    from simulator.observables.spectra import shell_wavenumbers

    clock = cfg.physics.clock()
    shells = shell_wavenumbers(cfg.grid.cells, cfg.grid.lengths)
    return [SpectraWriter(Schedule.of(cfg.output.section("spectra")), shells, ctx.rank0, sim.info.spectra,
                          clock.units() or None, clock.time_coordinates)]


def read(run_dir: Path) -> dict[str, np.ndarray]:
    """``spectra.h5`` on the shells the run resolves (:func:`resolved`; {} when the run wrote none)."""
    if not (run_dir / FILE).is_file():
        return {}
    from simulator.equations import registry

    config = load_run_config(run_dir)
    return resolved(read_spectra(run_dir / FILE), config, registry().get(config.get("physics", {}).get("name")))


#: the output kind (:mod:`simulator.output.kinds`)
KIND = OutputKind(
    name="spectra", doc="spectra.h5: the equation's shell spectra, one row per output", writers=writers,
    stage="records", programs=(Program("spectra", spectra, host=host_arrays),), files=(FILE,),
    section=SpectraOutput, schedules=("spectra",), read=read)
