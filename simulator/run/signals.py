"""Stop requests: SIGTERM, SIGUSR1 and SIGINT become a request to stop at the next chunk end, and
decisions that processes must take together are agreed by one small all-gather."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from typing import Any

import numpy as np

#: exit status of a run stopped by SIGTERM/SIGUSR1/SIGINT or runtime.max_wall after writing a
#: checkpoint (EX_TEMPFAIL: "try again", which is what a requeued Slurm job does with --resume)
EXIT_INTERRUPTED = 75
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)


class StopRequest:
    """Turns SIGTERM, SIGUSR1 and SIGINT into a request to stop at the next chunk boundary."""

    def __init__(self) -> None:
        self.signal: str | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequest:
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, _frame: Any) -> None:
        self.signal = signal.Signals(signum).name

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
    from jax.experimental import multihost_utils

    mine = np.asarray(list(flags), dtype=np.int32)
    return [int(v) for v in np.max(multihost_utils.process_allgather(mine), axis=0)]
