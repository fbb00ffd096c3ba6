"""Rotating, stably stratified Boussinesq flow in a periodic box: what the equation declares (no JAX).

    du/dt + (u.grad)u = -grad(p) + b z - f z x u + nu lap(u) - nu_p (-lap)^p u,   div u = 0
    db/dt + u.grad(b) = -N^2 w + kappa lap(b) - kappa_p (-lap)^p b

b is the buoyancy anomaly about a background of constant Brunt-Vaisala frequency N, f the Coriolis
parameter (rotation about z, which is also the direction of gravity); the hyperviscous and
hyperdiffusive terms only with ``hyperviscosity_order`` p set, and then with kappa_p = nu_p. The
implementation is :mod:`.equation`; the linear part (buoyancy, Coriolis, diffusion, hyper-diffusion) is
integrated exactly per mode (:mod:`.waves`), so the waves set no time-step limit. Optional passive
scalars (``physics.scalars``, :mod:`simulator.equations.scalars`) ride on the flow as in Navier-Stokes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.equations import flow, resolution, scalars as passive, scales
from simulator.equations.flow import FlowInitial, FlowParams
from simulator.equations.spec import Budget, Curve, FieldInfo, Kolmogorov, Panel, PlotSpec
from simulator.errors import ConfigError
from simulator.schema import param, random_seed, setting


@dataclass(frozen=True)
class BoussinesqParams(FlowParams):
    """Viscosity, diffusivity, optional hyperviscosity and hyperdiffusivity, stratification, rotation, optional
    constant-power forcing and passive scalars."""

    name: str = setting("boussinesq", "equation to solve")
    hyperviscosity: float = param(0.0, "hyperviscosity nu_p: the term -nu_p (-lap)^p u = -nu_p |k|^(2p) u_hat of "
                                  "the velocity, in the exact wave propagator (needs physics.hyperviscosity_order "
                                  "and physics.hyperdiffusivity = nu_p)", min=0.0)
    hyperviscosity_order: int | None = flow.order_key("hyperviscous and hyperdiffusive terms", "such term")
    diffusivity: float = param(0.01, "buoyancy diffusivity kappa (kappa = nu: the linear part is exact)", min=0.0)
    hyperdiffusivity: float = param(0.0, "hyperdiffusivity kappa_p of the buoyancy, -kappa_p |k|^(2p) b_hat; must "
                                    "equal physics.hyperviscosity (the wave propagator is exact for one "
                                    "hyperviscous rate of u and b)", min=0.0)
    brunt_vaisala: float = param(4.0, "Brunt-Vaisala frequency N of the background stratification (0: none; "
                                 "rotation only, potential energy and Froude number then reported as 0)", min=0.0)
    coriolis: float = param(0.0, "Coriolis parameter f (rotation rate 2 Omega about z)")
    scalars: tuple[passive.PassiveScalar, ...] = passive.scalar_list()

    def hyperviscous_coefficients(self) -> dict[str, float]:
        """nu_p and kappa_p, both served by the one order."""
        return {**super().hyperviscous_coefficients(), "physics.hyperdiffusivity": self.hyperdiffusivity}

    def check(self, cfg: Any) -> None:
        """The order and the coefficients together (:func:`~simulator.equations.flow.check_hyperviscosity`),
        and kappa_p = nu_p: the propagator of :mod:`.waves` is exact when u and b are damped at one rate per
        mode; unequal hyperviscous rates would be split from the waves (Strang), with an error of order
        (nu_p - kappa_p) k^(2p) dt (omega dt)^2 per step, O(1) at the grid scale where k^(2p) dt nu_p is of
        order 1, exactly where the term acts (unequal nu, kappa are split the same way, their rate being
        small there)."""
        super().check(cfg)
        if self.hyperdiffusivity != self.hyperviscosity:
            raise ConfigError("physics.hyperdiffusivity", self.hyperdiffusivity, "it must equal "
                              f"physics.hyperviscosity = {self.hyperviscosity:g} (the exact wave propagator has one "
                              "hyperviscous rate for u and b)", "differs from physics.hyperviscosity")

    def scales(self, diagnostics: Any, shape: Any, box: Any) -> dict[str, float]:
        """Kolmogorov and Taylor scales of the velocity, buoyancy and inertial periods, Ozmidov length and
        buoyancy Reynolds number (:mod:`simulator.equations.scales`)."""
        eps = diagnostics["kinetic_dissipation"]
        return {**scales.turbulence(self.viscosity, eps, diagnostics["kinetic_energy"]),
                **scales.stratified(self.brunt_vaisala, self.coriolis, self.viscosity, eps)}


@dataclass(frozen=True)
class Wave(FlowInitial):
    """One internal gravity-inertia wave, an exact solution of the full equations: u = A (e2 cos phi +
    (f k_z/(k omega)) e1 sin phi), b = A N^2 k_h/(k omega) sin phi, phi = k.x - omega t, omega^2 =
    (N^2 k_h^2 + f^2 k_z^2)/k^2, e1 = k x z/|k x z|, e2 = e1 x k/k (its phase runs along +k)."""

    name: str = setting("wave", "initial condition")
    amplitude: float = param(0.1, "velocity amplitude A along e2", gt=0.0)
    modes: tuple[int, int, int] = setting((1, 0, 1), "mode numbers (m_x, m_y, m_z) of the wavevector; "
                                          "(m_x, m_y) != (0, 0)", mode_axes="xyz")
    scalars: passive.ScalarInitial = passive.scalar_initial()

    def check(self, cfg: Any) -> None:
        super().check(cfg)
        shape = cfg.grid.cells
        if self.modes[0] == 0 and self.modes[1] == 0:
            raise ConfigError("initial.modes", list(self.modes), "needs a horizontal component: (m_x, m_y) != (0, 0)",
                              "is a purely vertical wavevector (an inertial oscillation, not a wave of N)")
        if any(3 * abs(m) >= n for m, n in zip(self.modes, shape, strict=True)):
            raise ConfigError("initial.modes", list(self.modes), f"every |m_i| must be below N_i/3 for grid.shape "
                              f"{list(shape)}", "is removed by the 2/3 dealiasing")
        physics = cfg.physics
        if physics.brunt_vaisala == 0 and (physics.coriolis == 0 or self.modes[2] == 0):
            raise ConfigError("initial.modes", list(self.modes), "without stratification (physics.brunt_vaisala = 0) "
                              "a wave needs rotation (physics.coriolis != 0) and a vertical mode number m_z != 0",
                              "has frequency 0 here (no wave)")


@dataclass(frozen=True)
class Rest(FlowInitial):
    """At rest plus a small random perturbation: solenoidal velocity of rms epsilon and buoyancy of rms
    N epsilon (equal kinetic and potential energy), spectra ~ k^4 exp(-2 (k/k_peak)^2); the start of a
    forced run (keep P dt/epsilon^2 of order 1 or less: constant-power forcing amplifies u at P/(2 E))."""

    name: str = setting("rest", "initial condition")
    amplitude: float = param(1e-3, "rms velocity epsilon of the perturbation", gt=0.0)
    k_peak: float = param(4.0, "peak mode number of the perturbation's spectrum", gt=0.0)
    seed: int = random_seed("random seed (0 to 2^32 - 1)")
    scalars: passive.ScalarInitial = passive.scalar_initial()


@dataclass(frozen=True)
class RandomFlow(FlowInitial):
    """A random solenoidal velocity and a random buoyancy, spectra ~ k^4 exp(-2 (k/k_peak)^2), the same on
    any device layout and precision for a given seed."""

    name: str = setting("random", "initial condition")
    amplitude: float = param(1.0, "rms velocity sqrt(<|u|^2>)", gt=0.0)
    buoyancy: float = param(0.0, "rms buoyancy sqrt(<b^2>) (0 = none)", min=0.0)
    k_peak: float = param(4.0, "peak mode number of the spectra", gt=0.0)
    seed: int = random_seed("random seed (0 to 2^32 - 1)")
    scalars: passive.ScalarInitial = passive.scalar_initial()


_SHELLS = "(Parseval-weighted, n the number of grid cells) summed over the modes of shell k"

INFO = flow.info(
    BoussinesqParams, (Wave, Rest, RandomFlow), "Boussinesq",
    summary="rotating stratified Boussinesq flow: exact gravity-inertia wave propagator, 2/3 dealiasing, optional "
            "hyperviscosity",
    diagonal_linear=False,  # the waves couple u, v, w and b per mode: only their exp(L tau) is built
    fields={**flow.BOX_FIELDS, "buoyancy": FieldInfo(0, "buoyancy anomaly b", "b", "RdBu_r")},
    state_fields=("velocity", "buoyancy"),
    diagnostics={
        **flow.energies("potential_energy", "E_P", "<b^2>/(2 N^2)", "viscosity, diffusion and forcing"),
        "horizontal_energy": "horizontal kinetic energy <u^2 + v^2>/2",
        "vertical_energy": "vertical kinetic energy <w^2>/2",
        "kinetic_dissipation": "kinetic dissipation rate nu <|w|^2> (+ nu_p <|k|^(2p) |u_hat|^2> with "
                               "hyperviscosity, a Parseval mean)",
        "potential_dissipation": "potential dissipation rate (kappa <|grad b|^2> + kappa_p <|k|^(2p) |b_hat|^2>)/N^2 "
                                 "(the second term with hyperdiffusivity)",
        "buoyancy_flux": "<w b>: the conversion rate of potential into kinetic energy",
        "froude": "Froude number U/(N L): U = <|u|^2>^(1/2), L = 2 pi sum E(k)/k / sum E(k)",
        "rossby": "Rossby number U/(|f| L) (0 without rotation)",
        "max_div": flow.MAX_DIV,
        "cfl": "CFL number dt max(sum_i |u_i|/dx_i) (the waves are exact and set no limit)",
        "kmax_eta": resolution.KMAX_ETA + " (the smaller of eta and the buoyancy's Batchelor/Obukhov-Corrsin "
                    "scale for Pr = viscosity/diffusivity; with hyperviscosity each the larger of it and "
                    "(nu_p^3/epsilon)^(1/(6p-2)))",
        "injection": flow.INJECTION,
    },
    progress=("total_energy", "froude", "cfl"),
    resolution_advice={"kmax_eta": "refine grid.shape, or raise physics.viscosity and physics.diffusivity (or "
                                   "physics.hyperviscosity and physics.hyperdiffusivity)"},
    scales={**scales.TURBULENCE, **scales.STRATIFIED},
    spectrum_axes={"energy_kh": "k_h", "energy_kz": "k_z", "potential_energy_kh": "k_h", "potential_energy_kz": "k_z"},
    spectra={
        "energy": f"kinetic energy spectrum E_K(k): 0.5 |u_hat|^2 / n^2 {_SHELLS} of |k|; sums to E_K",
        "potential_energy": f"potential energy spectrum E_P(k): 0.5 |b_hat|^2 / (n^2 N^2) {_SHELLS} of |k|; sums "
                            "to E_P",
        "energy_kh": "E_K by horizontal wavenumber: the power of E_K(k) summed over the modes of shell k_h = "
                     "(k_x^2 + k_y^2)^(1/2)",
        "energy_kz": "E_K by vertical wavenumber: the power of E_K(k) summed over the modes of shell |k_z|",
        "potential_energy_kh": "E_P by horizontal wavenumber: the power of E_P(k) summed over the modes of shell k_h",
        "potential_energy_kz": "E_P by vertical wavenumber: the power of E_P(k) summed over the modes of shell |k_z|",
        "energy_kh_kz": "E_K by horizontal and vertical wavenumber: the power of E_K(k) summed over the modes with "
                        "round(k_h/dk) = i and round(|k_z|/dk) = j, a (k_h, k_z) map; sums to E_K",
        "potential_energy_kh_kz": "E_P by horizontal and vertical wavenumber, as energy_kh_kz; sums to E_P",
        "transfer_energy": "T_K(k): rate of change of E_K(k) by advection, same normalisation as E_K(k); sums to 0",
        "transfer_potential_energy": "T_P(k): rate of change of E_P(k) by advection of b; sums to 0",
        "conversion_energy": "C_K(k): rate of change of E_K(k) by the buoyancy flux, Re conj(w_hat) b_hat per mode; "
                             "sums to <w b>",
        "conversion_potential_energy": "C_P(k) = -C_K(k): rate of change of E_P(k) by the buoyancy flux, so that "
                                       "dE_K(k)/dt = T_K + C_K + F - 2 (nu k^2 + nu_p k^(2p)) E_K and dE_P(k)/dt = "
                                       "T_P + C_P - 2 (kappa k^2 + kappa_p k^(2p)) E_P",
        "injection_energy": flow.INJECTION_SPECTRUM,
    },
    plot=PlotSpec(
        panels=(
            flow.energy_panel("potential_energy", "E_P", r" = \langle|u|^2\rangle/2", r" = \langle b^2\rangle/2N^2"),
            Panel("kinetic energy", (Curve("horizontal_energy", r"$\langle u^2+v^2\rangle/2$"),
                                     Curve("vertical_energy", r"$\langle w^2\rangle/2$")), log="auto"),
            Panel("rate", (Curve("kinetic_dissipation", r"$\varepsilon_K = \nu\langle|\omega|^2\rangle$",
                                 hyperviscous=r" $+ \nu_p\langle k^{2p}|\hat u|^2\rangle$"),
                           Curve("potential_dissipation", r"$\varepsilon_P = \kappa\langle|\nabla b|^2\rangle/N^2$",
                                 hyperviscous=r" $+ \kappa_p\langle k^{2p}|\hat b|^2\rangle/N^2$"),
                           Curve("buoyancy_flux", r"$\langle wb\rangle$ (to $E_K$)"),
                           Curve("injection", r"$P = \langle u\cdot f\rangle$ (forcing)"))),
            Panel("number", (Curve("froude", r"$Fr = U/NL$"), Curve("rossby", r"$Ro = U/fL$")), log="auto"),
        ),
        spectrum="energy_kh",
        resolved=2 / 3,  # dealiased by the 2/3 rule: shells past it are empty or partly filled
        spectrum_label=r"$E_K(k_h)$, kinetic energy by horizontal wavenumber",
        slice_field="buoyancy",
        spectrum_guide=-5 / 3,
        kolmogorov=Kolmogorov(("kinetic_dissipation",)),  # E_K(k_h), horizontal: not C_K's 3D spectrum
        budget=Budget("total_energy", losses=("kinetic_dissipation", "potential_dissipation"), gains=("injection",),
                      label="E_K + E_P"),
        side_by_side=("energy", "potential_energy"),
        maps=("energy_kh_kz", "potential_energy_kh_kz"),
        labels={"energy": "kinetic energy", "potential_energy": "potential energy",
                "energy_kh": "horizontal-wavenumber kinetic energy", "energy_kh_kz": "(k_h, k_z) kinetic energy",
                "potential_energy_kh_kz": "(k_h, k_z) potential energy"},
    ),
)
