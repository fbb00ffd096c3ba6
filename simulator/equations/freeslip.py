"""What the equations of convection between free-slip plates declare alike (no JAX): the plane's
(:mod:`simulator.equations.convection2d`, the vorticity form) and the box's (:mod:`simulator.equations.convection`,
the velocity form) declarations from one function (:func:`freeslip_info`), their linear mode's shared options
(:class:`FreeSlipMode`). Their parameters in free-fall units, the conductive start and the exact linear theory are
every convection equation's (:mod:`simulator.equations.plates`); :mod:`simulator.equations.freeslip_flow` is what
their implementations run alike.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from simulator.equations import wall_scalars
from simulator.equations.plates import (
    BOX_VELOCITY,
    CONVECTION_PLOT,
    PLANE_VELOCITY,
    VORTICITY,
    check_mode,
    convection_info,
    temperature_fields,
)
from simulator.equations.spec import EquationInfo, EquationParams, InitialCondition
from simulator.schema import param, setting
from simulator.time.schemes import SEMILINEAR


@dataclass(frozen=True)
class FreeSlipMode(InitialCondition):
    """One linear mode (m_x, n) of the conductive state between free-slip plates, theta = A cos(a x) sin(n pi z),
    a = 2 pi m_x / Lx, with its eigenvector's flow: what the plane's and the box's ``mode`` share (each says its own
    flow; the plane words ``modes``' help its own way)."""

    name: str = setting("mode", "initial condition")
    amplitude: float = param(1e-6, "temperature amplitude A", gt=0.0)
    modes: tuple[int, int] = setting((1, 1), "(m_x, n): mode number m_x along x (a = 2 pi m_x / Lx) and n >= 1 in z")
    scalars: wall_scalars.WallScalarInitial = wall_scalars.scalar_initial()

    def check(self, cfg: Any) -> None:
        check_mode(self.modes, cfg)
        wall_scalars.check_initial(self.scalars, cfg)


#: what convection between free-slip plates reports, in a plane (:func:`freeslip_info`: the box's own wording and
#: columns replace some)
FREESLIP_DIAGNOSTICS = {
    "kinetic_energy": "kinetic energy E_K = <|u|^2>/2",
    "nusselt": "Nusselt number through the volume, 1 + <w theta>/kappa (<w b> - kappa d<b>/dz over the volume, in "
               "units of the conductive flux kappa)",
    "nusselt_bottom": "Nusselt number at the bottom plate, -d<b>/dz at z = 0 (horizontal mean)",
    "nusselt_top": "Nusselt number at the top plate, -d<b>/dz at z = 1 (horizontal mean)",
    "reynolds": "Reynolds number <|u|^2>^(1/2) / nu",
    "kinetic_dissipation": "kinetic dissipation nu <omega^2> (= nu <|grad u|^2> between free-slip plates); "
                           "(Nu - 1)/sqrt(Ra Pr) in a statistically steady state",
    "thermal_dissipation": "thermal dissipation kappa <|grad b|^2> = kappa (1 + <|grad theta|^2>); Nu/sqrt(Ra Pr) "
                           "in a statistically steady state",
    "kmax_eta": "resolution k_max min(eta, eta_theta): the Kolmogorov scale (nu^3/epsilon_u)^(1/4) and the "
                "temperature's (Batchelor for Pr >= 1) against the 2/3 rule's cutoff (2/3) min(pi N/L); at least 1",
    "max_velocity": "max |u|",
    "cfl": "CFL number dt max(|u|/dx + |w|/dz)",
}
#: the box's own wording of its fields and diagnostics (in its velocity form), over the plane's
_FREESLIP_BOX = {
    "temperature": "temperature b = 1 - z + theta (Nx, Ny, Nz)",
    "theta": "departure theta of the temperature from the conductive profile (Nx, Ny, Nz)",
    "nusselt": "Nusselt number through the volume, 1 + <w theta>/kappa",
    "kinetic_dissipation": "kinetic dissipation nu <|grad u|^2>; (Nu - 1)/sqrt(Ra Pr) in a statistically steady "
                           "state",
    "thermal_dissipation": "thermal dissipation kappa (1 + <|grad theta|^2>); Nu/sqrt(Ra Pr) in a statistically "
                           "steady state",
}


def freeslip_info(params: type[EquationParams], mode: type[InitialCondition], implementation: str,
                  dimensions: int) -> EquationInfo:
    """The declaration of convection between free-slip plates (sine and cosine series across them) in a plane
    (``dimensions`` 2: the vorticity form) or a box (3: the velocity form) (:func:`~simulator.equations.plates.
    convection_info`): one physics, whose geometries differ in their state's fields (the plane's vorticity), the
    box's divergence where the plane reports max |u|, the components in the CFL number and the spectra's
    wavenumber."""
    plane = dimensions == 2
    fields = {**temperature_fields("(1, Nx, Nz)"), "vorticity": VORTICITY, "velocity": PLANE_VELOCITY,
              "scalar": wall_scalars.FIELD}
    diagnostics = dict(FREESLIP_DIAGNOSTICS)
    energy = ("kinetic energy spectrum E_K(k): 0.5 |u_hat|^2 / n^2 (Parseval-weighted, n the number of cells) summed "
              "over the ring |k|, k = (k_x, n pi); sums to E_K")
    if not plane:
        del fields["vorticity"]
        fields.update(velocity=BOX_VELOCITY,
                      **{k: dataclasses.replace(fields[k], doc=_FREESLIP_BOX[k]) for k in ("temperature", "theta")})
        diagnostics = {**{k: _FREESLIP_BOX.get(k, v) for k, v in diagnostics.items() if k not in ("max_velocity",
                                                                                                   "cfl")},
                       "divergence": "max |div u| (round-off: the projection is exact mode by mode)",
                       "cfl": "CFL number dt max(|u|/dx + |v|/dy + |w|/dz)"}
        energy = ("kinetic energy spectrum E_K(k): 0.5 |u_hat|^2 / n^2 (Parseval-weighted) summed over the shell |k|, "
                  "k = (k_x, k_y, n pi); sums to E_K")
    return convection_info(
        params, mode, implementation, dimensions, "free-slip plates (free-fall units, as Dedalus)",
        protocol=SEMILINEAR,
        default_integrator="rk4",
        default_box=(4.0, 1.0) if plane else (2 * math.sqrt(2), 2 * math.sqrt(2), 1.0),
        fields=fields,
        state_fields=("vorticity" if plane else "velocity", "theta", "scalar"),
        diagnostics={**diagnostics, **wall_scalars.DIAGNOSTICS},
        spectra={"energy": energy},
        plot=dataclasses.replace(CONVECTION_PLOT, spectrum_label=r"$E_K(k)$"),
    )
