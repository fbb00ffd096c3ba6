"""Rayleigh-Benard convection between no-slip plates in a plane: the implementation, the plane's case of
:mod:`simulator.equations.noslip` (its layout, explicit terms and diagnostics) on the flow core of
:mod:`simulator.walls.flow`. The grid is ``(1, Nx, Nz)``, x its second axis; ``zeta`` is None (no wall-normal
vorticity in a plane) and the mean flow's V zero.
"""

from __future__ import annotations

from typing import final

from simulator.equations.convection2d_noslip import INFO
from simulator.equations.noslip import BUILDERS, NoSlipConvection


@final
class NoSlipConvection2D(NoSlipConvection):
    """No-slip Rayleigh-Benard convection on a walled plane (slab or single backend)."""

    info = INFO


NoSlipConvection2D.builders = BUILDERS
