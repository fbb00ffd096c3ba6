"""Stably stratified Boussinesq flow in a vertical periodic plane, vorticity-buoyancy form: what the equation
declares (no JAX).

    d omega/dt + u . grad omega = db/dx + nu lap omega - nu_p (-lap)^p omega - nu_m (-lap)^(-m) omega - alpha omega + f,
    d b/dt + u . grad b = -N^2 v + kappa lap b - kappa_p (-lap)^p b,
    u = (d psi/dy, -d psi/dx),   omega = dv/dx - du/dy = -lap psi

gravity along the plane's y (the vertical), b the buoyancy fluctuation about a background of constant buoyancy
frequency N (the total buoyancy N^2 y + b), as FluidSim's ``ns2d.strat``. From du/dt = ... - dp/dx and
dv/dt = ... - dp/dy + b the curl gives db/dx; Db/Dt of the total buoyancy = 0 gives -N^2 v. Linear waves:
omega_w = N |k_x|/|k|. The energy E_K + E_P, E_P = <b^2>/(2 N^2), is conserved without viscosity and diffusion.
The hyperviscous and hyperdiffusive terms only with ``hyperviscosity_order`` p set; the hypoviscosity, friction and
forcing f of the vorticity, and passive scalars, are every planar flow's (:mod:`simulator.equations.flow.planar`).

A plane runs as the box ``(1, Nx, Ny)`` (:mod:`simulator.fft.plane`). The implementation is :mod:`.equation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.equations import flow, scalars as passive, scales
from simulator.equations.flow import planar
from simulator.equations.flow.planar import FORCED_DIAGNOSTICS, PlanarParams
from simulator.equations.spec import Budget, Curve, FieldInfo, Panel, PlotSpec
from simulator.errors import ConfigError
from simulator.schema import param, random_seed, setting

#: the stratified scales of :mod:`simulator.equations.scales` a plane has (no rotation)
SCALES = {name: text for name, text in scales.STRATIFIED.items() if name != "inertial_period"}
#: ``kmax_eta``'s text: the enstrophy cascade's end (as ns2d's) or the buoyancy's, the smaller
KMAX_ETA = ("k_max eta: the 2/3-rule cutoff (2/3) min pi N_i/L_i times the smaller of the enstrophy-dissipation "
            "scale (nu^3/chi)^(1/6) (chi = 2 nu P; with hyperviscosity the larger of it and (nu_p^3/chi)^(1/(6p))) "
            "and the buoyancy's Batchelor/Obukhov-Corrsin scale for Pr = viscosity/diffusivity; below 1 the grid "
            "under-resolves the smallest scales")


@dataclass(frozen=True)
class Boussinesq2DParams(PlanarParams):
    """The planar flow's keys (:class:`~simulator.equations.flow.planar.PlanarParams`), the buoyancy's diffusivity
    and hyperdiffusivity, and the stratification."""

    name: str = setting("boussinesq2d", "equation to solve")
    hyperviscosity_order: int | None = flow.order_key("hyperviscous and hyperdiffusive terms", "such term")
    diffusivity: float = param(1e-3, "buoyancy diffusivity kappa", min=0.0)
    hyperdiffusivity: float = param(0.0, "hyperdiffusivity kappa_p: the term -kappa_p (-lap)^p b (needs "
                                    "physics.hyperviscosity_order)", min=0.0)
    brunt_vaisala: float = param(1.0, "buoyancy (Brunt-Vaisala) frequency N of the background stratification, "
                                 "gravity along -y (0: none; the potential energy and Froude number then reported "
                                 "as 0)", min=0.0)
    scalars: tuple[passive.PassiveScalar, ...] = passive.scalar_list()

    def hyperviscous_coefficients(self) -> dict[str, float]:
        return {**super().hyperviscous_coefficients(), "physics.hyperdiffusivity": self.hyperdiffusivity}

    def scales(self, diagnostics: Any, shape: Any, box: Any) -> dict[str, float]:
        """The buoyancy frequency and period, the Ozmidov length and the buoyancy Reynolds number
        (:func:`simulator.equations.scales.stratified`, no rotation in a vertical plane)."""
        eps = float(diagnostics.get("kinetic_dissipation", 0.0))
        out = scales.stratified(self.brunt_vaisala, 0.0, self.viscosity, eps)
        return {name: out[name] for name in SCALES}


def check_modes(modes: tuple[int, int], cfg: Any) -> None:
    """Mode numbers (m_x, m_y) of a planar wave: not both 0, each kept by the 2/3 rule (ConfigError, one line)."""
    if modes == (0, 0):
        raise ConfigError("initial.modes", list(modes), "(m_x, m_y) != (0, 0)", "is the mean")
    shape = cfg.grid.shape
    if any(3 * abs(m) >= n for m, n in zip(modes, shape, strict=True)):
        raise ConfigError("initial.modes", list(modes), f"every |m_i| below N_i/3 for grid.shape {list(shape)}",
                          "is removed by the 2/3 dealiasing")


@dataclass(frozen=True)
class Wave(flow.FlowInitial):
    """One internal gravity wave, an exact solution of the inviscid equations (and with nu = kappa, decaying as
    exp(-nu k^2 t)): omega = A |k| cos phi, b = -A N cos phi, phi = k_x x + k_y y - omega_w t, omega_w =
    N k_x/|k|: velocity amplitude A, E_K = E_P = A^2/4, phase running along +k for k_x > 0."""

    name: str = setting("wave", "initial condition")
    amplitude: float = param(0.1, "velocity amplitude A", gt=0.0)
    modes: tuple[int, int] = setting((1, 1), "mode numbers (m_x, m_y) of the wavevector, m_x != 0 "
                                     "(k_i = 2 pi m_i/L_i)")
    scalars: passive.ScalarInitial = passive.scalar_initial()

    def check(self, cfg: Any) -> None:
        super().check(cfg)
        check_modes(self.modes, cfg)
        if self.modes[0] == 0:
            raise ConfigError("initial.modes", list(self.modes), "m_x != 0 (a wave needs a horizontal wavenumber)",
                              "has frequency 0 (a steady horizontal shear, no wave)")


@dataclass(frozen=True)
class RandomFlow(flow.FlowInitial):
    """A random vorticity and buoyancy, each with the spectrum E(k) ~ k^s exp(-(s/2) (k/k_peak)^2) (ns2d's
    ``random``), the same on any device layout for a given seed (the buoyancy drawn from seed + 1)."""

    name: str = setting("random", "initial condition")
    energy: float = param(0.5, "kinetic energy <|u|^2>/2", gt=0.0)
    buoyancy: float = param(0.5, "rms buoyancy sqrt(<b^2>) (0 = none)", min=0.0)
    k_peak: float = param(6.0, "peak mode number of the spectra", gt=0.0)
    slope: float = param(4.0, "the spectra's slope s below their peak, E ~ k^s", gt=0.0)
    seed: int = random_seed("random seed (0 to 2^32 - 2)", max=2**32 - 2)
    scalars: passive.ScalarInitial = passive.scalar_initial()


INFO = flow.info(
    Boussinesq2DParams, (Wave, RandomFlow), "Boussinesq2D",
    summary="stably stratified Boussinesq flow in a vertical plane, vorticity-buoyancy form (FluidSim's ns2d.strat), "
            "hyper- and hypoviscosity, linear friction, random or Kolmogorov forcing",
    dimensions=2,
    fields={
        "vorticity": planar.VORTICITY,
        "buoyancy": FieldInfo(0, "buoyancy fluctuation b, gravity along -y (1, Nx, Ny)", "b", cmap="RdBu_r"),
        "velocity": planar.velocity(": the plane's, v vertical, with the zero component normal to it (a vector in "
                                    "ParaView and xarray)"),
        "stream_function": planar.STREAM_FUNCTION,
    },
    state_fields=("vorticity", "buoyancy"),
    diagnostics={
        **flow.energies("potential_energy", "E_P", "<b^2>/(2 N^2) (0 without stratification)",
                        "viscosity and diffusion"),
        "enstrophy": planar.ENSTROPHY,
        "buoyancy_flux": "<v b>: the conversion rate of potential into kinetic energy",
        "kinetic_dissipation": "kinetic dissipation 2 nu Z + nu_p <k^(2p) |u_hat|^2> + nu_m <k^(-2m) |u_hat|^2> + "
                               "2 alpha E_K (Parseval means; each term with its coefficient)",
        "potential_dissipation": "potential dissipation (kappa <|grad b|^2> + kappa_p <k^(2p) |b_hat|^2>)/N^2",
        "max_vorticity": planar.MAX_VORTICITY,
        "froude": "Froude number U/(N L): U = <|u|^2>^(1/2), L = 2 pi sum E(k)/k / sum E(k) (0 without "
                  "stratification)",
        "cfl": "CFL number dt (max(|u|/dx + |v|/dy) + N): the flow and the explicit buoyancy frequency",
        "kmax_eta": KMAX_ETA,
        **FORCED_DIAGNOSTICS,
    },
    progress=("total_energy", "froude", "cfl"),
    resolution_advice={"kmax_eta": "refine grid.shape, or raise physics.viscosity and physics.diffusivity (or "
                                   "physics.hyperviscosity and physics.hyperdiffusivity)"},
    scales=SCALES,
    spectra={
        "energy": "kinetic energy spectrum E_K(k): 0.5 |u_hat|^2 / n^2 (Parseval-weighted, n the number of "
                  "cells) summed over the ring k; sums to E_K",
        "potential_energy": "potential energy spectrum E_P(k): 0.5 |b_hat|^2 / (n^2 N^2) per ring; sums to E_P",
        "transfer_energy": "T_K(k): rate of change of E_K(k) by advection, Re(conj(psi_hat) (-u.grad omega)_hat) "
                           "per ring; sums to 0",
        "transfer_potential_energy": "T_P(k): rate of change of E_P(k) by advection of b; sums to 0",
        "conversion_energy": "C_K(k): rate of change of E_K(k) by buoyancy, Re(conj(v_hat) b_hat) per ring; sums to "
                             "<v b>",
        "conversion_potential_energy": "C_P(k) = -C_K(k): rate of change of E_P(k) by buoyancy",
        "injection_energy": "energy injection F(k) by the Kolmogorov forcing per ring (forcing: kolmogorov)",
    },
    plot=PlotSpec(
        panels=(
            flow.energy_panel("potential_energy", "E_P"),
            Panel("rate", (Curve("kinetic_dissipation", r"$\varepsilon_K$"),
                           Curve("potential_dissipation", r"$\varepsilon_P$"),
                           Curve("buoyancy_flux", r"$\langle v b\rangle$"))),
            Panel("Froude", (Curve("froude", "$F$"),)),
            Panel("max", (Curve("max_vorticity", r"$\max|\omega|$"),)),
        ),
        spectrum="energy",
        spectrum_label=r"$E_K(k)$, $\Sigma_k E_K(k) = \langle|u|^2\rangle/2$",
        slice_field="buoyancy",
        budget=Budget("total_energy", losses=("kinetic_dissipation", "potential_dissipation"), gains=("injection",),
                      label="E_K + E_P"),
        resolved=2 / 3,
        viscosity="viscosity",
        more_spectra=("potential_energy",),
        side_by_side=("energy", "potential_energy"),
        labels={"energy": "kinetic energy", "potential_energy": "potential energy"},
    ),
)
