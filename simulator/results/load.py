"""A finished (or running) run directory, loaded in one call, without JAX: ``simulator.load_run``.

    run = simulator.load_run("outputs/quickstart")
    run.config["physics"]["viscosity"]          # the resolved config (a dict), also run.config.physics.viscosity
    run.timeseries["energy"]                     # NumPy arrays by column: step, time, dt, diagnostics
    run.spectra["energy"][-1], run.spectra["k"]  # (rows, shells) arrays, shell centres: the resolved shells
    run.statistics["skewness"]                   # statistics.h5 (output.statistics), by dataset
    run.tasks["w_mid"].values[-1], run.tasks["w_mid"].time   # tasks.h5 (output.tasks), by task
    run.aside                                    # what restarts set aside (aside/): row files, read as above
    run.superseded                               # snapshots a later segment superseded: left out of the above
    run.particles["tracers"].position            # particle snapshots by species: (snapshots, particles, 3)
    run.particles["tracers"][-1].position        # read by snapshot, as run.snapshots: (particles, 3), .step, .time
    run.trajectories["tracers"].x                # particles/trajectories.h5 by species: (rows, particles, 3)
    run.lagrangian()["tracers"].integral_time    # Lagrangian statistics of particles/trajectories.h5
    run.scales["kolmogorov_length"]              # derived physical scales, per time-series row
    run.units["length"]                          # the run's units: "code units", or Mpc/h for a cosmological run
    run.output("extrema")                        # what a registered output kind wrote (its reader's result)
    run.plot.spectra(compensate=True)            # a figure of simulator plot, returned (matplotlib Figure)
    [(s.step, s.time) for s in run.snapshots]   # the snapshots' steps and times (no field read)
    with run.snapshots[-1].open() as snap:       # the last snapshot
        u = snap.read("velocity")                # (3, Nx, Ny, Nz), or a slice: snap.read("velocity", (0, 5))
        w = snap["vorticity"]                    # a whole field by name, as snap.read("vorticity")

    sweep = simulator.load_sweep("outputs/tg_viscosity")   # a sweep directory: its points, in order
    for p in sweep.finished:                     # p.params {"physics.viscosity": 0.01}, p.label, p.status
        ax.loglog(p.run.spectra["k"], p.run.spectra["energy"][-1], label=p.label)   # p.run: load_run

Snapshots are read lazily (one field or one slice at a time, only the shard blocks it touches); the
particle snapshots and trajectories when first used. Spectra hold the shells the run resolves, 0 < k <= k_res
(:func:`simulator.output.spectra.resolved`: no k = 0, nothing past the grid's sphere of modes or the
dealiasing; a spectrum binned by k_h or |k_z| from 0, with that axis beside it), so that the ratio of two runs'
spectra is right as it is; ``read_spectra(run.path / "spectra.h5")`` (:func:`simulator.output.spectra.read_spectra`)
gives every shell the file holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from simulator.errors import counted
from simulator.fft import plane
from simulator.output import kinds, lagrangian, particles as particle_output, segments, snapshots as snapshot_output
from simulator.output.base import CODE_UNITS
from simulator.output.rows import ASIDE_DIR
from simulator.output.runconfig import CONFIG_FILE, load_run_config
from simulator.output.snapshots import SnapshotRef
from simulator.output.tasks import TaskSeries
from simulator.results.views import ScaleTable, Sections
from simulator.run.lock import state_now
from simulator.run.rundir import read_status
from simulator.sweep import point_label, point_state, read_manifest

if TYPE_CHECKING:
    from simulator.equations.spec import Clock
    from simulator.plots.api import RunPlots

__all__ = ["RunResults", "SnapshotRef", "SweepPoint", "SweepResults", "load_run", "load_sweep"]


@dataclass(frozen=True)
class RunResults:
    """What a run wrote (see the module docstring). Empty tables where a file is absent. Each output's
    attribute is what its output kind reads (:meth:`output`), read when first used."""

    path: Path
    #: the resolved config: a dict whose sections also read as attributes, ``run.config.physics.viscosity``
    config: Sections
    status: dict[str, Any] | None
    #: what restarts set aside (``aside/``, ``particles/aside/``), by name: row files (rows of another definition,
    #: read with the same readers, or damaged files; :mod:`simulator.output.rows`) and the folders of what was
    #: made from output a restart wrote again (``export.until-<step>``, ...: ``run.superseded.set_derived_aside``)
    aside: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.config, Sections):  # a dict given: its sections read as attributes all the same
            object.__setattr__(self, "config", Sections(self.config))

    def __repr__(self) -> str:
        """One line: ``RunResults(outputs/quickstart: navier_stokes 32^3, 6 snapshots, 11 rows, t 0 .. 2, finished)``
        (the time range of the time series' rows, the status's state), not the whole config."""
        grid = list(self.config.get("grid", {}).get("shape", ()))
        shape = f"{grid[0]}^3" if len(grid) == 3 and len(set(grid)) == 1 else "x".join(map(str, grid))
        try:
            times = self.output("timeseries").get("time", ())
            rows = counted(len(times), "row") + (f", t {times[0]:.6g} .. {times[-1]:.6g}" if len(times) else "")
        except OSError:  # a damaged timeseries.csv: printing the run still works, and reading it says why
            rows = "rows unreadable"
        state = f", {self.state}" if self.state is not None else ""
        return (f"RunResults({self.path}: {self.config.get('physics', {}).get('name', '?')} {shape}, "
                f"{counted(len(self.output('snapshots')), 'snapshot')}, {rows}{state})")

    @property
    def state(self) -> str | None:
        """The status's ``state`` (running, interrupted, finished, failed; None without a ``status.json``), but
        ``stopped`` where it says running and no process holds the run any more: one killed without a word
        (``kill -9``, an out-of-memory kill, a lost node) never wrote its end. Continue it with ``simulator run
        CONFIG --out RUN --resume``."""
        return state_now(self.path, (self.status or {}).get("state"))

    @cached_property
    def superseded(self) -> tuple[Path, ...]:
        """The field and particle snapshot files (``snapshots/sNNNNNNNN.h5``, ``particles/sNNNNNNNN.h5``) a
        later segment superseded, oldest first: a restart from an earlier step writes that step again, and
        until it has, the earlier trajectory's file stays in place but is not the run's; :attr:`snapshots`,
        :attr:`particles` and every reader leave them out (:func:`simulator.output.segments.superseded`)."""
        files = [p for folder in (snapshot_output.DIR, particle_output.DIR)
                 for p in sorted((self.path / folder).glob("s*.h5"))]
        return tuple(segments.superseded(self.path, files))

    @property
    def timeseries(self) -> dict[str, np.ndarray]:
        """``timeseries.csv`` by column: ``step`` (int64), ``time``, ``dt`` and the diagnostics (float64;
        ``output("timeseries")``)."""
        return self.output("timeseries")

    @property
    def spectra(self) -> dict[str, np.ndarray]:
        """``spectra.h5`` on the resolved shells 0 < k <= k_res: ``k`` (shells,), each spectrum (rows, shells), the
        rows' ``step``, ``time`` (and ``a``, ``z``), 2D maps over (``k_h``, ``k_z``) whole (``output("spectra")``)."""
        return self.output("spectra")

    @property
    def snapshots(self) -> tuple[SnapshotRef, ...]:
        """The snapshots, oldest first (``output("snapshots")``): each a :class:`SnapshotRef`, its ``.step``,
        ``.time`` (read from its index's attributes when first asked, no field) and ``.open()``."""
        return self.output("snapshots")

    @property
    def statistics(self) -> dict[str, Any]:
        """``statistics.h5`` (flow statistics) by dataset, its attributes under ``"attrs"`` as values (``shape``,
        ``box``, ``spacing`` lists), when the run wrote it (``output("statistics")``)."""
        return self.output("statistics")

    @property
    def tasks(self) -> dict[str, TaskSeries]:
        """``tasks.h5`` (output.tasks) by task name, when the run wrote it (``output("tasks")``)."""
        return self.output("tasks")

    @cached_property
    def plot(self) -> RunPlots:
        """The run's figures as matplotlib figures, drawn when asked and never written
        (:class:`~simulator.plots.api.RunPlots`): ``run.plot.spectra(times=[0.4, 2.0], compensate=True)``,
        ``run.plot.timeseries()``, ``run.plot.slice("vorticity", axis="x")``, ``run.plot.flux()``."""
        from simulator.plots.api import RunPlots

        return RunPlots(self.path, self.config)

    def animate(self, field: str | None = None, *, axis: str = "z", fps: float = 10.0, movie: str | None = None,
                out: str | Path | None = None) -> Path:
        """Write the movie of ``field`` (default: the equation's slice field) over every complete snapshot, as
        ``simulator animate`` does (:func:`simulator.plots.movie.animate`: an MP4 with ffmpeg on PATH, else a GIF;
        ``movie`` chooses), and return its path (default: ``plots/slice.<format>`` in the run directory)."""
        from simulator.plots.api import as_called
        from simulator.plots.movie import animate

        # a bad argument is named as this call names it (fps = 0.0 ..., not --fps = 0.0 ...)
        with as_called({"--field": "field", "--axis": "axis", "--fps": "fps", "--format": "movie", "--out": "out"}):
            # a library call says nothing: a snapshot being written is passed over
            return animate(self.path, field=field, axis=axis, fps=fps, movie=movie,
                           out=None if out is None else Path(out), tell=lambda line: None)

    @property
    def particles(self) -> dict[str, particle_output.ParticleSeries]:
        """The particle snapshots (``particles/sNNNNNNNN.h5``) by species, read when first used: ``.step``,
        ``.time`` (T,) of the snapshots that hold the species; ``.position`` (T, N, 3) wrapped into the box,
        ``.unwrapped`` (T, N, 3), ``.velocity`` (T, N, 3), axis 1 the species' particles by identity; ``.clocks`` a
        cosmological run's ``a`` and ``redshift`` (T,); read by snapshot as :attr:`snapshots`: ``len(series)``,
        ``series[-1]`` a :class:`~simulator.output.particle_series.ParticleSnapshot` (its ``.step``, ``.time``,
        ``.redshift``, ``.path``, ``.position``, ``.velocity``, ``.ids``), slices, iteration
        (:class:`~simulator.output.particle_series.ParticleSeries`); {} when the run wrote none
        (``output("particles")``)."""
        return self.output("particles")

    @property
    def trajectories(self) -> dict[str, lagrangian.Trajectories]:
        """``particles/trajectories.h5`` (``output.trajectories``) by species, read when first used: ``.time``,
        ``.step`` (T,), ``.x`` (unwrapped positions), ``.position`` (wrapped into the box) and ``.v`` (T, N, 3)
        float64, ``.ids`` (N,) the particles' indexes within the species, axis 1 of :attr:`particles`
        (:class:`~simulator.output.lagrangian.Trajectories`); {} when the run wrote none
        (``output("trajectories")``)."""
        return self.output("trajectories")

    def lagrangian(self, r0: float | None = None, max_lag: int | None = None
                   ) -> dict[str, lagrangian.LagrangianStatistics]:
        """The Lagrangian statistics of each species in ``particles/trajectories.h5``
        (:mod:`simulator.output.lagrangian`; ``r0`` the pair radius, ``max_lag`` the longest lag in rows), with eps the
        mean ``dissipation`` of the time series over the tracks' times when the run records it (not in a plane: the
        references it scales are three-dimensional turbulence's); {} when the run wrote no trajectories."""
        box = lagrangian.box_of(self.config)
        out = {}
        timeseries = self.output("timeseries")
        for name, tracks in self.output("trajectories").items():
            eps = lagrangian.reference_dissipation(self.config, timeseries, tracks.time) if timeseries else None
            out[name] = lagrangian.statistics(tracks, box=box, r0=r0, max_lag=max_lag, eps=eps)
        return out

    def output(self, name: str) -> Any:
        """What the output kind ``name`` wrote, read by its reader (:mod:`simulator.output.kinds`) when first asked
        and then kept: a registered kind's own, e.g. ``run.output("extrema")``, and the shipped ones', whose
        attributes above are aliases of it (``run.spectra is run.output("spectra")``), kept for users; the package
        reads them through this one way. KeyError naming the registered kinds for an unknown name."""
        table = kinds.registry()
        if name not in table:
            raise KeyError(f"{name!r} is not an output kind (registered: {', '.join(table)})")
        if name not in self._read:
            self._read[name] = table[name].call("read", self.path) if table[name].read is not None else None
        return self._read[name]

    @cached_property
    def _read(self) -> dict[str, Any]:
        """What :meth:`output` read, by kind."""
        return {}

    @cached_property
    def units(self) -> dict[str, str]:
        """The run's units, as its outputs' ``units`` attributes name them: ``{"length": "code units", "time": "code
        units"}``, or a cosmological run's (Mpc/h, its clock ln(a/a_start), its age cosmic_time in Gyr, densities in
        rho_crit,0, spectra in (Mpc/h)^3, each code unit in physical ones); a quantity not named is in code units.
        ConfigError naming the key when the run's ``config.yaml`` physics no longer validates."""
        return {**CODE_UNITS, **self.clock().units()}

    def clock(self) -> Clock:
        """The run's clock (:class:`~simulator.equations.spec.Clock`): its :attr:`units`, and the other clocks of a
        run time, ``clock().time_coordinates(t)`` (a cosmological run's ``a`` and ``z``; {} for another run).
        ConfigError naming the key when the run's ``config.yaml`` physics no longer validates."""
        from simulator.equations import get
        from simulator.equations.stored import parameters_of

        return parameters_of(get(self.config["physics"]["name"]), self.config, str(self.path / CONFIG_FILE)).clock()

    @property
    def scales(self) -> ScaleTable:
        """The equation's derived physical scales (Kolmogorov, Taylor, Ozmidov, Jeans, de Broglie, ...:
        ``simulator.equations.get(name).scales`` says what each is) at every row of the time series, from
        the run's parameters and that row's diagnostics, by name: ``run.scales["kolmogorov_length"]`` (rows,);
        {} before the first row; computed each time it is read. ``run.scales()``, the method of earlier
        versions, reads the same (:class:`~simulator.results.views.ScaleTable`). ConfigError
        naming the key when the run's ``config.yaml`` physics no longer validates."""
        from simulator.equations import get
        from simulator.equations.stored import parameters_of

        info = get(self.config["physics"]["name"])
        physics = parameters_of(info, self.config, str(self.path / CONFIG_FILE))
        grid = self.config["grid"]
        timeseries = self.output("timeseries")
        rows = len(timeseries.get("time", ()))
        per_row = [physics.scales({k: float(v[i]) for k, v in timeseries.items()}, plane.cells(grid["shape"]),
                                  plane.lengths(grid["shape"], grid["box"]))
                   for i in range(rows)]
        return ScaleTable({name: np.array([row[name] for row in per_row]) for name in (per_row[0] if per_row else ())})


def load_run(path: str | Path) -> RunResults:
    """Load a run directory: its config, status and what restarts set aside; each output (time series,
    spectra on the resolved shells, snapshots, statistics, tasks, particles, trajectories, a registered kind's)
    is read by its output kind when first used."""
    run_dir = Path(path)
    config = load_run_config(run_dir)
    folders = (run_dir / ASIDE_DIR, (run_dir / lagrangian.TRAJECTORIES).parent / ASIDE_DIR)
    return RunResults(run_dir, config, read_status(run_dir),
                      tuple(p for folder in folders if folder.is_dir() for p in sorted(folder.iterdir())))


@dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep directory: its ``index``, ``name`` (``pNNN``, its run directory's), ``params``
    (each swept dotted key and this point's value, as the sweep file gives it), ``path`` (its run
    directory) and ``status`` (``pending``: never started; else its run's: running, interrupted, finished,
    failed, or stopped: killed without a word, as :attr:`RunResults.state`)."""

    index: int
    name: str
    params: dict[str, Any]
    path: Path
    status: str

    @property
    def label(self) -> str:
        """The swept values, for a legend: ``physics.viscosity = 0.01, time.dt = 0.02``."""
        return point_label(self.params)

    def __repr__(self) -> str:
        """One line: ``SweepPoint(0 p000: physics.viscosity = 0.01, finished)`` (not its Path's repr)."""
        return f"SweepPoint({self.index} {self.name}: {self.label}, {self.status})"

    @cached_property
    def run(self) -> RunResults:
        """What the point's run wrote so far (:func:`load_run`), read when first used; ConfigError for a point
        never started."""
        return load_run(self.path)


@dataclass(frozen=True)
class SweepResults:
    """A sweep directory (``simulator sweep``): its ``name``, the ``swept`` dotted keys, the keys ``fixed`` at
    every point (the sweep file's ``set``) and its ``points`` (:class:`SweepPoint`) in the order of the sweep."""

    path: Path
    name: str
    swept: tuple[str, ...]
    fixed: dict[str, Any]
    points: tuple[SweepPoint, ...]

    @property
    def finished(self) -> tuple[SweepPoint, ...]:
        """The points whose run has finished."""
        return tuple(p for p in self.points if p.status == "finished")

    def __repr__(self) -> str:
        """One line, as a run's: ``SweepResults(outputs/s: s, 3 points over physics.viscosity: 2 finished,
        1 pending)``, not every point's fields (a notebook printing ``load_sweep(DIR)`` showed a screenful)."""
        states = {state: sum(p.status == state for p in self.points) for state in dict.fromkeys(
            sorted((p.status for p in self.points), key=lambda s: s != "finished"))}
        return (f"SweepResults({self.path}: {self.name}, {counted(len(self.points), 'point')} over "
                f"{', '.join(self.swept)}: {', '.join(f'{n} {state}' for state, n in states.items())})")


def load_sweep(path: str | Path) -> SweepResults:
    """Load a sweep directory (one holding ``sweep.yaml``): its swept keys and its points, each with its
    parameters, state and run (``point.run``, read when first used, as :func:`load_run`). ConfigError when
    ``path`` is not a sweep directory."""
    directory = Path(path)
    manifest = read_manifest(directory)
    points = tuple(SweepPoint(int(p["index"]), p["name"], dict(p["params"]), directory / p["name"],
                              point_state(directory, p["name"])) for p in manifest["points"])
    return SweepResults(directory, manifest["name"], tuple(manifest["swept"]), dict(manifest["set"] or {}), points)
