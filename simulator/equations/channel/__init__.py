"""Plane Couette and Poiseuille flow between no-slip plates in a box (x, y, z): what the equation declares (no JAX).

The box's x is streamwise and y spanwise, both periodic (``grid.box[0]``, ``grid.box[1]``), and z crosses the
plates at z = 0 and z = 2 (``grid.box[2] = 2``: the half gap h = 1); velocities (u, v, w) follow the axes, w across
the plates. Everything else is the plane's (:mod:`simulator.equations.channels`): its keys, drives, initial
conditions (a Tollmien-Schlichting wave uniform along y) and its implementation
(:class:`simulator.equations.channel_flow.ChannelFlow`), which steps a plane or a box; the
wall-normal vorticity i k_x v - i k_y u is stepped beside the wall-normal velocity (Kim, Moin & Moser 1987).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.equations import wall_scalars
from simulator.equations.channels import (
    BOX_WALL_SPECTRA,
    DIAGNOSTICS,
    PLOT,
    SCALES,
    ChannelParams,
    Laminar,
    TollmienSchlichting,
)
from simulator.equations.spec import EquationInfo, FieldInfo
from simulator.schema import setting
from simulator.time.schemes import IMEX


@dataclass(frozen=True)
class BoxChannelParams(ChannelParams):
    """The Reynolds number, the drive and its strength (:class:`simulator.equations.channels.ChannelParams`)."""

    name: str = setting("channel", "equation to solve")


INFO = EquationInfo(
    name="channel",
    physics="channel",
    summary="plane Couette and Poiseuille flow between no-slip plates, in a box (Chebyshev across, nu = 1/Re)",
    params=BoxChannelParams,
    initials=(Laminar, TollmienSchlichting),
    protocol=IMEX,
    default_integrator="rk222",
    implementation="simulator.equations.channel.equation:Channel",
    dimensions=3,
    walls="required",
    wall_velocity=("no-slip",),
    diagonal_linear=False,
    scales=SCALES,
    default_box=(4 * math.pi, 4 * math.pi / 3, 2.0),
    fields={
        "scalar": wall_scalars.FIELD,
        "streamwise": FieldInfo(0, "streamwise velocity u (Nx, Ny, Nz)", "u", cmap="RdBu_r"),
        "velocity": FieldInfo(3, "velocity (u, v, w): streamwise, spanwise and across the plates (3, Nx, Ny, Nz)",
                              r"|u|"),
    },
    state_fields=("velocity", "scalar"),
    diagnostics={**DIAGNOSTICS,
                 "divergence": "max |du/dx + dv/dy + dw/dz| on the grid: round-off",
                 "slip": "max |u - U_plate|, |v| and |w| at the plates: round-off",
                 "cfl": "CFL number dt max(|u|/dx + |v|/dy + |w|/dz), dz the local spacing of the Gauss-Lobatto "
                        "points",
                 "production": "production of fluctuation energy P = -<u'w'> dU/dz - <v'w'> dV/dz over the volume "
                               "(w across the plates, V the spanwise mean flow)",
                 "mean_dissipation": "dissipation of the mean flow nu <(dU/dz)^2 + (dV/dz)^2> over the volume"},
    resolution_advice={"wall_resolution": "its spacings in wall units are coarser than a turbulent channel DNS's: "
                                          "refine grid.shape, or lower physics.reynolds, for turbulence; a laminar or "
                                          "linear-stability study, such as a Tollmien-Schlichting wave's, may ignore "
                                          "it"},
    progress=("bulk_velocity", "re_tau", "cfl"),
    spectra={"energy": "kinetic energy of the fluctuations per horizontal |k|, integrated across the plates: sums "
                       "to E_K less the mean flow's"},
    spectrum_axes={"energy": "k_h"},
    wall_spectra=BOX_WALL_SPECTRA,
    plot=PLOT,
)
