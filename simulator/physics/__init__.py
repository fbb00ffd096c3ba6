"""Equations, chosen by name from :data:`EQUATIONS`; initial conditions from :data:`INITIAL_CONDITIONS`.

Every equation is a pytree class with the same small protocol, which is all the driver knows:

* ``name``; ``integrators`` (names it supports, default first); ``progress`` (diagnostics for log lines);
  ``state_space`` ("spectral" or "real": where the state's arrays live, for checkpoints);
* ``from_config(fft, cfg, dtype)``, ``params(physics_cfg)`` -> dict of traced parameters;
* ``initial(name, options, params)`` -> the state (a pytree of arrays in the FFT backend's layouts);
* ``diagnostics(state, dt, params)`` -> dict of scalars; ``spectra(state)`` -> dict of shell sums;
  ``output_fields(state)`` -> dict of real-space arrays for snapshots;
* for Runge-Kutta schemes ``linear(params)`` and ``nonlinear(state, t, params)``; for split steps
  ``kick(state, dt, params)`` and ``drift(state, dt, params)`` (see :mod:`simulator.integrators`).
"""

from simulator.physics import navier_stokes, schrodinger_poisson
from simulator.physics.navier_stokes import NavierStokes
from simulator.physics.schrodinger_poisson import SchrodingerPoisson

EQUATIONS = {NavierStokes.name: NavierStokes, SchrodingerPoisson.name: SchrodingerPoisson}
INITIAL_CONDITIONS = {
    NavierStokes.name: navier_stokes.INITIAL_CONDITIONS,
    SchrodingerPoisson.name: schrodinger_poisson.INITIAL_CONDITIONS,
}

__all__ = ["EQUATIONS", "INITIAL_CONDITIONS", "NavierStokes", "SchrodingerPoisson"]
