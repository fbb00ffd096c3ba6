"""Planning a run before it allocates (no JAX here; :mod:`.cost` and :mod:`.memory` import none either):
:mod:`.plan` (a run's programs compiled with abstract arrays: memory per device, the largest grid that fits,
transforms and traffic of one step), :mod:`.reduced` (a run on many devices planned from a smaller one with the
same cells per device), :mod:`.report` (what ``simulator plan`` prints), :mod:`.cost` (HLO traffic and the
bandwidth model), :mod:`.memory` (the memory a device or the host has free), :mod:`.gpu_compiler` (a plan for
GPUs compiled on a CPU by XLA's GPU compiler) and :mod:`.admission` (``simulator run`` starts a run, or an
ensemble's batch, only if its plan fits)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from simulator.config import Config


def admit(cfgs: Sequence[Config], ensemble: bool) -> tuple[list[Config], str]:
    """:func:`simulator.planning.admission.admit`, imported (with JAX) only when a run is admitted: the command
    line and sweeps hand this to a run, which checks its directory and input paths first, so that a wrong path is
    refused before JAX starts."""
    from simulator.planning.admission import admit as check

    return check(cfgs, ensemble)
