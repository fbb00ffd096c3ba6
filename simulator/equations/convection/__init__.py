"""Rayleigh-Benard convection in a box between free-slip plates, velocity-temperature form: what the equation
declares (no JAX).

Free-fall units as :mod:`simulator.equations.convection2d` (lengths in H, so ``grid.box = [Lx, Ly, 1]``;
nu = (Ra/Pr)^(-1/2), kappa = (Ra Pr)^(-1/2)); with b = 1 - z + theta,

    du/dt + u . grad u = -grad p + theta z_hat - f z_hat x u + nu lap u,   div u = 0,
    d theta/dt + u . grad theta = w + kappa lap theta,

gravity along -z, the plates across the box's z (``grid.walls.axis: z``). Free-slip plates and fixed temperatures
make u and v cosine series and w and theta sine series in z (:mod:`simulator.fft.bases`): the pressure projection
is diagonal mode by mode, as the periodic Leray projection is. A mode theta ~ cos(a x) sin(n pi z) grows at the rate
of the plane's (:func:`simulator.equations.plates.growth_rate`, a the horizontal wavenumber): the onset is
Ra_c = 27 pi^4/4 at a = pi/sqrt(2) in a box too. Rotating about the vertical (``physics.taylor``: Ta, f = sqrt(Ta) nu)
the Coriolis force is stepped with the advection, and the rate is the largest root of Chandrasekhar's cubic
(:func:`simulator.equations.plates.growth_rate`): the onset moves to Ra = (K^6 + Ta pi^2) / a^2
(:func:`~simulator.equations.plates.rotating_onset`). The declaration is the free-slip family's
(:func:`simulator.equations.freeslip.freeslip_info`), the implementation :mod:`.equation`.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.equations import wall_scalars
from simulator.equations.freeslip import FreeSlipMode, freeslip_info
from simulator.equations.plates import FreeFallParams
from simulator.schema import setting


@dataclass(frozen=True)
class ConvectionParams(wall_scalars.WallScalarHost, FreeFallParams):
    """The Rayleigh and Prandtl numbers (free-fall units), in a box."""

    name: str = setting("convection", "equation to solve")
    taylor: float = setting(0.0, "Taylor number Ta = (2 Omega H^2 / nu)^2 of rotation about the vertical at the rate "
                            "Omega: the Coriolis force -f z_hat x u, f = sqrt(Ta) nu in free-fall units; 0: none",
                            min=0.0)
    scalars: tuple[wall_scalars.WallScalar, ...] = wall_scalars.scalar_list()


@dataclass(frozen=True)
class BoxMode(FreeSlipMode):
    """One linear mode along x: theta = A cos(a x) sin(n pi z), w = (sigma + kappa K^2) theta and u from continuity,
    u = -(n pi / a)(sigma + kappa K^2) A sin(a x) cos(n pi z), v = 0 (its growing eigenvector; rotating, v = (f n pi /
    (a (sigma + nu K^2))) W sin(a x) cos(n pi z), the vertical vorticity the Coriolis force makes of w); m_x = 0: a
    layer of temperature at rest."""


INFO = freeslip_info(ConvectionParams, BoxMode, "simulator.equations.convection.equation:Convection", dimensions=3)
