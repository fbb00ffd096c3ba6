"""Rayleigh-Benard convection in a vertical plane (x, z) between no-slip plates: what the equation declares (no JAX).

Free-fall units, as Dedalus' no-slip example (``examples/ivp_2d_rayleigh_benard``): lengths in the distance H
between the plates (``grid.box = [Lx, 1]``), times in the free-fall time, nu = (Ra/Pr)^(-1/2), kappa =
(Ra Pr)^(-1/2); the temperature b = 1 - z + theta, 1 at the bottom plate and 0 at the top, theta its departure from
the conductive profile (zero at both plates); the plates at rest, or moving along x at ``physics.plate_velocity``
= [U0, U1]:

    du/dt + u . grad u = -grad p + theta z_hat + nu lap u,   div u = 0,   u = (U0, 0) at z = 0, (U1, 0) at z = H,
    d theta/dt + u . grad theta = w + kappa lap theta.

The bounded direction has the Chebyshev basis (``grid.walls.velocity: [no-slip, no-slip]``,
:class:`simulator.fft.bases.Chebyshev`), and the flow is the velocity-vorticity formulation of
:mod:`simulator.walls.flow`, stepped by IMEX RK222 (``time.integrator: rk222``; viscosity and diffusion implicit).
The implementation is :mod:`.equation`. Linear theory (Chandrasekhar 1961, ch. II): the onset at Ra_c = 1707.76,
k_c = 3.117, from the dense eigen-solver :func:`simulator.walls.eigen.rayleigh_benard_onset`.
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
class NoSlipParams(NoSlipFreeFallParams):
    """The Rayleigh and Prandtl numbers (free-fall units: the module docstring)."""

    name: str = setting("convection2d_noslip", "equation to solve")
    rayleigh: float = param(1e6, "Rayleigh number Ra = g alpha Delta T H^3 / (nu kappa)", gt=0.0)


@dataclass(frozen=True)
class Mode(InitialCondition):
    """The fastest-growing linear mode of the conductive state at a = 2 pi m_x / Lx, from the dense eigen-solver
    (:func:`simulator.walls.eigen.rayleigh_benard_growth`): theta = A Theta(z) cos(a x), w = A W(z) cos(a x) / max
    Theta, u from continuity; it grows as exp(sigma t), sigma that solver's rate, while it is small."""

    name: str = setting("mode", "initial condition")
    amplitude: float = param(1e-6, "temperature amplitude A", gt=0.0)
    modes: tuple[int] = setting((1,), "(m_x,): the horizontal mode number, a = 2 pi m_x / Lx")

    scalars: wall_scalars.WallScalarInitial = wall_scalars.scalar_initial()

    def check(self, cfg: Any) -> None:
        refuse_mode_with_moving_plates(cfg, self.name)
        wall_scalars.check_initial(self.scalars, cfg)
        nx = cfg.grid.shape[0]
        if not 1 <= self.modes[0] < nx / 3:
            raise ConfigError("initial.modes", list(self.modes), f"1 <= m_x < Nx/3 for grid.shape "
                              f"{list(cfg.grid.shape)}", "is out of range")


INFO = noslip_info(NoSlipParams, Mode, "simulator.equations.convection2d_noslip.equation:NoSlipConvection2D",
                   dimensions=2)
