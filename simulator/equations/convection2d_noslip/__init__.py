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

from simulator.equations.plates import Conductive, FreeFallParams
from simulator.equations.spec import Curve, EquationInfo, FieldInfo, InitialCondition, Panel, PlotSpec
from simulator.errors import ConfigError
from simulator.schema import param, setting
from simulator.time.schemes import IMEX


@dataclass(frozen=True)
class NoSlipParams(FreeFallParams):
    """The Rayleigh and Prandtl numbers (free-fall units: the module docstring)."""

    name: str = setting("convection2d_noslip", "equation to solve")
    rayleigh: float = param(1e6, "Rayleigh number Ra = g alpha Delta T H^3 / (nu kappa)", gt=0.0)
    plate_velocity: tuple[float, float] = setting((0.0, 0.0), "velocity along x of the bottom and the top plate in "
                                                  "free-fall units: [0, 0] plates at rest; moving plates drive a "
                                                  "Couette flow U0 + (U1 - U0) z / H between them")

    def compact_spectra(self) -> str | None:
        return "the walled spectrum is full in x"

    def check(self, cfg: Any) -> None:
        """Plates at fixed temperature (the departure theta from 1 - z zero at both), then the free-fall checks."""
        walls = cfg.grid.walls
        if walls.on and walls.temperature != ("fixed-value", "fixed-value"):
            raise ConfigError("grid.walls.temperature", list(walls.temperature), "[fixed-value, fixed-value]: the "
                              "conductive profile 1 - z between plates at 1 and 0", f"is not available for {self.name}")
        super().check(cfg)


@dataclass(frozen=True)
class Mode(InitialCondition):
    """The fastest-growing linear mode of the conductive state at a = 2 pi m_x / Lx, from the dense eigen-solver
    (:func:`simulator.walls.eigen.rayleigh_benard_growth`): theta = A Theta(z) cos(a x), w = A W(z) cos(a x) / max
    Theta, u from continuity; it grows as exp(sigma t), sigma that solver's rate, while it is small."""

    name: str = setting("mode", "initial condition")
    amplitude: float = param(1e-6, "temperature amplitude A", gt=0.0)
    modes: tuple[int] = setting((1,), "(m_x,): the horizontal mode number, a = 2 pi m_x / Lx")

    def check(self, cfg: Any) -> None:
        if any(cfg.physics.plate_velocity):
            raise ConfigError("initial.name", self.name, "conductive, or file: the linear mode is the conductive "
                              f"state's between plates at rest (physics.plate_velocity = "
                              f"{list(cfg.physics.plate_velocity)})", "is not available with moving plates")
        nx = cfg.grid.shape[0]
        if not 1 <= self.modes[0] < nx / 3:
            raise ConfigError("initial.modes", list(self.modes), f"1 <= m_x < Nx/3 for grid.shape "
                              f"{list(cfg.grid.shape)}", "is out of range")


INFO = EquationInfo(
    name="convection2d_noslip",
    summary="Rayleigh-Benard convection in a vertical plane between no-slip plates (Chebyshev, free-fall units)",
    params=NoSlipParams,
    initials=(Conductive, Mode),
    protocol=IMEX,
    default_integrator="rk222",
    implementation="simulator.equations.convection2d_noslip.equation:NoSlipConvection2D",
    dimensions=2,
    walls="required",
    wall_velocity=("no-slip",),
    diagonal_linear=False,
    scales={"viscosity": "kinematic viscosity nu = (Ra/Pr)^(-1/2) in free-fall units",
            "diffusivity": "thermal diffusivity kappa = (Ra Pr)^(-1/2) in free-fall units",
            "thermal_boundary_layer": "thermal boundary layer thickness H / (2 Nu), Nu through the volume"},
    default_box=(4.0, 1.0),
    fields={
        "temperature": FieldInfo(0, "temperature b = 1 - z + theta, 1 at the bottom plate, 0 at the top (1, Nx, Nz)",
                                 "b", cmap="RdBu_r"),
        "theta": FieldInfo(0, "departure theta of the temperature from the conductive profile 1 - z (1, Nx, Nz)",
                           r"\theta", cmap="RdBu_r"),
        "vorticity": FieldInfo(0, "vorticity omega = dw/dx - du/dz (1, Nx, Nz)", r"\omega", cmap="RdBu_r"),
        "velocity": FieldInfo(3, "velocity (u, w, 0): along the plates, across them, and the zero component normal to "
                                 "the plane (3, 1, Nx, Nz)", r"|u|"),
    },
    state_fields=("velocity", "theta"),
    diagnostics={
        "kinetic_energy": "kinetic energy E_K = <|u|^2>/2",
        "nusselt": "Nusselt number through the volume, 1 + <w theta>/kappa",
        "nusselt_bottom": "Nusselt number at the bottom plate, -d<b>/dz at z = 0 (horizontal mean)",
        "nusselt_top": "Nusselt number at the top plate, -d<b>/dz at z = 1 (horizontal mean)",
        "reynolds": "Reynolds number <|u|^2>^(1/2) / nu",
        "kinetic_dissipation": "kinetic dissipation nu <|grad u|^2>; (Nu - 1)/sqrt(Ra Pr) in a statistically steady "
                               "state",
        "thermal_dissipation": "thermal dissipation kappa <|grad b|^2>; Nu/sqrt(Ra Pr) in a statistically steady "
                               "state",
        "divergence": "max |du/dx + dw/dz| on the grid: round-off",
        "kmax_eta": "resolution k_max min(eta, eta_theta): the Kolmogorov scale (nu^3/epsilon_u)^(1/4) and the "
                    "temperature's (Batchelor for Pr >= 1) against (2/3) min(pi Nx/Lx, pi/dz), dz the Gauss-Lobatto "
                    "points' spacing at mid-height; at least 1",
        "max_velocity": "max |u|",
        "cfl": "CFL number dt max(|u|/dx + |w|/dz), dz the local spacing of the Gauss-Lobatto points",
    },
    resolution_advice={"kmax_eta": "refine grid.shape, or lower physics.rayleigh"},
    progress=("nusselt", "reynolds", "cfl"),
    spectra={"energy": "kinetic energy per |k_x|, integrated over z: sums to E_K"},
    spectrum_axes={"energy": "k_h"},
    plot=PlotSpec(
        panels=(
            Panel("Nusselt", (Curve("nusselt", r"$Nu$"), Curve("nusselt_bottom", r"$Nu_{bottom}$"),
                              Curve("nusselt_top", r"$Nu_{top}$"))),
            Panel("energy", (Curve("kinetic_energy", r"$E_K$"),)),
            Panel("Reynolds", (Curve("reynolds", r"$Re$"),)),
        ),
        spectrum="energy",
        spectrum_label=r"$E_K(k_x)$",
        slice_field="temperature",
        resolved=2 / 3,
    ),
)
