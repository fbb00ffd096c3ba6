"""Stop requests: SIGTERM, SIGUSR1 and SIGINT become a request to stop at the end of the compiled call of steps
running (a chunk's end, or a point between two calls of a chunk: :mod:`simulator.run.calls`), and
decisions that processes must take together are agreed by one small all-gather.

A signal can come at any instant of a batch job: Slurm's ``--signal`` or a preemption during the
imports, JAX's start-up or compilation, or in the seconds after the run finished (lock release, JAX's
shutdown). :func:`catch_early` (called by the console entry point, :mod:`simulator.entry`, before JAX
is imported) records such signals for the whole life of the process instead of letting their default
action kill it: a :class:`StopRequest` entered later takes over what was recorded (a run then stops
before its first step, exit 75, nothing to checkpoint), and one that arrives after the run finished is
only recorded (the exit status stays 0). This module imports only the standard library, so the entry
point can install it first.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from typing import Any

#: exit status of a run that finished (or had nothing left to run), and of one that failed (logged, its reason in
#: status.json): simulator/run/command.py and segment.py return them
EXIT_OK, EXIT_FAILED = 0, 1
#: exit status of a run stopped by SIGTERM/SIGUSR1/SIGINT or runtime.max_wall after writing a
#: checkpoint (EX_TEMPFAIL: "try again", which is what a requeued Slurm job does with --resume)
EXIT_INTERRUPTED = 75
#: what a run stopped before its first step did, in its log line and as the ``reason`` of its ``status.json``
#: (where the job scripts read it: they echo it, not "checkpointed")
NOTHING_NEW = "nothing new to checkpoint"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)


#: the stop signals this process received while no StopRequest was listening (names, in order)
_early: list[str] = []
_catching = False


def _record(signum: int, _frame: Any) -> None:
    _early.append(signal.Signals(signum).name)


def catch_early() -> None:
    """Record SIGTERM, SIGUSR1 and SIGINT from now until the process exits, instead of their default
    action (death for SIGTERM and SIGUSR1, KeyboardInterrupt for SIGINT)."""
    global _catching
    for sig in STOP_SIGNALS:
        signal.signal(sig, _record)
    _catching = True


def release_early() -> None:
    """Give the stop signals their default actions back (a command that runs no simulation, where a
    signal should end it at once) and deliver one that was recorded meanwhile."""
    global _catching
    if not _catching:
        return
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
    _catching = False
    if _early:
        os.kill(os.getpid(), signal.Signals[_early.pop(0)])


class StopRequest:
    """Turns SIGTERM, SIGUSR1 and SIGINT into a request to stop at the end of the compiled call of steps running.

    A signal recorded by :func:`catch_early` before this request was entered counts as received; on
    leaving, the previous handlers (the early recorder, if any) are restored, so a signal after the run
    finished is recorded and does nothing. Repeated signals are counted, never raised: a second Ctrl-C
    while the first stop is being carried out does not interrupt the checkpoint being written."""

    def __init__(self) -> None:
        self.signal: str | None = None
        self.count = 0
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequest:
        if _early:
            self.signal, self.count = _early[0], len(_early)
            _early.clear()
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, _frame: Any) -> None:
        self.signal = self.signal or signal.Signals(signum).name
        self.count += 1

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def code(self) -> int:
        """This process's request as a number for :func:`agree`: 0 none, else 1 + the signal's index."""
        names = [s.name for s in STOP_SIGNALS]
        return names.index(self.signal) + 1 if self.signal else 0

    @staticmethod
    def name(code: int) -> str | None:
        return [s.name for s in STOP_SIGNALS][code - 1] if code else None


def agree(flags: Sequence[int]) -> list[int]:
    """The element-wise maximum of ``flags`` over all processes (one small all-gather; none in a
    single-process run): every process then takes the same decisions (stop, write by wall time)."""
    import jax

    if jax.process_count() == 1:
        return [int(f) for f in flags]
    import numpy as np
    from jax.experimental import multihost_utils

    mine = np.asarray(list(flags), dtype=np.int32)
    return [int(v) for v in np.max(multihost_utils.process_allgather(mine), axis=0)]
