"""What every incompressible flow equation shares (Navier-Stokes, Boussinesq, MHD), declared once (no JAX).

The flow equations stand beside each other on this package, never on one another: each declares its
own parameters as a subclass of :class:`FlowParams` (viscosity, hyperviscosity and its order, the
constant-power forcing of the velocity) and its initial conditions; those that carry passive scalars
derive them from :class:`FlowInitial`. The JAX side is :mod:`.forcing` (the forcing schemes),
:mod:`.velocity` (the initial velocity fields and what the implementations share), :mod:`.components`
(the nonlinear terms' transforms, stacked or component by component). The planar flows stand on their own base:
:mod:`.planar` declares their parameters (:class:`~.planar.PlanarParams`), :mod:`.plane` implements their skeleton
and :mod:`.plane_forcing` their forcing.

A key whose default or doc is an equation's own (``viscosity``, ``hyperviscosity_order``, ``forcing``)
is built by a function here (:func:`viscosity_key`, :func:`order_key`, :func:`forcing_key`), so that an
equation redeclares it with its own number or words and the shared part of the text is written once. The
declaration itself is :func:`info` (every periodic flow's, the planar ones' too), with the fields and texts
several flows declare alike (:data:`BOX_FIELDS`, :func:`energies` and :func:`energy_panel`, :data:`MAX_DIV`,
:data:`INJECTION`).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulator.equations import scalars as passive
from simulator.equations.spec import Curve, EquationInfo, EquationParams, FieldInfo, InitialCondition, Panel, declare
from simulator.errors import ConfigError
from simulator.schema import param, setting
from simulator.time.schemes import SEMILINEAR

#: the forcing schemes (their masks: :data:`.forcing.FORCING_MASKS`, which JAX builds)
FORCINGS = ("none", "linear", "band")
#: the largest finite number of each precision (NumPy's finfo(...).max)
LARGEST = {"float32": 3.4028234663852886e38, "float64": sys.float_info.max}
#: the velocity and the vorticity of a flow in a box, ``(3, Nx, Ny, Nz)``
BOX_FIELDS = {"velocity": FieldInfo(3, "velocity u", r"|u|"),
              "vorticity": FieldInfo(3, "vorticity w = curl u", r"|\omega|")}
#: the texts of the diagnostics several flows report alike
MAX_DIV = "max |div u| (round-off)"
INJECTION = "injected power <u.f> (forced runs only)"
#: the text of a box's forcing spectrum ``injection_energy``
INJECTION_SPECTRUM = "F(k): rate of change of E_K(k) by the forcing, Re conj(u_hat).f_hat per mode (forced runs only)"


def energies(name: str, symbol: str, value: str, without: str, kinetic: str = "<|u|^2>/2") -> dict[str, str]:
    """The diagnostics of a flow's two energies and their sum, in this order: ``kinetic_energy``, E_K = ``kinetic``,
    the energy ``name`` (``potential_energy``, ``magnetic_energy``), ``symbol`` = ``value``, and ``total_energy``,
    conserved without ``without``."""
    return {"kinetic_energy": f"kinetic energy E_K = {kinetic}", name: f"{name.replace('_', ' ')} {symbol} = {value}",
            "total_energy": f"E_K + {symbol} (conserved without {without})"}


def energy_panel(name: str, symbol: str, kinetic: str = "", other: str = "", **panel: Any) -> Panel:
    """The panel ``energy`` of :func:`energies`' three, E_K, the energy ``name`` (its ``symbol``) and their sum, the
    first two labelled with their definitions ``kinetic`` and ``other`` where given (``" = ..."``, TeX); ``panel``:
    :class:`~simulator.equations.spec.Panel`'s further options."""
    return Panel("energy", (Curve("kinetic_energy", f"$E_K{kinetic}$"), Curve(name, f"${symbol}{other}$"),
                            Curve("total_energy", f"$E_K + {symbol}$")), **panel)


def info(params: type[EquationParams], initials: tuple[type[InitialCondition], ...], implementation: str,
         **declared: Any) -> EquationInfo:
    """The declaration of a periodic flow (in a box or a plane): named by ``params``' default ``name``, started by
    ``initials``, stepped by the class ``implementation`` of its package's ``equation`` module
    (:func:`~simulator.equations.spec.declare`) through the semi-linear schemes, rk4 unless ``declared`` says
    otherwise; ``declared``: the rest of its :class:`~simulator.equations.spec.EquationInfo`, what the equation
    owns. A flow whose ``params`` has ``scalars`` carries passive scalars: their declarations follow its own
    (:func:`simulator.equations.scalars.carried`)."""
    if "scalars" in {f.name for f in dataclasses.fields(params)}:
        declared = passive.carried(declared)
    return declare(params, initials, implementation, **{"protocol": SEMILINEAR, "default_integrator": "rk4",
                                                        **declared})


def check_hyperviscosity(cfg: Any, order: int | None, coefficients: Mapping[str, float]) -> None:
    """Checks of ``physics.hyperviscosity_order`` p against the hyperviscous coefficients it serves
    (``coefficients``: config key -> value; Navier-Stokes's nu_p, Boussinesq's nu_p and kappa_p, MHD's nu_p
    and eta_p). A coefficient > 0 needs its order (the order is structure: a run without one compiles no
    hyperviscous term, while the coefficients are traced and a sweep over them does not recompile); |k|^(2p)
    at the grid's corner must be finite in the run's precision: beyond, the hyperviscous rate is inf, and
    with a coefficient 0 the factor would be 0 x inf = NaN. Raises ConfigError (one line)."""
    if order is None:
        for key, value in coefficients.items():
            if value:
                raise ConfigError("physics.hyperviscosity_order", None, f"an integer >= 2 (e.g. 4) to use "
                                  f"{key} = {value:g}", "is not set")
        return
    corner = sum((math.pi * n / length) ** 2 for n, length in zip(cfg.grid.cells, cfg.grid.lengths, strict=True))
    if order * math.log(corner) >= math.log(LARGEST[cfg.precision]):
        limit = int(math.log(LARGEST[cfg.precision]) / math.log(corner))
        raise ConfigError("physics.hyperviscosity_order", order, f"at most {limit} for grid.shape "
                          f"{list(cfg.grid.shape)} in {cfg.precision} (|k|^(2p) overflows beyond)", "is too large")


def viscosity_key(default: float) -> Any:
    """The ``viscosity`` key with an equation's own default."""
    return param(default, "kinematic viscosity nu", min=0.0)


def order_key(terms: str, absent: str) -> Any:
    """The ``hyperviscosity_order`` key, its doc naming the equation's hyperviscous ``terms`` and what a
    run without an order lacks (``absent``)."""
    return setting(None, f"order p of the {terms} (-lap)^p, an integer >= 2 (e.g. 4; |k|^(2p) must stay finite "
                         f"on the grid in the run's precision); null = no {absent} in the program", min=2)


def forcing_key(target: str) -> Any:
    """The ``forcing`` key, its doc naming what is forced (``target``: "" or " of the velocity")."""
    return setting("none", f"forcing{target} at constant injected power: none, linear (all modes, Lundgren) or band "
                           "(modes with 0 < |k| L/2pi <= forcing_band)", choices=FORCINGS)


class Hyperviscous:
    """What the parameters of a flow with ``hyperviscosity`` and its ``hyperviscosity_order`` (:class:`FlowParams`,
    :class:`~.planar.PlanarParams`) say of them: whether the program has the terms, the coefficients the order
    serves and their check."""

    @property
    def hyperviscous(self) -> bool:
        """Whether the program has the hyperviscous terms (``hyperviscosity_order`` set: structure)."""
        return self.hyperviscosity_order is not None  # type: ignore[attr-defined]

    def hyperviscous_coefficients(self) -> dict[str, float]:
        """The hyperviscous coefficients the order serves, by config key (a subclass adds its own)."""
        return {"physics.hyperviscosity": self.hyperviscosity}  # type: ignore[attr-defined]

    def check(self, cfg: Any) -> None:
        """The order and the coefficients together (:func:`check_hyperviscosity`)."""
        check_hyperviscosity(cfg, self.hyperviscosity_order, self.hyperviscous_coefficients())  # type: ignore[attr-defined]


@dataclass(frozen=True)
class FlowParams(Hyperviscous, EquationParams):
    """The keys every flow equation has: viscosity, hyperviscosity and its order, and the constant-power
    forcing of the velocity (:mod:`.forcing`). A subclass redeclares ``name`` and any key whose default
    or doc is its own (a redeclared key keeps its place; its own keys follow these)."""

    viscosity: float = viscosity_key(0.01)
    hyperviscosity: float = param(0.0, "hyperviscosity nu_p: the term -nu_p (-lap)^p u = -nu_p |k|^(2p) u_hat of "
                                  "the velocity, integrated exactly like the viscous one (needs "
                                  "physics.hyperviscosity_order)", min=0.0)
    hyperviscosity_order: int | None = order_key("hyperviscous term", "hyperviscous term")
    forcing: str = forcing_key(" of the velocity")
    forcing_power: float = param(0.1, "injected power per unit mass epsilon (forced runs)", gt=0.0)
    forcing_band: float = setting(2.5, "highest forced mode number |k| L/2pi of band forcing", gt=0.0)

    def compact_spectra(self) -> str | None:
        """Dealiased by the 2/3 rule throughout: the compact spectral layout holds every mode it keeps (an
        equation with another dealiasing says otherwise)."""
        return None


@dataclass(frozen=True)
class FlowInitial(InitialCondition):
    """Base of the initial conditions of a flow carrying passive scalars: each also takes
    ``initial.scalars`` (declared last in each, so the flow's own keys come first)."""

    def check(self, cfg: Any) -> None:
        passive.check_initial(self.scalars, cfg)  # type: ignore[attr-defined]
