"""Schrodinger-Poisson (fuzzy dark matter) in a static periodic box: what the equation declares.

    i dpsi/dt = -(nu/2) lap(psi) + ((V + g |psi|^2)/nu) psi,    lap(V) = 4 pi G (|psi|^2 - mean |psi|^2),

with nu = hbar/m, |psi|^2 the mass density and g an optional self-interaction (g > 0 repulsive, g < 0
attractive; 0 by default, which adds nothing). Units: any consistent set (lengths in the unit of
``grid.box``, time in that of ``time.dt``); e.g. kpc, Gyr and 1e10 Msun give G = 4.50e4 and
hbar/m = 19.6 for m = 1e-22 eV. The implementation is :mod:`.equation`; the same physics in an
expanding universe is :mod:`simulator.equations.fdm_cosmo`.

Cold dark matter beside the wave (``physics.fdm_fraction`` f < 1): the wave holds a fraction f of the mass and
``physics.cdm_particles`` = n^3 cold particles of equal mass the rest, m_p = ((1 - f) / f) M_wave / n^3 (M_wave
= int |psi|^2 dV, conserved), both in one potential,

    lap(V) = 4 pi G (|psi|^2 + rho_cdm - mean),      dx/dt = p,      dp/dt = -grad(V),

the particles' part of the kick-drift-kick exact over each sub-step (K1 = K2 = dt), by the particle-mesh
algorithm shared with the comoving equation (:mod:`simulator.equations.cold`). The ``jeans`` start places them.
At f = 0 the particles are alone (N-body in a periodic box, no wave): each has the mass rho0 V / n^3 of the
``jeans`` start's mean density, held in the state (no parameter sets it without a wave).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from simulator.equations import cold, resolution, scales
from simulator.equations.spec import Curve, EquationParams, FieldInfo, InitialCondition, Panel, PlotSpec
from simulator.schema import param, random_seed, setting


@dataclass(frozen=True)
class SchrodingerPoissonParams(cold.ColdParams, EquationParams):
    """The boson's hbar/m, the gravitational constant and the self-interaction strength."""

    name: str = setting("schrodinger_poisson", "equation to solve")
    hbar_over_m: float = param(0.02, "hbar/m of the boson, length^2/time", gt=0.0)
    G: float = param(1.0, "gravitational constant, length^3/(mass time^2)", min=0.0)
    self_interaction: float = param(0.0, "g of the self-interaction potential g |psi|^2 (length^5/(mass time^2); "
                                    "> 0 repulsive, < 0 attractive; g = 4 pi hbar^2 a_s / m^3 for a scattering "
                                    "length a_s)")
    fdm_fraction: float = param(1.0, "fraction f of the mass in the wave, 0 <= f <= 1; the rest, 1 - f, is cold dark "
                                "matter in physics.cdm_particles particles; 1 = the wave alone; 0 = the particles "
                                "alone (no wave is allocated or stepped; physics.hbar_over_m and "
                                "physics.self_interaction are refused when given, whatever the value); an f > 0 at "
                                "least 2^-126 / (2^-23 rho0) in float32 (9.9e-32 at rho0 = 1), 2^-1022 / "
                                "(2^-52 rho0) in float64, else the wave's contrasts underflow", min=0.0, max=1.0,
                                structural_zero=True)
    cdm_particles: int = setting(0, "number of cold dark matter particles, a cube n^3 whose n divides every grid "
                                 "axis (placed on a lattice of cell centres, displaced by the initial condition); "
                                 "needs physics.fdm_fraction < 1 (and is required at 0); 0 = none; a restart keeps it",
                                 min=0, restart="kept")
    cdm_window: str = cold.window_setting()
    cdm_capacity: float = cold.capacity_setting()
    cdm_exchange: float = cold.exchange_setting()

    def check(self, cfg: Any) -> None:
        """The cold particles: there exactly when f < 1, a cube n^3 fitting the grid, started by ``jeans``.
        (Without the wave, f = 0, its own keys are refused as the config is read: :meth:`absent_keys`.)"""
        cold.check_particles(self, cfg, ("jeans",), getattr(cfg.initial, "density", 1.0))  # jeans: its rho0

    def absent_keys(self) -> dict[str, tuple[str, str]]:
        """Without the wave (f = 0) the wave's own keys, ``hbar_over_m`` and ``self_interaction``
        (:func:`simulator.equations.cold.absent_wave_keys`)."""
        return cold.absent_wave_keys(self, ("hbar_over_m", "self_interaction"))

    def scales(self, diagnostics: Any, shape: Any, box: Any) -> dict[str, float]:
        """The quantum Jeans length at the box's mean density and the de Broglie length
        (:mod:`simulator.equations.scales`); none without the wave (they are the wave's)."""
        if not cold.has_wave(self):
            return {}
        mean_density = diagnostics["mass"] / math.prod(box)
        k_j = scales.jeans_wavenumber(4 * math.pi * self.G * mean_density, self.hbar_over_m)
        return scales.quantum(k_j, diagnostics["kmax_de_broglie"], shape, box)

@dataclass(frozen=True)
class Jeans(InitialCondition):
    """rho = rho0 (1 + eps cos(k x)): a density wave along x, at rest or with d delta/dt = r delta (``rate``).
    Linear theory: delta = eps (cosh(gamma t) + (r / gamma) sinh(gamma t)), gamma^2 = 4 pi G rho0 - g rho0 k^2 -
    nu^2 k^4 / 4 (oscillating with omega^2 = -gamma^2 below the Jeans length). In a mixed run the wave holds
    f rho0 (1 + eps cos(k x)) and the cold particles (1 - f) rho0 (1 + eps cos(k x)): the lattice displaced by
    s = -(eps / k) sin(k q) along x, moving with ds/dt = r s (at f = 0 the particles alone, of mass rho0 V / n^3
    each)."""

    name: str = setting("jeans", "initial condition")
    density: float = param(1.0, "mean density rho0", gt=0.0)
    amplitude: float = param(1.0, "relative density perturbation eps", gt=0.0, max=1.0)
    wavenumber: int = setting(1, "mode number of the wave along x", min=1, mode_axes="x")
    rate: float = param(0.0, "initial growth rate r = (d delta/dt) / delta of the wave (its phase) and of the "
                        "particles (their velocities); 0 = at rest")


@dataclass(frozen=True)
class Soliton(InitialCondition):
    """The ground-state soliton (found by shooting at start-up) at the box centre, scaled to core radius
    r_c; it reproduces Schive et al. 2014's rho_c = 1.9 (m/1e-23 eV)^-2 (r_c/kpc)^-4 Msun/pc^3.
    Keep r_c below about L/20: the periodic images and the subtracted mean perturb a larger one."""

    name: str = setting("soliton", "initial condition")
    core_radius: float = param(0.1, "core radius r_c, where the density is half the central one", gt=0.0)
    background: float = param(1.0, "uniform background density added to the soliton's (0 = none)", min=0.0)


@dataclass(frozen=True)
class RandomDensity(InitialCondition):
    """A cold log-normal random density field that collapses into halos: rho = rho0 exp(d)/<exp(d)>, d a
    Gaussian field with spectrum ~ k^4 exp(-2 (k/k_peak)^2); the same on any layout and precision."""

    name: str = setting("random", "initial condition")
    density: float = param(1.0, "mean density rho0", gt=0.0)
    amplitude: float = param(1.0, "rms of the log-density d", gt=0.0)
    k_peak: float = param(4.0, "peak mode number of the spectrum of d", gt=0.0)
    seed: int = random_seed("random seed (0 to 2^32 - 1)")


INFO = cold.info(
    SchrodingerPoissonParams, (Jeans, Soliton, RandomDensity), "SchrodingerPoisson",
    summary="Schrodinger-Poisson (fuzzy dark matter) in a static periodic box, kick-drift-kick",
    fields=cold.fields(
        density=FieldInfo(0, "mass density |psi|^2", r"\rho", "inferno", log=True),
        potential=FieldInfo(0, "gravitational potential V", r"\Phi", "RdBu_r"),
        cdm_density=FieldInfo(0, "the cold particles' mass density, assigned by the window (runs with particles)",
                              r"\rho_{\rm CDM}", "inferno", log=True),
        total_density=FieldInfo(0, "wave plus particles' mass density (mixed runs)", r"\rho_{\rm tot}", "inferno",
                                log=True),
    ),
    diagnostics={
        "mass": "total mass int rho dV (wave and particles)",
        "kinetic": "kinetic energy (nu^2/2) int |grad psi|^2 dV, plus sum m p^2 / 2 of the particles",
        "potential": "potential energy (1/2) int rho V dV (rho the total density)",
        "total": "total energy K + W + (g/2) int rho^2 dV (conserved; the last term is the self-interaction's)",
        "max_density": "maximum density (of the total, in a mixed run)",
        "cfl": "dt max(6 nu/dx^2, max|V + g rho|/nu, max|p_i|/dx_i): phase change per step, in radians, or the "
               "particles' largest move per step in cells",
        "kmax_de_broglie": resolution.KMAX_DE_BROGLIE,
        "psi_tail": resolution.PSI_TAIL,
    },
    progress=("total", "max_density", "cfl"),
    resolution_advice=dict.fromkeys(
        ("kmax_de_broglie", "psi_tail"),
        "refine grid.shape: the de Broglie wavelength 2 pi physics.hbar_over_m / v of the fastest flows must span "
        "several cells"),
    scales=scales.QUANTUM,
    spectra={"density": "power spectrum P(k) of the density contrast delta = rho / <rho> - 1: |delta_hat|^2 / N^2 "
                        "(Parseval-weighted) summed over the modes of shell k, every Nyquist plane left out (so every "
                        "backend agrees); the sum over shells is <delta^2> but for those planes (in a mixed run of "
                        "the total matter, f delta_wave + (1 - f) delta_cdm; without the wave the particles', as "
                        "density_cdm)",
             "density_fdm": "the same of the wave's own contrast |psi|^2 / <|psi|^2> - 1 (mixed runs)",
             "density_cdm": "the same of the particles' own contrast, the window divided out (mixed runs; with "
                            "their shot noise)"},
    plot=PlotSpec(
        panels=(
            Panel("mass change", (Curve("mass", r"$(M - M_0)/M_0$, $M = \int\rho\,dV$", relative=True),)),
            Panel("energy", (Curve("kinetic", r"$K = \frac{(\hbar/m)^2}{2}\int|\nabla\psi|^2 dV$"),
                             Curve("potential", r"$W = \frac{1}{2}\int\rho\Phi\,dV$"))),
            Panel(r"$\Delta E$ (relative)",
                  (Curve("total", r"$(E - E_0)/(|K| + |W|)$, $E = K + W + \frac{g}{2}\int\rho^2 dV$", relative=True,
                         scale=("kinetic", "potential")),)),
            Panel("peak density", (Curve("max_density", r"$\max\rho$"),), log="auto"),
        ),
        spectrum="density",
        spectrum_label=r"$P(k)$ of $\delta = \rho/\bar\rho - 1$, $\Sigma_k P(k) = \langle\delta^2\rangle$",
        slice_field="density",
        slice_fallback=("cdm_density",),
    ),
)
