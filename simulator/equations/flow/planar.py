"""What every planar flow declares (``ns2d``, ``boussinesq2d``, ``mhd2d``, and a flow of another form such as
rotating shallow water), once (no JAX): the parameters base :class:`PlanarParams` and the texts of the keys and
diagnostics they share.

The members every planar flow has: viscosity, hyperviscosity (order p), hypoviscosity (order m: removes energy at
the largest scales, where the inverse cascade arrives), linear friction alpha (the bottom drag of a thin layer), and
the forcing of the plane: ``random`` (a band of modes around ``forcing_wavenumber``, random phases drawn anew each
step, a kick of energy exactly ``forcing_power`` dt: a fixed injection rate) or ``kolmogorov`` (f_x = F sin(k_f y)).
A planar equation subclasses :class:`PlanarParams`, redeclares ``name`` and any key whose default or doc is its own
(a redeclared key keeps its place), adds its own keys, and says what sets its resolution
(:meth:`PlanarParams.dissipative_scale`). The JAX side is :mod:`.plane` (the base class of the implementations) and
:mod:`.plane_forcing` (the forcing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.equations.flow import Hyperviscous, order_key, viscosity_key
from simulator.equations.spec import EquationParams, FieldInfo
from simulator.errors import ConfigError
from simulator.schema import param, setting

#: the forcing schemes of the plane
FORCINGS = ("none", "random", "kolmogorov")
#: ``kmax_eta``'s text: the enstrophy cascade's dissipative scale (Kraichnan 1967)
KMAX_ETA = ("k_max eta_Z: the 2/3-rule cutoff (2/3) min pi N_i/L_i times the enstrophy-dissipation scale "
            "(nu^3/chi)^(1/6), chi = 2 nu P the enstrophy dissipation rate (with hyperviscosity the larger of it and "
            "(nu_p^3/chi_p)^(1/(6p))); below 1 the grid under-resolves the enstrophy cascade's end")
#: the diagnostics of a forced plane (declared by every planar flow; written by a forced run only)
FORCED_DIAGNOSTICS = {
    "injection": "injected power (forced runs: forcing_power for random, <u . f> for kolmogorov)",
    "injection_enstrophy": "injected enstrophy per unit time (forced runs)",
}
#: the texts of the diagnostics several planar flows report alike
ENSTROPHY = "enstrophy Z = <omega^2>/2"
MAX_VORTICITY = "max |omega|"
#: the fields of a flow in vorticity form: the vorticity, and the stream function (derived, not in snapshots)
VORTICITY = FieldInfo(0, "vorticity omega = dv/dx - du/dy (1, Nx, Ny)", r"\omega", cmap="RdBu_r")
STREAM_FUNCTION = FieldInfo(0, "stream function psi, u = dpsi/dy, v = -dpsi/dx (1, Nx, Ny)", r"\psi", cmap="RdBu_r",
                            snapshot=False)


def velocity(doc: str = ": the plane's, with the zero component normal to it, so that a vector reads as one in "
                        "ParaView and xarray") -> FieldInfo:
    """The velocity field (u, v, 0) of a plane, ``(3, 1, Nx, Ny)``, ``doc`` saying what its components are."""
    return FieldInfo(3, f"velocity (u, v, 0){doc} (3, 1, Nx, Ny)", r"|u|")


@dataclass(frozen=True)
class PlanarParams(Hyperviscous, EquationParams):
    """Viscosity, hyper- and hypoviscosity, linear friction and the forcing: the keys every planar flow has."""

    viscosity: float = viscosity_key(1e-3)
    hyperviscosity: float = param(0.0, "hyperviscosity nu_p: the term -nu_p (-lap)^p omega (needs "
                                  "physics.hyperviscosity_order)", min=0.0)
    hyperviscosity_order: int | None = order_key("hyperviscous term", "hyperviscous term")
    hypoviscosity: float = param(0.0, "hypoviscosity nu_m: the term -nu_m (-lap)^(-m) omega, acting on the largest "
                                 "scales (needs physics.hypoviscosity_order)", min=0.0)
    hypoviscosity_order: int | None = setting(None, "order m of the hypoviscous term (-lap)^(-m), an integer >= 1; "
                                              "null = no hypoviscous term in the program", min=1)
    friction: float = param(0.0, "linear friction alpha: the term -alpha omega (bottom drag; 0 = none)", min=0.0)
    forcing: str = setting("none", "forcing: none; random (modes with |m - forcing_wavenumber| <= forcing_width/2, "
                           "m = |k| max(L)/2pi, random phases each step, a kick of energy forcing_power dt); "
                           "kolmogorov (f_x = forcing_amplitude sin(2 pi forcing_wavenumber y / Ly))",
                           choices=FORCINGS)
    forcing_power: float = param(0.1, "injected power per unit mass epsilon (forcing: random)", gt=0.0)
    forcing_amplitude: float = param(1.0, "amplitude F of the Kolmogorov forcing f_x = F sin(k_f y)", gt=0.0)
    forcing_wavenumber: int = setting(4, "forced mode number k_f (random: the band's centre; kolmogorov: along y)",
                                      min=1)
    forcing_width: float = setting(1.0, "width of the random forcing's band, in mode numbers", gt=0.0)
    forcing_seed: int = setting(0, "seed of the random forcing's phases", min=0, max=2**31 - 1)

    @property
    def hypoviscous(self) -> bool:
        """Whether the program has the hypoviscous term (``hypoviscosity_order`` set: structure)."""
        return self.hypoviscosity_order is not None

    def check(self, cfg: Any) -> None:
        """The orders against their coefficients, the forced modes against the grid, the passive scalars' mean
        gradients (an equation's ``scalars``) in the plane (ConfigError, one line)."""
        super().check(cfg)
        if self.hypoviscosity and not self.hypoviscous:
            raise ConfigError("physics.hypoviscosity_order", None, f"an integer >= 1 to use physics.hypoviscosity "
                              f"= {self.hypoviscosity:g}", "is not set")
        if self.forcing != "none" and 3 * self.forcing_wavenumber >= min(cfg.grid.shape):
            raise ConfigError("physics.forcing_wavenumber", self.forcing_wavenumber, f"below {min(cfg.grid.shape)}/3 "
                              f"(the 2/3 rule's modes of grid.shape {list(cfg.grid.shape)})", "is not resolved")
        for i, s in enumerate(getattr(self, "scalars", ())):
            if s.mean_gradient[2]:
                raise ConfigError(f"physics.scalars[{i}].mean_gradient", list(s.mean_gradient),
                                  "[Gx, Gy, 0]: a plane has no z", "has a z component")

    def compact_spectra(self) -> str | None:
        """Dealiased by the 2/3 rule throughout."""
        return None

    def dissipative_scale(self) -> str:
        """The enstrophy cascade's end sets a planar flow's resolution (Kraichnan 1967); an equation whose energy
        cascades to small scales (2D MHD) says ``kolmogorov``."""
        return "enstrophy"
