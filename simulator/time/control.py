"""Step-size control, outside the schemes (as Dedalus's CFL helper and diffrax's controllers are).

:class:`Stepper` decides each chunk's length and time step so that a run ends exactly at ``t_end``:

* fixed dt (``time.cfl`` null): chunks of ``output.every`` steps of ``time.dt``; the last chunk is
  shortened, and when t_end - t is not a whole number of steps its steps are shortened evenly, so
  the run lands on t_end (never past it);
* adaptive dt (``time.cfl`` set): dt is chosen between chunks from the CFL number measured with the
  previous one, never above ``time.dt``.

The host keeps the time in float64. With a fixed dt the time after ``s`` steps is
``t0 + (s - s0) * dt`` from the step and time where that dt took effect (the *epoch*: the start of
the run, or the restart that changed dt), not a running sum, so it carries no accumulated rounding
and a restart reproduces it bit for bit.
"""

from __future__ import annotations

import math
from typing import Any

#: relative slack when comparing times (t_end is reached when t >= t_end * (1 - TOL))
TOL = 1e-12


class Stepper:
    """Chunks and time steps for ``time_cfg`` (a TimeConfig) with chunks of at most ``every`` steps.

    ``dt`` and ``epoch`` resume a run: the checkpoint's dt (used by adaptive runs, capped by
    ``time.dt``) and the (step, time) where its fixed dt took effect. A fixed-dt run always uses the
    config's ``time.dt`` from the start of a segment on: after a change of dt the epoch moves to the
    restart point.
    """

    def __init__(self, time_cfg: Any, every: int, *, step: int = 0, t: float = 0.0, dt: float | None = None,
                 epoch: tuple[int, float] | None = None):
        self.cfg, self.every = time_cfg, every
        self.t_end = float(time_cfg.t_end)
        self.adaptive = time_cfg.cfl is not None
        if self.adaptive:
            self.dt = min(float(time_cfg.dt), float(dt)) if dt is not None else float(time_cfg.dt)
            self.epoch = (step, t)
        else:
            self.dt = float(time_cfg.dt)
            same = dt is not None and dt == self.dt and epoch is not None
            self.epoch = (int(epoch[0]), float(epoch[1])) if same else (step, t)  # type: ignore[index]

    def finished(self, t: float) -> bool:
        return t >= self.t_end * (1 - TOL)

    def adapt(self, cfl: float) -> None:
        """Choose the next dt from the CFL number measured with the current one (adaptive runs only)."""
        if self.adaptive:
            target = self.cfg.dt if cfl <= 0 or not math.isfinite(cfl) else self.dt * self.cfg.cfl / cfl
            self.dt = min(float(self.cfg.dt), target)

    def next_chunk(self, t: float) -> tuple[int, float]:
        """Steps and dt of the next chunk from time ``t``."""
        remaining = self.t_end - t
        if self.every * self.dt < remaining * (1 - TOL):
            return self.every, self.dt
        n = max(1, math.ceil(remaining / self.dt * (1 - 1e-9)))
        if abs(n * self.dt - remaining) <= TOL * max(self.t_end, self.dt):
            return n, self.dt  # whole steps reach t_end
        return n, remaining / n

    def time_after(self, step: int, t: float, n: int, dt: float) -> float:
        """Host time after a chunk of ``n`` steps of ``dt`` from ``t`` that ended at step ``step``."""
        if t + n * dt >= self.t_end * (1 - TOL):
            return self.t_end
        if not self.adaptive and dt == self.dt:
            return self.epoch[1] + (step - self.epoch[0]) * self.dt
        return t + n * dt

    def eta(self, t: float, seconds_per_unit_time: float) -> float:
        """Seconds left at ``seconds_per_unit_time`` of wall time per unit of simulated time."""
        return max(self.t_end - t, 0.0) * seconds_per_unit_time
