"""A planar equation written on the planar flows' base, registered from outside the simulator: the barotropic beta
plane (the vorticity equation with the planetary vorticity gradient beta = df/dy),

    d omega/dt + u . grad omega + beta v = nu lap omega - alpha omega + (the hyper- and hypoviscous terms) + f,

whose single Rossby wave omega = A cos(k . x - Omega t), Omega = -beta k_x/|k|^2, is an exact solution (its nonlinear
term is zero). Everything but beta and the wave comes from the base (:mod:`simulator.equations.flow.planar`): the
sinks, the forcing, passive scalars, particles. Registered with SIMULATOR_EQUATIONS=beta_plane (docs/how-to/
add-equation.md); the implementation is :mod:`.equation`.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.equations import scalars as passive
from simulator.equations.flow import FlowInitial
from simulator.equations.flow.planar import FORCED_DIAGNOSTICS, KMAX_ETA, PlanarParams
from simulator.equations.spec import Curve, EquationInfo, FieldInfo, Panel, PlotSpec
from simulator.schema import param, setting
from simulator.time.schemes import SEMILINEAR


@dataclass(frozen=True)
class BetaPlaneParams(PlanarParams):
    """The planar flow's keys and beta."""

    name: str = setting("beta_plane", "equation to solve")
    beta: float = param(1.0, "planetary vorticity gradient beta = df/dy")
    scalars: tuple[passive.PassiveScalar, ...] = passive.scalar_list()


@dataclass(frozen=True)
class RossbyWave(FlowInitial):
    """omega = A cos(k_x x + k_y y), k_i = 2 pi m_i/L_i."""

    name: str = setting("rossby_wave", "initial condition")
    amplitude: float = param(1.0, "vorticity amplitude A", gt=0.0)
    modes: tuple[int, int] = setting((1, 1), "mode numbers (m_x, m_y), not both 0")
    scalars: passive.ScalarInitial = passive.scalar_initial()


INFO = EquationInfo(
    name="beta_plane",
    summary="(a test plug-in) the barotropic beta plane on the planar flows' base",
    params=BetaPlaneParams,
    initials=(RossbyWave,),
    protocol=SEMILINEAR,
    default_integrator="rk4",
    implementation="beta_plane.equation:BetaPlane",
    dimensions=2,
    fields={"vorticity": FieldInfo(0, "vorticity (1, Nx, Ny)", r"\omega", cmap="RdBu_r"),
            "velocity": FieldInfo(3, "velocity (u, v, 0) (3, 1, Nx, Ny)", r"|u|"),
            "stream_function": FieldInfo(0, "stream function (1, Nx, Ny)", r"\psi", snapshot=False),
            "scalar": passive.FIELD},
    state_fields=("vorticity", "scalar"),
    diagnostics={"energy": "kinetic energy <|u|^2>/2", "enstrophy": "enstrophy <omega^2>/2",
                 "dissipation": "energy dissipation by every sink", "cfl": "dt max(|u|/dx + |v|/dy)",
                 "kmax_eta": KMAX_ETA, **FORCED_DIAGNOSTICS, **passive.DIAGNOSTICS},
    progress=("energy", "cfl"),
    resolution_advice={"kmax_eta": "refine grid.shape, or raise physics.viscosity",
                       "scalar{i}_kmax_eta": "refine grid.shape, or raise physics.scalars[{i}].diffusivity"},
    spectra={"energy": "energy spectrum E(k)", "transfer_energy": "energy transfer T(k)",
             "injection_energy": "the Kolmogorov forcing's injection F(k)", **passive.SPECTRA},
    plot=PlotSpec(panels=(Panel("energy", (Curve("energy", "$E$"),)), *passive.PANELS), spectrum="energy",
                  spectrum_label="$E(k)$", slice_field="vorticity"),
)
