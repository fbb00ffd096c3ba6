"""Distributed pseudo-spectral simulator in JAX.

Importing the package does nothing but define code (and imports no JAX): devices, processes and JAX
settings are set up when a command runs or a :class:`Simulation` is built. The public Python API
(:mod:`simulator.api`): ``Simulation``, ``load_config``, ``run_config``, ``run_ensemble``, ``load_run``,
``load_sweep``.
"""

from __future__ import annotations

from typing import Any

from simulator.version import __version__

__all__ = ["Simulation", "load_config", "load_run", "load_sweep", "run_config", "run_ensemble", "__version__"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from simulator import api

        return getattr(api, name)
    raise AttributeError(f"module 'simulator' has no attribute {name!r}")
