"""Rayleigh-Benard convection between no-slip plates in a box: the implementation, the box's case of
:mod:`simulator.equations.noslip` (its layout, explicit terms and diagnostics) on the flow core of
:mod:`simulator.walls.flow`. The grid is ``(Nx, Ny, Nz)``; the state holds w, the wall-normal vorticity zeta and the
mean flow (U, V) of every mode (k_x, k_y), on a slab split along y (and k_y) and whole along z.
"""

from __future__ import annotations

from typing import final

from simulator.equations.convection_noslip import INFO
from simulator.equations.noslip import BUILDERS, NoSlipConvection


@final
class NoSlipConvection3D(NoSlipConvection):
    """No-slip Rayleigh-Benard convection in a walled box (single, slab or pencil backend)."""

    info = INFO


NoSlipConvection3D.builders = BUILDERS
