"""One abstraction for everything a run writes: a :class:`Writer` with a :class:`Schedule`.

The run loop calls every writer at every chunk end (on every process, in the same order, since some
writers are collective); a writer acts when its schedule is due, at the end of the run, and when the
run is stopped. A schedule has one vocabulary for every output (as Dedalus's file handlers do):
every N steps, every simulated time interval, at given simulated times (where the run loop ends a
chunk exactly: :class:`simulator.time.control.Stepper`), every wall-clock interval, at the end. Wall-clock
triggers are agreed between processes by the loop, so collective writers never diverge.

A writer owns its file: it opens it (truncating what a resumed run wrote past its checkpoint, once every
writer is open), writes, closes, and its module holds the reader too. Adding an output kind is one module
that declares it (:class:`simulator.output.kinds.OutputKind`: its config section, device program, writers,
reader) and one registration line, or none for a module of your own (``SIMULATOR_OUTPUTS``).
"""

from __future__ import annotations

import abc
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


#: an output asking for more ``dt`` multiples than this lands on the first chunk end past each instead
#: (the stepper would otherwise cut every chunk short)
MAX_DT_STOPS = 10_000


def landing_times(schedules: Iterable[Schedule], t_end: float) -> tuple[float, ...]:
    """Every time the ``schedules`` ask for, sorted: what the run's stepper ends chunks exactly on (the
    one route from the outputs' schedules to the time stepping)."""
    return tuple(sorted({t for s in schedules for t in s.landing_times(t_end)}))


@dataclass(frozen=True)
class Schedule:
    """When a writer writes: every ``every`` steps, each time the simulated time passes a multiple of
    ``dt``, at each of ``times``, every ``wall`` seconds, and/or at the end. ``at_start``: also at
    t = 0 of a new run when any periodic trigger is set (or ``times`` holds 0). ``start``: none of these
    before that simulated time (a spin-up left out; the t = 0 row only when it is 0)."""

    every: int = 0
    dt: float | None = None
    wall: float | None = None
    at_end: bool = False
    at_start: bool = True
    times: tuple[float, ...] = ()
    start: float = 0.0

    @classmethod
    def of(cls, section: Any, at_end: bool | None = None) -> Schedule:
        """The schedule of a config section with ``every``, ``dt``, ``wall`` (``times``, ``at_end``) keys."""
        return cls(every=int(section.every or 0), dt=section.dt, wall=section.wall,
                   at_end=bool(section.at_end if at_end is None else at_end),
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


@dataclass
class Moment:
    """The state of a run at a chunk end, with its derived quantities computed once, on demand.

    ``compute`` maps a name ("diagnostics", "spectra", "fields") to a function of the moment; the
    results are cached, so several writers share one evaluation.
    """

    step: int
    time: float
    dt: float
    t_prev: float
    state: Any
    compute: dict[str, Callable[[Moment], Any]]
    final: bool = False
    stopping: bool = False
    wall_due: frozenset[str] = frozenset()
    _cache: dict[str, Any] = field(default_factory=dict)

    def get(self, what: str) -> Any:
        if what not in self._cache:
            self._cache[what] = self.compute[what](self)
        return self._cache[what]

    def shared(self, what: str, compute: Callable[[Moment], Any]) -> Any:
        """``compute(self)`` once per moment, cached under ``what``: for writers that share a result the
        run loop does not provide (the output tasks due at one chunk end share one evaluation)."""
        if what not in self._cache:
            self._cache[what] = compute(self)
        return self._cache[what]


class Writer(abc.ABC):
    """An output of a run. Subclasses set ``name`` and ``schedule`` and implement :meth:`write`."""

    name: str
    schedule: Schedule
    #: whether the run's chunks end exactly on this writer's times (:func:`landing_times`)
    lands: bool = True

    def __init__(self) -> None:
        self._last_wall = time.monotonic()

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
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
        s = self.schedule
        return (s.due(moment.step, moment.t_prev, moment.time, self.name in moment.wall_due)
                or (moment.final and s.at_end))

    def at_start(self) -> bool:
        s = self.schedule
        return s.at_start and s.start <= 0 and (s.periodic or s.hits(-math.inf, 0.0))

    def maybe_write(self, moment: Moment) -> None:
        if self.due(moment):
            self.write(moment)
            self._last_wall = time.monotonic()

    @abc.abstractmethod
    def write(self, moment: Moment) -> None:
        """Write this output for ``moment`` (called on every process)."""

    def close(self) -> None:
        """Release files; default: nothing held."""
