"""Plane Couette and Poiseuille flow between no-slip plates in a box (x, y, z): what the equation declares (no JAX).

The box's x is streamwise and y spanwise, both periodic (``grid.box[0]``, ``grid.box[1]``), and z crosses the
plates at z = 0 and z = 2 (``grid.box[2] = 2``: the half gap h = 1); velocities (u, v, w) follow the axes, w across
the plates. Everything else is :mod:`simulator.equations.channel2d`'s: its keys, drives, initial conditions (a
Tollmien-Schlichting wave uniform along y) and its implementation, whose class steps a plane or a box; the
wall-normal vorticity i k_x v - i k_y u is stepped beside the wall-normal velocity (Kim, Moin & Moser 1987).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.equations.channel2d import INFO as PLANE, ChannelParams
from simulator.equations.spec import FieldInfo
from simulator.schema import setting


@dataclass(frozen=True)
class BoxChannelParams(ChannelParams):
    """The Reynolds number, the drive and its strength (:class:`simulator.equations.channel2d.ChannelParams`)."""

    name: str = setting("channel", "equation to solve")


INFO = PLANE.__class__(**{
    **{f: getattr(PLANE, f) for f in PLANE.__dataclass_fields__},
    "name": "channel",
    "summary": "plane Couette and Poiseuille flow between no-slip plates, in a box (Chebyshev across, nu = 1/Re)",
    "params": BoxChannelParams,
    "implementation": "simulator.equations.channel.equation:Channel",
    "dimensions": 3,
    "default_box": (4 * math.pi, 4 * math.pi / 3, 2.0),
    "fields": {
        "streamwise": FieldInfo(0, "streamwise velocity u (Nx, Ny, Nz)", "u", cmap="RdBu_r"),
        "velocity": FieldInfo(3, "velocity (u, v, w): streamwise, spanwise and across the plates (3, Nx, Ny, Nz)",
                              r"|u|"),
    },
    "diagnostics": {**PLANE.diagnostics,
                    "divergence": "max |du/dx + dv/dy + dw/dz| on the grid: round-off",
                    "slip": "max |u - U_plate|, |v| and |w| at the plates: round-off",
                    "cfl": "CFL number dt max(|u|/dx + |v|/dy + |w|/dz), dz the local spacing of the Gauss-Lobatto "
                           "points"},
})
