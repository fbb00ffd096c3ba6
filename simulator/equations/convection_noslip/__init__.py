"""Rayleigh-Benard convection in a box (x, y periodic, z between no-slip plates): what the equation declares (no JAX).

Free-fall units as :mod:`simulator.equations.convection2d_noslip` (lengths in the distance H between the plates,
``grid.box = [Lx, Ly, 1]``; nu = (Ra/Pr)^(-1/2), kappa = (Ra Pr)^(-1/2)); b = 1 - z + theta, 1 at the bottom plate
and 0 at the top; the plates at rest, or moving along x at ``physics.plate_velocity`` = [U0, U1]:

    du/dt + u . grad u = -grad p + theta z_hat + nu lap u,   div u = 0,   u = (U0, 0, 0) at z = 0, (U1, 0, 0) at z = H,
    d theta/dt + u . grad theta = w + kappa lap theta.

The bounded direction has the Chebyshev basis (``grid.walls: {axis: z, velocity: [no-slip, no-slip]}``), and the
flow is the velocity-vorticity formulation of :mod:`simulator.walls.flow` (the wall-normal velocity, the wall-normal
vorticity and the mean flow), stepped by IMEX RK222 (``time.integrator: rk222``). The implementation is the box's
case of :mod:`simulator.equations.noslip`, the plane's equation's too. Linear theory: a mode of horizontal wavevector
(a_x, a_y) grows at the plane's rate at a = |(a_x, a_y)| (:func:`simulator.walls.eigen.rayleigh_benard_growth`), so
the onset is Ra_c = 1707.76 at a = 3.117 in a box too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.equations import wall_scalars
from simulator.equations.plates import NoSlipFreeFallParams, noslip_info, refuse_mode_with_moving_plates
from simulator.equations.spec import InitialCondition
from simulator.errors import ConfigError
from simulator.schema import param, setting


@dataclass(frozen=True)
class BoxNoSlipParams(NoSlipFreeFallParams):
    """The Rayleigh and Prandtl numbers (free-fall units: the module docstring), in a box."""

    name: str = setting("convection_noslip", "equation to solve")
    rayleigh: float = param(1e5, "Rayleigh number Ra = g alpha Delta T H^3 / (nu kappa)", gt=0.0)


@dataclass(frozen=True)
class BoxMode(InitialCondition):
    """The eigen-solver's fastest-growing linear mode of the conductive state at the horizontal wavevector (a_x, a_y)
    = 2 pi (m_x / Lx, m_y / Ly) (:func:`simulator.walls.eigen.rayleigh_benard_growth` at a = |(a_x, a_y)|): theta =
    A Theta(z) cos(a_x x + a_y y), w = A W(z) cos(a_x x + a_y y) / max Theta, (u, v) from continuity; it grows as
    exp(sigma t), sigma that solver's rate at a, while it is small."""

    name: str = setting("mode", "initial condition")
    amplitude: float = param(1e-6, "temperature amplitude A", gt=0.0)
    modes: tuple[int, int] = setting((1, 0), "(m_x, m_y): the horizontal mode numbers, a_x = 2 pi m_x / Lx and a_y = "
                                     "2 pi m_y / Ly")

    scalars: wall_scalars.WallScalarInitial = wall_scalars.scalar_initial()

    def check(self, cfg: Any) -> None:
        refuse_mode_with_moving_plates(cfg, self.name)
        wall_scalars.check_initial(self.scalars, cfg)
        nx, ny = cfg.grid.shape[0], cfg.grid.shape[1]
        if not (0 <= self.modes[0] < nx / 3 and 0 <= self.modes[1] < ny / 3) or self.modes == (0, 0):
            raise ConfigError("initial.modes", list(self.modes), f"0 <= m_x < Nx/3 and 0 <= m_y < Ny/3, not both 0, "
                              f"for grid.shape {list(cfg.grid.shape)}", "is out of range")


INFO = noslip_info(BoxNoSlipParams, BoxMode, "simulator.equations.convection_noslip.equation:NoSlipConvection3D",
                   dimensions=3)
