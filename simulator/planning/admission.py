"""Admission: a run is let onto its devices only if its plan fits them (:mod:`simulator.plan`).

``simulator run`` calls :func:`check_run` after the runtime has started and before anything is written
to the run directory: a grid that cannot fit is refused with one line naming it and the largest cubic
grid that fits (exit 2). A run so small that its state alone shows it fits is let through without
compiling its programs. :func:`cautions` names the known ways a run that fits can still go wrong on its
devices; the run log prints them as warnings.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

from simulator import cost
from simulator.config import Config
from simulator.errors import ConfigError
from simulator.memory import device_memory_available
from simulator.plan import USABLE_FRACTION, Plan, abstract_state, auto_in_turn, make_plan


#: a run whose state (per device) is below this fraction of the usable memory is let through without
#: compiling its programs: the shipped programs hold 2-7 times their state, far below 64
#: (tests/test_plan.py checks every registered equation against a quarter of it)
QUICK_FRACTION = 1 / 64

def check_fits(sim: Any) -> Plan | None:
    """Refuse a run that cannot fit its devices (ConfigError naming the grid: exit 2), before anything
    is allocated or written. Returns the plan, whose config is the one to run (``fft.in_turn: auto``
    resolved where the step's fields all at once did not fit: :func:`simulator.plan.auto_in_turn`), or
    None for a run so small that its state alone shows it fits (:data:`QUICK_FRACTION`)."""
    state = abstract_state(sim)
    devices = list(sim.fft.mesh.devices.flat)
    available, _ = device_memory_available(devices)
    state_bytes = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(state)) / len(devices)
    if state_bytes <= QUICK_FRACTION * USABLE_FRACTION * available:
        return None
    plan = make_plan(sim, state=state)
    if not plan.fits:  # fft.in_turn auto: a GPU step's fields one at a time where all at once does not fit
        plan = auto_in_turn(plan, sim.fft.route, lambda cfg: make_plan(type(sim)(cfg)))
    if not plan.fits:
        n = plan.largest_cubic
        raise ConfigError(
            "grid.shape", list(sim.fft.shape),
            f"{cost.human_bytes(plan.available)} available per device ({plan.available_source}), of which a run "
            f"may plan {USABLE_FRACTION:.0%}; the largest cubic grid that fits is {[n] * 3 if n else 'none'}: use a "
            "smaller grid or more devices",
            f"does not fit in memory: {plan.describe_need()}")
    return plan


def check_run(cfg: Config) -> tuple[Config, str]:
    """:func:`check_fits` for the run of ``cfg`` on the devices the runtime set up (it must be started);
    returns the config to run, ``cfg`` with ``fft.in_turn: auto`` resolved (the same on every process), and
    a line for the run log saying why where both were weighed (else "")."""
    from simulator.plan import in_turn_line
    from simulator.run.signals import agree
    from simulator.run.simulation import Simulation

    plan = check_fits(Simulation(cfg))
    if cfg.fft.in_turn != "auto":
        return cfg, ""
    # every process runs the same programs: one at a time if any process's memory needs it
    in_turn = bool(agree([int(plan is not None and plan.cfg.fft.in_turn is True)])[0])
    why = in_turn_line(plan) if plan is not None and plan.other is not None else ""
    return dataclasses.replace(cfg, fft=dataclasses.replace(cfg.fft, in_turn=in_turn)), why


