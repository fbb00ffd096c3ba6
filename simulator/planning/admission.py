"""Admission: a run, or an ensemble's batch, is let onto its devices only if its plan fits them
(:mod:`simulator.planning.plan`).

``simulator run`` calls :func:`check_run` after the runtime has started and before anything is written
to the run directory: a grid that cannot fit is refused with one line naming it and the largest grid of its
aspect (a cubic run's: cubic) that fits (exit 2). A run so small that its state alone shows it fits is let
through without compiling its programs. An ensemble's batch (:func:`check_ensemble`) is checked with its
batched programs (:mod:`simulator.run.batched`) compiled the same way, before any member's directory is written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from simulator.config import Config
from simulator.errors import ConfigError
from simulator.planning import cost
from simulator.planning.memory import device_memory_available
from simulator.planning.plan import (
    USABLE_FRACTION,
    Plan,
    abstract_state,
    auto_in_turn,
    footprint_options,
    in_turn_line,
    make_plan,
    program_bytes,
    run_programs,
)

#: a run whose state (per device) is below this fraction of the usable memory is let through without
#: compiling its programs: the periodic programs hold 2-7 times their state, far below 64
#: (tests/test_plan.py checks every registered equation against a quarter of its fraction)
QUICK_FRACTION = 1 / 64
#: the same between plates: those programs also hold the banded factorisations of every mode across a chunk of
#: steps, 17 (no-slip convection) to 33 (a channel box) times their state at 16^3
QUICK_FRACTION_WALLS = 1 / 256


def quick_fraction(cfg: Any) -> float:
    """The fraction of the usable memory below which a run of ``cfg`` is let through without compiling."""
    return QUICK_FRACTION_WALLS if cfg.grid.walls.on else QUICK_FRACTION


def check_fits(sim: Any) -> Plan | None:
    """Refuse a run that cannot fit its devices (ConfigError naming the grid: exit 2), before anything
    is allocated or written. Returns the plan, whose config is the one to run (``fft.in_turn: auto``
    resolved where the step's fields all at once did not fit: :func:`simulator.planning.plan.auto_in_turn`), or
    None for a run so small that its state alone shows it fits (:data:`QUICK_FRACTION`)."""
    state = abstract_state(sim)
    devices = list(sim.fft.mesh.devices.flat)
    available, _ = device_memory_available(devices)
    state_bytes = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(state)) / len(devices)
    if state_bytes <= quick_fraction(sim.cfg) * USABLE_FRACTION * available:
        return None
    plan = make_plan(sim, state=state)
    if not plan.fits:  # fft.in_turn auto: a GPU step's fields one at a time where all at once does not fit
        plan = auto_in_turn(plan, sim.fft.route, lambda cfg: make_plan(type(sim)(cfg)))
    if not plan.fits:
        largest, cubic = plan.largest_grid, len(set(sim.fft.shape)) == 1
        raise ConfigError(
            "grid.shape", list(sim.fft.shape),
            f"{cost.human_bytes(plan.available)} available per device ({plan.available_source}), of which a run "
            f"may plan {USABLE_FRACTION:.0%}; the largest {'cubic grid' if cubic else 'grid of its aspect'} that "
            f"fits is {list(largest) if largest else 'none'}: use a smaller grid or more devices",
            f"does not fit in memory: {plan.describe_need()}")
    return plan


def check_run(cfg: Config) -> tuple[Config, str]:
    """:func:`check_fits` for the run of ``cfg`` on the devices the runtime set up (it must be started);
    returns the config to run, ``cfg`` with ``fft.in_turn: auto`` resolved (the same on every process), and
    a line for the run log saying why where both were weighed (else "")."""
    from simulator.run.signals import agree
    from simulator.run.simulation import Simulation

    plan = check_fits(Simulation(cfg))
    if cfg.fft.in_turn != "auto":
        return cfg, ""
    # every process runs the same programs: one at a time if any process's memory needs it
    in_turn = bool(agree([int(plan is not None and plan.cfg.fft.in_turn is True)])[0])
    why = in_turn_line(plan) if plan is not None and plan.other is not None else ""
    return dataclasses.replace(cfg, fft=dataclasses.replace(cfg.fft, in_turn=in_turn)), why


def ensemble_bytes(sim: Any, members: int, adaptive: bool) -> dict[str, int]:
    """Peak bytes per device of each program of an ensemble of ``members`` members of ``sim``'s structure
    (:func:`simulator.run.batched.batched_programs`), compiled with abstract arrays (nothing allocated), as
    :func:`simulator.planning.plan.make_plan` measures a run."""
    from simulator.run.batched import batched_programs, stacked_shardings

    state = abstract_state(sim)
    shardings = stacked_shardings(sim, state)
    r = sim.fft.replicated_sharding()

    def stacked(leaf: Any, sharding: Any = r, dtype: Any = None) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct((members, *np.shape(leaf)), dtype or leaf.dtype, sharding=sharding)

    states = jax.tree.map(stacked, state, shardings)
    params = jax.tree.map(lambda v: stacked(v, dtype=sim.dtype), sim.params)
    vector = jax.ShapeDtypeStruct((members,), sim.dtype, sharding=r)
    steps = jax.ShapeDtypeStruct((members,), jnp.int32, sharding=r)
    programs = batched_programs(sim, shardings, adaptive)
    chunk_args = (vector, steps, vector, vector, vector) if adaptive else (vector, steps, vector)
    lowered = {name: (program.lower(sim.equation, states, *chunk_args, params) if name == "chunk"
                      else program.lower(sim.equation, states, params, vector, vector))
               for name, program in programs.items()}
    gpu = next(iter(sim.fft.mesh.devices.flat)).platform == "gpu"
    return {name: program_bytes(low.compile(footprint_options(sim.chunk_options if name == "chunk" else None)), gpu)
            for name, low in lowered.items()}


def check_ensemble(cfgs: Sequence[Config]) -> None:
    """:func:`check_fits` for an ensemble: its batched programs compiled with
    abstract arrays for ``len(cfgs)`` members, and each member's output programs (snapshot fields, flow
    statistics, tasks) while the stacked state is held. Refused in one line (ConfigError, exit 2) naming
    the number of members that fit, before anything is written; the runtime must be started."""
    from simulator.run.simulation import Simulation

    sim, members = Simulation(cfgs[0]), len(cfgs)
    state = abstract_state(sim)
    devices = list(sim.fft.mesh.devices.flat)
    available, source = device_memory_available(devices)
    state_bytes = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(state)) / len(devices)
    usable = USABLE_FRACTION * available
    if members * state_bytes <= quick_fraction(sim.cfg) * usable:
        return
    need = ensemble_bytes(sim, members, any(c.time.cfl is not None for c in cfgs))
    outputs = [name for name in run_programs(sim.cfg) if name not in need]  # the per-member programs
    if outputs:
        single = make_plan(sim, outputs, available, state=state, memory_source=source)
        need.update({name: int(members * state_bytes) + b for name, b in single.program_bytes.items()})
    peak = max(need.values())
    if peak <= usable:
        return
    fit = int(usable // (peak / members))
    instead = (f"at most {fit} member(s) of this structure fit: run them in groups (sweep key batch: {fit}, or "
               f"--batch {fit})" if fit else "not even one member fits: use a smaller grid or more devices")
    raise ConfigError("ensemble members", members, f"{cost.human_bytes(available)} available per device "
                      f"({source}), of which a run may plan {USABLE_FRACTION:.0%}; {instead}",
                      f"does not fit in memory: one batched program of {sim.cfg.physics.name} on {sim.fft.shape} "
                      f"needs {cost.human_bytes(peak)} per device ({cost.human_bytes(peak / members)} per member)")


def admit(cfgs: Sequence[Config], ensemble: bool) -> tuple[list[Config], str]:
    """The admission check whoever starts a run hands to :mod:`simulator.run.command` (the command line, the
    API, a sweep): a single run's (``cfgs`` = [cfg], :func:`check_run`) or an ensemble's batch
    (:func:`check_ensemble`). Returns the configs to run and a line for the run log on ``fft.in_turn: auto``'s
    choice ("" if none); ConfigError (exit 2) if they cannot fit."""
    if ensemble:
        check_ensemble(cfgs)
        return list(cfgs), ""
    cfg, why = check_run(cfgs[0])
    return [cfg], why
