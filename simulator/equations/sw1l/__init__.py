"""Rotating shallow water in a periodic plane (one layer, FluidSim's ``sw1l``): what the equation declares (no JAX).

    du/dt = (zeta + f) v - d/dx (c^2 eta + |u|^2/2) + L u + F_x,
    dv/dt = -(zeta + f) u - d/dy (c^2 eta + |u|^2/2) + L v,
    d eta/dt = -div((1 + eta) u) + L_eta eta,
    zeta = dv/dx - du/dy,   L = -nu k^2 - nu_p k^(2p) - nu_m k^(-2m) - alpha,   L_eta = -nu k^2 - nu_p k^(2p)

the velocity (u, v) and the surface displacement eta of a layer of mean depth H, in units of H (the depth is
h = H (1 + eta)), c = sqrt(g H) the gravity-wave speed, f the Coriolis parameter (an f-plane), as FluidSim's
``sw1l`` (Augier, Mohanan & Lindborg 2019): its vector-invariant momentum equation and its flux-form mass
equation, viscosity and hyperviscosity on all three fields, the hypoviscosity and the linear friction alpha (bottom
drag) on the velocity only. Linear waves: inertia-gravity (Poincare) waves of frequency
omega^2 = f^2 + c^2 |k|^2 and the steady geostrophic mode f z x u = -c^2 grad eta. Without viscosity and friction
the energy <(1 + eta) |u|^2/2 + c^2 eta^2/2> and the potential enstrophy <(1 + eta) (q - f)^2/2> of the potential
vorticity q = (zeta + f)/(1 + eta) are conserved (Pedlosky 1987, §3.6). The keys every planar flow has (viscosity,
hyper- and hypoviscosity, friction, the forcing) are :class:`~simulator.equations.flow.planar.PlanarParams`'; the
forcings act on the velocity: ``kolmogorov`` F_x = F sin(k_f y), ``random`` a rotational kick of the velocity
injecting exactly ``forcing_power`` dt into <|u|^2>/2 each step.

A plane runs as the box ``(1, Nx, Ny)`` (:mod:`simulator.fft.plane`). The implementation is :mod:`.equation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.equations import flow
from simulator.equations.flow import planar
from simulator.equations.flow.planar import KMAX_ETA, PlanarParams
from simulator.equations.spec import Bound, Budget, Curve, FieldInfo, InitialCondition, Panel, PlotSpec
from simulator.errors import ConfigError
from simulator.schema import param, random_seed, setting


@dataclass(frozen=True)
class SW1LParams(PlanarParams):
    """The gravity-wave speed and the Coriolis parameter, and the keys of every planar flow
    (:class:`~simulator.equations.flow.planar.PlanarParams`), said of the layer's fields."""

    name: str = setting("sw1l", "equation to solve")
    hyperviscosity: float = param(0.0, "hyperviscosity nu_p: the term -nu_p (-lap)^p of u, v and eta (needs "
                                  "physics.hyperviscosity_order)", min=0.0)
    hypoviscosity: float = param(0.0, "hypoviscosity nu_m: the term -nu_m (-lap)^(-m) u of the velocity, acting on the "
                                 "largest scales (needs physics.hypoviscosity_order)", min=0.0)
    friction: float = param(0.0, "linear friction alpha: the term -alpha u of the velocity (bottom drag; 0 = none)",
                            min=0.0)
    wave_speed: float = param(1.0, "gravity-wave speed c = sqrt(g H) (FluidSim's c2 is c^2)", gt=0.0)
    coriolis: float = param(1.0, "Coriolis parameter f (an f-plane; 0: no rotation)", min=0.0)

    def scales(self, diagnostics: Any, shape: Any, box: Any) -> dict[str, float]:
        """The Rossby deformation radius c/f (inf without rotation)."""
        f = self.coriolis
        return {"deformation_radius": self.wave_speed / f if f else float("inf")}


def _needs_rotation(cfg: Any, what: str) -> None:
    """A geostrophic balance f z x u = -c^2 grad eta needs f > 0 (ConfigError, one line)."""
    if cfg.physics.coriolis <= 0:
        raise ConfigError("physics.coriolis", cfg.physics.coriolis, f"f > 0 for initial.name = {what} (its velocity "
                          "is in geostrophic balance, u = (c^2/f) z x grad eta)", "is no rotation")


@dataclass(frozen=True)
class Bump(InitialCondition):
    """At rest with a Gaussian bump of the surface at the plane's centre, eta = A exp(-r^2/(2 sigma^2)): the
    geostrophic adjustment problem (Rossby 1938; Gill 1982, §7.2): inertia-gravity waves leave, a balanced vortex
    of the deformation radius c/f stays."""

    name: str = setting("bump", "initial condition")
    amplitude: float = param(0.1, "height A of the bump, in units of the mean depth H", gt=-1.0)
    width: float = param(0.5, "width sigma of the bump (keep it well below the box)", gt=0.0)


@dataclass(frozen=True)
class Vortex(InitialCondition):
    """A Gaussian vortex in geostrophic balance: eta = A exp(-r^2/(2 sigma^2)) at the plane's centre and
    u = (c^2/f) z x grad eta, formed spectrally from eta's spectrum (balanced to round-off in the linear sense;
    A > 0 an anticyclone, A < 0 a cyclone)."""

    name: str = setting("vortex", "initial condition")
    amplitude: float = param(0.05, "surface displacement A at the centre, in units of H", gt=-1.0)
    width: float = param(0.5, "width sigma of the vortex (keep it well below the box)", gt=0.0)

    def check(self, cfg: Any) -> None:
        _needs_rotation(cfg, self.name)


@dataclass(frozen=True)
class RandomBalanced(InitialCondition):
    """A random surface displacement of rms ``eta_rms``, shaped as ns2d's random vorticity (its spectrum peaked at
    ``k_peak``), with the velocity in geostrophic balance u = (c^2/f) z x grad eta: no divergence, and to linear
    order no inertia-gravity waves."""

    name: str = setting("random_balanced", "initial condition")
    eta_rms: float = param(0.02, "rms surface displacement sqrt(<eta^2>), in units of H", gt=0.0)
    k_peak: float = param(4.0, "peak mode number of the spectrum", gt=0.0)
    slope: float = param(4.0, "the spectrum's slope s below its peak", gt=0.0)
    seed: int = random_seed("random seed (0 to 2^32 - 1)")

    def check(self, cfg: Any) -> None:
        _needs_rotation(cfg, self.name)


@dataclass(frozen=True)
class RandomUnbalanced(InitialCondition):
    """A random velocity, rotational part from a stream function (seed) and divergent part from a potential
    (seed + 1), and an independent random surface displacement (seed + 2), each with ns2d's random spectrum: the
    divergent part holds the share ``divergent`` of the kinetic energy <|u|^2>/2. Out of balance: it radiates
    inertia-gravity waves."""

    name: str = setting("random", "initial condition")
    energy: float = param(0.05, "kinetic energy <|u|^2>/2", gt=0.0)
    divergent: float = param(0.5, "share of the kinetic energy in the divergent (irrotational) part", min=0.0,
                             max=1.0)
    eta_rms: float = param(0.02, "rms surface displacement sqrt(<eta^2>), in units of H", min=0.0)
    k_peak: float = param(4.0, "peak mode number of the spectra", gt=0.0)
    slope: float = param(4.0, "the spectra's slope s below their peak", gt=0.0)
    seed: int = random_seed("random seed (0 to 2^32 - 3)", max=2**32 - 3)


INFO = flow.info(
    SW1LParams, (Bump, Vortex, RandomBalanced, RandomUnbalanced), "SW1L",
    summary="rotating shallow water in a plane, one layer (FluidSim's sw1l): velocity and surface displacement, "
            "gravity waves, Coriolis, viscosity, hyperviscosity, friction, Kolmogorov forcing",
    dimensions=2,
    fields={
        "velocity": planar.velocity(),
        "height": FieldInfo(0, "surface displacement eta, in units of the mean depth H: the depth is H (1 + eta) "
                               "(1, Nx, Ny)", r"\eta", cmap="RdBu_r"),
        "vorticity": FieldInfo(0, "vorticity zeta = dv/dx - du/dy (1, Nx, Ny)", r"\zeta", cmap="RdBu_r",
                               snapshot=False),
        "divergence": FieldInfo(0, "divergence du/dx + dv/dy (1, Nx, Ny)", r"\nabla\cdot u", cmap="RdBu_r"),
        "potential_vorticity": FieldInfo(0, "potential vorticity anomaly q - f = (zeta - f eta)/(1 + eta), q = "
                                            "(zeta + f)/(1 + eta) Ertel's in units of H (FluidSim's) (1, Nx, Ny)",
                                            "q - f", cmap="RdBu_r"),
    },
    state_fields=("velocity", "height"),
    diagnostics={
        **flow.energies("potential_energy", "E_P", "c^2 <eta^2>/2", "viscosity, friction and forcing",
                        kinetic="<(1 + eta) |u|^2>/2"),
        "potential_enstrophy": "potential enstrophy <(1 + eta) (q - f)^2>/2 = <(zeta - f eta)^2/(1 + eta)>/2 "
                               "(conserved without viscosity, friction and forcing)",
        "divergent_share": "the divergence's share of the kinetic energy: <|u_d|^2>/<|u|^2>, u_d the irrotational "
                           "part of u (Helmholtz), 0 for a balanced flow",
        "rossby": "Rossby number <zeta^2>^(1/2)/f (0 without rotation)",
        "froude": "Froude number <|u|^2>^(1/2)/c",
        "max_height": "max |eta|",
        "min_depth": "the smallest depth min(1 + eta), in units of H: the run stops where it is no longer positive",
        "dissipation": "the rate at which viscosity, hyper- and hypoviscosity and friction remove E_K + E_P: "
                       "-<(1 + eta) u . L u + (|u|^2/2 + c^2 eta) L_eta eta> (exact for the discrete fields)",
        "injection": "injected power (forced runs): <(1 + eta) u . F> for kolmogorov, forcing_power (into <|u|^2>/2) "
                     "for random",
        "cfl": "CFL number dt (max(|u|/dx + |v|/dy) + c (1/dx + 1/dy)): the flow and the gravity waves",
        "kmax_eta": KMAX_ETA,
    },
    progress=("total_energy", "rossby", "cfl"),
    resolution_advice={"kmax_eta": "refine grid.shape, or raise physics.viscosity or physics.hyperviscosity"},
    # a layer of no depth, or a negative one, is no shallow water: the flux (1 + eta) u and the potential vorticity's
    # 1/(1 + eta) change sign or diverge, and the run would go on with a meaningless "depth" (wetting and drying is
    # not modelled)
    bounds={"min_depth": Bound(0.0, "the layer ran dry, its depth H (1 + eta) no longer positive somewhere, which "
                               "shallow water does not describe", "start it weaker or force it less: a smaller "
                               "initial.energy, initial.eta_rms or initial.amplitude, physics.forcing_power or "
                               "physics.forcing_amplitude")},
    scales={"deformation_radius": "Rossby deformation radius c/f"},
    spectra={
        "energy": "kinetic energy spectrum: 0.5 |u_hat|^2 / N^2 (Parseval-weighted) summed over the ring k; sums to "
                  "<|u|^2>/2",
        "potential_energy": "potential energy spectrum: 0.5 c^2 |eta_hat|^2 / N^2 per ring; sums to E_P",
        "divergent_energy": "the divergent part's: 0.5 |k . u_hat|^2/(k^2 N^2) per ring",
    },
    plot=PlotSpec(
        panels=(
            flow.energy_panel("potential_energy", "E_P"),
            Panel("enstrophy", (Curve("potential_enstrophy", r"$\langle h (q - f)^2\rangle/2$"),)),
            Panel("numbers", (Curve("rossby", "Ro"), Curve("froude", "Fr"),
                              Curve("divergent_share", "divergent share"))),
            Panel("max", (Curve("max_height", r"$\max|\eta|$"),)),
        ),
        spectrum="energy",
        spectrum_label=r"$E_K(k)$, $\Sigma_k E_K(k) = \langle|u|^2\rangle/2$",
        slice_field="potential_vorticity",
        more_slices=("divergence", "height"),
        budget=Budget("total_energy", losses=("dissipation",), gains=("injection",), label="E_K + E_P"),
        resolved=2 / 3,
        viscosity="viscosity",
        more_spectra=("potential_energy", "divergent_energy"),
        side_by_side=("energy", "potential_energy"),
        labels={"energy": "kinetic energy", "potential_energy": "potential energy",
                "divergent_energy": "divergent kinetic energy"},
    ),
)
