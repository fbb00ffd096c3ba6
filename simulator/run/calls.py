"""A chunk run as compiled calls of bounded wall time, so that a stop signal, ``runtime.max_wall`` and the progress
lines are acted on within ``runtime.chunk_wall`` seconds whatever the chunk.

A chunk (``output.chunk`` steps, or fewer where it lands on an output time) is what the outputs are scheduled on: a
time-series row after each, ``every`` a multiple of it. Its steps run in one compiled program whose step count is a
traced argument, so one program serves every length: the run loop (:mod:`simulator.run.loop`) calls it several times
for one chunk where one call would take longer than the bound, and acts on a signal between two calls (a checkpoint
there, exit 75) without moving any output off its cadence. A segment measures its step on a first call of one step,
then sizes every call from the last one's seconds per step; all processes take the smallest size any of them asks for
(they call the collective programs together).

With a fixed dt the calls of a chunk end bit for bit where one call would: the chunk program keeps the time as a
running sum in the run's dtype, and each call starts from the sum the device reached (:func:`device_time`), not from
the host's float64 time. A split-step scheme's chunk (``kdk``, which merges the half-kicks between its steps) and an
adaptive chunk (whose steps spread the time left to the target) agree with one call to round-off only. So that a run
restarted from a checkpoint still ends bit for bit where the straight run ends, its calls are the straight run's where
the chunks are shorter than the bound: a new run's first chunk and the chunk after every checkpoint of the schedule
start with a call of one step, and so does a restart from such a checkpoint; a restart from another (the last one
of a run extended since, one written by wall time) sizes its first call from the step its run's log measured
(:func:`logged_step`), so a short chunk stays one call. Beyond those, a chunk is split only where the bound asks for
it, by the clock.
"""

from __future__ import annotations

import math
import re

import numpy as np

#: the longest interval, in wall-clock seconds, between two progress lines of a running segment, whatever its chunk
PROGRESS_EVERY = 60.0
#: the run log's line on the step measured by a segment's first call (:meth:`Calls.describe`)
STEP = "one step took "


class Calls:
    """The sizes of the compiled calls of a segment's chunks: at most ``bound`` seconds each (None: a chunk in one
    call), from the seconds per step of the last call."""

    def __init__(self, bound: float | None, fresh: bool = True, per_step: float | None = None):
        self.bound = bound
        self.per_step = per_step
        #: the next call starts a new run's first chunk or the chunk after a checkpoint of the schedule: one step
        self.fresh = fresh
        #: the longest call's seconds so far (what a Slurm job's --signal lead must cover), and the calls made
        self.longest, self.made = 0.0, 0

    def size(self, remaining: int) -> int:
        """Steps of the next call, at most ``remaining``: one where :attr:`fresh` (or the step is not measured), else
        as many as take ``bound`` seconds at the last call's pace (at least one)."""
        if self.bound is None or remaining <= 1:
            return remaining
        if self.fresh or self.per_step is None:
            return 1
        return max(1, min(remaining, int(self.bound / self.per_step)))

    def seconds(self, steps: int) -> float:
        """The wall-clock seconds ``steps`` steps take at the last call's pace (0 while unmeasured)."""
        return steps * (self.per_step or 0.0)

    def checkpointed(self) -> None:
        """A checkpoint was written at this chunk end: the next chunk starts with a call of one step, as a restart
        from it does."""
        self.fresh = True

    def measured(self, steps: int, seconds: float) -> bool:
        """Record that a call of ``steps`` steps took ``seconds``; whether it was the segment's first call."""
        if steps > 0:
            self.per_step = seconds / steps
        self.longest, self.made, self.fresh = max(self.longest, seconds), self.made + 1, False
        return self.made == 1 and self.per_step is not None

    def describe(self) -> str:
        """The log's line on the step its first call measured and the calls it gives."""
        most = max(1, int(self.bound / self.per_step)) if self.bound is not None else 0
        return f"{STEP}{self.per_step:.4g} s: calls of at most {most} steps ({self.bound:g} s)"


def device_time(t: float, steps: int, dt: float, dtype: np.dtype) -> float:
    """The time the chunk program holds after ``steps`` steps of ``dt`` from ``t``: its running sum in ``dtype``,
    ``t`` and ``dt`` rounded to it as the program's arguments are, then ``dt`` added step by step (``np.add.
    accumulate`` adds in order, each sum rounded to ``dtype`` as the device's is)."""
    if steps <= 0:
        return float(np.asarray(t, dtype))
    terms = np.full(steps + 1, dt, dtype=dtype)
    terms[0] = np.asarray(t, dtype)
    return float(np.add.accumulate(terms)[-1])


def logged_step(log: str) -> float | None:
    """The seconds a step took by the last segment's first call in a run whose ``run.log`` text is ``log``
    (:meth:`Calls.describe`), None where it says none."""
    found = re.findall(re.escape(STEP) + r"([0-9.eE+-]+) s", log)
    try:
        value = float(found[-1]) if found else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and value > 0 else None
