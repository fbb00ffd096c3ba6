"""How a run fails: its own failures (a blow-up, a write that failed, output that cannot be read back), each
reported in one line and ending it with exit 1, and the barrier every process passes before a stopped run's exit 75.
"""

from __future__ import annotations

from simulator.errors import ConfigError
from simulator.output.hdf5 import IncompleteOutputError, OutputWriteError, barrier


class NonFiniteError(RuntimeError):
    """A diagnostic became NaN or Inf."""


#: the failures of a run itself (exit 1), reported in one line: a blow-up (NaN/Inf, a collapsed step, lost
#: particles), a write that failed, output that cannot be read back
FAILURES = (NonFiniteError, OutputWriteError, IncompleteOutputError)


def describe_failure(err: BaseException) -> str:
    """Why a run failed, in one line: the message of one of its own failures or of bad input, else the
    error's type and the first line of its message."""
    if isinstance(err, (*FAILURES, ConfigError)):
        return str(err)
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


def barrier_interrupted() -> None:
    """srun --kill-on-bad-exit ends every task once one exits 75: nobody leaves before all is written."""
    barrier("interrupted")
