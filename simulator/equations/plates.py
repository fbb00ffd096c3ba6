"""What the equations of convection between free-slip plates declare alike (no JAX): the Rayleigh and Prandtl numbers
in free-fall units and their checks, the conductive initial condition, a linear mode's check, and the exact linear
theory (Rayleigh 1916; Chandrasekhar 1961, ch. II): a mode cos(a x) sin(n pi z) of the conductive state grows at
sigma = -(nu + kappa) K^2 / 2 + sqrt(((nu - kappa) K^2 / 2)^2 + a^2 / K^2), K^2 = a^2 + (n pi)^2, which changes sign at
Ra = K^6 / a^2: the onset Ra_c = 27 pi^4 / 4 at a = pi / sqrt(2), in a plane and in a box (a the horizontal
wavenumber). :mod:`simulator.equations.freeslip_flow` is the skeleton their implementations run on,
:mod:`simulator.equations.walled` holds the helpers they share. The equations between
no-slip plates (a plane's and a box's) declare their parameters, scales, diagnostics and plot here alike too
(:class:`NoSlipFreeFallParams`); :mod:`simulator.equations.noslip` is their one implementation. What every convection
declaration holds is :func:`convection_info`'s; the free-slip family's own is :mod:`simulator.equations.freeslip`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from simulator.equations import wall_scalars
from simulator.equations.spec import (
    Curve,
    EquationInfo,
    EquationParams,
    FieldInfo,
    InitialCondition,
    Panel,
    PlotSpec,
    UnitSystem,
)
from simulator.errors import ConfigError
from simulator.schema import param, random_seed, setting
from simulator.time.schemes import IMEX

#: the onset of convection between free-slip plates of fixed temperature, and its horizontal wavenumber
RA_CRITICAL = 27 * math.pi**4 / 4
K_CRITICAL = math.pi / math.sqrt(2)


def growth_rate(rayleigh: float, prandtl: float, a: float, n: int, taylor: float = 0.0) -> float:
    """The exact linear growth rate sigma of the mode cos(a x) sin(n pi z) (module docstring), free-fall units.
    Rotating about the vertical at the Taylor number Ta = (2 Omega H^2 / nu)^2 (Coriolis parameter f = sqrt(Ta) nu),
    the largest real root of Chandrasekhar's (1961, ch. III) cubic
    (sigma + kappa K^2) [K^2 (sigma + nu K^2)^2 + f^2 (n pi)^2] = a^2 (sigma + nu K^2),
    whose zero at sigma = 0 is the onset Ra = (K^6 + Ta (n pi)^2) / a^2 (stationary convection; for Pr above about
    0.68 it comes first)."""
    nu, kappa = math.sqrt(prandtl / rayleigh), 1 / math.sqrt(rayleigh * prandtl)
    k2 = a**2 + (n * math.pi) ** 2
    if taylor == 0.0:
        return -(nu + kappa) * k2 / 2 + math.sqrt(((nu - kappa) * k2 / 2) ** 2 + a**2 / k2)
    f2q2 = taylor * nu**2 * (n * math.pi) ** 2
    viscous = np.polynomial.Polynomial([nu * k2, 1.0])
    cubic = (np.polynomial.Polynomial([kappa * k2, 1.0]) * (k2 * viscous**2 + f2q2) - a**2 * viscous)
    roots = cubic.roots()
    return float(max(r.real for r in roots if abs(r.imag) <= 1e-12 * max(1.0, abs(r))))


def rotating_onset(taylor: float, a: float, n: int = 1) -> float:
    """The Rayleigh number at which the mode cos(a x) sin(n pi z) turns from decay to growth rotating at the
    Taylor number ``taylor`` (stationary convection, Chandrasekhar 1961, ch. III): (K^6 + Ta (n pi)^2) / a^2."""
    q2 = (n * math.pi) ** 2
    return ((a**2 + q2) ** 3 + taylor * q2) / a**2


#: free-fall units (:class:`~simulator.equations.spec.UnitSystem`), which every output of a convection run records
FREE_FALL_UNITS = UnitSystem((
    ("system", "free-fall: lengths in the distance H between the plates, velocities in the free-fall velocity U_ff = "
               "(g alpha Delta T H)^(1/2), times in H / U_ff, temperatures in the plates' difference Delta T"),
    ("length", "H"), ("time", "H/U_ff"), ("velocity", "U_ff"), ("temperature", "Delta T"), ("theta", "Delta T"),
    ("vorticity", "U_ff/H"), ("energy", "(U_ff)^2"),
    ("scalar", "its own: the units of the plate values or slopes physics.scalars gives it")))


@dataclass(frozen=True)
class FreeFallParams(EquationParams):
    """The Rayleigh and Prandtl numbers of convection between free-slip plates in free-fall units (each equation
    names itself: its ``name``)."""

    name: str = setting("", "equation to solve")
    rayleigh: float = param(2e6, "Rayleigh number Ra = g alpha Delta T H^3 / (nu kappa)", gt=0.0)
    prandtl: float = param(1.0, "Prandtl number Pr = nu / kappa", gt=0.0)
    #: whether the temperature may be held by a fixed flux (``grid.walls.temperature``)
    FIXED_FLUX: ClassVar[bool] = False

    def compact_spectra(self) -> str | None:
        return "the walled spectrum is full in x"

    def clock(self) -> UnitSystem:
        """Free-fall units (:data:`FREE_FALL_UNITS`)."""
        return FREE_FALL_UNITS

    def scales(self, diagnostics: Any, shape: Any, box: Any) -> dict[str, float]:
        """nu and kappa in free-fall units and the thermal boundary layer's thickness H / (2 Nu)."""
        nusselt = max(float(diagnostics.get("nusselt", 1.0)), 1.0)
        return {"viscosity": math.sqrt(self.prandtl / self.rayleigh),
                "diffusivity": 1 / math.sqrt(self.rayleigh * self.prandtl), "thermal_boundary_layer": 0.5 / nusselt}

    def velocity_scale(self, initial: Any) -> tuple[float, str] | None:
        """The free-fall velocity sqrt(g alpha Delta T H), 1 in these units: the speed convection reaches (the initial
        condition's amplitude is a temperature's, its noise no scale of the flow)."""
        return 1.0, "the free-fall velocity sqrt(g alpha Delta T H) = 1"

    def check(self, cfg: Any) -> None:
        """Plates across the last direction, at fixed temperature, one unit apart (free-fall units)."""
        walls = cfg.grid.walls
        if not walls.on:
            raise ConfigError("grid.walls.axis", None, f"z: {self.name} runs between two plates across the "
                              "last direction", "leaves the grid periodic")
        if walls.temperature != ("fixed-value", "fixed-value") and not self.FIXED_FLUX:
            raise ConfigError("grid.walls.temperature", list(walls.temperature), "[fixed-value, fixed-value]: a "
                              "fixed flux makes the temperature a cosine series, which the sine series of w does not "
                              "drive diagonally (a fixed flux between free-slip plates runs on grid.walls.basis: "
                              "chebyshev)", f"is not available for {self.name}")
        if abs(cfg.grid.box[-1] - 1.0) > 1e-12:
            raise ConfigError("grid.box", list(cfg.grid.box), f"{[*cfg.grid.box[:-1], 1]}: free-fall units measure "
                              "lengths in the distance between the plates", "does not put the plates 1 apart")


def check_mode(modes: tuple[int, int], cfg: Any) -> None:
    """(m_x, n) of a mode cos(2 pi m_x x / Lx) sin(n pi z): n >= 1, both kept by the 2/3 rule (x the first direction
    of the plane or box, z its last)."""
    nx, nz = cfg.grid.shape[0], cfg.grid.shape[-1]
    if modes[1] < 1 or modes[0] < 0:
        raise ConfigError("initial.modes", list(modes), "m_x >= 0 and n >= 1 (a sine series in z)", "is out of range")
    if 3 * modes[0] >= nx or 3 * modes[1] >= 2 * nz:
        raise ConfigError("initial.modes", list(modes), f"m_x < Nx/3 and n < 2 Nz/3 for grid.shape "
                          f"{list(cfg.grid.shape)}",
                          "is removed by the 2/3 dealiasing")


@dataclass(frozen=True)
class Conductive(InitialCondition):
    """The conductive profile b = 1 - z plus noise damped at the plates, theta = A xi 4 z (1 - z) with xi unit white
    noise (as Dedalus' example does), and no flow."""

    name: str = setting("conductive", "initial condition")
    amplitude: float = param(1e-3, "amplitude A of the noise at mid-height", min=0.0)
    seed: int = random_seed("random seed (0 to 2^32 - 2)", max=2**32 - 2)


@dataclass(frozen=True)
class NoSlipFreeFallParams(FreeFallParams):
    """The Rayleigh and Prandtl numbers of convection between no-slip plates (a plane's or a box's), whose
    temperature is held at both plates by a fixed value or a fixed flux (``grid.walls.temperature``), with passive
    scalars (:mod:`simulator.equations.wall_scalars`); the plates at rest or moving along x.

    Between fixed fluxes the temperature's slope is -1 at both plates: the conductive profile 1 - z is the same, and
    Ra the flux-based Rayleigh number g alpha beta H^4 / (nu kappa), beta the imposed gradient (the temperature
    measured in beta H)."""

    plate_velocity: tuple[float, float] = setting((0.0, 0.0), "velocity along x of the bottom and the top plate in "
                                                  "free-fall units: [0, 0] plates at rest; moving plates drive a "
                                                  "Couette flow U0 + (U1 - U0) z / H between them")
    temperature_plates: tuple[str, str] = setting(("fixed-value", "fixed-value"), "the temperature's condition at "
                                                  "the bottom and the top plate: grid.walls.temperature's, copied "
                                                  "from it (give it there)")
    velocity_plates: tuple[str, str] = setting(("no-slip", "no-slip"), "the velocity's condition at the bottom and "
                                               "the top plate: grid.walls.velocity's, copied from it (give it "
                                               "there)")
    scalars: tuple[wall_scalars.WallScalar, ...] = wall_scalars.scalar_list()
    FIXED_FLUX: ClassVar[bool] = True

    def compact_spectra(self) -> str | None:
        return "the walled spectrum is full in x"

    def velocity_scale(self, initial: Any) -> tuple[float, str] | None:
        """The free-fall velocity (1), or the faster plate's speed where the plates move faster."""
        plates = max(abs(u) for u in self.plate_velocity)
        return (plates, f"the faster plate's speed |physics.plate_velocity| = {plates:g}") if plates > 1 else \
            super().velocity_scale(initial)

    def check(self, cfg: Any) -> None:
        """The temperature's condition is the grid's, the scalars' plate keys their condition's, then the free-fall
        checks."""
        walls = cfg.grid.walls
        for key, given, grid in (("temperature", self.temperature_plates, walls.temperature),
                                 ("velocity", self.velocity_plates, walls.velocity)):
            default = type(self).__dataclass_fields__[f"{key}_plates"].default
            if walls.on and tuple(given) not in (default, tuple(grid)):
                raise ConfigError(f"physics.{key}_plates", list(given), f"leave it out: grid.walls.{key} = "
                                  f"{list(grid)} sets it", f"contradicts grid.walls.{key}")
        if walls.on and self.scalars and len(set(walls.temperature)) > 1:
            raise ConfigError("physics.scalars", len(self.scalars), "none with grid.walls.temperature = "
                              f"{list(walls.temperature)}: a scalar takes the temperature's condition, the same at "
                              "both plates", "cannot follow mixed plates yet")
        for plate, (condition, speed) in enumerate(zip(walls.velocity, self.plate_velocity, strict=True)):
            if walls.on and condition == "free-slip" and speed != 0:
                raise ConfigError("physics.plate_velocity", list(self.plate_velocity), f"0 at the "
                                  f"{('bottom', 'top')[plate]} plate, which is free-slip (grid.walls.velocity = "
                                  f"{list(walls.velocity)}): only a no-slip plate drags the fluid",
                                  "moves a free-slip plate")
        if walls.on:
            wall_scalars.check(self.scalars, cfg)
        super().check(cfg)

    def resolve(self, cfg: Any) -> Any:
        """The temperature's condition from ``grid.walls.temperature``, and each scalar's plate key filled in."""
        walls = cfg.grid.walls
        physics = dataclasses.replace(self, temperature_plates=tuple(walls.temperature),
                                      velocity_plates=tuple(walls.velocity),
                                      scalars=wall_scalars.resolve(self.scalars, cfg))
        return dataclasses.replace(cfg, physics=physics)


@dataclass(frozen=True)
class ConductiveWithScalars(Conductive):
    """The conductive profile b = 1 - z plus noise damped at the plates, theta = A xi 4 z (1 - z) with xi unit white
    noise (as Dedalus' example does), no flow, and the passive scalars of ``initial.scalars``."""

    scalars: wall_scalars.WallScalarInitial = wall_scalars.scalar_initial()

    def check(self, cfg: Any) -> None:
        wall_scalars.check_initial(self.scalars, cfg)


def refuse_mode_with_moving_plates(cfg: Any, name: str) -> None:
    """Refuse the linear mode (``initial.name``: ``name``) between moving plates: it is the eigenvector of the
    conductive state between plates at rest (each plate no-slip or free-slip, of fixed temperature or flux)."""
    if any(cfg.physics.plate_velocity):
        raise ConfigError("initial.name", name, "conductive, or file: the linear mode is the conductive state's "
                          f"between plates at rest (physics.plate_velocity = {list(cfg.physics.plate_velocity)})",
                          "is not available with moving plates")
    if "fixed-flux" in cfg.grid.walls.temperature and cfg.grid.walls.series == "sincos":
        raise ConfigError("initial.name", name, "conductive, or file: the linear mode is the conductive state's "
                          "between free-slip plates of fixed temperature (grid.walls.temperature = "
                          f"{list(cfg.grid.walls.temperature)})", "is not available with fixed-flux plates")


#: what every convection equation derives and draws (free-slip and no-slip, plane and box)
CONVECTION_SCALES = {"viscosity": "kinematic viscosity nu = (Ra/Pr)^(-1/2) in free-fall units",
                 "diffusivity": "thermal diffusivity kappa = (Ra Pr)^(-1/2) in free-fall units",
                 "thermal_boundary_layer": "thermal boundary layer thickness H / (2 Nu), Nu through the volume"}
#: what convection between no-slip plates reports, in a plane (a box's adds v and y to the sums)
NOSLIP_DIAGNOSTICS = {
    "kinetic_energy": "kinetic energy E_K = <|u|^2>/2",
    "nusselt": "Nusselt number through the volume, 1 + <w theta>/kappa; between fixed-flux plates the imposed flux "
               "over the conductive flux of the mean temperature drop, 1 / (<b>(0) - <b>(1))",
    "nusselt_bottom": "Nusselt number at the bottom plate, -d<b>/dz at z = 0 (horizontal mean; 1 between fixed-flux "
                      "plates: the flux held)",
    "nusselt_top": "Nusselt number at the top plate, -d<b>/dz at z = 1 (horizontal mean; 1 between fixed-flux "
                   "plates)",
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
    **wall_scalars.DIAGNOSTICS,
}
CONVECTION_PLOT = PlotSpec(
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
    averaged=("nusselt", "nusselt_bottom", "nusselt_top"),
)


#: the velocity of convection in a plane and in a box, and the plane's vorticity
PLANE_VELOCITY = FieldInfo(3, "velocity (u, w, 0): along the plates, across them, and the zero component normal to the "
                              "plane (3, 1, Nx, Nz)", r"|u|")
BOX_VELOCITY = FieldInfo(3, "velocity (u, v, w) (3, Nx, Ny, Nz)", r"|u|")
VORTICITY = FieldInfo(0, "vorticity omega = dw/dx - du/dz (1, Nx, Nz)", r"\omega", cmap="RdBu_r")


def temperature_fields(cells: str) -> dict[str, FieldInfo]:
    """The temperature b and its departure theta from the conductive profile, on ``cells`` (the grid's shape)."""
    return {"temperature": FieldInfo(0, f"temperature b = 1 - z + theta, 1 at the bottom plate, 0 at the top {cells}",
                                     "b", cmap="RdBu_r"),
            "theta": FieldInfo(0, f"departure theta of the temperature from the conductive profile 1 - z {cells}",
                               r"\theta", cmap="RdBu_r")}


def convection_info(params: type[EquationParams], mode: type[InitialCondition], implementation: str,
                    dimensions: int, plates: str, **declared: Any) -> EquationInfo:
    """What every convection equation declares alike, in a plane (``dimensions`` 2) or a box (3): named by
    ``params``' default ``name``, starting from the conductive state or its linear mode ``mode``, stepped by
    ``implementation`` (``"module:Class"``), between the plates of the summary's end ``plates``; ``declared`` the
    rest of its :class:`~simulator.equations.spec.EquationInfo` (the plates' family's: :func:`noslip_info`,
    :func:`simulator.equations.freeslip.freeslip_info`)."""
    return EquationInfo(
        name=params().name,
        physics="convection",
        summary=f"Rayleigh-Benard convection in a {'vertical plane' if dimensions == 2 else 'box'} between {plates}",
        params=params,
        initials=(ConductiveWithScalars, mode),
        implementation=implementation,
        dimensions=dimensions,
        walls="required",
        scales=CONVECTION_SCALES,
        resolution_advice={"kmax_eta": "refine grid.shape, or lower physics.rayleigh"},
        progress=("nusselt", "reynolds", "cfl"),
        **declared,
    )


def noslip_info(params: type[EquationParams], mode: type[InitialCondition], implementation: str,
                dimensions: int) -> EquationInfo:
    """The declaration of convection between no-slip plates (the Chebyshev basis; a free-slip plate may face a
    no-slip one) in a plane (``dimensions`` 2) or a box (3) (:func:`convection_info`): one physics, whose geometries
    differ in their fields, the box's three components in its diagnostics, and the spectra's wavenumber."""
    plane = dimensions == 2
    box_diagnostics = {
        "divergence": "max |du/dx + dv/dy + dw/dz| on the grid: round-off",
        "kmax_eta": NOSLIP_DIAGNOSTICS["kmax_eta"].replace("pi Nx/Lx", "pi Nx/Lx, pi Ny/Ly"),
        "cfl": "CFL number dt max(|u|/dx + |v|/dy + |w|/dz), dz the local spacing of the Gauss-Lobatto points"}
    return convection_info(
        params, mode, implementation, dimensions, "no-slip plates (Chebyshev, free-fall units)",
        protocol=IMEX,
        default_integrator="rk222",
        wall_velocity=("no-slip", "free-slip"),  # each plate its own: a free surface above a no-slip plate
        diagonal_linear=False,
        default_box=(4.0, 1.0) if plane else (4.0, 4.0, 1.0),
        fields={
            **temperature_fields("(1, Nx, Nz)" if plane else "(Nx, Ny, Nz)"),
            "scalar": wall_scalars.FIELD,
            **({"vorticity": VORTICITY} if plane else {}),
            "velocity": PLANE_VELOCITY if plane else BOX_VELOCITY,
        },
        state_fields=("velocity", "theta", "scalar"),
        diagnostics=NOSLIP_DIAGNOSTICS if plane else {**NOSLIP_DIAGNOSTICS, **box_diagnostics},
        spectra={"energy": "kinetic energy per |k_x|, integrated over z: sums to E_K" if plane else "kinetic energy "
                           "per shell of the horizontal wavenumber |k_h|, integrated over z: sums to E_K"},
        spectrum_axes={"energy": "k_h"},
        plot=CONVECTION_PLOT if plane else dataclasses.replace(CONVECTION_PLOT, spectrum_label=r"$E_K(k_h)$"),
    )
