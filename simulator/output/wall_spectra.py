"""One-dimensional spectra along the periodic directions at each height between plates: ``wall_spectra.h5``.

A run between plates (``grid.walls``) of an equation that declares them (``EquationInfo.wall_spectra``: the
channels) writes them on the spectra's schedule (``output.spectra``), a row each time ``spectra.h5`` gets one. For
a periodic direction a (``kx`` along the grid's first periodic axis, the streamwise one; ``ky`` along a box's
second, the spanwise one), the spectrum E_ii(k_a; z) of a velocity component's fluctuation (its departure from the
average over the periodic directions at that height) is one-sided: the modes +m and -m added, summed over the other
periodic direction's modes, on the wavenumbers k_a = 2 pi m / L_a, m = 0 .. N_a/2, and the grid's heights ``z``
(the bounded axis's points, the plates at 0 and H), so that its sum over k_a is the variance of that component at
each height (Parseval): the profiles' Reynolds stress. Datasets are named by component pair and wavenumber
(``uu_kx``: the streamwise velocity along x), each ``(rows, N_a/2 + 1, Nz)``; ``kx``, ``ky`` and ``z`` are
dimension scales. A row file on the shipped policy (:class:`simulator.output.rows.RowFile`: a restart drops the
rows past its checkpoint), read back by ``load_run(path).output("wall_spectra")`` and exported as a netCDF-4 group.
No JAX here: the program is the equation's method.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from simulator.equations import registry
from simulator.fft.bases import BOUNDED
from simulator.output.base import CODE_UNITS, Moment, OutputKind, Program, Schedule, Writer
from simulator.output.rows import RowFile, read_rows

FILE = "wall_spectra.h5"
#: the wavenumber coordinates, by the suffix of the datasets along them
WAVENUMBERS = ("kx", "ky")


def active(cfg: Any) -> bool:
    """A run writes them when it has plates, its equation declares them and spectra are on."""
    return (cfg.grid.walls.on and bool(registry()[cfg.physics.name].wall_spectra)
            and cfg.output.section("spectra").on)


def wavenumbers(cfg: Any) -> dict[str, np.ndarray]:
    """The one-sided wavenumbers 2 pi m / L, m = 0 .. N/2, of the grid's periodic axes along the plates: ``kx``
    (a plane's one, a box's first) and a box's ``ky``."""
    axes = (1,) if registry()[cfg.physics.name].dimensions == 2 else (0, 1)
    return {name: 2 * math.pi / cfg.grid.lengths[a] * np.arange(cfg.grid.cells[a] // 2 + 1)
            for name, a in zip(WAVENUMBERS, axes, strict=False)}


def labels(names: list[str], units: dict[str, str]) -> dict[str, dict[str, Any]]:
    """What each dataset of wall_spectra.h5 is, by name (``"/"``: the file), in the run's ``units`` (the equation's
    unit system, :meth:`~simulator.equations.spec.Clock.units`; code units where it names none): the coordinates
    ``names`` (wavenumbers and heights) and the rows' time and step."""
    length = units["length"]
    out: dict[str, dict[str, Any]] = {
        "/": {"units": units},
        "z": {"units": length, "long_name": "height above the bottom plate (the bounded axis's points)"},
        "time": {"units": units["time"], "long_name": "simulation time of each row"},
        "step": {"long_name": "time step number of each row"}}
    for name in names:
        if name in WAVENUMBERS:
            out[name] = {"units": f"1/({length})", "long_name": f"wavenumber {name} = 2 pi m / L, m = 0 .. N/2"}
    return out


def spectrum_label(text: str, units: dict[str, str]) -> dict[str, str]:
    """A spectrum's ``units`` (a velocity squared per mode: its sum over the wavenumbers is the variance at each
    height) and ``long_name``, the equation's ``text`` of it (``EquationInfo.wall_spectra``)."""
    return {"units": f"({units.get('velocity', 'code units')})^2", "long_name": text}


class SpectraRows(RowFile):
    """wall_spectra.h5: every spectrum along its wavenumber and the heights ``z``."""

    what = "the grid's periodic shape or its heights"
    description = "one-dimensional spectra along the periodic directions at each height, one row per spectra output"

    @staticmethod
    def axes(name: str) -> tuple[str, ...]:
        _, _, suffix = name.rpartition("_")
        return (suffix, "z") if "_" in name and suffix in WAVENUMBERS else ()


class WallSpectraWriter(Writer):
    """A row of the equation's wall spectra on the spectra's schedule (computed on every process; process 0
    appends)."""

    name = "wall_spectra"

    def __init__(self, schedule: Schedule, coordinates: dict[str, np.ndarray], rank0: bool, units: dict[str, str],
                 spectra: Mapping[str, str]):
        super().__init__()
        self.schedule, self.coordinates, self.rank0 = schedule, coordinates, rank0
        self.labels = {**labels(list(coordinates), units),
                       **{name: spectrum_label(text, units) for name, text in spectra.items()}}
        self.file: SpectraRows | None = None

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
        if self.rank0:
            self.file = SpectraRows(run_dir / FILE, self.coordinates, resumed_step, labels=self.labels)

    def write(self, moment: Moment) -> None:
        values = moment.get("wall_spectra")
        if self.file is not None:
            self.file.append(moment.step, moment.time, values)


def program(sim: Any, eq: Any, state: Any, params: Any, t: Any, dt: Any) -> dict[str, Any]:
    """The device program: the equation's wall spectra at run time ``t``, each ``(N_a/2 + 1, Nz)``, replicated."""
    return eq.at(t).wall_spectra(state, params)


def host(values: dict[str, Any]) -> dict[str, np.ndarray]:
    """The program's values as the rows store them: float64 host arrays."""
    return {k: np.asarray(v, np.float64) for k, v in values.items()}


def writers(cfg: Any, sim: Any, ctx: Any) -> list[Writer]:
    heights = BOUNDED[cfg.grid.walls.series](cfg.grid.cells[2], cfg.grid.lengths[2]).points()
    return [WallSpectraWriter(Schedule.of(cfg.output.section("spectra")), {**wavenumbers(cfg), "z": heights},
                              ctx.rank0, {**CODE_UNITS, **cfg.physics.clock().units()},
                              registry()[cfg.physics.name].wall_spectra)]


def read(run_dir: Path) -> dict[str, Any]:
    """wall_spectra.h5 by dataset: ``time``, ``step`` (rows), ``kx`` (a box's ``ky``), ``z`` and each spectrum
    ``(rows, N_a/2 + 1, Nz)``; {} when none."""
    return read_rows(run_dir / FILE) if (run_dir / FILE).is_file() else {}


def export(group: Any, data: dict[str, Any], units: dict[str, str]) -> None:
    """The netCDF-4 group of ``simulator export``: each spectrum over (time, its wavenumber, z)."""
    scales = [name for name in (*WAVENUMBERS, "z") if name in data]
    group.dimensions.update({"time": len(data["time"]), **{name: len(data[name]) for name in scales}})
    group.create_variable("time", ("time",), data=data["time"]).attrs["units"] = units["time"]
    group.create_variable("step", ("time",), data=data["step"])
    described = labels(scales, units)
    for name in scales:
        group.create_variable(name, (name,), data=data[name]).attrs.update(described[name])
    for name, values in data.items():
        axes = SpectraRows.axes(name)
        if axes:
            pair, _, k = name.rpartition("_")
            text = f"one-sided spectrum E_{pair}({k}; z) of the velocity's fluctuations at each height"
            group.create_variable(name, ("time", *axes), data=values).attrs.update(spectrum_label(text, units))


#: the output kind (:mod:`simulator.output.kinds`)
KIND = OutputKind(
    name="wall_spectra", doc="wall_spectra.h5: one-dimensional spectra along the periodic directions at each height "
                             "between plates (a channel's E_uu, E_vv, E_ww against k_x and a box's spanwise k_y), a "
                             "row with each spectra row",
    programs=(Program("wall_spectra", program, host=host),), writers=writers, read=read, files=(FILE,),
    export=export, active=active)
