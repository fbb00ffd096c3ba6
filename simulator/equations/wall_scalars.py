"""Passive scalars between plates: what the equations between plates (convection and channels) declare alike
(no JAX); :mod:`simulator.equations.wall_scalar_terms` is what they run alike.

Each entry of ``physics.scalars`` is a scalar s advected by the flow and diffused at its own rate,

    ds/dt + u . grad s = kappa lap s,

held at the plates by the condition ``grid.walls.temperature`` names for the temperature and every scalar
(:class:`simulator.config.grid.WallsConfig`): ``fixed-value``, the scalar itself at the bottom and the top plate
(``values: [s0, s1]``), or ``fixed-flux``, its slope ds/dz there (``gradients: [g0, g1]``; the diffusive flux
across a plate is -kappa ds/dz). Unset, the plate values or slopes are 0; the key of the other condition is
refused. A scalar's Nusselt-like number at a plate is its diffusive flux there over the conductive state's,
kappa (s0 - s1)/H between fixed values. Between free-slip plates (``convection2d``, ``convection``), which hold the
temperature by fixed values alone, each scalar is its linear profile plus a sine series
(:func:`simulator.equations.walled.scalar_lifts`); between no-slip plates a Chebyshev series of the flow core.

Initial scalars (``initial.scalars``): the conductive profile between the plates (``linear``: s0 + (s1 - s0) z/H
between fixed values, g0 z + (g1 - g0) z^2 / (2H) between fixed fluxes), plus noise A xi (4 z (H - z) / H^2)^2
damped flat at the plates, whose condition the first step imposes (xi unit white noise, one draw per scalar), or
``zero``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from simulator.equations.spec import FieldInfo
from simulator.errors import ConfigError
from simulator.schema import param, random_seed, section, setting

#: the two conditions at the plates (``grid.walls.temperature``) and the key of a scalar's entry that gives them
KEYS = {"fixed-value": "values", "fixed-flux": "gradients"}


@dataclass(frozen=True)
class WallScalar:
    """One passive scalar between plates: an entry of ``physics.scalars``."""

    diffusivity: float = param(1e-3, "diffusivity kappa of this scalar", gt=0.0)
    values: tuple[float, float] | None = setting(None, "the scalar at the bottom and the top plate [s0, s1], for "
                                                 "fixed-value plates (grid.walls.temperature); null: [0, 0]")
    gradients: tuple[float, float] | None = setting(None, "the scalar's slope ds/dz at the bottom and the top plate "
                                                    "[g0, g1] (its diffusive flux -kappa ds/dz), for fixed-flux "
                                                    "plates (grid.walls.temperature); null: [0, 0]")

    def plates(self) -> tuple[str, tuple[float, float]]:
        """(condition, (bottom, top)): ``fixed-flux`` and the slopes where ``gradients`` is set, else ``fixed-value``
        and the values (0 unset)."""
        if self.gradients is not None:
            return "fixed-flux", tuple(self.gradients)
        return "fixed-value", tuple(self.values) if self.values is not None else (0.0, 0.0)


def scalar_list() -> Any:
    """The ``scalars`` field of a walled equation's parameters: a list of :class:`WallScalar`, empty by default."""
    return setting((), "passive scalars between the plates, one section each, e.g. [{diffusivity: 1e-3, values: "
                   "[1, 0]}] (values for fixed-value plates, gradients for fixed-flux ones: grid.walls.temperature); "
                   "[] = none (see initial.scalars)")


#: initial conditions of the scalars (``initial.scalars.name``)
INITIALS = ("linear", "zero")


@dataclass(frozen=True)
class WallScalarInitial:
    """The initial condition of every passive scalar between plates (``initial.scalars``)."""

    name: str = setting("linear", "initial scalars: linear (the conductive profile between the plates' values or "
                        "slopes) or zero", choices=INITIALS)
    amplitude: float = param(0.0, "amplitude A of the noise A xi (4 z (H - z) / H^2)^2 added to each scalar "
                             "(damped flat at the plates; linear only)", min=0.0)
    seed: int = random_seed("random seed of the scalars' noise (0 to 2^32 - 2)", max=2**32 - 2)


def scalar_initial() -> Any:
    """The ``scalars`` field of a walled initial condition: one :class:`WallScalarInitial` for every scalar."""
    return section(WallScalarInitial, "initial condition of every passive scalar of physics.scalars")


def check(scalars: tuple[WallScalar, ...], cfg: Any) -> None:
    """Each scalar's plate key is its plates' condition's (``grid.walls.temperature``): ``values`` between
    fixed-value plates, ``gradients`` between fixed-flux ones."""
    condition = cfg.grid.walls.temperature[0]
    for i, s in enumerate(scalars):
        for other, key in KEYS.items():
            value = getattr(s, key)
            if other != condition and value is not None:
                raise ConfigError(f"physics.scalars[{i}].{key}", list(value), f"physics.scalars[{i}]."
                                  f"{KEYS[condition]}: [bottom, top] for {condition} plates "
                                  f"(grid.walls.temperature = {list(cfg.grid.walls.temperature)})",
                                  f"is given for a {condition} scalar")
            if value is not None and len(value) != 2:
                raise ConfigError(f"physics.scalars[{i}].{key}", list(value), "two numbers: [bottom, top]",
                                  "is not one per plate")


def check_initial(initial: WallScalarInitial, cfg: Any) -> None:
    """Scalar initial conditions need scalars: set without any, they would be ignored silently."""
    if initial != WallScalarInitial() and not cfg.physics.scalars:
        raise ConfigError("initial.scalars.name", initial.name, "declare scalars in physics.scalars, or leave "
                          "initial.scalars out", "has no scalar to apply to")


def resolve(scalars: tuple[WallScalar, ...], cfg: Any) -> tuple[WallScalar, ...]:
    """The scalars with their plates' key filled in (0 at both plates where unset), so that each entry names its
    condition (:meth:`WallScalar.plates`)."""
    key = KEYS[cfg.grid.walls.temperature[0]]
    return tuple(s if getattr(s, key) is not None else dataclasses.replace(s, **{key: (0.0, 0.0)}) for s in scalars)


class WallScalarHost:
    """Mixed into the parameters of an equation that carries ``scalars`` (:func:`scalar_list`): each scalar's plate
    key checked after the equation's own checks (:func:`check`) and filled in when the config is resolved
    (:func:`resolve`)."""

    scalars: tuple[WallScalar, ...]

    def check(self, cfg: Any) -> None:
        super().check(cfg)  # type: ignore[misc]
        check(self.scalars, cfg)

    def resolve(self, cfg: Any) -> Any:
        """Each scalar's plate key filled in (:func:`resolve`)."""
        return dataclasses.replace(cfg, physics=dataclasses.replace(self, scalars=resolve(self.scalars, cfg)))


FIELD = FieldInfo(1, "passive scalars s_i, one per entry of physics.scalars (n_scalars, Nx, Ny, Nz)", "s",
                  cmap="RdBu_r", stacked=True)

DIAGNOSTICS = {
    "scalar{i}_mean": "mean <s_i> of passive scalar i over the volume",
    "scalar{i}_variance": "variance <s_i'^2> of passive scalar i (s' = s - <s>)",
    "scalar{i}_flux_bottom": "passive scalar i's diffusive flux -kappa_i d<s_i>/dz upwards through the bottom plate "
                             "(horizontal mean); over the conductive kappa_i (s0 - s1)/H, its Nusselt-like number",
    "scalar{i}_flux_top": "passive scalar i's diffusive flux -kappa_i d<s_i>/dz upwards through the top plate",
}
