"""How long a job runs (no JAX): the steps of a run to ``time.t_end``, and its wall time and device-hours from a
step time, predicted (:mod:`simulator.planning.report`'s bandwidth model) or measured by the run itself (the last
progress line of its ``run.log``, :func:`simulator.run.progress.logged_rate`, from the step its ``status.json``
records). What ``simulator plan`` prints under the plan, for a run and for each point of a sweep.

The steps: with a fixed dt, ``ceil(t_end / dt)`` as the stepper takes them (a last step shortened to land on
``t_end``). With ``time.cfl`` each step takes the largest dt that keeps the CFL number at ``time.cfl``, at most
``time.dt``, which depends on the flow the run makes: before the run it is estimated as dt = cfl dx / U, dx the
smallest grid spacing and U the flow's velocity scale (``EquationParams.velocity_scale``: convection's free-fall
velocity, a channel's laminar centre-line or plate speed, else the initial condition's ``initial.amplitude`` or rms
speed ``sqrt(2 initial.energy)``), capped by ``time.dt`` (a forced flow speeds up: more steps than estimated);
without such a scale only the bound ``t_end / time.dt``, the fewest steps, is given. A run that has started gives its
own mean dt so far, ``time / step`` of its ``status.json``, for the steps it has left.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from simulator.config import Config
from simulator.fft import plane
from simulator.run.progress import logged_rate
from simulator.run.rundir import read_status

#: slack when whole steps of dt are compared with a span of time (the stepper's own, time/control.py)
TOL = 1e-9
#: the run's log, whose progress lines give its step rate
LOG_FILE = "run.log"


@dataclass(frozen=True)
class Steps:
    """The steps of a run from its start to ``time.t_end``: ``count``; ``how``: how they were counted, for the
    reader; ``exact``: counted (a fixed dt), not estimated (an adaptive one)."""

    count: int
    how: str
    exact: bool


@dataclass(frozen=True)
class Measured:
    """What a run directory says of its run so far: ``step`` and ``time`` reached (``status.json``), its
    ``state`` and its recent ``rate`` in steps per second (the last progress line of ``run.log``; None
    without one)."""

    path: Path
    step: int
    time: float
    state: str
    rate: float | None


def _whole_steps(span: float, dt: float) -> int:
    return max(0, math.ceil(span / dt * (1 - TOL)))


def steps_to_end(cfg: Config) -> Steps:
    """The steps from t = 0 to ``time.t_end`` of ``cfg`` (see the module docstring)."""
    t_end, dt = float(cfg.time.t_end), float(cfg.time.dt)
    if cfg.time.cfl is None:
        return Steps(_whole_steps(t_end, dt), f"fixed dt = {dt:g}", True)
    grid = cfg.grid
    cells, lengths = plane.cells(grid.shape), plane.lengths(grid.shape, grid.box)
    dx = min(lengths[i] / cells[i] for i in range(3) if cells[i] > 1)
    scale = cfg.physics.velocity_scale(cfg.initial)
    if scale is None:
        return Steps(_whole_steps(t_end, dt), f"at least: time.cfl = {cfg.time.cfl:g} takes steps of at most "
                     f"time.dt = {dt:g}; {cfg.initial.name} gives no velocity scale to estimate them by", False)
    speed, what = scale
    estimate = min(dt, cfg.time.cfl * dx / speed)
    return Steps(_whole_steps(t_end, estimate), f"an estimate: time.cfl = {cfg.time.cfl:g} with dx = {dx:.3g} and U = "
                 f"{what}: dt ~ {estimate:.3g}" + (" (time.dt)" if estimate == dt else ""), False)


def measured(run_dir: Path) -> Measured | None:
    """What ``run_dir`` says of its run (:class:`Measured`), or None where it holds no ``status.json`` with a step."""
    status = read_status(run_dir)
    if not status or not isinstance(status.get("step"), int) or not isinstance(status.get("time"), (int, float)):
        return None
    try:
        rate = logged_rate((run_dir / LOG_FILE).read_text(errors="replace"))
    except OSError:
        rate = None
    return Measured(run_dir, int(status["step"]), float(status["time"]), str(status.get("state")), rate)


def duration(seconds: float) -> str:
    """A wall time as a job request reads it: ``42 s``, ``3.5 min``, ``2.1 h`` (``1.2 d`` past two days)."""
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86400:.3g} d"


def cost(steps: int, seconds_per_step: float, devices: int) -> str:
    """``N steps x T = wall, D device-hours``: the arithmetic shown, for the reader to check."""
    wall = steps * seconds_per_step
    return (f"{steps} steps x {seconds_per_step * 1e3:.3g} ms = {duration(wall)} wall, "
            f"{wall * devices / 3600:.3g} device-hours on {devices} device(s)")


def job_lines(cfg: Config, seconds_per_step: float | None, devices: int, run: Measured | None) -> list[str]:
    """What ``simulator plan`` prints of the job: the steps to ``time.t_end`` (:func:`steps_to_end`), their wall
    time and device-hours at the predicted ``seconds_per_step`` (None: not predicted here), and from ``run``'s
    own measured rate the steps it has left (from its mean dt so far where its dt is adaptive)."""
    steps = steps_to_end(cfg)
    lines = [f"job: {steps.count} steps to time.t_end = {cfg.time.t_end:g} ({steps.how})"]
    if seconds_per_step is not None:
        lines.append(f"  predicted: {cost(steps.count, seconds_per_step, devices)}")
    if run is None:
        return lines
    left_span = max(float(cfg.time.t_end) - run.time, 0.0)
    if steps.exact or run.step == 0 or run.time <= 0:
        left = _whole_steps(left_span, float(cfg.time.dt)) if steps.exact else \
            max(steps.count - run.step, 0)
        how = ""
    else:
        mean_dt = run.time / run.step
        left = _whole_steps(left_span, mean_dt)
        how = f", at its mean dt so far {mean_dt:.3g}"
    where = f"{run.path} ({run.state} at step {run.step}, t = {run.time:g}{how})"
    if run.rate is None:
        lines.append(f"  measured: {where}: {left} steps left; no step rate in its {LOG_FILE} yet")
    else:
        lines.append(f"  measured: {where}: {left} steps left at its {run.rate:.3g} steps/s: "
                     f"{cost(left, 1 / run.rate, devices)}")
    return lines


def sweep_lines(points: Sequence[tuple[str, Config, Measured | None]], seconds: Mapping[int, float | None],
                devices: int) -> list[str]:
    """The job of each point of a sweep (its label, config and run so far) and their total: the steps of each,
    its wall time and device-hours at ``seconds[i]``, the predicted step of point i's structure (None: not
    predicted), or at the point's own measured rate once it has one (what it has left)."""
    lines = [f"sweep: {len(points)} point(s), each run on {devices} device(s)"]
    total_steps, total_wall, known = 0, 0.0, True
    for i, (label, cfg, run) in enumerate(points):
        steps = steps_to_end(cfg)
        what = f"{steps.count} steps ({steps.how})"
        rate = run.rate if run is not None and run.rate else None
        left = steps.count if run is None else max(steps.count - run.step, 0)
        per_step = 1 / rate if rate else seconds.get(i)
        if per_step is None:
            known = False
            lines.append(f"  {label}: {what}")
            continue
        source = f"measured, {left} left" if rate else "predicted"
        lines.append(f"  {label}: {what}; {source}: {duration(left * per_step)} wall, "
                     f"{left * per_step * devices / 3600:.3g} device-hours")
        total_steps += left
        total_wall += left * per_step
    if known:
        lines.append(f"  total: {total_steps} steps, {duration(total_wall)} wall one point after another, "
                     f"{total_wall * devices / 3600:.3g} device-hours")
    return lines
