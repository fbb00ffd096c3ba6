"""A toy output kind registered from outside the simulator: the extrema of one field, a row per output.

    output:
      extrema: {every: 10, field: velocity}

writes ``extrema.h5`` (``min``, ``max`` and ``mean`` of each component of the field, one row per output,
on the shipped row-file policy: :class:`simulator.output.rows.RowFile`). It lives in tests/plugins and
is registered with ``SIMULATOR_OUTPUTS=toy_output``: nothing in simulator/ names it. This module is the
declaration (importable without JAX); :mod:`.device` holds what runs on the devices, ``figures`` its
figure. docs/how-to/add-an-output.md walks through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.equations import registry
from simulator.errors import ConfigError
from simulator.output.base import Schedule
from simulator.output.kinds import OutputKind
from simulator.output.rows import read_rows
from simulator.schema import setting

FILE = "extrema.h5"


@dataclass(frozen=True)
class ExtremaOutput:
    """The extrema of one field, appended to extrema.h5 (every, dt, wall, times, at_end: when)."""

    every: int = setting(0, "steps between rows (a multiple of output.chunk); 0 = not by steps", min=0)
    dt: float | None = setting(None, "simulated time between rows; null = not by time", gt=0.0)
    wall: float | None = setting(None, "wall-clock seconds between rows; null = not by wall time", gt=0.0)
    times: tuple[float, ...] | None = setting(None, "simulated times of further rows; null = none", min=0.0)
    at_end: bool = setting(False, "a row at the end of the run")
    field: str = setting("velocity", "the field whose extrema are recorded (one of the equation's)")


def check(cfg: Any) -> None:
    """The field must be one the equation computes."""
    section = cfg.output.section("extrema")
    fields = registry()[cfg.physics.name].fields
    if Schedule.of(section).active and section.field not in fields:
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


KIND = OutputKind(
    name="extrema", doc="extrema.h5: min, max and mean of each component of one field, a row per output",
    active=lambda cfg: Schedule.of(cfg.output.section("extrema")).active,
    writers="toy_output.device:writers", program="extrema", lower="toy_output.device:lower",
    read=read, files=(FILE,), export="toy_output:export", figures="toy_output.figures:figures",
    section=ExtremaOutput, schedules=("extrema",), check=check)
