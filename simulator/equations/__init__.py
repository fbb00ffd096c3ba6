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
from simulator.errors import ConfigError

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
    owner: dict[str, str] = {}
    for module in (*PACKAGES, *(m.strip() for m in extra.split(",") if m.strip())):
        info = _plugin_info(module)
        if info.name in out:
            raise ConfigError(ENV_EXTRA, module, f"give the equation another name ({owner[info.name]} registers "
                              f"{info.name!r})", f"registers the equation {info.name!r} a second time")
        out[info.name] = info
        owner[info.name] = module
    return out


def _plugin_info(module: str) -> EquationInfo:
    """``module``'s ``INFO``; a module that is missing, fails to import or declares no equation is bad
    input (the user named it in :data:`ENV_EXTRA`): ConfigError, one line, never a traceback."""
    allowed = "name importable modules that each define INFO, an EquationInfo (comma-separated)"
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name is not None and (module == err.name or module.startswith(err.name + ".")):
            raise ConfigError(ENV_EXTRA, module, allowed, "does not exist (no such module)") from None
        raise ConfigError(ENV_EXTRA, module, allowed, f"fails on import ({err})") from None
    except Exception as err:  # a plug-in's own bug: name it, the user can fix or unset the variable
        raise ConfigError(ENV_EXTRA, module, allowed, f"fails on import ({type(err).__name__}: {err})") from None
    info = getattr(imported, "INFO", None)
    if not isinstance(info, EquationInfo):
        raise ConfigError(ENV_EXTRA, module, allowed, "has no INFO (an EquationInfo)")
    return info


def registry() -> dict[str, EquationInfo]:
    """Every registered equation's declaration, by name."""
    return _load(os.environ.get(ENV_EXTRA, ""))


def get(name: str) -> EquationInfo:
    """The declaration of equation ``name`` (KeyError if unknown; the config has already checked)."""
    return registry()[name]
