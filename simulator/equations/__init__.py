"""Equations as plug-ins: each is a package under ``simulator/equations/`` exposing ``INFO``.

Registering an equation is one line: its package name in :data:`PACKAGES`. Equation packages
outside this tree (your own) are registered by naming their importable modules in the environment
variable ``SIMULATOR_EQUATIONS`` (comma-separated), with no edit to this package at all. A named
module that is missing, fails on import, declares no equation or re-registers a taken name is left out
and kept as a one-line problem (:func:`plugin_problems`): a run of another equation goes on (the CLI
warns), a run that asks for the equation it should have declared is refused with that line.

Everything here is importable without JAX: the registry reads the declarations
(:class:`~simulator.equations.spec.EquationInfo`); ``INFO.load()`` imports an implementation.
"""

from __future__ import annotations

import functools
import importlib
import logging
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
    "simulator.equations.ns2d",
    "simulator.equations.boussinesq2d",
    "simulator.equations.mhd2d",
    "simulator.equations.sw1l",
    "simulator.equations.convection2d",
    "simulator.equations.convection",
    "simulator.equations.convection2d_noslip",
    "simulator.equations.channel2d",
    "simulator.equations.channel",
    "simulator.equations.convection_noslip",
)
#: environment variable naming further equation modules, comma-separated
ENV_EXTRA = "SIMULATOR_EQUATIONS"

__all__ = ["ENV_EXTRA", "PACKAGES", "EquationInfo", "EquationParams", "InitialCondition", "get", "plugin_problem",
           "plugin_problems", "registry",
           "warn_plugin_problems"]


@functools.cache
def _load(extra: str) -> tuple[dict[str, EquationInfo], tuple[tuple[ConfigError, str | None], ...]]:
    """The registry and the problems of the plug-ins left out of it: (error, the equation name it
    tried to take, or None when the module declared none)."""
    out: dict[str, EquationInfo] = {}
    owner: dict[str, str] = {}
    problems: list[tuple[ConfigError, str | None]] = []
    for module in PACKAGES:
        info = _plugin_info(module)  # a built-in that does not load is our bug: raise
        out[info.name], owner[info.name] = info, module
    for module in (m.strip() for m in extra.split(",") if m.strip()):
        try:
            info = _plugin_info(module)
        except ConfigError as err:
            problems.append((err, None))
            continue
        if info.name in out:
            problems.append((ConfigError(ENV_EXTRA, module, f"give the equation another name ({owner[info.name]} "
                                         f"registers {info.name!r})", f"registers the equation {info.name!r} a "
                                         "second time"), info.name))
            continue
        out[info.name], owner[info.name] = info, module
    return out, tuple(problems)


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
    """Every registered equation's declaration, by name (broken plug-ins left out)."""
    return _load(os.environ.get(ENV_EXTRA, ""))[0]


def plugin_problems() -> tuple[ConfigError, ...]:
    """Why each plug-in named in :data:`ENV_EXTRA` that is not in the registry was left out."""
    return tuple(err for err, _ in _load(os.environ.get(ENV_EXTRA, ""))[1])


def plugin_problem(name: str) -> ConfigError | None:
    """The problem to report for a config that asks for equation ``name``: the plug-in that tried to
    take that name, or, when no equation has it, the first plug-in that failed before declaring one
    (it is the likely home of the equation). None when ``name`` is served as asked."""
    problems = _load(os.environ.get(ENV_EXTRA, ""))[1]
    for err, taken in problems:
        if taken == name:
            return err
    if name not in registry():
        return next((err for err, taken in problems if taken is None), None)
    return None


@functools.cache
def warn_plugin_problems(extra: str) -> None:
    """Log each left-out plug-in once per process (a warning: the run that loaded goes on)."""
    for err, _ in _load(extra)[1]:
        logging.getLogger("simulator").warning("%s: left out, so runs of the other equations go on", err)


def get(name: str) -> EquationInfo:
    """The declaration of equation ``name`` (KeyError if unknown; the config has already checked)."""
    return registry()[name]
