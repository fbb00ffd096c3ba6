"""Incompressible Navier-Stokes in a periodic plane, in vorticity form: what the equation declares (no JAX).

    d omega/dt + u . grad omega = nu lap omega - nu_p (-lap)^p omega - nu_m (-lap)^(-m) omega - alpha omega + f,
    u = (d psi/dy, -d psi/dx),   omega = -lap psi

one scalar, the vorticity, with the stream function from one Poisson solve per evaluation, as FluidSim's
``ns2d`` steps it: viscosity, hyperviscosity (order p), hypoviscosity (order m: removes energy at the
largest scales, where the inverse cascade arrives) and linear friction alpha (the bottom drag of a thin layer,
the usual large-scale sink). Forcing: ``random`` (a band of modes around ``forcing_wavenumber``, random phases
drawn anew each step, applied as a kick whose energy is exactly ``forcing_power`` dt: a fixed injection rate)
or ``kolmogorov`` (f_x = F sin(k_f y), the steady Kolmogorov flow's). Passive scalars ride on the flow
(``physics.scalars``, :mod:`simulator.equations.scalars`), their mean gradients in the plane.

A plane runs as the box ``(1, Nx, Ny)`` (:mod:`simulator.fft.plane`): fields are ``(1, Nx, Ny)`` arrays.
The implementation is :mod:`.equation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.equations import flow, scalars as passive
from simulator.equations.flow import planar
from simulator.equations.flow.planar import FORCED_DIAGNOSTICS, KMAX_ETA, PlanarParams
from simulator.equations.spec import Budget, Curve, Panel, PlotSpec
from simulator.schema import param, random_seed, setting


@dataclass(frozen=True)
class NS2DParams(PlanarParams):
    """The planar flow's keys (:class:`~simulator.equations.flow.planar.PlanarParams`) and passive scalars."""

    name: str = setting("ns2d", "equation to solve")
    scalars: tuple[passive.PassiveScalar, ...] = passive.scalar_list()

    def scales(self, diagnostics: Any, shape: Any, box: Any) -> dict[str, float]:
        """The enstrophy-dissipation scale (nu^3/chi)^(1/6) and, with friction, the friction scale
        sqrt(epsilon/alpha^3) at which friction stops the inverse cascade (Boffetta & Ecke 2012)."""
        chi = max(float(diagnostics.get("dissipation_enstrophy", 0.0)), 1e-300)
        out = {"enstrophy_scale": (self.viscosity**3 / chi) ** (1 / 6) if self.viscosity else float("nan")}
        eps = float(diagnostics.get("injection", 0.0))
        if self.friction and eps > 0:
            out["friction_scale"] = (eps / self.friction**3) ** 0.5
        return out


@dataclass(frozen=True)
class TaylorGreen(flow.FlowInitial):
    """omega = 2 A sin(2 pi x/Lx) sin(2 pi y/Ly) (u = A (sin x cos y, -cos x sin y) in a 2 pi square): an
    eigenfunction of the Laplacian, so the nonlinear term is zero and it decays exactly."""

    name: str = setting("taylor_green", "initial condition")
    amplitude: float = param(1.0, "velocity amplitude A", gt=0.0)
    scalars: passive.ScalarInitial = passive.scalar_initial()


@dataclass(frozen=True)
class RandomVorticity(flow.FlowInitial):
    """A random vorticity with the energy spectrum E(k) ~ k^s exp(-(s/2) (k/k_peak)^2) (its peak at k_peak) and
    the energy ``energy``, the same on any device layout for a given seed."""

    name: str = setting("random", "initial condition")
    energy: float = param(0.5, "kinetic energy <|u|^2>/2", gt=0.0)
    k_peak: float = param(6.0, "peak mode number of the energy spectrum", gt=0.0)
    slope: float = param(4.0, "the spectrum's slope s below its peak, E ~ k^s", gt=0.0)
    seed: int = random_seed("random seed (0 to 2^32 - 1)")
    scalars: passive.ScalarInitial = passive.scalar_initial()


@dataclass(frozen=True)
class DoubleShearLayer(flow.FlowInitial):
    """Two shear layers u = tanh((y' - pi/2) rho) (y' <= pi), tanh((3 pi/2 - y') rho) (y' > pi) with the
    perturbation v = delta sin(x'), x' = 2 pi x/Lx, y' = 2 pi y/Ly (Bell, Colella & Glaz 1989; Minion & Brown
    1997): the layers roll up into vortices."""

    name: str = setting("double_shear_layer", "initial condition")
    rho: float = param(30.0, "inverse thickness rho of the layers in y' = 2 pi y/Ly (Bell, Colella & Glaz's thick "
                       "and thin layers, 30 and 80 in a unit box, are 30/(2 pi) and 80/(2 pi))", gt=0.0)
    delta: float = param(0.05, "amplitude of the perturbation v", min=0.0)
    scalars: passive.ScalarInitial = passive.scalar_initial()


@dataclass(frozen=True)
class Dipole(flow.FlowInitial):
    """The Lamb-Chaplygin dipole: omega = -2 U k J1(k r)/J0(k a) sin(theta) inside r < a, 0 outside, k a the
    first zero of J1 (3.8317...): a steady solution of the Euler equations translating at speed U along x
    (Lamb 1932, §165; Meleshko & van Heijst 1994). Periodic images are left out: keep a well below the box."""

    name: str = setting("dipole", "initial condition")
    speed: float = param(1.0, "translation speed U along x", gt=0.0)
    radius: float = param(1.0, "radius a of the dipole", gt=0.0)
    scalars: passive.ScalarInitial = passive.scalar_initial()


INFO = flow.info(
    NS2DParams, (TaylorGreen, RandomVorticity, DoubleShearLayer, Dipole), "NS2D",
    summary="incompressible Navier-Stokes in a plane, vorticity form (FluidSim's ns2d), hyper- and hypoviscosity, "
            "linear friction, random or Kolmogorov forcing",
    dimensions=2,
    fields={"vorticity": planar.VORTICITY, "velocity": planar.velocity(), "stream_function": planar.STREAM_FUNCTION},
    state_fields=("vorticity",),
    diagnostics={
        "energy": "kinetic energy E = <|u|^2>/2",
        "enstrophy": planar.ENSTROPHY,
        "palinstrophy": "palinstrophy P = <|grad omega|^2>/2",
        "max_vorticity": planar.MAX_VORTICITY,
        "dissipation": "energy dissipation 2 nu Z + nu_p <k^(2p) |u_hat|^2> + nu_m <k^(-2m) |u_hat|^2> + 2 alpha E "
                       "(Parseval means; each term with its coefficient)",
        "dissipation_enstrophy": "enstrophy dissipation 2 nu P + the same hyper-, hypoviscous and friction terms "
                                 "of omega",
        **FORCED_DIAGNOSTICS,
        "cfl": "CFL number dt max(|u|/dx + |v|/dy)",
        "kmax_eta": KMAX_ETA,
    },
    progress=("energy", "cfl"),
    resolution_advice={"kmax_eta": "refine grid.shape, or raise physics.viscosity or physics.hyperviscosity"},
    scales={"enstrophy_scale": "enstrophy-dissipation scale (nu^3/chi)^(1/6)",
            "friction_scale": "friction scale sqrt(epsilon/alpha^3), where friction stops the inverse cascade"},
    spectra={
        "energy": "energy spectrum E(k): 0.5 |u_hat|^2 / N^2 (Parseval-weighted) summed over the ring k; sums to E",
        "enstrophy": "enstrophy spectrum Z(k) = k^2 E(k) summed over the ring k; sums to Z",
        "transfer_energy": "energy transfer T_E(k): Re(conj(psi_hat) (-u.grad omega)_hat) / N^2 per ring; sums to 0",
        "transfer_enstrophy": "enstrophy transfer T_Z(k): Re(conj(omega_hat) (-u.grad omega)_hat) / N^2 per ring; "
                              "sums to 0",
        "flux_energy": "energy flux Pi_E(k) = -sum_{k' <= k} T_E(k') through k (negative: the inverse cascade)",
        "flux_enstrophy": "enstrophy flux Pi_Z(k) = -sum_{k' <= k} T_Z(k') through k (positive: the direct cascade)",
        "injection_energy": "energy injection F(k) by the forcing per ring (forced runs)",
    },
    plot=PlotSpec(
        panels=(
            Panel("energy", (Curve("energy", r"$E = \langle|u|^2\rangle/2$"),)),
            Panel("enstrophy", (Curve("enstrophy", r"$Z = \langle\omega^2\rangle/2$"),)),
            Panel("rate", (Curve("dissipation", r"$\varepsilon$ (all sinks)"),
                           Curve("injection", r"$P$ (forcing)"))),
            Panel("max", (Curve("max_vorticity", r"$\max|\omega|$"),)),
        ),
        spectrum="energy",
        spectrum_label=r"$E(k)$, $\Sigma_k E(k) = \langle|u|^2\rangle/2$",
        slice_field="vorticity",
        spectrum_guide=-3.0,  # the enstrophy cascade's range (Kraichnan 1967); the inverse cascade's k^(-5/3) too
        more_guides=(-5 / 3,),
        budget=Budget("energy", losses=("dissipation",), gains=("injection",), label="E"),
        resolved=2 / 3,
        viscosity="viscosity",
        more_spectra=("enstrophy",),
        labels={"energy": "energy", "enstrophy": "enstrophy"},
    ),
)
