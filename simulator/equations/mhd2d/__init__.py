"""Incompressible magnetohydrodynamics in a periodic plane, through the magnetic potential: what the equation
declares (no JAX).

    d omega/dt + u . grad omega = B . grad j + nu lap omega - nu_p (-lap)^p omega - nu_m (-lap)^(-m) omega - alpha omega
                                  + f,
    d A/dt + u . grad A = eta lap A - eta_p (-lap)^p A,
    u = (d psi/dy, -d psi/dx),  omega = -lap psi,  B = B0 + (dA/dy, -dA/dx),  j = dB_y/dx - dB_x/dy = -lap A

the planar field's z potential A (B in Alfven units), the curl of the Lorentz force j z x B being B . grad j, and a
uniform mean field B0 (``physics.mean_field``) that A, periodic, cannot hold: it enters B, and the potential's
equation as d A/dt = (u x B)_z. The ideal invariants are the energy <|u|^2 + |B|^2>/2, the cross helicity <u . B>
and, without a mean field, the mean-square potential <A^2> (Biskamp 2003, §7.1). The hyperviscous and
hyper-resistive terms only with ``hyperviscosity_order`` p set; the hypoviscosity, friction and forcing f of the
vorticity, and passive scalars, are every planar flow's (:mod:`simulator.equations.flow.planar`).

A plane runs as the box ``(1, Nx, Ny)`` (:mod:`simulator.fft.plane`). The implementation is :mod:`.equation`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from simulator.equations import flow, resolution, scalars as passive, scales
from simulator.equations.flow import planar
from simulator.equations.flow.planar import FORCED_DIAGNOSTICS, PlanarParams
from simulator.equations.spec import Budget, Curve, FieldInfo, Panel, PlotSpec
from simulator.schema import param, random_seed, setting


@dataclass(frozen=True)
class MHD2DParams(PlanarParams):
    """The planar flow's keys (:class:`~simulator.equations.flow.planar.PlanarParams`), the resistivity and
    hyper-resistivity, and a uniform mean field."""

    name: str = setting("mhd2d", "equation to solve")
    hyperviscosity_order: int | None = flow.order_key("hyperviscous and hyper-resistive terms", "such term")
    resistivity: float = param(1e-3, "magnetic diffusivity eta", min=0.0)
    hyperresistivity: float = param(0.0, "hyper-resistivity eta_p: the term -eta_p (-lap)^p A (needs "
                                    "physics.hyperviscosity_order)", min=0.0)
    mean_field: tuple[float, float] = setting((0.0, 0.0), "uniform mean field B0 (B0x, B0y) in the plane, Alfven "
                                              "units (structure: another value compiles another program)")
    scalars: tuple[passive.PassiveScalar, ...] = passive.scalar_list()

    def hyperviscous_coefficients(self) -> dict[str, float]:
        return {**super().hyperviscous_coefficients(), "physics.hyperresistivity": self.hyperresistivity}

    def dissipative_scale(self) -> str:
        """The Kolmogorov scale of the viscous + ohmic dissipation: in 2D MHD the energy cascades to small scales
        (Biskamp 2003, §7.1), not the enstrophy."""
        return "kolmogorov"

    def scales(self, diagnostics: Any, shape: Any, box: Any) -> dict[str, float]:
        """The Kolmogorov scale of the total (viscous + ohmic) dissipation, the magnetic Prandtl number and the
        Alfven speed (2 E_M)^(1/2)."""
        eps = diagnostics["viscous_dissipation"] + diagnostics["ohmic_dissipation"]
        return {"kolmogorov_length": (self.viscosity**3 / eps) ** 0.25 if eps > 0 else math.inf,
                "magnetic_prandtl": self.viscosity / self.resistivity if self.resistivity else math.inf,
                "alfven_speed": math.sqrt(2 * max(diagnostics["magnetic_energy"], 0.0))}


@dataclass(frozen=True)
class OrszagTang(flow.FlowInitial):
    """The 2D Orszag-Tang vortex (Orszag & Tang 1979; Dedalus's and Athena's setup): u = U (-sin y', sin x'),
    B = B (-sin y', sin 2x'), x' = 2 pi x/Lx, y' = 2 pi y/Ly; in a 2 pi square omega = U (cos x + cos y),
    A = B (cos y + cos 2x / 2), and U = B = 1 give E_K = E_M = <u . B> = 1/2."""

    name: str = setting("orszag_tang", "initial condition")
    amplitude: float = param(1.0, "velocity amplitude U", min=0.0)
    magnetic_amplitude: float = param(1.0, "magnetic amplitude B", min=0.0)

    scalars: passive.ScalarInitial = passive.scalar_initial()

@dataclass(frozen=True)
class RandomMHD2D(flow.FlowInitial):
    """A random vorticity and potential, the kinetic and magnetic energy spectra both ~ k^s exp(-(s/2) (k/k_peak)^2)
    (ns2d's ``random``), the same on any device layout for a given seed (the potential drawn from seed + 1)."""

    name: str = setting("random", "initial condition")
    energy: float = param(0.5, "kinetic energy <|u|^2>/2", gt=0.0)
    magnetic_energy: float = param(0.5, "magnetic energy of the fluctuations <|B - B0|^2>/2", min=0.0)
    k_peak: float = param(6.0, "peak mode number of the spectra", gt=0.0)
    slope: float = param(4.0, "the spectra's slope s below their peak, E ~ k^s", gt=0.0)
    seed: int = random_seed("random seed (0 to 2^32 - 2)", max=2**32 - 2)

    scalars: passive.ScalarInitial = passive.scalar_initial()

INFO = flow.info(
    MHD2DParams, (OrszagTang, RandomMHD2D), "MHD2D",
    summary="incompressible MHD in a plane through the magnetic potential A (vorticity-potential form), a uniform "
            "mean field, hyper-resistivity, hyper- and hypoviscosity, linear friction, random or Kolmogorov forcing",
    dimensions=2,
    fields={
        "vorticity": planar.VORTICITY,
        "potential": FieldInfo(0, "magnetic potential A, B - B0 = (dA/dy, -dA/dx) (1, Nx, Ny)", "A", cmap="RdBu_r"),
        "current": FieldInfo(0, "current density j = -lap A (1, Nx, Ny)", "j", cmap="RdBu_r"),
        "velocity": planar.velocity(", the plane's with the zero component normal to it"),
        "magnetic": FieldInfo(3, "magnetic field (B_x, B_y, 0) in the plane, with the mean field (3, 1, Nx, Ny)",
                              r"|B|", "magma"),
    },
    state_fields=("vorticity", "potential"),
    diagnostics={
        **flow.energies("magnetic_energy", "E_M", "<|B|^2>/2 (with the mean field's |B0|^2/2)",
                        "viscosity and resistivity"),
        "cross_helicity": "cross helicity <u . B> (an ideal invariant)",
        "mean_square_potential": "mean-square potential <A^2> (an ideal invariant without a mean field)",
        "enstrophy": planar.ENSTROPHY,
        "max_vorticity": planar.MAX_VORTICITY,
        "max_current": "max |j|",
        "viscous_dissipation": "viscous dissipation nu <omega^2> + nu_p <k^(2p) |u_hat|^2> + nu_m <k^(-2m) |u_hat|^2> "
                               "+ 2 alpha E_K (Parseval means; each term with its coefficient)",
        "ohmic_dissipation": "ohmic dissipation eta <j^2> + eta_p <k^(2p) |B_hat|^2>",
        "cfl": "CFL number dt max((|u| + |B_x|)/dx + (|v| + |B_y|)/dy): flow and Alfven speeds",
        "kmax_eta": resolution.KMAX_ETA + " (eta from the viscous + ohmic dissipation; the smaller of eta and the "
                    "magnetic field's eta Pm^(-1/2) when Pm = viscosity/resistivity > 1; with hyperviscosity each "
                    "the larger of it and its (nu_p^3/epsilon)^(1/(6p-2)), eta_p for B)",
        **FORCED_DIAGNOSTICS,
    },
    progress=("total_energy", "magnetic_energy", "cfl"),
    resolution_advice={"kmax_eta": "refine grid.shape, or raise physics.viscosity and physics.resistivity (or "
                                   "physics.hyperviscosity and physics.hyperresistivity)"},
    scales={"kolmogorov_length": scales.TURBULENCE["kolmogorov_length"] + ", epsilon viscous + ohmic",
            "magnetic_prandtl": "magnetic Prandtl number Pm = nu/eta",
            "alfven_speed": "Alfven speed (2 E_M)^(1/2)"},
    spectra={
        "energy": "kinetic energy spectrum E_K(k): 0.5 |u_hat|^2 / n^2 (Parseval-weighted, n the number of cells) "
                  "summed over the ring k; sums to E_K",
        "magnetic_energy": "magnetic energy spectrum E_M(k): 0.5 k^2 |A_hat|^2 / n^2 per ring; sums to E_M less the "
                           "mean field's",
        "potential": "spectrum of the potential |A_hat|^2 / n^2 per ring; sums to <A^2>",
        "transfer_energy": "T_K(k): rate of change of E_K(k) by advection and the Lorentz force, "
                           "Re(conj(psi_hat) N_omega) per ring; sums to the Lorentz work <u . (j x B)>",
        "transfer_magnetic_energy": "T_M(k): rate of change of E_M(k) by the induction, Re(conj(j_hat) N_A) per ring; "
                                    "sums to -<u . (j x B)>",
        "injection_energy": "energy injection F(k) by the Kolmogorov forcing per ring (forcing: kolmogorov)",
    },
    plot=PlotSpec(
        panels=(
            flow.energy_panel("magnetic_energy", "E_M"),
            Panel("invariants", (Curve("cross_helicity", r"$\langle u\cdot B\rangle$"),
                                 Curve("mean_square_potential", r"$\langle A^2\rangle$"))),
            Panel("rate", (Curve("viscous_dissipation", r"$\varepsilon_\nu$"),
                           Curve("ohmic_dissipation", r"$\varepsilon_\eta$"))),
            Panel("max", (Curve("max_current", r"$\max|j|$"), Curve("max_vorticity", r"$\max|\omega|$"))),
        ),
        spectrum="energy",
        spectrum_label=r"$E_K(k)$, $\Sigma_k E_K(k) = \langle|u|^2\rangle/2$",
        slice_field="current",
        budget=Budget("total_energy", losses=("viscous_dissipation", "ohmic_dissipation"), gains=("injection",),
                      label="E_K + E_M"),
        resolved=2 / 3,
        viscosity="viscosity",
        more_spectra=("magnetic_energy", "potential"),
        side_by_side=("energy", "magnetic_energy"),
        labels={"energy": "kinetic energy", "magnetic_energy": "magnetic energy", "potential": "potential"},
    ),
)
