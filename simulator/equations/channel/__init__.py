"""Plane Couette and Poiseuille flow between no-slip plates in a box (x, y, z): what the equation declares (no JAX).

The box's x is streamwise and y spanwise, both periodic (``grid.box[0]``, ``grid.box[1]``), and z crosses the
plates at z = 0 and z = 2 (``grid.box[2] = 2``: the half gap h = 1); velocities (u, v, w) follow the axes, w across
the plates. Everything else is the plane's (:mod:`simulator.equations.channels`): its keys, drives, initial
conditions (a Tollmien-Schlichting wave uniform along y) and its implementation
(:class:`simulator.equations.channel_flow.ChannelFlow`), which steps a plane or a box; the
wall-normal vorticity i k_x v - i k_y u is stepped beside the wall-normal velocity (Kim, Moin & Moser 1987).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.equations import channels
from simulator.equations.channels import ChannelParams
from simulator.schema import setting


@dataclass(frozen=True)
class BoxChannelParams(ChannelParams):
    """The Reynolds number, the drive and its strength (:class:`simulator.equations.channels.ChannelParams`)."""

    name: str = setting("channel", "equation to solve")


INFO = channels.info(BoxChannelParams, "simulator.equations.channel.equation:Channel", dimensions=3)
