"""Equations, chosen by name. Each module defines one equation class with the same small protocol:
``linear(params)``, ``nonlinear(u_hat, t, params)``, ``initial(name, options)``,
``diagnostics(u_hat, dt, params)``, ``params(physics_cfg)``."""

from simulator.physics.navier_stokes import INITIAL_CONDITIONS as NS_INITIAL
from simulator.physics.navier_stokes import NavierStokes

EQUATIONS = {NavierStokes.name: NavierStokes}
INITIAL_CONDITIONS = {NavierStokes.name: NS_INITIAL}

__all__ = ["EQUATIONS", "INITIAL_CONDITIONS"]
