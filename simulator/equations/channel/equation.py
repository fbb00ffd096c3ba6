"""Plane Couette and Poiseuille flow between no-slip plates in a box: the implementation is
:class:`simulator.equations.channel_flow.ChannelFlow`'s, whose state in a box holds the wall-normal velocity
``w`` and vorticity ``zeta`` ``(Nx, Ny, Nz)`` (walled Chebyshev spectra, held split along x and whole along z) and
the mean flow (U, V) ``(2, Nz)``."""

from __future__ import annotations

from typing import final

from simulator.equations.channel import INFO
from simulator.equations.channel_flow import ChannelFlow


@final
class Channel(ChannelFlow):
    """A channel between no-slip plates in a box (single, slab or pencil backend)."""

    info = INFO
