"""Incompressible magnetohydrodynamics in a periodic box: what the equation declares (no JAX).

    du/dt = u x w + j x B - grad(P) + nu lap(u) - nu_p (-lap)^p u,
    dB/dt = curl(u x B) + eta lap(B) - eta_p (-lap)^p B,    div u = div B = 0,   w = curl u,   j = curl B

with B in Alfven units (B/sqrt(mu0 rho), a velocity); the hyperviscous and hyper-resistive terms only
with ``hyperviscosity_order`` p set. A uniform mean field B0 is the k = 0 mode of B:
part of the state, kept by every operator. The implementation is :mod:`.equation`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from simulator.equations import flow, resolution, scales
from simulator.equations.flow import FlowParams
from simulator.equations.spec import Budget, Curve, FieldInfo, InitialCondition, Kolmogorov, Panel, PlotSpec
from simulator.schema import param, random_seed, setting

_MEAN_FIELD = "uniform mean field B0 (Bx, By, Bz) added to the field, Alfven units"


@dataclass(frozen=True)
class MHDParams(FlowParams):
    """Viscosity, resistivity, optional hyperviscosity and hyper-resistivity, and optional constant-power
    forcing of the velocity."""

    name: str = setting("mhd", "equation to solve")
    hyperviscosity_order: int | None = flow.order_key("hyperviscous and hyper-resistive terms", "such term")
    resistivity: float = param(0.01, "magnetic diffusivity eta", min=0.0)
    hyperresistivity: float = param(0.0, "hyper-resistivity eta_p: the term -eta_p (-lap)^p B = -eta_p |k|^(2p) "
                                    "B_hat of the magnetic field, integrated exactly (needs "
                                    "physics.hyperviscosity_order)", min=0.0)

    def hyperviscous_coefficients(self) -> dict[str, float]:
        """nu_p and eta_p, both served by the one order."""
        return {**super().hyperviscous_coefficients(), "physics.hyperresistivity": self.hyperresistivity}

    def scales(self, diagnostics: Any, shape: Any, box: Any) -> dict[str, float]:
        """Kolmogorov and Taylor scales with the total (viscous + ohmic) dissipation, the magnetic Prandtl
        number and the Alfven speed (:mod:`simulator.equations.scales`)."""
        eps = diagnostics["viscous_dissipation"] + diagnostics["ohmic_dissipation"]
        return {**scales.turbulence(self.viscosity, eps, diagnostics["kinetic_energy"]),
                "magnetic_prandtl": self.viscosity / self.resistivity if self.resistivity else math.inf,
                "alfven_speed": math.sqrt(2 * max(diagnostics["magnetic_energy"], 0.0))}


@dataclass(frozen=True)
class OrszagTang(InitialCondition):
    """The 3D Orszag-Tang vortex of Politano, Pouquet & Sulem 1995 in the form of Mininni, Pouquet &
    Montgomery 2006: u = A (-2 sin y, 2 sin x, 0), B = beta (-2 sin 2y + sin z, 2 sin x + sin z,
    sin x + sin y) in units of the box; A = 1, beta = 0.8 give E_K = 2, E_M = 1.92, <u.B> = 1.6."""

    name: str = setting("orszag_tang", "initial condition")
    amplitude: float = param(1.0, "velocity amplitude A", min=0.0)
    magnetic_amplitude: float = param(0.8, "magnetic amplitude beta", min=0.0)
    mean_field: tuple[float, float, float] = setting((0.0, 0.0, 0.0), _MEAN_FIELD)


@dataclass(frozen=True)
class ABCDynamo(InitialCondition):
    """A kinematic-dynamo start: the ABC flow (A = B = C, mode m, as for Navier-Stokes) and a weak random
    seed field (spectrum ~ k^4 exp(-2 (k/k_peak)^2)). Sustain the flow with physics.forcing."""

    name: str = setting("abc_dynamo", "initial condition")
    amplitude: float = param(1.0, "velocity amplitude A = B = C", gt=0.0)
    wavenumber: int = setting(1, "mode number m of the flow", min=1, mode_axes="xyz")
    seed_amplitude: float = param(1e-3, "rms of the seed field", gt=0.0)
    k_peak: float = param(4.0, "peak mode number of the seed field's spectrum", gt=0.0)
    seed: int = random_seed("random seed of the seed field (0 to 2^32 - 1)")
    mean_field: tuple[float, float, float] = setting((0.0, 0.0, 0.0), _MEAN_FIELD)


@dataclass(frozen=True)
class RandomMHD(InitialCondition):
    """Random solenoidal velocity and magnetic fields, spectra ~ k^4 exp(-2 (k/k_peak)^2), the same on any
    layout and precision for a given seed (the magnetic field is drawn from seed + 1)."""

    name: str = setting("random", "initial condition")
    amplitude: float = param(1.0, "rms velocity", gt=0.0)
    magnetic_amplitude: float = param(1.0, "rms of the fluctuating field B - B0", gt=0.0)
    k_peak: float = param(4.0, "peak mode number of the spectra", gt=0.0)
    seed: int = random_seed("random seed (0 to 2^32 - 2)", max=2**32 - 2)
    mean_field: tuple[float, float, float] = setting((0.0, 0.0, 0.0), _MEAN_FIELD)


_SHELLS = "(Parseval-weighted) summed over the modes of shell k"

INFO = flow.info(
    MHDParams, (OrszagTang, ABCDynamo, RandomMHD), "MHD",
    summary="incompressible MHD in Alfven units, rotational form, Leray projection of u and B, 2/3 dealiasing, "
            "optional hyperviscosity and hyper-resistivity",
    fields={
        **flow.BOX_FIELDS,
        "magnetic": FieldInfo(3, "magnetic field B, Alfven units (with the mean field)", r"|B|", "magma"),
        "current": FieldInfo(3, "current density j = curl B", r"|j|", "inferno"),
    },
    state_fields=("velocity", "magnetic"),
    diagnostics={
        **flow.energies("magnetic_energy", "E_M", "<|B|^2>/2 (with the mean field's |B0|^2/2)",
                        "viscosity, resistivity and forcing"),
        "cross_helicity": "cross helicity <u.B> (an ideal invariant)",
        "magnetic_helicity": "magnetic helicity <A.b>, b = curl A, Coulomb gauge, fluctuations only (an ideal "
                             "invariant when B0 = 0)",
        "viscous_dissipation": "viscous dissipation rate nu <|w|^2> (+ nu_p <|k|^(2p) |u_hat|^2> with "
                               "hyperviscosity, a Parseval mean)",
        "ohmic_dissipation": "ohmic dissipation rate eta <|j|^2> (+ eta_p <|k|^(2p) |B_hat|^2> with "
                             "hyper-resistivity)",
        "max_div": flow.MAX_DIV,
        "max_div_b": "max |div B| (round-off)",
        "cfl": "CFL number dt max(sum_i (|u_i| + |B_i|)/dx_i): flow and Alfven speeds",
        "kmax_eta": resolution.KMAX_ETA + " (eta from the viscous + ohmic dissipation; the smaller of eta and "
                    "the magnetic field's eta Pm^(-1/2) when Pm = viscosity/resistivity > 1; with "
                    "hyperviscosity each the larger of it and its (nu_p^3/epsilon)^(1/(6p-2)), eta_p for B)",
        "injection": flow.INJECTION,
    },
    progress=("total_energy", "magnetic_energy", "cfl"),
    resolution_advice={
        "kmax_eta": "refine grid.shape, or raise physics.viscosity and physics.resistivity (or physics.hyperviscosity "
                    "and physics.hyperresistivity)",
    },
    scales={**scales.TURBULENCE, "magnetic_prandtl": "magnetic Prandtl number Pm = nu/eta",
            "alfven_speed": "Alfven speed of the rms field, <|B|^2>^(1/2) (density 1, mu_0 = 1)"},
    spectra={
        "energy": f"kinetic energy spectrum E_K(k): 0.5 |u_hat|^2 / N^2 {_SHELLS}; sums to E_K",
        "magnetic_energy": f"magnetic energy spectrum E_M(k): 0.5 |B_hat|^2 / N^2 {_SHELLS} (shell 0: the mean "
                           "field); sums to E_M",
        "transfer_energy": "T_K(k): rate of change of E_K(k) by advection u x w, same normalisation as E_K(k); "
                           "sums to 0",
        "transfer_magnetic_energy": "T_M(k): rate of change of E_M(k) by advection of the field, -(u.grad)B; "
                                    "sums to 0",
        "conversion_energy": "C_K(k): rate of change of E_K(k) by the Lorentz force, Re conj(u_hat).(j x B)_hat "
                             "per mode",
        "conversion_magnetic_energy": "C_M(k): rate of change of E_M(k) by line stretching, Re conj(B_hat).((B.grad)"
                                      "u)_hat per mode; sum_k (C_K + C_M) = 0, so dE_K(k)/dt = T_K + C_K + F - "
                                      "2 (nu k^2 + nu_p k^(2p)) E_K and dE_M(k)/dt = T_M + C_M - 2 (eta k^2 + "
                                      "eta_p k^(2p)) E_M",
        "injection_energy": flow.INJECTION_SPECTRUM,
    },
    plot=PlotSpec(
        panels=(
            flow.energy_panel("magnetic_energy", "E_M", r" = \langle|u|^2\rangle/2", r" = \langle|B|^2\rangle/2",
                              log="auto"),
            Panel("rate", (Curve("viscous_dissipation", r"$\nu\langle|\omega|^2\rangle$",
                                 hyperviscous=r" $+ \nu_p\langle k^{2p}|\hat u|^2\rangle$"),
                           Curve("ohmic_dissipation", r"$\eta\langle|j|^2\rangle$",
                                 hyperviscous=r" $+ \eta_p\langle k^{2p}|\hat B|^2\rangle$"),
                           Curve("injection", r"$P = \langle u\cdot f\rangle$ (forcing)"))),
            Panel("helicity", (Curve("cross_helicity", r"$H_c = \langle u\cdot B\rangle$"),
                               Curve("magnetic_helicity", r"$H_m = \langle A\cdot b\rangle$"))),
        ),
        spectrum="magnetic_energy",
        resolved=2 / 3,  # dealiased by the 2/3 rule: shells past it are empty or partly filled
        spectrum_label=r"$E_M(k)$, $\Sigma_k E_M(k) = \langle|B|^2\rangle/2$",
        slice_field="current",
        spectrum_guide=-5 / 3,
        kolmogorov=Kolmogorov(("viscous_dissipation", "ohmic_dissipation")),  # E_M(k): no established constant
        budget=Budget("total_energy", losses=("viscous_dissipation", "ohmic_dissipation"), gains=("injection",),
                      label="E_K + E_M"),
        side_by_side=("energy", "magnetic_energy"),
        labels={"energy": "kinetic energy", "magnetic_energy": "magnetic energy"},
    ),
)
