"""Rayleigh-Benard convection between no-slip plates in a plane: the implementation, the plane's case of
:mod:`simulator.equations.noslip` (its layout, explicit terms and diagnostics) on the flow core of
:mod:`simulator.walls.flow`. The grid is ``(1, Nx, Nz)``, x its second axis; ``zeta`` is None (no wall-normal
vorticity in a plane) and the mean flow's V zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, final

from simulator.equations.convection2d_noslip import INFO, NoSlipParams
from simulator.equations.noslip import BUILDERS, NoSlipConvection
from simulator.fft import FFTBackend


@final
class NoSlipConvection2D(NoSlipConvection):
    """No-slip Rayleigh-Benard convection on a walled plane (slab or single backend)."""

    info = INFO

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, physics: NoSlipParams | None = None):
        super().__init__(fft, box, dtype, NoSlipParams() if physics is None else physics)


NoSlipConvection2D.builders = BUILDERS
