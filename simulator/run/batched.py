"""An ensemble's batched programs (:mod:`simulator.run.ensemble`): the shardings of the stacked state,
the jitted programs over members, and the memory fit check of the whole batch, which compiles those same
programs with abstract arrays before any member's directory is written.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from simulator.config import Config
from simulator.errors import ConfigError
from simulator.output import kinds
from simulator.run.simulation import Simulation


def stacked_shardings(sim: Simulation, state: Any) -> Any:
    """The shardings of ``state``'s leaves stacked along a leading member axis (unsharded: every device
    holds its blocks of every member; particle arrays ``(K, Np, 3)`` whole on every device)."""
    fft = sim.fft
    leaves, treedef = jax.tree.flatten(state)
    stacked = [fft.replicated_sharding() if s == "particles"
               else (fft.spectral_sharding if s == "spectral" else fft.real_sharding)(a.ndim - 2)
               for a, s in zip(leaves, sim.equation.leaf_spaces(state), strict=True)]
    return jax.tree.unflatten(treedef, stacked)


def batched_programs(sim: Simulation, shardings: Any, adaptive: bool) -> dict[str, Any]:
    """The ensemble's programs, jitted (compiled on first call, or lowered by the fit check): ``chunk``
    (``jax.vmap`` over members of :meth:`Simulation.chunk`, or of :meth:`Simulation.adaptive_chunk` when a
    member adapts its dt; the stacked state donated), and the device programs of the ``records`` output kinds
    the run writes (:func:`simulator.output.kinds.computed`: the diagnostics, the spectra), ``jax.vmap``
    over members of each, ``(equation, states, params, t, dt)`` (each member at its own run time and step)."""
    if adaptive:
        r = sim.fft.replicated_sharding()
        chunk = jax.jit(jax.vmap(sim.adaptive_chunk, in_axes=(None, 0, 0, 0, 0, 0, 0, 0)),
                        out_shardings=(shardings, r, r, r, r), donate_argnums=(1,), compiler_options=sim.chunk_options)
    else:
        chunk = jax.jit(jax.vmap(sim.chunk, in_axes=(None, 0, 0, 0, 0, 0)), out_shardings=shardings,
                        donate_argnums=(1,), compiler_options=sim.chunk_options)
    batched = {p.name: jax.jit(jax.vmap(functools.partial(p.load(), sim), in_axes=(None, 0, 0, 0, 0)),
                               compiler_options=sim.compiler_options) for p in kinds.computed(sim.cfg, "records")}
    return {"chunk": chunk, **batched}


def program_bytes(sim: Simulation, members: int, adaptive: bool) -> dict[str, int]:
    """Peak bytes per device of each program of an ensemble of ``members`` members of ``sim``'s structure,
    compiled with abstract arrays (nothing allocated), as :func:`simulator.plan.make_plan` measures a run."""
    from simulator import plan

    state = plan.abstract_state(sim)
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
    return {name: plan.program_bytes(low.compile(plan.footprint_options()))
            for name, low in lowered.items()}


def check_fits(cfgs: Sequence[Config]) -> None:
    """:func:`simulator.run.admission.check_fits` for an ensemble: its batched programs compiled with
    abstract arrays for ``len(cfgs)`` members, and each member's output programs (snapshot fields, flow
    statistics, tasks) while the stacked state is held. Refused in one line (ConfigError, exit 2) naming
    the number of members that fit, before anything is written; the runtime must be started."""
    from simulator import cost
    from simulator.memory import device_memory_available
    from simulator.plan import USABLE_FRACTION, abstract_state, make_plan, run_programs
    from simulator.run.admission import QUICK_FRACTION

    sim, members = Simulation(cfgs[0]), len(cfgs)
    state = abstract_state(sim)
    devices = list(sim.fft.mesh.devices.flat)
    available, source = device_memory_available(devices)
    state_bytes = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(state)) / len(devices)
    usable = USABLE_FRACTION * available
    if members * state_bytes <= QUICK_FRACTION * usable:
        return
    need = program_bytes(sim, members, any(c.time.cfl is not None for c in cfgs))
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
