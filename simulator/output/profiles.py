"""Horizontally averaged profiles against the wall-normal coordinate, a row per output: ``profiles.h5``.

    output:
      profiles: {dt: 0.5}

A run between plates (``grid.walls``) of an equation that computes them (``Equation.profiles``) writes, at each
output, its profiles at the grid's heights ``z`` (the bounded axis's points, the plates at 0 and H), averages over
the periodic directions: convection's temperature ``<b>``, rms velocity ``<|u|^2>^(1/2)`` and heat flux ``(<w b> -
kappa d<b>/dz) / kappa`` in units of the conductive flux (a Nusselt number profile, the same at every height in a
statistically steady state); a channel's mean velocity ``<u>``, Reynolds stresses ``<u'u'>``, ``<v'v'>`` (v across
the plates), ``<u'v'>`` (a box's spanwise ``<w'w'>`` too) and total shear stress ``nu d<u>/dz - <u'v'>`` (a
straight line in a statistically steady pressure-driven channel). A row file on the shipped policy
(:class:`simulator.output.rows.RowFile`: a restart drops the rows past its checkpoint), read back by
``load_run(path).output("profiles")`` and exported as a netCDF-4 group. No JAX here: the program is the
equation's method.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulator.equations import registry
from simulator.errors import ConfigError
from simulator.fft.bases import BOUNDED
from simulator.output.base import CODE_UNITS, Moment, OutputKind, Program, Schedule, Scheduled, Writer
from simulator.output.rows import RowFile, read_rows

FILE = "profiles.h5"
#: the profiles, by dataset name: the quantity whose unit it is in (:func:`labels`) and what it is
PROFILES = {"temperature": ("temperature", "horizontal mean temperature <b>"),
            "velocity_rms": ("velocity", "rms velocity <|u|^2>^(1/2) over the horizontal"),
            "heat_flux": ("flux", "heat flux (<w b> - kappa d<b>/dz) / kappa, in units of the conductive flux"),
            "mean_velocity": ("velocity", "a channel's mean streamwise velocity <u>"),
            "reynolds_uu": ("stress", "a channel's Reynolds stress <u'u'> (streamwise)"),
            "reynolds_vv": ("stress", "a channel's Reynolds stress <v'v'> (across the plates)"),
            "reynolds_uv": ("stress", "a channel's Reynolds shear stress <u'v'>"),
            "reynolds_ww": ("stress", "a box channel's Reynolds stress <w'w'> (spanwise)"),
            "total_shear_stress": ("stress", "a channel's total shear stress nu d<u>/dz - <u'v'>")}


def labels(units: dict[str, str]) -> dict[str, dict[str, str]]:
    """What each dataset of profiles.h5 is, by name (``"/"``: the file), in the run's ``units`` (the equation's
    unit system, :meth:`~simulator.equations.spec.Clock.units`: a temperature's, a velocity's; code units where it
    names none): ``units`` and ``long_name`` of the coordinates and every profile."""
    velocity = units.get("velocity", "code units")
    of = {"temperature": units.get("temperature", "code units"), "velocity": velocity, "stress": f"({velocity})^2",
          "flux": "1 (the conductive flux kappa Delta T / H)"}
    return {"/": {"units": units},
            "z": {"units": units["length"], "long_name": "height above the bottom plate (the bounded axis's points)"},
            "time": {"units": units["time"], "long_name": "simulation time of each row"},
            "step": {"long_name": "time step number of each row"},
            **{name: {"units": of[quantity], "long_name": text} for name, (quantity, text) in PROFILES.items()}}


@dataclass(frozen=True)
class ProfilesOutput(Scheduled):
    """Horizontally averaged profiles against z, appended to profiles.h5 (runs between plates; every, dt, wall,
    times, at_end: when)."""


def check(cfg: Any) -> None:
    """Profiles need plates and an equation that computes them."""
    section = cfg.output.section("profiles")
    if section.on and (not cfg.grid.walls.on or registry()[cfg.physics.name].walls == "none"):
        raise ConfigError("output.profiles", "on", "off (no every, dt, wall, times or at_end) for a periodic run: "
                          "profiles are averages at each height between plates (grid.walls)", "needs plates")


class ProfileRows(RowFile):
    """profiles.h5: every profile along its coordinate ``z``."""

    what = "output.profiles"
    description = "horizontally averaged profiles against z, one row per output"

    @staticmethod
    def axes(name: str) -> tuple[str, ...]:
        return ("z",) if name in PROFILES else ()


class ProfilesWriter(Writer):
    """A row of the equation's profiles on the section's schedule (computed on every process; process 0 appends)."""

    name = "profiles"

    def __init__(self, schedule: Schedule, heights: np.ndarray, rank0: bool, units: dict[str, str]):
        super().__init__()
        self.schedule, self.heights, self.rank0, self.units = schedule, heights, rank0, units
        self.file: ProfileRows | None = None

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
        if self.rank0:
            self.file = ProfileRows(run_dir / FILE, {"z": self.heights}, resumed_step, labels=labels(self.units))

    def write(self, moment: Moment) -> None:
        values = moment.get("profiles")
        if self.file is not None:
            self.file.append(moment.step, moment.time, values)


def program(sim: Any, eq: Any, state: Any, params: Any, t: Any, dt: Any) -> dict[str, Any]:
    """The device program: the equation's profiles at run time ``t``, each ``(Nz,)``, replicated."""
    return eq.at(t).profiles(state, params)


def host(values: dict[str, Any]) -> dict[str, np.ndarray]:
    """The program's values as the rows store them: float64 host arrays."""
    return {k: np.asarray(v, np.float64) for k, v in values.items()}


def writers(cfg: Any, sim: Any, ctx: Any) -> list[Writer]:
    heights = BOUNDED[cfg.grid.walls.series](cfg.grid.cells[2], cfg.grid.lengths[2]).points()
    return [ProfilesWriter(Schedule.of(cfg.output.section("profiles")), heights, ctx.rank0,
                           {**CODE_UNITS, **cfg.physics.clock().units()})]


def read(run_dir: Path) -> dict[str, Any]:
    """profiles.h5 by dataset: ``time``, ``step`` (rows), ``z`` and each profile ``(rows, Nz)``; {} when none."""
    return read_rows(run_dir / FILE) if (run_dir / FILE).is_file() else {}


def export(group: Any, data: dict[str, Any], units: dict[str, str]) -> None:
    """The netCDF-4 group of ``simulator export``: each profile over (time, z)."""
    group.dimensions.update({"time": len(data["time"]), "z": len(data["z"])})
    group.create_variable("time", ("time",), data=data["time"]).attrs["units"] = units["time"]
    group.create_variable("step", ("time",), data=data["step"])
    described = labels(units)
    group.create_variable("z", ("z",), data=data["z"]).attrs.update(described["z"])
    for name in (name for name in PROFILES if name in data):
        group.create_variable(name, ("time", "z"), data=data[name]).attrs.update(described[name])


#: the output kind (:mod:`simulator.output.kinds`)
KIND = OutputKind(
    name="profiles", doc="profiles.h5: horizontally averaged profiles against z (convection's temperature, rms "
                         "velocity and heat flux; a channel's mean velocity, Reynolds stresses and total shear "
                         "stress), a row per output (runs between plates)",
    programs=(Program("profiles", program, host=host),), writers=writers, read=read, files=(FILE,), export=export,
    section=ProfilesOutput, schedules=("profiles",), check=check)
