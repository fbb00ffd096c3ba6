"""Incompressible Navier-Stokes in a periodic box: what the equation declares (no JAX here).

    du/dt = u x w - grad(p + |u|^2/2) + nu lap(u) - nu_p (-lap)^p u (+ f),   div u = 0,   w = curl u

(the hyperviscous term when ``hyperviscosity`` nu_p > 0), with optional passive scalars
(``physics.scalars``, :mod:`simulator.equations.scalars`):
d theta_i/dt + u . grad theta_i = kappa_i lap theta_i - u . G_i.

The implementation is :mod:`.equation`; the parameters below are the ``physics.*`` keys when
``physics.name: navier_stokes``, and the initial conditions the ``initial.*`` keys of each
``initial.name``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.equations import flow, resolution, scalars as passive, scales
from simulator.equations.flow import FlowInitial, FlowParams
from simulator.equations.spec import Budget, Curve, Kolmogorov, Panel, PlotSpec
from simulator.schema import param, random_seed, setting


@dataclass(frozen=True)
class NavierStokesParams(FlowParams):
    """Viscosity and hyperviscosity, the dealiasing, optional constant-power forcing, and passive scalars."""

    name: str = setting("navier_stokes", "equation to solve")
    viscosity: float = flow.viscosity_key(1.0 / 1600.0)
    forcing: str = flow.forcing_key("")
    dealias: str = setting("two_thirds", "dealiasing of the nonlinear terms: two_thirds (the 2/3 rule: modes with "
                           "|m_i| >= N_i/3 zeroed); hou_li (the smooth filter exp(-36 (|m_i|/(N_i/2))^36) per axis, "
                           "Hou & Li 2007: resolves up to 0.8 of the Nyquist wavenumber); phase_shift_spherical "
                           "(products on a grid shifted by a random Delta per step plus the scheme's offset per stage, "
                           "then the modes outside the sphere sum_i (m_i/N_i)^2 < 2/9, |m| < sqrt(2) N/3 on a cubic "
                           "grid, zeroed: no double or triple alias reaches it and the shifts cancel or randomise "
                           "the single ones, Patterson & Orszag 1971, Rogallo 1981; resolves up to 0.943 of the "
                           "Nyquist wavenumber; needs the half-spectrum layout); phase_shift_cubic (the same "
                           "shifts with the 2/3 rule's cube, where no alias is left to shift: the two_thirds "
                           "result to round-off, a reference). The shifts are drawn from the step's number "
                           "round(t/dt): the same on every backend and device count and after a restart",
                           choices=tuple(resolution.RESOLVED))
    scalars: tuple[passive.PassiveScalar, ...] = passive.scalar_list()

    def compact_spectra(self) -> str | None:
        """Under the 2/3 rule (shifted or not) every state and product is on its modes; the Hou-Li filter keeps
        them all, the sphere of phase_shift_spherical those up to |m_i| < sqrt(2) N_i/3 along the axes."""
        if self.dealias in ("two_thirds", "phase_shift_cubic"):
            return None
        if self.dealias == "phase_shift_spherical":
            return "physics.dealias = phase_shift_spherical keeps modes beyond the 2/3 rule's cube"
        return f"physics.dealias = {self.dealias} keeps every mode"

    def scales(self, diagnostics: Any, shape: Any, box: Any) -> dict[str, float]:
        """Kolmogorov and Taylor scales of the flow (:func:`simulator.equations.scales.turbulence`)."""
        return scales.turbulence(self.viscosity, diagnostics["dissipation"], diagnostics["energy"])


@dataclass(frozen=True)
class TaylorGreen(FlowInitial):
    """u = A (sin x cos y cos z, -cos x sin y cos z, 0) in units of the box (Brachet et al. 1983)."""

    name: str = setting("taylor_green", "initial condition")
    amplitude: float = param(1.0, "velocity amplitude A", gt=0.0)
    scalars: passive.ScalarInitial = passive.scalar_initial()


@dataclass(frozen=True)
class ABC(FlowInitial):
    """Arnold-Beltrami-Childress flow with A = B = C at mode m: curl u = k u, so it decays exactly as
    exp(-nu k^2 t)."""

    name: str = setting("abc", "initial condition")
    amplitude: float = param(1.0, "velocity amplitude A = B = C", gt=0.0)
    wavenumber: int = setting(1, "mode number m of the flow", min=1, mode_axes="xyz")
    scalars: passive.ScalarInitial = passive.scalar_initial()


@dataclass(frozen=True)
class RandomVelocity(FlowInitial):
    """A solenoidal random field with E(k) ~ k^4 exp(-2 (k/k_peak)^2), the same on any device layout
    and precision for a given seed."""

    name: str = setting("random", "initial condition")
    amplitude: float = param(1.0, "rms velocity sqrt(<|u|^2>)", gt=0.0)
    k_peak: float = param(4.0, "peak mode number of the spectrum", gt=0.0)
    seed: int = random_seed("random seed (0 to 2^32 - 1)")
    scalars: passive.ScalarInitial = passive.scalar_initial()


INFO = flow.info(
    NavierStokesParams, (TaylorGreen, ABC, RandomVelocity), "NavierStokes",
    summary="incompressible Navier-Stokes, rotational form, Leray projection, 2/3, Hou-Li or phase-shift dealiasing, "
            "optional hyperviscosity",
    fields=flow.BOX_FIELDS,
    state_fields=("velocity",),
    diagnostics={
        "energy": "kinetic energy <|u|^2>/2",
        "enstrophy": "enstrophy <|w|^2>/2",
        "dissipation": "dissipation rate 2 nu Z + nu_p <|k|^(2p) |u_hat|^2> (the second term: hyperviscosity, "
                       "a Parseval mean)",
        "max_div": flow.MAX_DIV,
        "cfl": "CFL number dt max(sum_i |u_i|/dx_i)",
        "injection": flow.INJECTION,
        "kmax_eta": resolution.KMAX_ETA + " (0.8 min pi N_i/L_i under dealias: hou_li, 0.943 under "
                    "phase_shift_spherical; with hyperviscosity, "
                    "eta is the larger of it and (nu_p^3/epsilon)^(1/(6p-2)))",
    },
    progress=("energy", "cfl"),
    resolution_advice={"kmax_eta": "refine grid.shape, raise physics.viscosity or physics.hyperviscosity, or keep the "
                                   "modes of a larger sphere with physics.dealias=phase_shift_spherical"},
    scales=scales.TURBULENCE,
    spectra={"energy": "kinetic energy spectrum E(k): 0.5 |u_hat|^2 / N^2 (Parseval-weighted) summed over the modes "
                       "of shell k; the sum over shells is the kinetic energy 0.5 <|u|^2> (a box mean)",
             "transfer_energy": "energy transfer T(k): rate of change of E(k) by the nonlinear term, "
                                "Re(conj(u_hat) . P[(u x w)^]) / N^2 per shell (the dealiased term, unshifted under "
                                "phase_shift_*); sums to 0 under the 2/3 rule and the phase-shifted truncations "
                                "(under hou_li, to minus the energy the filter removes), and "
                                "dE(k)/dt = T(k) - 2 (nu k^2 + nu_p k^(2p)) E(k) + F(k)",
             "injection_energy": "energy injection F(k) by the forcing, Re(conj(u_hat) . f_hat) / N^2 per shell "
                                 "(forced runs only)"},
    plot=PlotSpec(
        panels=(
            Panel("energy", (Curve("energy", r"$E = \langle|u|^2\rangle/2$"),)),
            Panel("rate", (Curve("dissipation", r"$\varepsilon = 2\nu Z$",
                                 hyperviscous=r" $+ \nu_p\langle k^{2p}|\hat u|^2\rangle$"),
                           Curve("injection", r"$P = \langle u\cdot f\rangle$ (forcing)"))),
            Panel("enstrophy", (Curve("enstrophy", r"$Z = \langle|\omega|^2\rangle/2$"),)),
        ),
        spectrum="energy",
        spectrum_label=r"$E(k)$, $\Sigma_k E(k) = \langle|u|^2\rangle/2$",
        slice_field="vorticity",
        spectrum_guide=-5 / 3,
        # E(k) = C_K eps^(2/3) k^(-5/3) in the inertial range, C_K ~ 1.5 (Pope 2000, Turbulent Flows, §6.5)
        kolmogorov=Kolmogorov(("dissipation",), constant=1.5),
        budget=Budget("energy", losses=("dissipation",), gains=("injection",), label="E"),
        resolved=2 / 3,
        viscosity="viscosity",
        labels={"energy": "kinetic energy"},
    ),
)
