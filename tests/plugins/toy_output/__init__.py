"""A toy output kind registered from outside the simulator: the extrema of one field, a row per output.

    output:
      extrema: {every: 10, field: velocity}

writes ``extrema.h5`` (``min``, ``max`` and ``mean`` of each component of the field, one row per output,
on the shipped row-file policy: :class:`simulator.output.rows.RowFile`). It lives in tests/plugins and
is registered with ``SIMULATOR_OUTPUTS=toy_output``: nothing in simulator/ names it. This module is the
declaration and the file format (importable without JAX); :mod:`.device` holds what runs on the devices,
``figures`` its figure. docs/how-to/add-an-output.md walks through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulator.equations import registry
from simulator.errors import ConfigError
from simulator.output.base import Moment, OutputKind, Program, Schedule, Scheduled, Writer
from simulator.output.rows import RowFile, read_rows
from simulator.schema import setting

FILE = "extrema.h5"


@dataclass(frozen=True)
class ExtremaOutput(Scheduled):
    """The extrema of one field, appended to extrema.h5 (every, dt, wall, times, at_end: when)."""

    field: str = setting("velocity", "the field whose extrema are recorded (one of the equation's)")


def check(cfg: Any) -> None:
    """The field must be one the equation computes."""
    section = cfg.output.section("extrema")
    fields = registry()[cfg.physics.name].fields
    if section.on and section.field not in fields:
        raise ConfigError("output.extrema.field", section.field, f"allowed for physics.name = {cfg.physics.name}: "
                          f"{', '.join(fields)}", "is not a field of the equation")


def read(run_dir: Path) -> dict[str, Any]:
    """extrema.h5 by dataset ({} when the run wrote none)."""
    return read_rows(run_dir / FILE) if (run_dir / FILE).is_file() else {}


def export(group: Any, data: dict[str, Any], units: dict[str, str]) -> None:
    """The netCDF-4 group of ``simulator export``: min, max, mean over (time, component)."""
    group.dimensions.update({"time": len(data["time"]), "component": len(data["component"])})
    group.create_variable("time", ("time",), data=data["time"]).attrs["units"] = units["time"]
    group.create_variable("step", ("time",), data=data["step"])
    group.create_variable("component", ("component",), data=data["component"])
    for name in ("min", "max", "mean"):
        var = group.create_variable(name, ("time", "component"), data=data[name])
        var.attrs["long_name"] = f"{name} of {data['attrs']['field']} over the grid"


class ExtremaWriter(Writer):
    """A row of the program's values on the section's schedule (computed on every process; process 0 appends)."""

    name = "extrema"

    def __init__(self, schedule: Schedule, components: int, rank0: bool, field: str):
        super().__init__()
        self.schedule, self.components, self.rank0, self.field = schedule, components, rank0, field
        self.file: RowFile | None = None

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
        if self.rank0:
            self.file = RowFile(run_dir / FILE, {"component": np.arange(self.components)}, resumed_step,
                                {"field": self.field}, what="output.extrema",
                                description="min, max and mean of each component of a field, one row per output")

    def write(self, moment: Moment) -> None:
        values = moment.get("extrema")  # computed once per moment, on every process
        if self.file is not None:
            self.file.append(moment.step, moment.time, values)


def host(values: dict[str, Any]) -> dict[str, np.ndarray]:
    """The program's values as the rows store them: float64 host arrays."""
    return {k: np.asarray(v, np.float64) for k, v in values.items()}


def writers(cfg: Any, sim: Any, ctx: Any) -> list[Writer]:
    section = cfg.output.section("extrema")
    components = sim.equation.field_info[section.field].components or 1
    return [ExtremaWriter(Schedule.of(section), components, ctx.rank0, section.field)]


KIND = OutputKind(
    name="extrema", doc="extrema.h5: min, max and mean of each component of one field, a row per output",
    programs=(Program("extrema", "toy_output.device:extrema", host=host),), writers=writers,
    read=read, files=(FILE,), export=export, figures="toy_output.figures:figures",
    section=ExtremaOutput, schedules=("extrema",), check=check)
