"""A toy equation registered from outside the simulator: linear advection-diffusion of a scalar,

    dtheta/dt + c . grad(theta) = kappa lap(theta),

whose exact solution theta(x, t) = A sin(k0 . (x - c t)) exp(-kappa |k0|^2 t) tests the plug-in route
end to end. It lives in tests/plugins and is registered with SIMULATOR_EQUATIONS=toy_equation: nothing
in simulator/ names it.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.equations.spec import Curve, EquationInfo, EquationParams, FieldInfo, InitialCondition, Panel, PlotSpec
from simulator.schema import param, setting
from simulator.time.schemes import SEMILINEAR


@dataclass(frozen=True)
class AdvectionDiffusionParams(EquationParams):
    """A uniform velocity and a diffusivity."""

    name: str = setting("advection_diffusion", "equation to solve")
    velocity_x: float = param(1.0, "advecting velocity, x component")
    velocity_y: float = param(0.0, "advecting velocity, y component")
    velocity_z: float = param(0.0, "advecting velocity, z component")
    diffusivity: float = param(0.01, "diffusivity kappa", min=0.0)


@dataclass(frozen=True)
class Wave(InitialCondition):
    """theta = A sin(2 pi (m_x x / L_x + m_y y / L_y + m_z z / L_z))."""

    name: str = setting("wave", "initial condition")
    amplitude: float = param(1.0, "amplitude A", gt=0.0)
    modes: tuple[int, int, int] = setting((1, 0, 0), "mode numbers (m_x, m_y, m_z)")


INFO = EquationInfo(
    name="advection_diffusion",
    summary="(a test plug-in) linear advection-diffusion of a scalar",
    params=AdvectionDiffusionParams,
    initials=(Wave,),
    protocol=SEMILINEAR,
    default_integrator="rk4",
    implementation="toy_equation.equation:AdvectionDiffusion",
    fields={"theta": FieldInfo(0, "the scalar", r"\theta")},
    state_fields=("theta",),
    diagnostics={"variance": "<theta^2>", "cfl": "dt max|c_i|/dx_i"},
    progress=("variance",),
    spectra={"variance": "shell-summed <theta^2>"},
    plot=PlotSpec(panels=(Panel("variance", (Curve("variance", r"$\langle\theta^2\rangle$"),)),),
                  spectrum="variance", spectrum_label="variance spectrum", slice_field="theta"),
)
