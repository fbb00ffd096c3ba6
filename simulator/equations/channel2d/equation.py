"""Plane Couette and Poiseuille flow between no-slip plates in a plane: the implementation is
:class:`simulator.equations.channel_flow.ChannelFlow`'s, whose state in a plane holds the wall-normal velocity ``w``
``(1, Nx, Ny)`` (walled Chebyshev spectra, held split along x and whole along y) and the mean flow (U, 0)
``(2, Ny)``."""

from __future__ import annotations

from typing import final

from simulator.equations.channel2d import INFO
from simulator.equations.channel_flow import ChannelFlow


@final
class Channel2D(ChannelFlow):
    """A plane channel between no-slip plates (slab or single backend)."""

    info = INFO
