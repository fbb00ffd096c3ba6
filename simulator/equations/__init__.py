"""Equations as plug-ins: each is a package under ``simulator/equations/`` exposing ``INFO``.

Registering an equation is one line: its package name in :data:`PACKAGES`. Equation packages
outside this tree (your own) are registered by naming their importable modules in the environment
variable ``SIMULATOR_EQUATIONS`` (comma-separated), with no edit to this package at all.

Everything here is importable without JAX: the registry reads the declarations
(:class:`~simulator.equations.spec.EquationInfo`); ``INFO.load()`` imports an implementation.
"""

from __future__ import annotations

import functools
import importlib
import os

from simulator.equations.spec import EquationInfo, EquationParams, InitialCondition

#: the equations shipped with the simulator, by package (the registration lines)
PACKAGES = (
    "simulator.equations.navier_stokes",
    "simulator.equations.schrodinger_poisson",
    "simulator.equations.fdm_cosmo",
    "simulator.equations.boussinesq",
    "simulator.equations.mhd",
)
#: environment variable naming further equation modules, comma-separated
ENV_EXTRA = "SIMULATOR_EQUATIONS"

__all__ = ["ENV_EXTRA", "PACKAGES", "EquationInfo", "EquationParams", "InitialCondition", "get", "registry"]


@functools.cache
def _load(extra: str) -> dict[str, EquationInfo]:
    out: dict[str, EquationInfo] = {}
    for module in (*PACKAGES, *(m.strip() for m in extra.split(",") if m.strip())):
        info = importlib.import_module(module).INFO
        if info.name in out:
            raise ValueError(f"two equations are named {info.name!r} ({module})")
        out[info.name] = info
    return out


def registry() -> dict[str, EquationInfo]:
    """Every registered equation's declaration, by name."""
    return _load(os.environ.get(ENV_EXTRA, ""))


def get(name: str) -> EquationInfo:
    """The declaration of equation ``name`` (KeyError if unknown; the config has already checked)."""
    return registry()[name]
