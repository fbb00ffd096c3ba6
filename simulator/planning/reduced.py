"""A plan of a run on many devices from a smaller run with the same cells per device.

On many devices (64 or more, 8 x :data:`COMPILED_DEVICES`) ``simulator plan`` compiles a smaller run in
its stead whose devices each hold the same cells (:func:`reduced_plan`: the grid r times smaller along
each axis on r^3 times fewer devices, at least :data:`COMPILED_DEVICES`): XLA's compile time grows with
the device count (a CPU all-to-all among P devices is packed from P slices: 4096^3 on 512 took
minutes), while what a device holds depends on its cells (and the size classes they fall in:
transforms split below 2^31 points, spectra stacked by selection past 2^30 elements), not on how many
devices there are beyond a few. The
step's traffic is the smaller run's per cell, scaled by :func:`simulator.planning.cost.scaled_traffic`, the
model ``scripts/project_gpu.py`` projects with. tests/test_plan.py compares both with the programs
compiled for the run itself.

A grid whose devices each hold more than :data:`COMPILED_CELLS` cells, and whose state alone is more than the
memory a device has, is planned from a coarser grid of its aspect on the same devices (:func:`coarser_run`):
compiling it as it is would trace its transforms in one piece per 2^31 points (:mod:`simulator.fft.large`),
thousands at 16384^3, for a run that cannot fit whatever its programs hold. Its memory and traffic are the
coarser grid's per cell (an estimate: a cell's bytes change a little with the grid), and it does not fit.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any

import jax

from simulator.config import Config
from simulator.errors import ConfigError
from simulator.fft import plane
from simulator.planning import cost
from simulator.planning.memory import device_memory_available
from simulator.planning.plan import Plan, grid_aspect, make_plan, spectral_layout
from simulator.run.states import abstract_state

#: ``simulator plan`` compiles a run of 8 times this many devices or more as a smaller run of at least this
#: many with the same cells per device (:func:`reduced_plan`). Below it a device's bytes per cell still
#: change with the device count (XLA's fusion of the all-to-alls: the spectra take 52 B/cell on 2 devices,
#: 62 on 4 to 32), and scripts/project_gpu.py scales the figures of this many
COMPILED_DEVICES = 8


#: cells per device past which a grid whose state cannot fit is planned from a coarser one (:func:`coarser_run`):
#: 2^30, where XLA's FFT is still called in one piece or two
COMPILED_CELLS = 2**30


def coarser_run(cfg: Config, devices: int) -> Config | None:
    """``cfg`` on the finest coarser grid of its aspect (:func:`simulator.planning.plan.grid_aspect`: its multiple
    divided by a whole r) whose ``devices`` devices each hold at most :data:`COMPILED_CELLS` cells and which validates;
    None where ``cfg``'s devices hold no more than that, or no such grid is."""
    from simulator.config.model import validate

    if math.prod(cfg.grid.cells) <= COMPILED_CELLS * devices:
        return None
    unit, extra = grid_aspect(cfg)
    multiple = (cfg.grid.shape[0] - extra[0]) // unit[0]
    for r in range(2, multiple + 1):
        shape = tuple((multiple // r) * u + e for u, e in zip(unit, extra, strict=True))
        if multiple % r or math.prod(plane.cells(shape)) > COMPILED_CELLS * devices:
            continue
        coarser = dataclasses.replace(cfg, grid=dataclasses.replace(cfg.grid, shape=shape))
        try:
            validate(coarser)
        except ConfigError:
            continue
        return coarser
    return None


def smaller_run(cfg: Config, mesh: tuple[int, ...]) -> Config | None:
    """``cfg`` made a smaller run whose devices each hold the same cells as ``cfg``'s on ``mesh``: the
    grid's axes divided by r and the mesh's devices by r^3 (split over its axes keeping its proportions
    as far as they allow, every axis exchanging among 4 devices or more still), for the largest r that leaves
    at least :data:`COMPILED_DEVICES` devices and a config that validates (the layout, statistics
    separations, tasks); None when there is none (fewer than 8 x COMPILED_DEVICES devices: compile them)."""
    from simulator.config.model import validate

    devices, dims = math.prod(mesh), len(cfg.grid.shape)  # a plane's cells per device fall as r^2
    for r in range(round(devices ** (1 / dims)), 1, -1):
        if devices % r**dims or devices // r**dims < COMPILED_DEVICES or any(n % r for n in cfg.grid.shape):
            continue
        grid = dataclasses.replace(cfg.grid, shape=tuple(n // r for n in cfg.grid.shape))
        # every axis exchanging among 4 or more devices still (XLA fuses an exchange between 2 otherwise)
        candidates = [m for m in _divided(mesh, r**dims) if all(a >= min(b, 4) for a, b in zip(m, mesh, strict=True))]
        for smaller in sorted(candidates, key=lambda m: abs(math.log(m[0] / m[-1]) - math.log(mesh[0] / mesh[-1]))):
            small = dataclasses.replace(cfg, grid=grid, fft=dataclasses.replace(cfg.fft, mesh=smaller))
            try:
                validate(small)
            except ConfigError:
                continue
            return small
    return None


def _divided(mesh: tuple[int, ...], factor: int) -> list[tuple[int, ...]]:
    """Every mesh of ``mesh``'s rank whose axes divide its axes and whose device count is ``factor`` times smaller."""
    if len(mesh) == 1:
        return [(mesh[0] // factor,)] if mesh[0] % factor == 0 else []
    return [(mesh[0] // a, *rest) for a in range(1, factor + 1) if factor % a == 0 and mesh[0] % a == 0
            for rest in _divided(mesh[1:], factor // a)]


def reduced_plan(sim: Any, programs: Sequence[str], memory: int | None = None, memory_source: str = "given",
                 gpu: str | None = None, for_gpu: bool = False) -> Plan:
    """:func:`make_plan` of ``sim`` (a mesh of P devices) from its programs compiled for the smaller run of
    :func:`smaller_run` (P / r^3 devices, each holding the same cells, r times fewer along each axis): the
    bytes per device are that run's, the step's traffic its own per cell scaled to P devices
    (:func:`simulator.planning.cost.scaled_traffic`); memory available as on P devices. Without a smaller run the
    programs are compiled as they are. The smaller run is built by ``sim``'s own class (so the planner
    names no simulation class: the run layer above it hands one in). ``gpu``, ``for_gpu``: as :func:`make_plan`'s."""
    mesh = tuple(int(n) for n in sim.fft.mesh.devices.shape)
    small = smaller_run(sim.cfg, mesh)
    if small is None:
        coarse = _coarser_plan(sim, programs, memory, memory_source, gpu, for_gpu)
        return coarse or make_plan(sim, programs, memory, memory_source=memory_source, gpu=gpu, for_gpu=for_gpu)
    t0 = time.perf_counter()
    devices = list(sim.fft.mesh.devices.flat)
    if memory is None:
        memory, memory_source = device_memory_available(devices)
    # a compact spectrum r times smaller along each axis, as the run's own per device (not the smaller
    # grid's own sizes: those are rounded to another mesh and would hold another share of the modes)
    r = sim.fft.shape[-1] // small.grid.cells[-1]
    at_least = None if sim.fft.compact is None else tuple(-(-k // r) for k in sim.fft.compact)
    p = make_plan(type(sim)(small, devices[:math.prod(small.fft.mesh)], compact_at_least=at_least), programs,
                  memory, memory_source=memory_source, gpu=gpu, for_gpu=for_gpu)
    cells, n = math.prod(sim.fft.shape), len(devices)
    traffic = p.traffic
    if traffic is not None:
        traffic = cost.scaled_traffic(cost.per_cell(traffic, p.cells, p.devices), cells, n, sim.cfg.fft.backend)
    return Plan(sim.cfg, p.platform, n, mesh, cells, p.program_bytes, memory, memory_source, traffic,
                p.ffts_per_step, time.perf_counter() - t0, compiled_as=(small.grid.cells, tuple(small.fft.mesh)),
                **spectral_layout(sim), compiled_for=p.compiled_for)


def _coarser_plan(sim: Any, programs: Sequence[str], memory: int | None, memory_source: str, gpu: str | None,
                  for_gpu: bool) -> Plan | None:
    """The plan of ``sim`` from its programs compiled on :func:`coarser_run`'s grid, on the same devices, where its
    devices hold more than :data:`COMPILED_CELLS` cells each and its state alone (the coarser state's bytes per cell)
    is more than a device has; None otherwise (compile it as it is: it may fit). Bytes per device and the step's
    traffic are the coarser grid's per cell, times this grid's cells."""
    devices = list(sim.fft.mesh.devices.flat)
    coarse = coarser_run(sim.cfg, len(devices))
    if coarse is None:
        return None
    t0 = time.perf_counter()
    if memory is None:
        memory, memory_source = device_memory_available(devices)
    small = type(sim)(coarse, devices)
    state = abstract_state(small)
    cells, small_cells = math.prod(sim.fft.shape), math.prod(small.fft.shape)
    ratio = cells / small_cells
    state_bytes = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(state)) / len(devices)
    if state_bytes * ratio <= memory:
        return None
    p = make_plan(small, programs, memory, state=state, memory_source=memory_source, gpu=gpu, for_gpu=for_gpu)
    traffic = p.traffic
    if traffic is not None:
        traffic = cost.scaled_traffic(cost.per_cell(traffic, p.cells, p.devices), cells, len(devices),
                                      sim.cfg.fft.backend)
    return Plan(sim.cfg, p.platform, len(devices), p.mesh, cells,
                {name: round(b * ratio) for name, b in p.program_bytes.items()}, memory, memory_source, traffic,
                p.ffts_per_step, time.perf_counter() - t0, compiled_as=(coarse.grid.cells, p.mesh), coarser=True,
                **spectral_layout(sim), compiled_for=p.compiled_for)
