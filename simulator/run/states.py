"""A simulation's states and the parameters it steps them with (:class:`~simulator.run.simulation.Simulation`
hands them to users through its methods of the same names): the traced parameters with some replaced, checked as
the config checks them; an initial condition's state, a file's on any grid (:mod:`simulator.run.remap`), a state
from real-space fields given by name, and the time a new run starts at.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from simulator.equations.spec import FromFile, InitialCondition
from simulator.errors import ConfigError
from simulator.output import sources
from simulator.schema import absent_keys, structural_zeros
from simulator.schema.build import check

#: a field given to :meth:`~simulator.run.simulation.Simulation.state_from_fields`: a global NumPy array, a
#: jax.Array, or a function of a block's global index (a tuple of slices) returning that block
FieldSource = np.ndarray | jax.Array | Callable[[tuple[slice, ...]], np.ndarray]


def parameters(sim: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """``sim``'s traced parameters with ``values`` replacing some
    (:meth:`~simulator.run.simulation.Simulation.parameters`)."""
    _check_values(sim.cfg.physics, values, "physics")
    absent = absent_keys(sim.cfg.physics)  # a wave's key in a run without it would change nothing, silently
    for key in values:
        if key in absent:
            raise ConfigError(f"physics.{key}", values[key], absent[key][1], absent[key][0])
    fields = {f.name for f in dataclasses.fields(sim.cfg.physics)}
    numbers = {k: float(v) for k, v in values.items()
               if k in fields and not isinstance(v, jax.core.Tracer) and np.ndim(v) == 0}
    changed = dataclasses.replace(sim.cfg.physics, **numbers)
    zeros, now = structural_zeros(sim.cfg.physics), structural_zeros(changed)
    crossed = [key for key in zeros if zeros[key] != now[key]]
    if crossed:
        key = crossed[0]
        raise ConfigError(f"physics.{key}", numbers.get(key), f"{'0' if zeros[key] else 'not 0'}, as this "
                          "Simulation was built with (0 is another program: build a Simulation from a config "
                          "with it)", "changes the structure")
    changed.check(sim.cfg)  # the checks across keys, as the config's
    return _replaced(sim.params, values, sim.dtype, sim.info.name)


def initial_state(sim: Any, initial: InitialCondition | Mapping[str, Any] | None = None,
                  params: Mapping[str, Any] | None = None) -> Any:
    """An initial condition's state (:meth:`~simulator.run.simulation.Simulation.initial_state`)."""
    if isinstance(initial, Mapping):
        from simulator.config.model import INITIAL
        from simulator.schema.build import build_variant

        initial = build_variant(INITIAL, dict(initial), "initial", {"physics": sim.cfg.physics})
    initial = initial or sim.cfg.initial
    sources.check_start(initial, sim.cfg)
    if isinstance(initial, FromFile):
        return state_from_file(sim, initial.path, params=params)
    return sim.equation.initial(initial, sim.params if params is None else dict(params))


def state_from_file(sim: Any, path: str | Path, params: Mapping[str, Any] | None = None) -> Any:
    """The state a file holds, on ``sim``'s grid (:meth:`~simulator.run.simulation.Simulation.state_from_file`)."""
    from simulator.run import remap

    try:
        source = sources.locate(path)
    except ValueError as err:
        raise ConfigError("initial.path", str(path), "give a checkpoint, a snapshot index or a run directory",
                          str(err)) from None
    p = sim.params if params is None else dict(params)
    flow = getattr(sim.equation, "flow", sim.equation)  # with particles: the field part is the flow's
    fields = remap.state_fields(source, flow, p, Path(sim.scratch or Path.cwd()))
    if flow is not sim.equation:
        from simulator.run.particle_states import from_source

        return from_source(sim.equation, sim.make_state(flow, fields, p), source)
    return sim.make_state(sim.equation, fields, p)


def start_time(sim: Any, initial: InitialCondition | None = None) -> float:
    """The time a new run starts at (:meth:`~simulator.run.simulation.Simulation.start_time`)."""
    ic = initial or sim.cfg.initial
    if isinstance(ic, FromFile) and ic.time_from_file:
        return sources.locate(ic.path).time
    return 0.0


def abstract_state(sim: Any) -> Any:
    """The simulation's state as ``jax.ShapeDtypeStruct`` leaves with their shardings (nothing allocated)."""
    from simulator.fft.owned import sharding as owned_sharding
    from simulator.output.checkpoints import leaf_names

    state = jax.eval_shape(sim.equation.from_fields, sim.equation.field_layouts(), sim.params)
    leaves, tree = jax.tree.flatten(state)
    owned = sim.equation.owned_leaves(state)
    out = []
    for leaf, space, name in zip(leaves, sim.equation.leaf_spaces(state), leaf_names(state), strict=True):
        if space == "particles" and name in owned:  # each device its own slots
            sharding = owned_sharding(sim.fft, leaf.ndim)
        elif space == "particles":  # a replicated species' rows, the lost counts: every device holds them all
            sharding = sim.fft.replicated_sharding()
        else:
            sharding = (sim.fft.spectral_sharding if space == "spectral" else sim.fft.real_sharding)(leaf.ndim - 3)
        out.append(jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding))
    return jax.tree.unflatten(tree, out)


def state_from_fields(sim: Any, fields: Mapping[str, FieldSource]) -> Any:
    """A state from real-space fields by name (:meth:`~simulator.run.simulation.Simulation.state_from_fields`)."""
    wanted = set(sim.equation.state_fields)
    if set(fields) != wanted:
        raise KeyError(f"{sim.info.name} builds a state from {', '.join(sorted(wanted))}; got "
                       f"{', '.join(sorted(fields)) or 'nothing'}")
    arrays = {}
    layouts = sim.equation.field_layouts()
    for name, source in fields.items():
        shape, dtype, sharding = layouts[name].shape, layouts[name].dtype, layouts[name].sharding
        # particles' rows (Np, 3), each device taking its own: checked whole where this process can (every NumPy
        # input; a JAX array held on other processes' devices too is left to the run's own loss counts)
        if name not in sim.equation.field_info and not callable(source) and (
                not isinstance(source, jax.Array) or source.is_fully_addressable):
            _check_finite_rows(name, np.asarray(source))
        if isinstance(source, jax.Array):
            arrays[name] = jax.device_put(source.astype(dtype), sharding)
            continue
        if callable(source):
            block = source
        else:
            host = np.asarray(source)
            if host.shape != shape:
                raise ValueError(f"{name} has shape {host.shape}; this grid needs {shape}")
            block = host.__getitem__
        arrays[name] = jax.make_array_from_callback(shape, sharding, lambda idx, b=block: np.asarray(
            b(idx)).astype(dtype), dtype=dtype)
    return sim.make_state(sim.equation, arrays, sim.params)


def _check_finite_rows(name: str, rows: np.ndarray) -> None:
    """A ValueError naming the first row of particle array ``name`` that is not finite: such a particle has no
    cell, and the run would count it as one that found no slot (naming the capacity) rather than as the input."""
    bad = np.flatnonzero(~np.all(np.isfinite(rows.reshape(rows.shape[0], -1)), axis=1)) if rows.ndim else []
    if len(bad):
        raise ValueError(f"{name} has {len(bad)} row(s) that are not finite (the first: row {bad[0]}, "
                         f"{rows[bad[0]].tolist()}): give every particle a finite value")


def _check_values(section: Any, values: Any, where: str) -> None:
    """The config's constraints (min, max, gt, finite) on the concrete numbers of ``values``, a mapping
    of keys of the dataclass ``section`` (lists of sections: a list of mappings)."""
    if not (dataclasses.is_dataclass(section) and isinstance(values, Mapping)):
        return
    fields = {f.name: f for f in dataclasses.fields(section)}
    for key, value in values.items():
        if key not in fields:
            continue  # _replaced names the unknown key
        current = getattr(section, key)
        if isinstance(current, tuple) and current and dataclasses.is_dataclass(current[0]):
            if isinstance(value, Sequence):
                for i, (entry, given) in enumerate(zip(current, value)):
                    _check_values(entry, given, f"{where}.{key}[{i}]")
            continue
        concrete = np.asarray(value) if not isinstance(value, jax.core.Tracer) else None
        if concrete is not None and concrete.dtype.kind in "fiu":
            for number in concrete.ravel().tolist():
                check(f"{where}.{key}", number, fields[key].metadata)


def _replaced(current: Any, values: Any, dtype: Any, where: str) -> Any:
    """``current`` (traced parameters) with ``values`` replacing some of its leaves, keeping its structure
    (a change of structure would be a new program: it is an error instead)."""
    if isinstance(current, dict):
        if not isinstance(values, Mapping):
            raise TypeError(f"{where}: give a mapping of {', '.join(current)}")
        unknown = sorted(set(values) - set(current))
        if unknown:
            raise KeyError(f"{unknown[0]!r} is not a traced parameter of {where}; they are: {', '.join(current)}")
        return {**current, **{k: _replaced(current[k], v, dtype, f"{where}.{k}") for k, v in values.items()}}
    if isinstance(current, list):
        if not isinstance(values, Sequence) or len(values) != len(current):
            raise ValueError(f"{where} has {len(current)} entries (structure, fixed by the config); give as many")
        return [_replaced(c, v, dtype, f"{where}[{i}]") for i, (c, v) in enumerate(zip(current, values, strict=True))]
    array = jnp.asarray(values, dtype)
    if array.shape != current.shape:
        raise ValueError(f"{where} has shape {current.shape}; got {array.shape}")
    return array
