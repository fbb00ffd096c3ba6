"""Rayleigh-Benard convection in a vertical plane (x, z) between free-slip plates, vorticity-temperature form: what
the equation declares (no JAX).

Free-fall units, as Dedalus' Rayleigh-Benard examples: lengths in the distance H between the plates (so
``grid.box = [Lx, 1]``), buoyancy in its difference Delta b across the layer, times in the free-fall time
sqrt(H / Delta b); then the viscosity is nu = (Ra/Pr)^(-1/2) and the diffusivity kappa = (Ra Pr)^(-1/2). With the
temperature b = 1 - z + theta (the conductive profile, 1 at the bottom plate z = 0, 0 at the top z = 1, and theta's
departure from it, zero at both plates),

    d omega/dt + u . grad omega = d theta/dx + nu lap omega,
    d theta/dt + u . grad theta = w + kappa lap theta,
    u = (d psi/dz, -d psi/dx) = (u, w),   omega = dw/dx - du/dz = -lap psi,

gravity along -z. Free-slip plates (w = 0, du/dz = 0) and fixed temperatures (theta = 0) make omega, psi, w and
theta sine series and u a cosine series in z (:mod:`simulator.fft.bases`), so every linear operator is diagonal.
The plane is the box ``(1, Nx, Nz)`` (:mod:`simulator.fft.plane`), its last axis the bounded one (``grid.walls.axis:
z``, the plane's second direction, named z in its files too). The declaration is the free-slip family's
(:func:`simulator.equations.freeslip.freeslip_info`), the implementation :mod:`.equation`.

Linear theory (Rayleigh 1916; Chandrasekhar 1961, ch. II): a mode cos(a x) sin(n pi z) grows at the rate
sigma = -(nu + kappa) K^2 / 2 + sqrt(((nu - kappa) K^2 / 2)^2 + a^2 / K^2), K^2 = a^2 + (n pi)^2, which changes sign
at Ra = K^6 / a^2: the onset Ra_c = 27 pi^4 / 4 at a = pi / sqrt(2).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.equations import wall_scalars
from simulator.equations.freeslip import FreeSlipMode, freeslip_info
from simulator.equations.plates import FreeFallParams
from simulator.schema import setting


@dataclass(frozen=True)
class Convection2DParams(wall_scalars.WallScalarHost, FreeFallParams):
    """The Rayleigh and Prandtl numbers (free-fall units: the module docstring), and passive scalars held at fixed
    values at the plates (:mod:`simulator.equations.wall_scalars`: sine series about their linear profiles)."""

    name: str = setting("convection2d", "equation to solve")
    scalars: tuple[wall_scalars.WallScalar, ...] = wall_scalars.scalar_list()


@dataclass(frozen=True)
class Mode(FreeSlipMode):
    """One linear mode of the conductive state: theta = A cos(a x) sin(n pi z), a = 2 pi m_x / Lx, with the
    vorticity of its growing (or least damped) eigenvector, omega = -a A sin(a x) sin(n pi z) / (sigma + nu K^2);
    it grows as exp(sigma t) while it is small, sigma the exact linear growth rate (docs: walls). m_x = 0: a
    horizontal layer of temperature alone, decaying as exp(-kappa (n pi)^2 t)."""

    modes: tuple[int, int] = setting((1, 1), "(m_x, n): horizontal mode number m_x (a = 2 pi m_x / Lx) and vertical "
                                     "n >= 1")


INFO = freeslip_info(Convection2DParams, Mode, "simulator.equations.convection2d.equation:Convection2D", dimensions=2)
