"""Plane Couette and plane Poiseuille flow between no-slip plates in a plane (x, y): what the equation declares (no
JAX). x is streamwise (periodic, ``grid.box[0]``), y crosses the plates at y = 0 and y = 2 (``grid.box = [Lx, 2]``:
the half gap h = 1). The channel's units, drives, keys, initial conditions and declarations, a plane's and a box's
alike, are :mod:`simulator.equations.channels`'; :mod:`.equation` is the implementation.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.equations import channels
from simulator.equations.channels import ChannelParams
from simulator.schema import setting


@dataclass(frozen=True)
class Channel2DParams(ChannelParams):
    """The Reynolds number, the drive and its strength (:class:`simulator.equations.channels.ChannelParams`)."""

    name: str = setting("channel2d", "equation to solve")


INFO = channels.info(Channel2DParams, "simulator.equations.channel2d.equation:Channel2D", dimensions=2)
