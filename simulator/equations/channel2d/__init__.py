"""Plane Couette and plane Poiseuille flow between no-slip plates in a plane (x, y): what the equation declares (no
JAX); its parameters, initial conditions and the rest in :mod:`simulator.equations.channels`.

Units and coordinates (:mod:`simulator.walls.channel`): x streamwise (periodic, ``grid.box[0]``), y across the
plates at y = 0 and y = 2 (``grid.box = [Lx, 2]``: the half gap h = 1), velocities in the plates' speed U (Couette)
or the centre-line velocity U_c of laminar Poiseuille flow, so nu = 1 / Re:

    du/dt + (u . grad) u = -grad p + G x_hat + nu lap u,   div u = 0,   u = (-+U, 0) at y = 0, 2 (Couette) or 0.

``physics.drive``: ``couette`` (plates at -U and +U, G = 0), ``pressure`` (a fixed mean pressure gradient G, by
default 2 nu, laminar Poiseuille flow's with U_c = 1: the default drive, as in Kim, Moin & Moser 1987) or ``flux``
(G chosen at each step so that the bulk velocity stays at ``physics.flux``). The flow is the velocity-vorticity
formulation of :mod:`simulator.walls.flow` (Kim, Moin & Moser 1987) on the Chebyshev basis across the plates,
stepped by IMEX RK222 with the viscous terms implicit; :mod:`.equation` is the implementation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.equations import wall_scalars
from simulator.equations.channels import (
    DIAGNOSTICS,
    PLOT,
    SCALES,
    WALL_SPECTRA,
    ChannelParams,
    Laminar,
    TollmienSchlichting,
)
from simulator.equations.spec import EquationInfo, FieldInfo
from simulator.schema import setting
from simulator.time.schemes import IMEX


@dataclass(frozen=True)
class Channel2DParams(ChannelParams):
    """The Reynolds number, the drive and its strength (:class:`simulator.equations.channels.ChannelParams`)."""

    name: str = setting("channel2d", "equation to solve")


INFO = EquationInfo(
    name="channel2d",
    physics="channel",
    summary="plane Couette and Poiseuille flow between no-slip plates, in a plane (Chebyshev across, nu = 1/Re)",
    params=Channel2DParams,
    initials=(Laminar, TollmienSchlichting),
    protocol=IMEX,
    default_integrator="rk222",
    implementation="simulator.equations.channel2d.equation:Channel2D",
    dimensions=2,
    walls="required",
    wall_velocity=("no-slip",),
    diagonal_linear=False,
    scales=SCALES,
    default_box=(2 * math.pi, 2.0),
    fields={
        "scalar": wall_scalars.FIELD,
        "streamwise": FieldInfo(0, "streamwise velocity u (1, Nx, Nz)", "u", cmap="RdBu_r"),
        "vorticity": FieldInfo(0, "vorticity omega = dv/dx - du/dz, v across the plates (1, Nx, Nz)", r"\omega",
                               cmap="RdBu_r"),
        "velocity": FieldInfo(3, "velocity (u, v, 0): along the plates, across them, and the zero component normal to "
                                 "the plane (3, 1, Nx, Nz)", r"|u|"),
    },
    state_fields=("velocity", "scalar"),
    diagnostics=DIAGNOSTICS,
    resolution_advice={"wall_resolution": "its spacings in wall units are coarser than a turbulent channel DNS's: "
                                          "refine grid.shape, or lower physics.reynolds, for turbulence; a laminar or "
                                          "linear-stability study, such as a Tollmien-Schlichting wave's, may ignore "
                                          "it"},
    progress=("bulk_velocity", "re_tau", "cfl"),
    spectra={"energy": "kinetic energy of the fluctuations per |k_x|, integrated over y: sums to E_K less the mean "
                       "flow's"},
    spectrum_axes={"energy": "k_h"},
    wall_spectra=WALL_SPECTRA,
    plot=PLOT,
)
