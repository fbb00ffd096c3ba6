"""How a run fails: its own failures (a blow-up, a write that failed, output that cannot be read back), each
reported in one line and ending it with exit 1, and the barrier every process passes before a stopped run's exit 75.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from simulator.equations.spec import EquationInfo
from simulator.errors import ConfigError
from simulator.output.hdf5 import IncompleteOutputError, OutputWriteError, barrier


class NonFiniteError(RuntimeError):
    """A blow-up: a diagnostic became NaN or Inf or crossed its equation's bound, particles blew up or were lost,
    an adaptive time step collapsed."""


#: the failures of a run itself (exit 1), reported in one line: a blow-up (NaN/Inf, an equation's bound crossed, a
#: collapsed step, lost particles), a write that failed, output that cannot be read back
FAILURES = (NonFiniteError, OutputWriteError, IncompleteOutputError)


def check_diagnostics(diagnostics: Mapping[str, float], info: EquationInfo, step: int, t: float, last: str) -> None:
    """NonFiniteError naming the step, the time and ``last``, the last good checkpoint, for ``diagnostics`` (those
    of a chunk end, name -> value) of which one became NaN or Inf, or one crossed the bound its equation ``info``
    declares physical (:attr:`~simulator.equations.spec.EquationInfo.bounds`: a shallow-water layer's depth no longer
    positive), whatever the equation: raised before anything of that state but its rows is written."""
    bad = [name for name, value in diagnostics.items() if not math.isfinite(value)]
    if bad:
        raise NonFiniteError(f"{', '.join(bad)} became non-finite at step {step}, t = {t:.6g}; last good checkpoint: "
                             f"{last}")
    crossed = info.crossed(diagnostics)
    if crossed:
        raise NonFiniteError(f"the flow left its equation's bounds at step {step}, t = {t:.6g}: {'; '.join(crossed)}; "
                             f"last good checkpoint: {last}")


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
