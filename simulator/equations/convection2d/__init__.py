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
z``, the plane's second direction, named z in its files too). The implementation is :mod:`.equation`.

Linear theory (Rayleigh 1916; Chandrasekhar 1961, ch. II): a mode cos(a x) sin(n pi z) grows at the rate
sigma = -(nu + kappa) K^2 / 2 + sqrt(((nu - kappa) K^2 / 2)^2 + a^2 / K^2), K^2 = a^2 + (n pi)^2, which changes sign
at Ra = K^6 / a^2: the onset Ra_c = 27 pi^4 / 4 at a = pi / sqrt(2).
"""

from __future__ import annotations

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
class Convection2DParams(wall_scalars.WallScalarHost, FreeFallParams):
    """The Rayleigh and Prandtl numbers (free-fall units: the module docstring), and passive scalars held at fixed
    values at the plates (:mod:`simulator.equations.wall_scalars`: sine series about their linear profiles)."""

    name: str = setting("convection2d", "equation to solve")
    scalars: tuple[wall_scalars.WallScalar, ...] = wall_scalars.scalar_list()


@dataclass(frozen=True)
class Mode(InitialCondition):
    """One linear mode of the conductive state: theta = A cos(a x) sin(n pi z), a = 2 pi m_x / Lx, with the
    vorticity of its growing (or least damped) eigenvector, omega = -a A sin(a x) sin(n pi z) / (sigma + nu K^2);
    it grows as exp(sigma t) while it is small, sigma the exact linear growth rate (docs: walls). m_x = 0: a
    horizontal layer of temperature alone, decaying as exp(-kappa (n pi)^2 t)."""

    name: str = setting("mode", "initial condition")
    amplitude: float = param(1e-6, "temperature amplitude A", gt=0.0)
    modes: tuple[int, int] = setting((1, 1), "(m_x, n): horizontal mode number m_x (a = 2 pi m_x / Lx) and vertical "
                                     "n >= 1")
    scalars: wall_scalars.WallScalarInitial = wall_scalars.scalar_initial()

    def check(self, cfg: Any) -> None:
        check_mode(self.modes, cfg)
        wall_scalars.check_initial(self.scalars, cfg)


INFO = EquationInfo(
    name="convection2d",
    physics="convection",
    summary="Rayleigh-Benard convection in a vertical plane between free-slip plates (free-fall units, as Dedalus)",
    params=Convection2DParams,
    initials=(ConductiveWithScalars, Mode),
    protocol=SEMILINEAR,
    default_integrator="rk4",
    implementation="simulator.equations.convection2d.equation:Convection2D",
    dimensions=2,
    walls="required",
    scales=CONVECTION_SCALES,
    default_box=(4.0, 1.0),
    fields={
        "temperature": FieldInfo(0, "temperature b = 1 - z + theta, 1 at the bottom plate, 0 at the top (1, Nx, Nz)",
                                 "b", cmap="RdBu_r"),
        "theta": FieldInfo(0, "departure theta of the temperature from the conductive profile 1 - z (1, Nx, Nz)",
                           r"\theta", cmap="RdBu_r"),
        "vorticity": FieldInfo(0, "vorticity omega = dw/dx - du/dz (1, Nx, Nz)", r"\omega", cmap="RdBu_r"),
        "velocity": FieldInfo(3, "velocity (u, w, 0): along the plates, across them, and the zero component normal to "
                                 "the plane (3, 1, Nx, Nz)", r"|u|"),
        "scalar": wall_scalars.FIELD,
    },
    state_fields=("vorticity", "theta", "scalar"),
    diagnostics={
        "kinetic_energy": "kinetic energy E_K = <|u|^2>/2",
        "nusselt": "Nusselt number through the volume, 1 + <w theta>/kappa (<w b> - kappa d<b>/dz over the volume, in "
                   "units of the conductive flux kappa)",
        "nusselt_bottom": "Nusselt number at the bottom plate, -d<b>/dz at z = 0 (horizontal mean)",
        "nusselt_top": "Nusselt number at the top plate, -d<b>/dz at z = 1 (horizontal mean)",
        "reynolds": "Reynolds number <|u|^2>^(1/2) / nu",
        "kinetic_dissipation": "kinetic dissipation nu <omega^2> (= nu <|grad u|^2> between free-slip plates); "
                               "(Nu - 1)/sqrt(Ra Pr) in a statistically steady state",
        "thermal_dissipation": "thermal dissipation kappa <|grad b|^2> = kappa (1 + <|grad theta|^2>); Nu/sqrt(Ra Pr) "
                               "in a statistically steady state",
        "kmax_eta": "resolution k_max min(eta, eta_theta): the Kolmogorov scale (nu^3/epsilon_u)^(1/4) and the "
                    "temperature's (Batchelor for Pr >= 1) against the 2/3 rule's cutoff (2/3) min(pi N/L); at least 1",
        "max_velocity": "max |u|",
        "cfl": "CFL number dt max(|u|/dx + |w|/dz)",
        **wall_scalars.DIAGNOSTICS,
    },
    resolution_advice={"kmax_eta": "refine grid.shape, or lower physics.rayleigh"},
    progress=("nusselt", "reynolds", "cfl"),
    spectra={"energy": "kinetic energy spectrum E_K(k): 0.5 |u_hat|^2 / n^2 (Parseval-weighted, n the number of cells) "
                       "summed over the ring |k|, k = (k_x, n pi); sums to E_K"},
    plot=replace(CONVECTION_PLOT, spectrum_label=r"$E_K(k)$"),
)
