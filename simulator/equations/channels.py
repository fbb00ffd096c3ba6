"""What the channel equations (``channel2d`` in a plane, ``channel`` in a box) declare alike (no JAX): their
parameters, initial conditions, diagnostics and figures, and the declaration itself (:func:`info`), which the two
packages call with their geometry; :mod:`simulator.equations.channel_flow` is their implementation.

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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulator.equations import wall_scalars
from simulator.equations.scales import faster
from simulator.equations.spec import (
    Budget,
    Curve,
    EquationInfo,
    EquationParams,
    FieldInfo,
    InitialCondition,
    Panel,
    PlotSpec,
    UnitSystem,
)
from simulator.errors import ConfigError, show_value
from simulator.schema import param, random_seed, setting
from simulator.time.schemes import IMEX
from simulator.walls.channel import DRIVES, check_channel, check_ts_across

#: the key each drive alone reads, and what it sets
DRIVE_KEYS = {"couette": ("plate_velocity", "the plates' speed"), "pressure": ("pressure_gradient", "the mean "
              "pressure gradient"), "flux": ("flux", "the bulk velocity")}

#: the channels' outer units (:class:`~simulator.equations.spec.UnitSystem`), which every output of a channel run
#: records (a figure in wall units says so itself)
OUTER_UNITS = UnitSystem((
    ("system", "outer: lengths in the half gap h, velocities in the U of Re = U h / nu (nu = 1/Re: the plates' "
               "speed under drive = couette, else laminar Poiseuille flow's centre-line velocity, or the bulk velocity "
               "where physics.reynolds is a bulk Reynolds number), times in h / U"),
    ("length", "h"), ("time", "h/U"), ("velocity", "U"), ("streamwise", "U"), ("vorticity", "U/h"), ("energy", "(U)^2"),
    ("scalar", "its own: the units of the plate values or slopes physics.scalars gives it")))


@dataclass(frozen=True)
class ChannelParams(wall_scalars.WallScalarHost, EquationParams):
    """The Reynolds number, the drive and its strength (module docstring)."""

    name: str = setting("", "equation to solve")
    reynolds: float = param(1e4, "Reynolds number Re = U h / nu: U the plates' speed (couette) or laminar Poiseuille "
                                 "flow's centre-line velocity, h the half gap; nu = 1/Re")
    drive: str = setting("pressure", "what drives the flow: couette (plates at -U and +U), pressure (a fixed mean "
                                     "pressure gradient, the default) or flux (a fixed bulk velocity)", choices=DRIVES)
    plate_velocity: float = param(1.0, "the plates' speed U for drive = couette: the bottom plate moves at -U, "
                                       "the top one at +U")
    pressure_gradient: float | None = setting(None, "the mean pressure gradient G = -dP/dx for drive = pressure; "
                                                    "null: 2/Re, laminar Poiseuille flow's with U_c = 1")
    flux: float = param(2 / 3, "the bulk velocity U_b = (1/2h) int u dy held for drive = flux (2/3: laminar "
                               "Poiseuille flow's with U_c = 1)")
    scalars: tuple[wall_scalars.WallScalar, ...] = wall_scalars.scalar_list()

    def compact_spectra(self) -> str | None:
        return "the walled spectrum is full in x"

    def ignored_keys(self, given: Mapping[str, Any]) -> list[str]:
        """The keys of the drives other than ``drive`` that ``given`` sets (:data:`DRIVE_KEYS`): each is ignored."""
        return [f"physics.{key} = {show_value(getattr(self, key))} is ignored under physics.drive = {self.drive}: "
                f"it sets {what} of drive = {other}; remove it, or set physics.drive = {other}"
                for other, (key, what) in DRIVE_KEYS.items() if other != self.drive and given.get(key) is not None]

    def gradient(self) -> float:
        """The fixed mean pressure gradient G (drive ``pressure``)."""
        return 2 / self.reynolds if self.pressure_gradient is None else self.pressure_gradient

    def velocity_scale(self, initial: Any) -> tuple[float, str] | None:
        """The laminar profile's fastest speed, which the run starts from (:class:`Laminar`): the plates' U (couette),
        the centre line's U_c = G Re / 2 (pressure) or 3/2 U_b (flux); the initial condition's (its amplitude) where
        that is faster."""
        if self.drive == "couette":
            own = abs(self.plate_velocity), f"the plates' speed physics.plate_velocity = {abs(self.plate_velocity):g}"
        elif self.drive == "flux":
            centre = 1.5 * abs(self.flux)
            own = centre, f"laminar flow's centre-line speed 3/2 physics.flux = {centre:.3g}"
        else:
            centre = self.gradient() * self.reynolds / 2
            own = abs(centre), f"laminar flow's centre-line speed G Re / 2 = {abs(centre):.3g}"
        return faster(own, initial)

    def clock(self) -> UnitSystem:
        """Outer units (:data:`OUTER_UNITS`)."""
        return OUTER_UNITS

    def scales(self, diagnostics: Any, shape: Any, box: Any) -> dict[str, float]:
        """nu = 1/Re and the viscous length nu / u_tau of the row's friction velocity."""
        u_tau = float(diagnostics.get("u_tau", 0.0)) or math.sqrt(self.gradient())
        return {"viscosity": 1 / self.reynolds, "viscous_length": 1 / (self.reynolds * u_tau)}

    def check(self, cfg: Any) -> None:
        """Plates across the last direction, two apart, no-slip; :func:`simulator.walls.channel.check_channel`'s
        refusals."""
        walls = cfg.grid.walls
        if not walls.on:
            raise ConfigError("grid.walls.axis", None, f"z: {self.name} runs between "
                              "two plates across the last "
                              "direction", "leaves the grid periodic")
        check_channel(self.drive, self.reynolds, tuple(walls.velocity), self.flux if self.drive == "flux" else None)
        wall_scalars.check(self.scalars, cfg)
        if abs(cfg.grid.box[-1] - 2.0) > 1e-12:
            raise ConfigError("grid.box", list(cfg.grid.box), f"{[*cfg.grid.box[:-1], 2]}: lengths are measured in "
                              "the half gap h, so the plates lie 2 apart", "does not put the plates 2 apart")



@dataclass(frozen=True)
class Laminar(InitialCondition):
    """The laminar profile of the drive (Couette's U y'/h, Poiseuille's U_c (1 - y'^2/h^2) scaled to the drive's
    gradient or flux; y' from the centre line) plus noise damped at the plates: the wall-normal velocity
    v = A xi (y (2 - y))^2, xi unit white noise, its streamwise partner by continuity."""

    name: str = setting("laminar", "initial condition")
    amplitude: float = param(0.0, "amplitude A of the wall-normal noise at mid-height", min=0.0)
    seed: int = random_seed("random seed (0 to 2^32 - 2)", max=2**32 - 2)
    scalars: wall_scalars.WallScalarInitial = wall_scalars.scalar_initial()

    def check(self, cfg: Any) -> None:
        wall_scalars.check_initial(self.scalars, cfg)


@dataclass(frozen=True)
class TollmienSchlichting(InitialCondition):
    """Laminar Poiseuille flow (U_c = 1) plus its Tollmien-Schlichting wave at streamwise wavenumber alpha: the least
    stable Orr-Sommerfeld mode at the run's Re, solved by the project
    (:func:`simulator.walls.channel.tollmien_schlichting`), its streamwise velocity's peak ``amplitude``."""

    name: str = setting("tollmien_schlichting", "initial condition")
    alpha: float = setting(1.0, "streamwise wavenumber alpha (1/h): 2 pi m / Lx, m a whole number below Nx/3")
    amplitude: float = param(1e-4, "peak streamwise velocity of the wave, in U_c", min=0.0)
    scalars: wall_scalars.WallScalarInitial = wall_scalars.scalar_initial()

    def check(self, cfg: Any) -> None:
        wall_scalars.check_initial(self.scalars, cfg)
        physics = cfg.physics
        check_channel(physics.drive, physics.reynolds, tuple(cfg.grid.walls.velocity),
                      physics.flux if physics.drive == "flux" else None, self.alpha, cfg.grid.box[0],
                      cfg.grid.shape[0])
        check_ts_across(physics.reynolds, self.alpha, tuple(cfg.grid.shape))


#: the channel's time series (both geometries; a box's divergence, slip and CFL number over its three components)
DIAGNOSTICS = {
    "kinetic_energy": "kinetic energy E_K = <|u|^2>/2",
    "bulk_velocity": "bulk velocity U_b = (1/2h) int <u> dy",
    "tau_bottom": "wall shear stress on the bottom plate, nu d<u>/dy at y = 0",
    "tau_top": "wall shear stress on the top plate, -nu d<u>/dy at y = 2",
    "u_tau": "friction velocity u_tau = (mean of |tau| at the two plates)^(1/2)",
    "re_tau": "friction Reynolds number Re_tau = u_tau h / nu",
    "divergence": "max |du/dx + dv/dy| on the grid: round-off",
    "wall_resolution": "the grid's spacings in wall units against a resolved channel DNS's (Moser, Kim & Mansour "
                       "1999): min(20/dx+, 8/dz+ spanwise, 1/y+ of the first point, 8/dy+ mid-channel); at least 1",
    "slip": "max |u - U_plate| and |v| at the plates: round-off",
    "max_velocity": "max |u|",
    "cfl": "CFL number dt max(|u|/dx + |v|/dy), dy the local spacing of the Gauss-Lobatto points",
    "mean_energy": "kinetic energy of the mean flow E_mean = <U^2>/2 over the volume, U = <u> along the plates",
    "fluctuation_energy": "kinetic energy of the fluctuations E' = <|u'|^2>/2 (kinetic_energy less mean_energy)",
    "production": "production of fluctuation energy P = -<u'v'> dU/dy over the volume (v across the plates)",
    "dissipation": "dissipation of the fluctuations eps = nu <|grad u'|^2> over the volume: dE'/dt = P - eps",
    "mean_dissipation": "dissipation of the mean flow nu <(dU/dy)^2> over the volume",
    "pressure_work": "work of the mean pressure gradient G U_b (under a fixed flux G = (tau_bottom + tau_top) / 2h, "
                     "the gradient that holds U_b)",
    "wall_work": "work of the moving plates U (tau_bottom - tau_top) / 2h (couette; 0 otherwise): dE_K/dt = "
                 "pressure_work + wall_work - mean_dissipation - dissipation",
    **wall_scalars.DIAGNOSTICS,
}
#: the one-dimensional spectra at each height of a plane's channel (the wall_spectra output kind)
WALL_SPECTRA = {
    "uu_kx": "E_uu(k_x; z): the streamwise velocity's fluctuation per streamwise wavenumber at each height, one-sided; "
             "sums over k_x to reynolds_uu",
    "vv_kx": "E_vv(k_x; z): the same of the velocity across the plates; sums to reynolds_vv",
}
#: a box's: the spanwise velocity's along k_x, and each component's along the spanwise wavenumber k_y
BOX_WALL_SPECTRA = {
    **WALL_SPECTRA,
    "ww_kx": "E_ww(k_x; z): the same of the spanwise velocity; sums to reynolds_ww",
    **{f"{c}_ky": f"E_{c}(k_y; z): per spanwise wavenumber k_y, summed over k_x; sums to reynolds_{c}"
       for c in ("uu", "vv", "ww")},
}
#: the derived scales
SCALES = {"viscosity": "kinematic viscosity nu = 1/Re",
          "viscous_length": "viscous length delta_nu = nu / u_tau, u_tau the friction velocity"}
#: the time series drawn by simulator plot, the spectrum and the slice
PLOT = PlotSpec(
    panels=(
        Panel("bulk velocity", (Curve("bulk_velocity", r"$U_b$"),)),
        Panel("wall shear stress", (Curve("tau_bottom", r"$\tau_{bottom}$"), Curve("tau_top", r"$\tau_{top}$"))),
        Panel("Re_tau", (Curve("re_tau", r"$Re_\tau$"),)),
    ),
    spectrum="energy",
    spectrum_label=r"$E_K(k_x)$",
    slice_field="streamwise",
    resolved=2 / 3,
    averaged=("re_tau", "tau_bottom", "tau_top"),
    budget=Budget("kinetic_energy", losses=("mean_dissipation", "dissipation"), gains=("pressure_work", "wall_work"),
                  label="E_K"),
)


#: what the box's time series say otherwise than the plane's: its three components, w across the plates
BOX_DIAGNOSTICS = {
    "divergence": "max |du/dx + dv/dy + dw/dz| on the grid: round-off",
    "slip": "max |u - U_plate|, |v| and |w| at the plates: round-off",
    "cfl": "CFL number dt max(|u|/dx + |v|/dy + |w|/dz), dz the local spacing of the Gauss-Lobatto points",
    "production": "production of fluctuation energy P = -<u'w'> dU/dz - <v'w'> dV/dz over the volume (w across the "
                  "plates, V the spanwise mean flow)",
    "mean_dissipation": "dissipation of the mean flow nu <(dU/dz)^2 + (dV/dz)^2> over the volume",
}


def info(params: type[ChannelParams], implementation: str, dimensions: int) -> EquationInfo:
    """The declaration of the channel in a plane (``dimensions`` 2) or a box (3), named by ``params``' default
    ``name``, stepped by ``implementation`` (``"module:Class"``): one physics, whose geometries differ in their
    fields, the box's diagnostics (:data:`BOX_DIAGNOSTICS`), spectra and default box."""
    plane = dimensions == 2
    fields = {
        "scalar": wall_scalars.FIELD,
        "streamwise": FieldInfo(0, f"streamwise velocity u {'(1, Nx, Nz)' if plane else '(Nx, Ny, Nz)'}", "u",
                                cmap="RdBu_r"),
        **({"vorticity": FieldInfo(0, "vorticity omega = dv/dx - du/dz, v across the plates (1, Nx, Nz)", r"\omega",
                                   cmap="RdBu_r"),
            "velocity": FieldInfo(3, "velocity (u, v, 0): along the plates, across them, and the zero component "
                                     "normal to the plane (3, 1, Nx, Nz)", r"|u|")} if plane else
           {"velocity": FieldInfo(3, "velocity (u, v, w): streamwise, spanwise and across the plates (3, Nx, Ny, Nz)",
                                  r"|u|")}),
    }
    return EquationInfo(
        name=params().name,
        physics="channel",
        summary=f"plane Couette and Poiseuille flow between no-slip plates, in a {'plane' if plane else 'box'} "
                f"(Chebyshev across, nu = 1/Re)",
        params=params,
        initials=(Laminar, TollmienSchlichting),
        protocol=IMEX,
        default_integrator="rk222",
        implementation=implementation,
        dimensions=dimensions,
        walls="required",
        wall_velocity=("no-slip",),
        diagonal_linear=False,
        scales=SCALES,
        default_box=(2 * math.pi, 2.0) if plane else (4 * math.pi, 4 * math.pi / 3, 2.0),
        fields=fields,
        state_fields=("velocity", "scalar"),
        diagnostics=DIAGNOSTICS if plane else {**DIAGNOSTICS, **BOX_DIAGNOSTICS},
        resolution_advice={"wall_resolution": "its spacings in wall units are coarser than a turbulent channel "
                                              "DNS's: refine grid.shape, or lower physics.reynolds, for turbulence; a "
                                              "laminar or linear-stability study, such as a Tollmien-Schlichting "
                                              "wave's, may ignore it"},
        progress=("bulk_velocity", "re_tau", "cfl"),
        spectra={"energy": "kinetic energy of the fluctuations per |k_x|, integrated over y: sums to E_K less the "
                           "mean flow's" if plane else
                           "kinetic energy of the fluctuations per horizontal |k|, integrated across the plates: "
                           "sums to E_K less the mean flow's"},
        spectrum_axes={"energy": "k_h"},
        wall_spectra=WALL_SPECTRA if plane else BOX_WALL_SPECTRA,
        plot=PLOT,
    )
