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
(:func:`~simulator.equations.plates.rotating_onset`). The implementation is :mod:`.equation`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from simulator.equations import wall_scalars
from simulator.equations.plates import (
    CONVECTION_PLOT,
    CONVECTION_SCALES,
    ConductiveWithScalars,
    FreeFallParams,
    check_mode,
)
from simulator.equations.spec import EquationInfo, FieldInfo, InitialCondition
from simulator.schema import param, setting
from simulator.time.schemes import SEMILINEAR


@dataclass(frozen=True)
class ConvectionParams(wall_scalars.WallScalarHost, FreeFallParams):
    """The Rayleigh and Prandtl numbers (free-fall units), in a box."""

    name: str = setting("convection", "equation to solve")
    taylor: float = setting(0.0, "Taylor number Ta = (2 Omega H^2 / nu)^2 of rotation about the vertical at the rate "
                            "Omega: the Coriolis force -f z_hat x u, f = sqrt(Ta) nu in free-fall units; 0: none",
                            min=0.0)
    scalars: tuple[wall_scalars.WallScalar, ...] = wall_scalars.scalar_list()


@dataclass(frozen=True)
class BoxMode(InitialCondition):
    """One linear mode along x: theta = A cos(a x) sin(n pi z), w = (sigma + kappa K^2) theta and u from continuity,
    u = -(n pi / a)(sigma + kappa K^2) A sin(a x) cos(n pi z), v = 0 (its growing eigenvector; rotating, v = (f n pi /
    (a (sigma + nu K^2))) W sin(a x) cos(n pi z), the vertical vorticity the Coriolis force makes of w); m_x = 0: a
    layer of temperature at rest."""

    name: str = setting("mode", "initial condition")
    amplitude: float = param(1e-6, "temperature amplitude A", gt=0.0)
    modes: tuple[int, int] = setting((1, 1), "(m_x, n): mode number m_x along x (a = 2 pi m_x / Lx) and n >= 1 in z")
    scalars: wall_scalars.WallScalarInitial = wall_scalars.scalar_initial()

    def check(self, cfg: Any) -> None:
        check_mode(self.modes, cfg)
        wall_scalars.check_initial(self.scalars, cfg)


INFO = EquationInfo(
    name="convection",
    physics="convection",
    summary="Rayleigh-Benard convection in a box between free-slip plates (free-fall units, as Dedalus)",
    params=ConvectionParams,
    initials=(ConductiveWithScalars, BoxMode),
    protocol=SEMILINEAR,
    default_integrator="rk4",
    implementation="simulator.equations.convection.equation:Convection",
    walls="required",
    default_box=(2 * math.sqrt(2), 2 * math.sqrt(2), 1.0),
    scales=CONVECTION_SCALES,
    fields={
        "temperature": FieldInfo(0, "temperature b = 1 - z + theta (Nx, Ny, Nz)", "b", cmap="RdBu_r"),
        "theta": FieldInfo(0, "departure theta of the temperature from the conductive profile (Nx, Ny, Nz)",
                           r"\theta", cmap="RdBu_r"),
        "velocity": FieldInfo(3, "velocity (u, v, w) (3, Nx, Ny, Nz)", r"|u|"),
        "scalar": wall_scalars.FIELD,
    },
    state_fields=("velocity", "theta", "scalar"),
    diagnostics={
        "kinetic_energy": "kinetic energy E_K = <|u|^2>/2",
        "nusselt": "Nusselt number through the volume, 1 + <w theta>/kappa",
        "nusselt_bottom": "Nusselt number at the bottom plate, -d<b>/dz at z = 0 (horizontal mean)",
        "nusselt_top": "Nusselt number at the top plate, -d<b>/dz at z = 1 (horizontal mean)",
        "reynolds": "Reynolds number <|u|^2>^(1/2) / nu",
        "kinetic_dissipation": "kinetic dissipation nu <|grad u|^2>; (Nu - 1)/sqrt(Ra Pr) in a statistically "
                               "steady state",
        "thermal_dissipation": "thermal dissipation kappa (1 + <|grad theta|^2>); Nu/sqrt(Ra Pr) in a statistically "
                               "steady state",
        "kmax_eta": "resolution k_max min(eta, eta_theta): the Kolmogorov scale (nu^3/epsilon_u)^(1/4) and the "
                    "temperature's (Batchelor for Pr >= 1) against the 2/3 rule's cutoff (2/3) min(pi N/L); at least 1",
        "divergence": "max |div u| (round-off: the projection is exact mode by mode)",
        "cfl": "CFL number dt max(|u|/dx + |v|/dy + |w|/dz)",
        **wall_scalars.DIAGNOSTICS,
    },
    resolution_advice={"kmax_eta": "refine grid.shape, or lower physics.rayleigh"},
    progress=("nusselt", "reynolds", "cfl"),
    spectra={"energy": "kinetic energy spectrum E_K(k): 0.5 |u_hat|^2 / n^2 (Parseval-weighted) summed over the "
                       "shell |k|, k = (k_x, k_y, n pi); sums to E_K"},
    plot=replace(CONVECTION_PLOT, spectrum_label=r"$E_K(k)$"),
)
