"""Progress lines: a recent step rate and an ETA from it, with the first chunk reported once, apart.

The first chunk of a run includes its first calls (and compiling any program not compiled ahead:
:mod:`simulator.run.programs` reports those); an average since the start would carry that cost for the
whole run (an ETA that shrinks too fast, then jumps). The rate and the ETA come from the chunks completed
within the last :data:`WINDOW` chunk ends after the first, so they follow the run as it is now: snapshots
and checkpoints written in that window count, the first chunk does not.
"""

from __future__ import annotations

import time
from collections import deque

#: chunk ends the recent rate is measured over
WINDOW = 6
#: how a progress line gives the recent rate: ``steps/s=360``
RATE = "steps/s="


class Progress:
    """Timings of a segment's chunks; :meth:`update` after each, then :meth:`rate` and :meth:`eta`."""

    def __init__(self, step: int, t: float, t_end: float, clock=time.monotonic):
        self.clock = clock
        self.start = clock()
        self.t_end = t_end
        self.first_chunk_s: float | None = None
        self.marks: deque[tuple[float, int, float]] = deque(maxlen=WINDOW)
        self.step0 = step

    def restart(self) -> None:
        """Start the first chunk's clock now (after the run's programs were compiled ahead)."""
        self.start = self.clock()

    def update(self, step: int, t: float) -> None:
        """A chunk ended at (``step``, ``t``)."""
        now = self.clock()
        if self.first_chunk_s is None:
            self.first_chunk_s = now - self.start
        self.marks.append((now, step, t))

    def mark(self, step: int, t: float) -> None:
        """A compiled call inside a chunk ended at (``step``, ``t``): a point of the recent rate, not a chunk's end."""
        self.marks.append((self.clock(), step, t))

    @property
    def elapsed(self) -> float:
        return self.clock() - self.start

    def rate(self) -> float | None:
        """Steps per second over the recent window (None until two chunk ends, or ends of calls inside a chunk, after
        the first chunk's start)."""
        if len(self.marks) < 2:
            return None
        (w0, s0, _), (w1, s1, _) = self.marks[0], self.marks[-1]
        return (s1 - s0) / (w1 - w0) if w1 > w0 else None

    def eta(self) -> float | None:
        """Seconds to t_end at the recent pace of simulated time per wall second (None while unknown)."""
        if len(self.marks) < 2:
            return None
        (w0, _, t0), (w1, _, t1) = self.marks[0], self.marks[-1]
        if w1 <= w0 or t1 <= t0:
            return None
        return max(self.t_end - t1, 0.0) * (w1 - w0) / (t1 - t0)

    def describe(self, cells: int) -> str:
        """``steps/s=.. cells/s=.. ETA ..`` for a progress line."""
        rate, eta = self.rate(), self.eta()
        if rate is None and self.first_chunk_s is None:
            return f"first chunk running for {self.elapsed:.1f} s; ETA after the next progress line"
        if rate is None:
            return f"first chunk {self.first_chunk_s:.1f} s; ETA after the next chunk"
        return f"{RATE}{rate:.3g} cells/s={rate * cells:.3g} ETA {_duration(eta)}"


def logged_rate(log: str) -> float | None:
    """The recent step rate (steps per second) of the last progress line in a run's ``run.log`` text that has
    one (:meth:`Progress.describe`); None where none has (a run stopped in its first chunks)."""
    for line in reversed(log.splitlines()):
        _, found, rest = line.partition(RATE)
        if found:
            try:
                return float(rest.split()[0])
            except (ValueError, IndexError):
                continue
    return None


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}min"
    return f"{seconds / 3600:.1f}h"
