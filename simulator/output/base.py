"""One abstraction for everything a run writes: a :class:`Writer` with a :class:`Schedule`.

The run loop calls every writer at every chunk end (on every process, in the same order, since some
writers are collective); a writer acts when its schedule is due, at the end of the run, and when the
run is stopped. A schedule has one vocabulary for every output (as Dedalus's file handlers do):
every N steps, every simulated time interval, at given simulated times (where the run loop ends a
chunk exactly: :class:`simulator.time.control.Stepper`), every wall-clock interval, at the end. Wall-clock
triggers are agreed between processes by the loop, so collective writers never diverge.

A writer owns its file: it opens it (truncating what a resumed run wrote past its checkpoint, once every
writer is open), writes, closes, and its module holds the reader too. Adding an output kind is one module
that declares it (:class:`OutputKind`: its config section, device programs, writers, reader, export and
figures) and one registration line in :mod:`simulator.output.kinds`, or none for a module of your own
(``SIMULATOR_OUTPUTS``). A section's schedule keys are :class:`Scheduled`'s, declared once here.
"""

from __future__ import annotations

import abc
import importlib
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from simulator.schema import setting

#: an output asking for more ``dt`` multiples than this lands on the first chunk end past each instead
#: (the stepper would otherwise cut every chunk short)
MAX_DT_STOPS = 10_000
#: what an output's numbers are in when the run has no unit system (every output kind labels its datasets so)
CODE_UNITS = {"length": "code units", "time": "code units"}


def landing_times(schedules: Iterable[Schedule], t_end: float) -> tuple[float, ...]:
    """Every time the ``schedules`` ask for, sorted: what the run's stepper ends chunks exactly on (the
    one route from the outputs' schedules to the time stepping)."""
    return tuple(sorted({t for s in schedules for t in s.landing_times(t_end)}))


@dataclass(frozen=True)
class Schedule:
    """When a writer writes: every ``every`` steps, each time the simulated time passes a multiple of
    ``dt``, at each of ``times``, every ``wall`` seconds, and/or at the end. ``at_start``: also at
    t = 0 of a new run, and at a branch's first time, when any periodic trigger is set (or ``times`` holds it).
    ``start``: none of these before that simulated time (a spin-up left out; the t = 0 row only when it is 0)."""

    every: int = 0
    dt: float | None = None
    wall: float | None = None
    at_end: bool = False
    at_start: bool = True
    times: tuple[float, ...] = ()
    start: float = 0.0

    @classmethod
    def of(cls, section: Periodic, at_end: bool | None = None) -> Schedule:
        """The schedule of a config section with the schedule keys (:class:`Periodic`, :class:`Scheduled`)."""
        return cls(every=int(section.every or 0), dt=section.dt, wall=section.wall,
                   at_end=bool(getattr(section, "at_end", False) if at_end is None else at_end),
                   times=tuple(getattr(section, "times", None) or ()))

    @property
    def periodic(self) -> bool:
        return bool(self.every or self.dt or self.wall)

    @property
    def active(self) -> bool:
        """Whether it ever writes: periodically, at listed ``times`` or at the end."""
        return self.periodic or self.at_end or bool(self.times)

    def landing_times(self, t_end: float) -> tuple[float, ...]:
        """The simulated times this schedule asks for, where a run's chunks must end exactly: ``times``
        and the multiples of ``dt`` up to ``t_end`` (so outputs by ``dt`` land on t = dt, 2 dt, ..., not
        on the first chunk end past each; more than :data:`MAX_DT_STOPS` of them are left to that)."""
        count = int(t_end / self.dt + 1e-9) if self.dt else 0
        steps = tuple(i * float(self.dt) for i in range(1, count + 1)) if count <= MAX_DT_STOPS else ()
        return tuple(sorted({*self.times, *steps}))

    def hits(self, t_prev: float, t_now: float) -> bool:
        """Whether one of ``times`` lies in (t_prev, t_now] (to a relative 1e-12: chunks end on them)."""
        return any(t_prev + 1e-12 * max(1.0, abs(t)) < t <= t_now + 1e-12 * max(1.0, abs(t)) for t in self.times)

    def due(self, step: int, t_prev: float, t_now: float, wall_due: bool = False) -> bool:
        """Due at a chunk end: by step count, by crossing a multiple of ``dt``, at one of ``times``, or
        by wall time."""
        if t_now < self.start - 1e-12 * max(1.0, abs(self.start)):  # chunks may end on start itself
            return False
        by_step = bool(self.every) and step % self.every == 0
        by_time = bool(self.dt) and math.floor(t_now / self.dt + 1e-9) > math.floor(t_prev / self.dt + 1e-9)
        return by_step or by_time or self.hits(t_prev, t_now) or wall_due


@dataclass(frozen=True)
class Periodic:
    """The periodic schedule keys of a config section (checkpoints take these alone)."""

    every: int = setting(0, "steps between outputs (a multiple of output.chunk); 0 = not by steps", min=0)
    dt: float | None = setting(None, "simulated time between outputs (chunks end exactly on each multiple); null = "
                               "not by time", gt=0.0)
    wall: float | None = setting(None, "wall-clock seconds between outputs; null = not by wall time", gt=0.0)


@dataclass(frozen=True)
class Scheduled(Periodic):
    """The schedule keys of an output's config section, ``every``, ``dt``, ``wall``, ``times``, ``at_end``,
    declared once: a section subclasses it and adds its own keys after them (or lists a dataclass of its
    keys after it among its bases, to keep them first, as ``output.tasks`` entries do); :attr:`on` says
    whether the output is written at all."""

    times: tuple[float, ...] | None = setting(None, "simulated times of further outputs (chunks end exactly there); "
                                              "null = none", min=0.0)
    at_end: bool = setting(False, "an output at the end of the run")

    @property
    def on(self) -> bool:
        """Whether a run writes this output: by a schedule, at listed times or at the end (the one test of it)."""
        return Schedule.of(self).active


@dataclass
class Moment:
    """The state of a run at a chunk end, with the output programs' values computed once, on demand.

    ``compute(name, moment)`` evaluates the device program ``name`` of an output kind (the run's wall:
    :meth:`simulator.run.simulation.Simulation.output`, or an ensemble member's); the results are cached,
    so the writers due at one moment share one evaluation.
    """

    step: int
    time: float
    dt: float
    t_prev: float
    state: Any
    compute: Callable[[str, Moment], Any]
    final: bool = False
    stopping: bool = False
    wall_due: frozenset[str] = frozenset()
    #: a stop between two compiled calls of one chunk (:mod:`simulator.run.calls`): the checkpoint alone is written,
    #: every other output keeps its cadence of chunk ends
    within: bool = False
    _cache: dict[str, Any] = field(default_factory=dict)

    def get(self, program: str) -> Any:
        """The values of the output program ``program`` at this moment (computed at the first call)."""
        if program not in self._cache:
            self._cache[program] = self.compute(program, self)
        return self._cache[program]


class Writer(abc.ABC):
    """An output of a run. Subclasses set ``name`` and ``schedule`` and implement :meth:`write`."""

    name: str
    schedule: Schedule
    #: whether the run's chunks end exactly on this writer's times (:func:`landing_times`)
    lands: bool = True

    def __init__(self) -> None:
        self._last_wall = time.monotonic()

    def open(self, run_dir: Path, resumed_step: int | None) -> None:  # noqa: B027 (a default, not abstract)
        """Prepare the output (``resumed_step``: the checkpoint a restart continues from, whose later
        output belongs to the interrupted segment and is dropped). The segment opens every writer within
        :func:`simulator.output.rows.staged`: whatever can fail is done here, and what drops or moves output
        of the run being restarted is handed to :func:`simulator.output.rows.later`, done once all are open.
        Default: nothing to prepare."""

    def wall_pending(self) -> bool:
        """Whether this process's clock says the wall-clock interval has passed (the loop agrees it
        with the other processes before acting on it)."""
        return bool(self.schedule.wall) and time.monotonic() - self._last_wall >= self.schedule.wall

    def due(self, moment: Moment) -> bool:
        """Due at ``moment`` by its schedule; never between two calls of a chunk (``moment.within``: a stop there
        writes the checkpoint alone, whose writer says so itself)."""
        s = self.schedule
        return not moment.within and (s.due(moment.step, moment.t_prev, moment.time, self.name in moment.wall_due)
                                      or (moment.final and s.at_end))

    def at_start(self, t0: float = 0.0) -> bool:
        """Whether it writes the state a trajectory starts from at run time ``t0``: a new run's at 0, a branch's
        at its checkpoint's time (a listed time counts only at ``t0`` itself: those before it were the source's)."""
        s, tol = self.schedule, 1e-12 * max(1.0, abs(t0))
        after = -math.inf if t0 == 0 else t0 - 2 * tol
        return s.at_start and s.start <= t0 + tol and (s.periodic or s.hits(after, t0))

    def maybe_write(self, moment: Moment) -> None:
        if self.due(moment):
            self.write(moment)
            self._last_wall = time.monotonic()

    @abc.abstractmethod
    def write(self, moment: Moment) -> None:
        """Write this output for ``moment`` (called on every process)."""

    def close(self) -> None:  # noqa: B027 (a default, not abstract)
        """Release files; default: nothing held."""


# ---- the declaration of an output kind (the registry is :mod:`simulator.output.kinds`) -------------------


def function(ref: str | Callable[..., Any]) -> Callable[..., Any]:
    """The function a declaration gives: itself, or the one a ``"module:function"`` string names (imported now)."""
    if not isinstance(ref, str):
        return ref
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class WriterContext:
    """What a kind's ``writers`` gets besides the config and the simulation: whether this process writes
    the files of process 0 (``rank0``), the run's ``meta`` (config, versions, layout:
    :func:`simulator.run.records.metadata`), ``snapshot_attrs(moment)`` (the attributes every snapshot
    file carries) and the run log's ``info``."""

    rank0: bool
    meta: Mapping[str, Any]
    snapshot_attrs: Callable[[Moment], dict[str, Any]]
    info: Callable[..., None]


def host_floats(values: Mapping[str, Any]) -> dict[str, float]:
    """Replicated scalar results as Python floats (a program's ``host``: the diagnostics)."""
    return {k: float(v) for k, v in values.items()}


def host_arrays(values: Mapping[str, Any]) -> dict[str, Any]:
    """Replicated results as NumPy arrays on the host (a program's ``host``: spectra, statistics)."""
    return {k: np.asarray(v) for k, v in values.items()}


@dataclass(frozen=True)
class Program:
    """A device program of an output kind. ``function(sim, eq, state, params, t, dt) -> values``: a pure
    function of the equation, state, traced parameters, run time and time step (``sim``, the run's
    :class:`~simulator.run.simulation.Simulation`, gives its structure: config, fields), returning a pytree
    of arrays; a callable, or the ``"module:function"`` of a JAX module, imported when a run or the planner
    makes the program. The wall jits it once per simulation, compiles it ahead beside the chunk, lowers it
    for the planner and the fit checks, and evaluates it at most once per moment (writers read
    ``moment.get(name)``). ``host``: what the writers get, made of the values on the host (None: the device
    arrays, e.g. fields written shard by shard); ``computes(cfg)``: whether a run calls it (default:
    whenever its kind is active). ``parts``: a program computed a part at a time, so that no device holds
    more than one part beside the state (the snapshots' fields, a component per call): its function takes two
    more traced int32 indices, a field and a component of it, and returns that component; ``parts(sim, state,
    t, dt, params)`` is what the writers get, parts that call the program as they are written
    (:class:`~simulator.output.hdf5.Parts`)."""

    name: str
    function: str | Callable[..., Any]
    host: Callable[[Any], Any] | None = None
    computes: Callable[[Any], bool] | None = None
    parts: Callable[..., Any] | None = None

    def load(self) -> Callable[..., Any]:
        return function(self.function)


@dataclass(frozen=True)
class OutputKind:
    """One kind of output (see :mod:`simulator.output.kinds` for each field): what it computes on the
    devices (``programs``), how it is written (``writers``, ``stage``, ``files``), read back (``read``),
    exported (``export``) and drawn (``figures``), and its config (``section``, ``schedules``, ``check``)."""

    name: str
    doc: str
    writers: str | Callable[..., list[Writer]]
    active: Callable[[Any], bool] | None = None
    stage: Literal["records", "dumps"] = "dumps"
    programs: tuple[Program, ...] = ()
    read: str | Callable[[Path], Any] | None = None
    files: tuple[str, ...] = ()
    export: str | Callable[..., None] | None = None
    figures: str | Callable[..., list[Path]] | None = None
    section: type | None = None
    schedules: tuple[str, ...] = ()
    check: Callable[[Any], None] | None = None

    def call(self, what: str, *args: Any) -> Any:
        """The function this kind gives as ``what`` (``writers``, ``read``, ``export``, ``figures``), called
        with ``args``."""
        return function(getattr(self, what))(*args)

    def wrote(self, run_dir: Path) -> bool:
        """Whether one of its ``files`` is in ``run_dir``."""
        return any((run_dir / f).exists() for f in self.files)

    def on(self, cfg: Any) -> bool:
        """Whether a run of ``cfg`` writes this kind: ``active(cfg)``, by default its section's schedule."""
        if self.active is not None:
            return self.active(cfg)
        return self.section is not None and cfg.output.section(self.name).on
