"""The run config: its sections, the cross-key checks, and the defaults that depend on other keys.

``physics`` and ``initial`` are tagged unions: ``physics.name`` selects the equation's own parameter
dataclass and ``initial.name`` one of that equation's initial conditions (declared by the equation
packages, :mod:`simulator.equations`), so a key of another equation is an error naming the keys that
are valid. Everything a run writes uses one schedule vocabulary: ``every`` (steps, a multiple of the
chunk ``output.chunk``), ``dt`` (simulated time), ``wall`` (wall-clock seconds) and ``at_end``.

Keys of earlier config formats are read through :mod:`simulator.config.legacy`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simulator.config import other_codes
from simulator.config.devices import FFTConfig, RuntimeConfig
from simulator.config.grid import (
    GridConfig,
    check_dimensions,
    check_raw_dimensions,
    check_walls,
    default_grid,
    physics_member,
    plates_axis,
)
from simulator.config.legacy import upgrade
from simulator.config.modes import resolve_modes
from simulator.equations import (
    ENV_EXTRA,
    EquationParams,
    InitialCondition,
    plugin_problem,
    registry,
    warn_plugin_problems,
)
from simulator.errors import ConfigError
from simulator.output import kinds, task_entries as output_tasks
from simulator.output.base import Periodic
from simulator.output.profiles import ProfilesOutput
from simulator.output.snapshots import SnapshotOutput
from simulator.output.spectra import SpectraOutput
from simulator.output.statistics import StatisticsOutput
from simulator.output.trajectories import TrajectoryOutput
from simulator.particles import species as particle_species
from simulator.particles.species import Species, particle_list
from simulator.schema import Variants, open_sections, section, setting
from simulator.schema.build import build
from simulator.schema.dump import iter_fields
from simulator.time.control import TOL
from simulator.time.schemes import SCHEMES, compatible


def _equation_table(siblings: Mapping[str, Any]) -> dict[str, type]:
    return {name: info.params for name, info in registry().items()}


def _initial_table(siblings: Mapping[str, Any]) -> dict[str, type]:
    return registry()[siblings["physics"].name].initial_table


def _every_initial() -> list[str]:
    return [name for info in registry().values() for name in info.initial_table]


def _default_physics() -> EquationParams:
    return registry()["navier_stokes"].params()


def _default_initial() -> InitialCondition:
    return registry()["navier_stokes"].initials[0]()


PHYSICS = Variants(table=_equation_table, default=lambda s: "navier_stokes",
                   every_name=lambda: list(registry()))
INITIAL = Variants(table=_initial_table, default=lambda s: registry()[s["physics"].name].default_initial,
                   every_name=_every_initial, context=lambda s: f"for physics.name = {s['physics'].name}")


def _schemes() -> tuple[str, ...]:
    return tuple(SCHEMES)


#: the registered schemes in one line of the config reference: each one's name, order, cost, protocol and method
_SCHEME_DOCS = "; ".join(f"{s.name} (order {s.order}, {s.stages} evaluations and {s.registers} spectral registers per "
                         f"step, {s.protocol}): {s.doc}" for s in SCHEMES.values())


@dataclass(frozen=True)
class TimeConfig:
    """Time stepping."""

    integrator: str | None = setting(
        None, f"time integrator, one of the schemes the equation's protocol allows: {_SCHEME_DOCS}; null = the "
        "equation's default", choices=_schemes)
    dt: float = setting(0.01, "time step; with time.cfl set, the largest allowed step", gt=0.0)
    t_end: float = setting(1.0, "simulated time to reach (the run ends exactly there)", gt=0.0)
    cfl: float | None = setting(None, "adaptive time step: target CFL number (the equation's cfl diagnostic), "
                                "held every step: each step takes the largest dt that keeps it at most time.cfl "
                                "for the state it starts from, never above time.dt; at least 1e-4 (a 4th-order "
                                "scheme's error per step, ~cfl^4, is then below float64 round-off: a smaller CFL "
                                "number only multiplies the steps); null = fixed dt", min=1e-4)


def registered_sections() -> dict[str, type]:
    """The sections of the output kinds that are not fields of :class:`OutputConfig` (a kind of a module of
    its own: ``output.<name>``)."""
    return {name: cls for name, cls in kinds.sections().items() if name not in _OUTPUT_FIELDS}


@dataclass(frozen=True)
class OutputConfig:
    """What a run writes, and where. Host work runs only between compiled chunks of ``chunk`` steps."""

    dir: str | None = setting(None, "output directory; null = outputs/<name>")
    chunk: int = setting(10, "steps per chunk: a diagnostics row (timeseries.csv) and a progress line after each "
                         "(formerly output.every); a chunk runs in one compiled call, or in several where one would "
                         "take longer than runtime.chunk_wall", min=1)
    spectra: SpectraOutput = section(SpectraOutput, "spectra")
    snapshots: SnapshotOutput = section(SnapshotOutput, "snapshots")
    statistics: StatisticsOutput = section(StatisticsOutput, "flow statistics")
    tasks: tuple[output_tasks.TaskOutput, ...] = output_tasks.task_list()
    trajectories: TrajectoryOutput = section(TrajectoryOutput, "particle trajectories (needs particles)")
    profiles: ProfilesOutput = section(ProfilesOutput, "horizontally averaged profiles against z (runs between "
                                       "plates)")
    #: the sections of the other registered output kinds (``output.<name>``: :mod:`simulator.output.kinds`)
    registered: tuple[tuple[str, Any], ...] = open_sections(registered_sections, "sections of registered output kinds")

    def section(self, name: str) -> Any:
        """The section ``output.<name>`` of the registered output kind ``name``
        (:func:`simulator.output.kinds.registry`), the one way the package reaches a section. The shipped kinds'
        sections are also fields of this class, which give the schema its order of keys: ``cfg.output.spectra`` is
        ``cfg.output.section("spectra")``, an alias kept for users. None for a kind without keys (``timeseries``);
        KeyError naming the registered kinds for an unknown name."""
        table = kinds.registry()
        if name not in table:
            raise KeyError(f"{name!r} is not an output kind (registered: {', '.join(table)})")
        registered = dict(self.registered)
        return registered[name] if name in registered else getattr(self, name, None)


#: the sections :class:`OutputConfig` holds as its own fields (the shipped output kinds', declared beside them)
_OUTPUT_FIELDS = frozenset(f.name for f in dataclasses.fields(OutputConfig))


@dataclass(frozen=True)
class CheckpointConfig(Periodic):
    """Checkpoints for restart: the exact state, every process writing its own blocks. One is always
    written at the end of a run and when a signal or runtime.max_wall stops it."""

    keep: int = setting(2, "checkpoints of the run's current trajectory kept (older ones are deleted; those a "
                        "restart superseded are left in place)", min=1)


@dataclass(frozen=True)
class Config:
    """A whole simulation run."""

    name: str = setting("run", "a short name for the run, used in logs, plots and output folders")
    precision: str = setting("float32", "floating-point precision of fields and transforms (float64 for "
                             "verification runs)", choices=("float32", "float64"))
    grid: GridConfig = section(GridConfig, "the periodic box or plane and its grid")
    fft: FFTConfig = section(FFTConfig, "the distributed FFT")
    physics: EquationParams = section(_default_physics, "equation to solve: selects the physics.* keys", PHYSICS)
    initial: InitialCondition = section(_default_initial, "initial condition, one of the equation's: selects the "
                                        "initial.* keys", INITIAL)
    time: TimeConfig = section(TimeConfig, "time stepping")
    output: OutputConfig = section(OutputConfig, "output")
    checkpoint: CheckpointConfig = section(CheckpointConfig, "checkpoints")
    runtime: RuntimeConfig = section(RuntimeConfig, "processes and devices")
    particles: tuple[Species, ...] = particle_list()


# --------------------------------------------------------------------------------------------------


def from_dict(data: Mapping[str, Any], stored: bool = False) -> Config:
    """Build, validate and resolve a Config from a raw mapping (every default filled in); ``stored``: a
    resolved config the simulator wrote, read as :func:`simulator.schema.build.build` reads one."""
    data, renamed = plates_axis(upgrade(data))
    physics = data.get("physics")
    name = physics.get("name", "navier_stokes") if isinstance(physics, Mapping) else "navier_stokes"
    data = physics_member(data, name)
    name = data["physics"].get("name", name) if isinstance(data.get("physics"), Mapping) else name
    data = resolve_modes(default_grid(data, name), name, stored)
    # a broken plug-in is reported by the config that needs it, in its own words
    problem = plugin_problem(name) if isinstance(name, str) else None
    if problem is not None:
        raise problem
    warn_plugin_problems(os.environ.get(ENV_EXTRA, ""))
    check_raw_dimensions(data, name)
    try:
        cfg = build(Config, data, stored=stored)
    except ConfigError as err:  # another code's name for a key, or ours in another section: the key it is here
        info = registry().get(name) if isinstance(name, str) else None
        raise other_codes.named(err, data, info, settable_keys(info)) from None
    validate(cfg)
    if renamed and not stored:  # said once the config is taken: a refused one gets its one line alone
        logging.getLogger("simulator").warning("%s", renamed)
    return resolve(cfg)


def settable_keys(info: Any) -> list[str]:
    """The dotted keys a config of the equation ``info`` (an EquationInfo, or None) takes one by one: the common
    sections' and its ``physics.*`` (a list's entries, ``particles[].name``, are set whole)."""
    physics = [f"physics.{f.name}" for f in dataclasses.fields(info.params)] if info is not None else []
    return [key for key, *_ in iter_fields(Config) if "[]" not in key] + physics


def _schedule_sections(cfg: Config) -> list[tuple[str, Any]]:
    """(dotted key, section) of every output section with a schedule (the output kinds' ``schedules``)."""
    return [(f"output.{name}", cfg.output.section(name)) for kind in kinds.registry().values()
            for name in kind.schedules]


def check_name(key: str, value: Any) -> None:
    """A run's or sweep's name names a directory (``outputs/<name>``): a plain name, never a path."""
    if (not isinstance(value, str) or value.strip() in ("", ".", "..") or any(c in value for c in "/\\")
            or any(ord(c) < 32 or ord(c) == 127 for c in value) or len(value.encode()) > 200):
        raise ConfigError(key, value, "give a plain name (no '/' or '\\', no control characters, not '.' or '..', "
                          "at most 200 bytes): it names a directory", "is not a name")


def validate(cfg: Config) -> None:
    """Cross-key checks: the name, the grid against the decomposition, the integrator against the
    equation, schedules against the chunk, the process settings, and the equation's own checks."""
    from simulator.fft.layouts import LAYOUTS, spectral_layout

    check_name("name", cfg.name)
    check_dimensions(cfg, registry())
    check_walls(cfg, registry())

    layout = LAYOUTS[cfg.fft.backend]
    layout.check_installed("fft.backend")
    layout.check_mesh_request(cfg.fft.mesh, "fft.mesh")
    # The device count is known here only for a single-process run with virtual CPU devices or an
    # explicit mesh; otherwise the shape checks that need no mesh run now and the rest at start-up.
    n_devices = cfg.runtime.cpu_devices if cfg.runtime.coordinator is None else None
    mesh_shape = layout.mesh_shape(n_devices or 1, cfg.fft.mesh if cfg.fft.mesh or n_devices else None)
    layout.check_layout(cfg.grid.cells, mesh_shape, key="grid.shape", walls=cfg.grid.walls.on)
    if cfg.fft.layout == "compact":  # refused here where it is already clear; on the real mesh at start-up
        spectral_layout(cfg.fft.layout, cfg.physics.compact_spectra(), layout, cfg.grid.cells, mesh_shape)

    info = registry()[cfg.physics.name]
    if cfg.time.integrator is not None and cfg.time.integrator not in compatible(info.protocol, info.diagonal_linear):
        raise ConfigError("time.integrator", cfg.time.integrator, f"for physics.name = {cfg.physics.name} use one "
                          f"of: {', '.join(compatible(info.protocol, info.diagonal_linear))}", "is not available")
    if cfg.time.cfl is None and cfg.time.dt < TOL * cfg.time.t_end:  # the floor an adaptive dt is held to
        raise ConfigError("time.dt", cfg.time.dt, f"give at least {TOL:g} x time.t_end = {TOL * cfg.time.t_end:.3g}: "
                          "a smaller step would need more than 1e12 steps to reach time.t_end", "is too small")
    if cfg.time.cfl is not None and info.cfl is None:
        raise ConfigError("time.cfl", cfg.time.cfl, f"leave it null: {cfg.physics.name} declares no CFL number",
                          "cannot adapt the time step")
    for key, part in (*_schedule_sections(cfg), ("checkpoint", cfg.checkpoint)):
        value = getattr(part, "every", None)
        if value and value % cfg.output.chunk:
            key = f"{key}.every"
            raise ConfigError(key, value, f"must be a multiple of output.chunk = {cfg.output.chunk} (0 = none)",
                              "does not fall on a chunk boundary")
    if cfg.runtime.coordinator is not None and (cfg.runtime.num_processes is None or cfg.runtime.process_id is None):
        raise ConfigError("runtime.coordinator", cfg.runtime.coordinator,
                          "an explicit multi-process run also needs runtime.num_processes and runtime.process_id",
                          "is incomplete")
    if cfg.runtime.process_id is not None and cfg.runtime.num_processes is not None:
        if cfg.runtime.process_id >= cfg.runtime.num_processes:
            raise ConfigError("runtime.process_id", cfg.runtime.process_id,
                              f"must be < runtime.num_processes = {cfg.runtime.num_processes}", "is out of range")
    _check_mode_numbers(cfg)
    for kind in kinds.registry().values():
        if kind.check is not None:
            kind.check(cfg)
    particle_species.check(cfg)
    for part in (cfg.physics, cfg.initial):
        check = getattr(part, "check", None)
        if check is not None:
            check(cfg)


def _check_mode_numbers(cfg: Config) -> None:
    """Every mode number of the initial condition (a field declared with ``mode_axes``: the axes it lies
    along, "x" or "xyz"; a tuple's entry i lies along axis i) must be below Nyquist, |m| < N_i/2, on
    each of its axes: beyond it the grid cannot represent the mode (it aliases onto another). An
    equation that dealiases may ask for less in its own check."""
    for f in dataclasses.fields(cfg.initial):
        axes = f.metadata.get("mode_axes")
        value = getattr(cfg.initial, f.name)
        if axes is None or value is None:
            continue
        pairs = (zip(value, range(3), strict=True) if isinstance(value, tuple)
                 else ((value, "xyz".index(a)) for a in axes))
        for m, axis in pairs:
            n = cfg.grid.shape[axis]
            if not 2 * abs(m) < n:
                shown = list(value) if isinstance(value, tuple) else value
                raise ConfigError(f"initial.{f.name}", shown, f"every mode number must be below N/2 = {n // 2} along "
                                  f"{'xyz'[axis]} for grid.shape {list(cfg.grid.shape)}", "is not resolved by the grid")


def resolve(cfg: Config) -> Config:
    """Fill the defaults that depend on other keys: the equation's own (its ``resolve`` hook), the
    equation's integrator, the spectra cadence; then check output times against the end time and fill
    the output tasks' axes and planes."""
    cfg = cfg.physics.resolve(cfg)
    if cfg.time.integrator is None:
        cfg = dataclasses.replace(cfg, time=dataclasses.replace(
            cfg.time, integrator=registry()[cfg.physics.name].default_integrator))
    if cfg.output.section("spectra").every is None:
        spectra = dataclasses.replace(cfg.output.section("spectra"), every=cfg.output.chunk)
        cfg = dataclasses.replace(cfg, output=dataclasses.replace(cfg.output, spectra=spectra))
    for key, part in _schedule_sections(cfg):
        key, times = f"{key}.times", getattr(part, "times", None)
        late = [t for t in times or () if t > cfg.time.t_end * (1 + 1e-12)]
        if late:
            raise ConfigError(key, list(times), f"every time must be <= time.t_end = {cfg.time.t_end:.12g}",
                              f"holds {late[0]:.12g}, which the run never reaches")
    trajectories = cfg.output.section("trajectories")
    if trajectories.every and trajectories.start >= cfg.time.t_end:
        raise ConfigError("output.trajectories.start", trajectories.start, f"give a time below time.t_end = "
                          f"{cfg.time.t_end:.12g}", "records no row")
    if cfg.output.section("tasks"):
        cfg = dataclasses.replace(cfg, output=dataclasses.replace(cfg.output, tasks=output_tasks.resolve(cfg)))
    return cfg


def keys_of(cfg: Config, sections: Sequence[str] = ("physics", "grid")) -> dict[str, Any]:
    """``{dotted.key: value}`` of the given sections of a resolved config (for restart comparisons)."""
    out = {}
    for name in sections:
        for f in dataclasses.fields(getattr(cfg, name)):
            out[f"{name}.{f.name}"] = getattr(getattr(cfg, name), f.name)
    return out
