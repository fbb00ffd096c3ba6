"""The trajectory file ``particles/trajectories.h5`` (``output.trajectories``): the first ``count`` particles
(identities 0 .. count - 1, replicated or owned species alike) of each species of the ``particles`` section at
a finer cadence than the particle snapshots, written by process 0 alone (a small subset). Datasets: ``time``,
``step`` (T,); ``position`` (wrapped into [0, L)), ``unwrapped``, ``velocity`` (T, particle, 3); ``id`` and
``species`` (particle,) as in the snapshots (:mod:`simulator.output.particles`); attribute ``species_names``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from simulator.fft import plane
from simulator.output import hdf5, lagrangian
from simulator.output.base import CODE_UNITS, Moment, OutputKind, Program, Schedule, Writer, WriterContext
from simulator.output.netcdf import particle_group, variable
from simulator.output.particles import Share, gather_rows, label
from simulator.output.rows import Pending, append_row, trim
from simulator.schema import setting

#: the datasets of the trajectory file with a row per output
ROWS = ("time", "step", "position", "unwrapped", "velocity")


@dataclass(frozen=True)
class TrajectoryOutput:
    """Trajectories of a subset of the particles (particles/trajectories.h5), finer than the snapshots."""

    every: int = setting(0, "steps between trajectory rows (a multiple of output.chunk); 0 = no trajectory file",
                         min=0)
    count: int = setting(100, "particles per species recorded (the first ones of each)", min=1)
    start: float = setting(0.0, "simulated time from which rows are recorded: the first row is the first of the "
                           "every-step rows at or past it (past a spin-up, so that the Lagrangian statistics start "
                           "from a developed flow); 0 = from the start of the run, its t = 0 row included", min=0.0)

    @property
    def on(self) -> bool:
        """Whether a run records trajectories (``every`` set)."""
        return bool(self.every)


class TrajectoryWriter(Writer):
    """The first ``count`` particles of each species (``totals`` particles each) every ``schedule.every``
    steps, appended to ``particles/trajectories.h5`` by process 0; the kind's program ``trajectories`` gives those
    rows alone, replicated (:func:`simulator.particles.outputs.trajectories`). On a restart, rows past the
    restart's step are dropped; a damaged file, or one of other particles (another ``count``), is set aside
    whole (:mod:`simulator.output.rows`: which particles a row holds is known at the first row)."""

    name = "trajectories"

    def __init__(self, schedule: Schedule, species: Sequence[str], totals: Sequence[int], count: int,
                 box: Sequence[float], rank0: bool, units: Mapping[str, str] | None = None):
        super().__init__()
        self.units = {**CODE_UNITS, **(units or {})}  # the run's, as the particle snapshots name them
        self.schedule, self.species, self.count, self.rank0 = schedule, tuple(species), count, rank0
        self.totals = tuple(int(n) for n in totals)  # each species' particle count: the ids' offsets
        self.box = box
        self.path: Path | None = None
        self.pending: Pending | None = None
        self.started = False

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
        self.path = run_dir / lagrangian.TRAJECTORIES
        if self.rank0:
            self.pending = self._io(lambda: Pending(self.path, resumed_step, lambda f, keep: trim(f, keep, ROWS)))

    def _io(self, act: Callable[[], Any]) -> Any:
        """``act()``, a failed write (a full disk) raised as one OutputWriteError naming the file."""
        try:
            return act()
        except hdf5.OutputWriteError:
            raise
        except (OSError, RuntimeError) as err:
            raise hdf5.OutputWriteError(f"writing {self.path} failed: {hdf5.describe_os_error(err)}") from err

    def write(self, moment: Moment) -> None:
        arrays = moment.get("trajectories")  # collective: every process computes, process 0 writes
        if not self.rank0:
            return
        assert self.path is not None
        # the recorded rows, replicated (row i particle i, owned species gathered by identity in compiled code):
        # this process's first copy is the whole of each
        first = {s: Share(np.arange(arrays[s].position.shape[0]), np.asarray(arrays[s].position.addressable_data(0)),
                          np.asarray(arrays[s].velocity.addressable_data(0))) for s in self.species}
        data = gather_rows(self.species, first, np.cumsum([0, *self.totals]), self.box)
        self._io(lambda: self._append(moment, data))

    def _changed(self, f: h5py.File, ids: np.ndarray) -> str | None:
        """Why the restart's file cannot take rows of the particles ``ids`` (their ids in the snapshots), or None."""
        if json.loads(f.attrs["species_names"]) == list(self.species) and np.array_equal(f["id"][()], ids):
            return None
        return (f"{lagrangian.TRAJECTORIES.name}: the particles of a row changed "
                f"(output.trajectories.count {self.count})")

    def _append(self, moment: Moment, data: Mapping[str, np.ndarray]) -> None:
        assert self.path is not None and self.pending is not None
        if not self.started:  # the first row: a new file, unless a restart continues the old one
            if self.pending:  # continued, or set aside with a new file in its place
                self.pending.settle(lambda f: self._changed(f, data["id"]), lambda target: self._create(data, target))
            else:
                self._create(data, self.path)
            self.started = True

        def add(f: h5py.File) -> None:
            t = f["time"].shape[0]
            for name in ("position", "unwrapped", "velocity"):
                f[name].resize(t + 1, axis=0)
                f[name][t] = data[name]
            for name, value in (("time", moment.time), ("step", moment.step)):  # step last: it counts the rows
                f[name].resize(t + 1, axis=0)
                f[name][t] = value

        append_row(self.path, add)

    def _create(self, data: Mapping[str, np.ndarray], target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with h5py.File(target, "w", rdcc_nbytes=0, locking=False) as f:
            n = len(data["id"])
            f.create_dataset("time", (0,), maxshape=(None,), dtype=np.float64)
            f.create_dataset("step", (0,), maxshape=(None,), dtype=np.int64)
            for name in ("position", "unwrapped", "velocity"):
                f.create_dataset(name, (0, n, 3), maxshape=(None, n, 3), dtype=data[name].dtype, chunks=(1, n, 3))
            f.create_dataset("id", data=data["id"])  # the particles' ids in the snapshots
            f.create_dataset("species", data=data["species"])
            f.attrs["species_names"] = json.dumps(list(self.species))
            f.attrs["units"] = json.dumps(self.units)
            label(f, self.units)

    def close(self) -> None:
        """A restart's file that got no row is cut back to the restart's step."""
        if self.pending:
            self._io(self.pending.settle)


def writers(cfg: Any, sim: Any, ctx: WriterContext) -> list[Writer]:
    """The trajectory file of the ``particles`` section's species, every ``output.trajectories.every`` steps."""
    section = cfg.output.section("trajectories")
    schedule = Schedule(every=section.every, start=section.start)
    return [TrajectoryWriter(schedule, [s.name for s in cfg.particles], [s.count for s in cfg.particles],
                             section.count, plane.file_lengths(cfg.grid.shape, cfg.grid.box), ctx.rank0,
                             cfg.physics.clock().units())]


def read(run_dir: Path) -> dict[str, lagrangian.Trajectories]:
    """``particles/trajectories.h5`` by species ({} when the run wrote none)."""
    path = run_dir / lagrangian.TRAJECTORIES
    return lagrangian.read_trajectories(path) if path.is_file() else {}


def export(group: Any, data: Mapping[str, lagrangian.Trajectories], units: dict[str, str]) -> None:
    """The ``trajectories`` group of a netCDF export: a group per species, time, step (time); particle (the
    particles' indexes within the species, the ``particle`` of its ``particles`` group); component; position
    (wrapped into the box), unwrapped and velocity (time, particle, component), float64: the names and meanings
    of the ``particles`` group's, so that the same name is the same quantity in both."""
    velocity = units.get("velocity", "code units")  # as the snapshots' velocity field
    for name, t in data.items():
        g = particle_group(group.create_group(name), t.time, t.ids, units, "row")
        g["particle"].attrs["long_name"] = "the particle's index within its species, as in the particle snapshots"
        variable(g, "step", ("time",), t.step, long_name="time step number of each row")
        for key, values, what, unit in (("position", t.position, "position wrapped into the box", units["length"]),
                                        ("unwrapped", t.x, "continuous (unwrapped) position", units["length"]),
                                        ("velocity", t.v, "velocity", velocity)):
            variable(g, key, ("time", "particle", "component"), values, units=unit, coordinates="step",
                     long_name=f"{what} of each recorded {name} particle")


#: the output kind (:mod:`simulator.output.kinds`): its program gathers the recorded rows on the devices
KIND = OutputKind(
    name="trajectories", doc="particles/trajectories.h5: the first particles of each species, finer in time",
    writers=writers, files=(str(lagrangian.TRAJECTORIES),), section=TrajectoryOutput, schedules=("trajectories",),
    programs=(Program("trajectories", "simulator.particles.outputs:trajectories"),), read=read, export=export)
