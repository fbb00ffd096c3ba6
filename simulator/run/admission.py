"""Admission: a run is let onto its devices only if its plan fits them (:mod:`simulator.plan`).

``simulator run`` calls :func:`check_run` after the runtime has started and before anything is written
to the run directory: a grid that cannot fit is refused with one line naming it and the largest cubic
grid that fits (exit 2). A run so small that its state alone shows it fits is let through without
compiling its programs. :func:`cautions` names the known ways a run that fits can still go wrong on its
devices; the run log prints them as warnings.
"""

from __future__ import annotations

from typing import Any

import jax

from simulator import cost
from simulator.config import Config
from simulator.errors import ConfigError
from simulator.memory import device_memory_available
from simulator.plan import USABLE_FRACTION, Plan, abstract_state, make_plan


#: a run whose state (per device) is below this fraction of the usable memory is let through without
#: compiling its programs: the shipped programs hold 2-7 times their state, far below 64
#: (tests/test_plan.py checks every registered equation against a quarter of it)
QUICK_FRACTION = 1 / 64

def check_fits(sim: Any) -> Plan | None:
    """Refuse a run that cannot fit its devices (ConfigError naming the grid: exit 2), before anything
    is allocated or written. Returns the plan, or None for a run so small that its state alone shows it
    fits (:data:`QUICK_FRACTION`)."""
    state = abstract_state(sim)
    devices = list(sim.fft.mesh.devices.flat)
    available, _ = device_memory_available(devices)
    state_bytes = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(state)) / len(devices)
    if state_bytes <= QUICK_FRACTION * USABLE_FRACTION * available:
        return None
    plan = make_plan(sim, state=state)
    if not plan.fits:
        n = plan.largest_cubic
        raise ConfigError(
            "grid.shape", list(sim.fft.shape),
            f"{cost.human_bytes(plan.available)} available per device ({plan.available_source}), of which a run "
            f"may plan {USABLE_FRACTION:.0%}; the largest cubic grid that fits is {[n] * 3 if n else 'none'}: use a "
            "smaller grid or more devices",
            f"does not fit in memory: {plan.describe_need()}")
    return plan


def check_run(cfg: Config) -> Plan | None:
    """:func:`check_fits` for the run of ``cfg`` on the devices the runtime set up (it must be started)."""
    from simulator.run.simulation import Simulation

    return check_fits(Simulation(cfg))


