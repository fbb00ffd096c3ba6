"""Step-size control, outside the schemes (as Dedalus's CFL helper and diffrax's controllers are).

:class:`Stepper` decides each chunk's length and time step so that a run ends exactly at ``t_end``:

* fixed dt (``time.cfl`` null): chunks of ``output.chunk`` steps of ``time.dt``; the last chunk is
  shortened, and when t_end - t is not a whole number of steps its steps are shortened evenly, so
  the run lands on t_end (never past it);
* adaptive dt (``time.cfl`` set): every step's dt is chosen on the device from the state the step
  starts from (:meth:`simulator.run.simulation.Simulation.adaptive_chunk`), so that no step exceeds
  the CFL number ``time.cfl`` and none exceeds ``time.dt``; a chunk of at most ``output.chunk``
  steps ends on the next output time or ``t_end`` when its steps reach it (shorter then; the next
  chunks realign on multiples of ``output.chunk`` steps), else the next one goes on towards it;
* output times (``stops``, from ``output.*.times``): a chunk ends exactly on each, shortened like the
  last one; the rest of that chunk follows as a chunk of its own, so chunks still end on multiples of
  ``output.chunk`` steps (step-based schedules keep their rows); so does a segment resumed from a
  checkpoint written between two compiled calls of a chunk (:mod:`simulator.run.calls`).

The host keeps the time in float64. With a fixed dt the time after ``s`` steps is
``t0 + (s - s0) * dt`` from the step and time where that dt took effect (the *epoch*: the start of
the run, or the restart that changed dt), not a running sum, so it carries no accumulated rounding
and a restart reproduces it bit for bit. Landing on an output time moves the epoch there, and so does
landing on t_end with shortened steps (a run extended from there goes on in steps of dt from t_end); a
checkpoint records an epoch only when it gives the checkpoint's time (else the checkpoint's own step and
time), and a restart takes it only then, so the clock never runs ahead of the state. With an
adaptive dt the time after a chunk is the time before plus the chunk's own sum of its steps (or the
output time it landed on); a checkpoint keeps the dt the controller takes next, from which a restart
plans the same chunks.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

#: relative slack when comparing times (t_end is reached when t >= t_end * (1 - TOL))
TOL = 1e-12


class Stepper:
    """Chunks and time steps for ``time_cfg`` (a TimeConfig) with chunks of at most ``every`` steps.

    ``dt`` and ``epoch`` resume a run: the checkpoint's dt (for adaptive runs the dt the controller
    allows next, capped by ``time.dt``) and the (step, time) where its fixed dt took effect. A fixed-dt
    run always uses the config's ``time.dt`` from the start of a segment on: after a change of dt the
    epoch moves to the restart point.
    """

    def __init__(self, time_cfg: Any, every: int, *, step: int = 0, t: float = 0.0, dt: float | None = None,
                 epoch: tuple[int, float] | None = None, stops: Sequence[float] = ()):
        self.cfg, self.every = time_cfg, every
        self.t_end = float(time_cfg.t_end)
        self.land_on(stops)
        self.adaptive = time_cfg.cfl is not None
        #: the largest adaptive step: time.dt, or a stability limit outside the CFL number (:meth:`bound`)
        self.dt_max = float(time_cfg.dt)
        if self.adaptive:
            self.dt = min(float(time_cfg.dt), float(dt)) if dt is not None else float(time_cfg.dt)
            self.epoch = (step, t)
        else:
            self.dt = float(time_cfg.dt)
            same = dt is not None and dt == self.dt and epoch is not None
            self.epoch = self._epoch_of(step, t, epoch) if same else (step, t)

    def _epoch_of(self, step: int, t: float, epoch: Sequence[float] | None) -> tuple[int, float]:
        """The epoch from which steps of this dt reach the state at (``step``, ``t``): ``epoch`` when they do (to
        ``TOL``), else (step, t): a clock counted from an epoch that does not reproduce the state's time would run
        ahead of the state (or behind it). Checkpoints of earlier versions kept the epoch of a run whose last chunk
        was shortened to land on t_end, and an adaptive segment's is its start."""
        if epoch is None or self.adaptive:
            return step, t
        start, t0 = int(epoch[0]), float(epoch[1])
        reached = t0 + (step - start) * self.dt
        return (start, t0) if abs(reached - t) <= 2 * TOL * max(abs(t), self.dt) else (step, t)

    def epoch_at(self, step: int, t: float) -> tuple[int, float]:
        """The epoch a checkpoint of the state at (``step``, ``t``) records: the one its time follows from."""
        return self._epoch_of(step, t, self.epoch)

    def land_on(self, stops: Sequence[float]) -> None:
        """End chunks exactly on ``stops`` (the outputs' times: :func:`simulator.output.base.landing_times`)."""
        self.stops = tuple(sorted(float(s) for s in stops if TOL < s < self.t_end * (1 - TOL)))

    def finished(self, t: float) -> bool:
        return t >= self.t_end * (1 - TOL)

    def controlled(self, t: float, elapsed: float, landed: bool, dt_next: float) -> float:
        """Host time after an adaptive chunk from ``t`` that covered ``elapsed`` (its steps' sum) and
        ``landed`` on its target or not (then the time is the target exactly); ``dt_next``, the dt the
        controller allows from the state reached (capped by ``time.dt``), plans the next chunk."""
        if math.isfinite(dt_next) and dt_next > 0:
            self.dt = min(self.dt_max, dt_next)
        target = self.target(t)
        return target if landed or t + elapsed >= target * (1 - TOL) else t + elapsed

    def bound(self, dt_max: float) -> None:
        """Bound every adaptive step by ``dt_max`` too (a stability limit the CFL number does not see: the
        Stokes drag of inertial particles); the controller takes it as its largest step."""
        self.dt_max = min(self.dt_max, dt_max)
        self.dt = min(self.dt, self.dt_max)

    def collapsed(self) -> str | None:
        """Why the adaptive time step can no longer carry the run to ``t_end`` (None while it can): a dt
        below ``TOL * t_end``, the slack within which the stepper counts two times as equal, would need more
        than 1e12 steps; a controller that asks for one sees a state that is blowing up."""
        floor = TOL * self.t_end
        if not (self.adaptive and self.dt < floor):
            return None
        return (f"the time step collapsed to dt = {self.dt:.3g} < {floor:.3g} ({TOL:g} of time.t_end; time.cfl = "
                f"{self.cfg.cfl:g}): the run cannot reach time.t_end, a symptom of a blow-up")

    def target(self, t: float) -> float:
        """Where the chunk from ``t`` must end at the latest: the next output time, else t_end."""
        return next((s for s in self.stops if s > t * (1 + TOL) + TOL), self.t_end)

    def next_chunk(self, t: float, step: int = 0) -> tuple[int, float]:
        """Steps and dt of the next chunk from time ``t`` (at step ``step``); with an adaptive dt the most
        steps and the dt last allowed (the device chooses each step's and ends on :meth:`target`)."""
        target = self.target(t)
        remaining = target - t
        # chunks realign on multiples of `every` steps after a shortened one: one that landed on an output time or
        # (adaptive dt) on its target, or a segment resumed from a checkpoint between two calls of a chunk
        # (simulator.run.calls), whose outputs keep their cadence
        every = self.every - step % self.every
        if self.adaptive:  # the device ends the chunk on the target if these steps reach it
            return every, self.dt
        if every * self.dt < remaining * (1 - TOL):
            return every, self.dt
        n = max(1, math.ceil(remaining / self.dt * (1 - 1e-9)))
        if abs(n * self.dt - remaining) <= TOL * max(target, self.dt):
            return n, self.dt  # whole steps reach the target
        return n, remaining / n

    def time_after(self, step: int, t: float, n: int, dt: float) -> float:
        """Host time after a fixed-dt chunk of ``n`` steps of ``dt`` from ``t`` that ended at step ``step``."""
        target = self.target(t)
        if t + n * dt >= target * (1 - TOL):
            if target < self.t_end or dt != self.dt:  # steps of dt go on from there (a run extended past t_end)
                self.epoch = (step, target)
            return target
        if dt == self.dt:
            return self.epoch[1] + (step - self.epoch[0]) * self.dt
        return t + n * dt

    def eta(self, t: float, seconds_per_unit_time: float) -> float:
        """Seconds left at ``seconds_per_unit_time`` of wall time per unit of simulated time."""
        return max(self.t_end - t, 0.0) * seconds_per_unit_time


@functools.cache
def real_stability_limit(scheme: str) -> float:
    """The largest h |lambda| for which ``scheme`` (a name of :data:`simulator.time.schemes.SCHEMES`, semilinear)
    is stable on y' = lambda y, lambda real and negative: its stability interval on the negative real axis
    (2.785 for classical RK4). Computed from the scheme's own step (the implementation a run uses, so no
    constant can drift from it) applied with an identity integrating factor to a test equation, at many
    values of h lambda at once; the answer is the last stable sample (conservative by < 1e-3).

    Explicit terms of decay rate 1/tau (an inertial particle's Stokes drag) are stable for dt <=
    limit * tau. Imports JAX (start-up, not config validation)."""
    import jax.numpy as jnp

    from simulator.time.schemes import SCHEMES

    info = SCHEMES[scheme]
    # sampled up to 4 h lambda per stage (beyond the interval of any classical scheme; a stabilised scheme's
    # longer one would be cut there: conservative)
    x = jnp.linspace(0.0, 4.0 * info.stages, 8192 * info.stages)

    class TestEquation:  # the protocol's members a scheme calls (SemiLinearEquation's), for y' = -x y
        def at_stage(self, step: Any, shift: Any) -> Any:
            return self

        def settle(self, state: Any, t: Any, dt: Any, params: Any) -> Any:
            return state

        def exp_linear(self, u: Any, tau: Any, params: Any) -> Any:
            return u

        def linear_map(self, fn: Any, u: Any, tau: Any, params: Any) -> Any:  # L = 0: fn(0)
            return fn(jnp.zeros((), jnp.result_type(tau))) * u

        def nonlinear(self, u: Any, t: Any, params: Any) -> Any:
            return -x * u

    amplification = abs(np.asarray(info.load()(TestEquation())(jnp.ones_like(x), 0.0, 1.0, {})))
    unstable = np.flatnonzero(amplification > 1.0 + 1e-9)
    return float(x[unstable[0] - 1]) if unstable.size else float(x[-1])
