"""Plan a run before it allocates: its memory per device, the largest grid that fits, the transforms,
all-to-alls and memory traffic of one step.

Everything comes from the run's own compiled programs, lowered with abstract arrays
(``jax.ShapeDtypeStruct`` with the run's shardings): no field is allocated, for any registered
equation (the state's shapes come from the equation's ``from_fields`` traced abstractly). Memory is
``compiled.memory_analysis()`` (arguments + outputs + temporaries - donated, per device) of the
compiled chunk of steps and of the programs a run calls between chunks (diagnostics, spectra,
snapshot fields, flow statistics, output tasks); traffic and counts come from the optimized HLO of one step
(:mod:`simulator.planning.cost`). Bytes per cell do not depend on the grid size for these programs (checked
in tests/test_plan.py): the largest grid that fits follows from them.

On many devices the plan is compiled as a smaller run with the same cells per device
(:mod:`simulator.planning.reduced`). ``simulator plan`` prints its report (:mod:`simulator.planning.report`);
``simulator run`` admits a run only if its plan fits (:mod:`simulator.planning.admission`, before it writes
anything).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax

from simulator.config import Config
from simulator.errors import ConfigError
from simulator.fft import plane
from simulator.fft.bases import fft_friendly
from simulator.fft.walls import KEPT_TRANSFORMS
from simulator.planning import cost
from simulator.planning.memory import device_memory_available
from simulator.run.programs import run_programs
from simulator.run.states import abstract_state
from simulator.time.integrators import FUSION_EMITTERS

#: share of the available memory a run may plan to use (the rest: the runtime, FFT plans, I/O buffers)
USABLE_FRACTION = 0.9


def _scalar(sim: Any, dtype: Any = None) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct((), dtype or sim.dtype, sharding=sim.scalar_sharding)


def compiled_programs(sim: Any, state: Any, programs: Sequence[str], gpu: str | None = None) -> dict[str, Any]:
    """The named programs of a run, compiled for the abstract ``state``: ``chunk`` (the donated chunk
    of steps the run loop calls), ``step`` (one step, for its HLO), and the output kinds' device programs
    (``diagnostics``, ``spectra``, ``fields``, ``statistics``, ``tasks``, ``particles``, ``trajectories``, a
    registered kind's: :meth:`~simulator.run.simulation.Simulation.lower`).

    Compiled with :func:`footprint_options`; the programs compile concurrently (XLA releases the GIL).
    ``gpu``: a GPU profile of :data:`simulator.planning.gpu_compiler.SPECS`, to compile for that GPU with XLA's GPU
    compiler, deviceless, instead of for ``sim``'s devices (along a GPU's route: :mod:`simulator.planning.report`).
    """
    dt = _scalar(sim)
    lowered = {}
    for name in programs:
        if name == "step":
            lowered[name] = jax.jit(sim.step, compiler_options=sim.chunk_options).lower(
                sim.equation, state, _scalar(sim), dt, sim.params)
        elif name == "initial":  # the initial condition's builder and the state made of its fields
            lowered.update(sim.equation.initial_lowered(sim.cfg.initial, sim.params))
        else:
            lowered[name] = sim.lower(name, state, _scalar(sim), dt)
    # each program with its footprint options, the chunk's and the step's keeping the emitters the run's chunk takes
    with_options = {name: (low, footprint_options(sim.chunk_options if name in ("chunk", "step") else None))
                    for name, low in lowered.items()}
    if gpu is None:
        def compile_one(lowered_options: tuple[Any, dict[str, Any]]) -> Any:
            return lowered_options[0].compile(lowered_options[1])
    else:
        from simulator.planning import gpu_compiler

        def compile_one(lowered_options: tuple[Any, dict[str, Any]]) -> Any:
            return gpu_compiler.compile_lowered(lowered_options[0], gpu, lowered_options[1])
    from simulator.run.programs import compile_all

    return compile_all(with_options, compile_one)


def footprint_options(own: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """How the planner compiles a program for its footprint: at LLVM optimisation level 0 (memory and HLO come
    from XLA's HLO passes and buffer assignment, which machine-code optimisation does not change, and the
    compile takes half the time), with the CPU fusion emitters the run compiles the program with: those of its
    own XLA options ``own`` where they choose (a walled chunk on CPUs takes the older LLVM IR ones:
    :data:`~simulator.time.integrators.FUSION_EMITTERS`), else XLA's own, put back where XLA_FLAGS chooses others
    (the test suite selects the older ones, tests/conftest.py): the older ones size some fusions' buffers
    differently and refuse a scatter of 2^31 indices or more, which a plan of a grid too large for this machine
    holds."""
    options: dict[str, Any] = {"xla_backend_optimization_level": 0}
    if f"--{FUSION_EMITTERS}" in os.environ.get("XLA_FLAGS", ""):
        options[FUSION_EMITTERS] = True
    if own and FUSION_EMITTERS in own:
        options[FUSION_EMITTERS] = own[FUSION_EMITTERS]
    return options


def program_bytes(compiled: Any, gpu: bool = False) -> int:
    """Peak bytes one device holds for a compiled program: arguments + outputs + temporaries - donated, and on a
    GPU the workspace its FFTs take outside XLA's buffers (:func:`simulator.planning.cost.fft_workspace_bytes`)."""
    m = compiled.memory_analysis()
    workspace = cost.fft_workspace_bytes(compiled.as_text()) if gpu else 0
    return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes
               + workspace)


def plan_programs(cfg: Config) -> tuple[str, ...]:
    """What a plan of ``cfg`` compiles: :func:`run_programs`, and ``initial`` (the initial condition's builder and
    the state made of its fields, :meth:`~simulator.equations.base.Equation.initial_lowered`) where the run starts
    from a built initial condition rather than a file: before the first step it may hold the most."""
    from simulator.equations.spec import FromFile

    return (*run_programs(cfg), *(() if isinstance(cfg.initial, FromFile) else ("initial",)))


# ---- the plan -------------------------------------------------------------------------------------------


def grid_unit(shape: Sequence[int]) -> tuple[int, ...]:
    """The smallest grid of ``shape``'s aspect, ``shape`` over its entries' greatest common divisor: the grids of
    that aspect are its multiples ((1, 1, 1): the cubic grids; [32, 32, 8]: (4, 4, 1))."""
    return tuple(n // math.gcd(*shape) for n in shape)


def grid_aspect(cfg: Config) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The run's aspect: the unit its grids are multiples of (:func:`grid_unit`) and the points each adds to that
    multiple, none; but between no-slip plates one point more across, as Gauss-Lobatto counts are: with an odd count
    across, the unit of one point fewer and that point added (``[64, 64, 65]``: ``(1, 1, 1)`` and ``(0, 0, 1)``), with
    an even one the run's own unit and a point added (``[384, 96]``: ``(4, 1)`` and ``(0, 1)``, proposing
    ``[4 N, N + 1]``), so the grids proposed keep ``N - 1`` across FFT-friendly: their Chebyshev transform is a real FFT
    of ``2 (N - 1)`` points (:func:`simulator.planning.report.across_line`)."""
    shape = list(cfg.grid.shape)
    if not cfg.grid.domain()[2].endpoints:  # the last axis's points are not Gauss-Lobatto ones
        return grid_unit(shape), (0,) * len(shape)
    across = shape[-1] - 1 if shape[-1] % 2 else shape[-1]
    return grid_unit([*shape[:-1], across]), (0,) * (len(shape) - 1) + (1,)


def largest_cubic_grid(bytes_per_cell: float, total_bytes: float, layout: Any, mesh_shape: tuple[int, ...],
                       compact: bool = False, usable: Callable[[tuple[int, ...]], None] | None = None,
                       unit: tuple[int, ...] = (1, 1, 1), walls: bool = False,
                       extra: tuple[int, ...] = (0, 0, 0)) -> int:
    """The largest N with the grid N * ``unit`` (default: N^3; :func:`grid_unit` for a run's own aspect) of
    FFT-friendly sizes, valid for the layout on this mesh, and N^3 * prod(unit) * bytes_per_cell <= total_bytes
    (0: none); ``compact``: one the compact spectral layout holds (elsewhere a run falls back to the half spectrum,
    which needs more; scripts/bench_compact.py plans the N proposed: compact sizes round with N, a cell's bytes
    barely); ``usable``: raises ConfigError for a grid the run's config cannot use (:func:`config_on_grid`);
    ``walls``: a walled grid's layout rules (:meth:`~simulator.fft.layouts.Layout.check_layout`); ``extra``: points
    added to each multiple, ``N * unit + extra`` (:func:`grid_aspect`), whose multiple is FFT-friendly."""
    if total_bytes <= 0:  # a device already fuller than its share: no grid fits
        return 0
    n = int((total_bytes / bytes_per_cell / math.prod(unit)) ** (1 / len(unit))) + 1  # a plane's unit has two
    while n * min(unit) >= 2:
        shape = tuple(n * u + e for u, e in zip(unit, extra, strict=False))
        if math.prod(shape) * bytes_per_cell <= total_bytes and all(fft_friendly(n * u) for u in unit):
            try:
                layout.check_layout(plane.cells(shape), mesh_shape, walls=walls)
                if usable is not None:
                    usable(shape)
                if not compact or layout.compact_sizes(plane.cells(shape), mesh_shape) is not None:
                    return n
            except ConfigError:
                pass
        n -= 1
    return 0


def config_on_grid(cfg: Config, shape: tuple[int, ...]) -> None:
    """Check ``cfg`` on the grid ``shape`` as a run on it would be checked (:func:`simulator.config.model.validate`):
    ConfigError for a grid the rest of the config cannot use, e.g. one that the lattice of ``physics.cdm_particles``
    does not divide, or too small for a particle window or an initial condition's modes."""
    from simulator.config.model import validate

    validate(dataclasses.replace(cfg, grid=dataclasses.replace(cfg.grid, shape=shape)))


@dataclass
class Plan:
    """A run's plan (see the module docstring). Bytes are per device unless named otherwise."""

    cfg: Config
    platform: str
    devices: int
    mesh: tuple[int, ...]
    cells: int
    program_bytes: dict[str, int]
    available: int
    available_source: str
    traffic: cost.Traffic | None
    ffts_per_step: int | None
    seconds: float
    #: the (grid, mesh) compiled in its stead, each device holding the same cells
    #: (:func:`simulator.planning.reduced.reduced_plan`)
    compiled_as: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    #: compiled_as is a coarser grid on these devices, memory and traffic scaled by cells
    #: (:func:`simulator.planning.reduced.coarser_run`: a grid far past a device)
    coarser: bool = False
    #: whether the run's spectra are compact, and its spectral layout in words with why (:func:`spectral_layout`)
    compact: bool = False
    layout: str = ""
    #: the GPU the programs were compiled for without one (:mod:`simulator.planning.gpu_compiler`), else ""
    compiled_for: str = ""
    #: the plan of the other order of a step's transforms that ``fft.in_turn: auto`` weighed (:func:`auto_in_turn`)
    other: Plan | None = None

    @property
    def peak(self) -> int:
        return max(self.program_bytes.values())

    @property
    def bytes_per_cell(self) -> float:
        """Peak memory over all devices per grid cell."""
        return self.peak * self.devices / self.cells

    @property
    def fits(self) -> bool:
        return self.peak <= USABLE_FRACTION * self.available

    @property
    def largest_cubic(self) -> int:
        """The largest cubic grid that fits, the other order of a step's transforms included (:attr:`other`)."""
        return max(self.own_largest_cubic, self.other.own_largest_cubic if self.other is not None else 0)

    @property
    def own_largest_cubic(self) -> int:
        """The largest cubic grid that fits with these programs' bytes per cell and that the config can use
        (:func:`config_on_grid`: a particle lattice divides it, ...)."""
        return self._largest(lambda shape: config_on_grid(self.cfg, shape), (1,) * len(self.cfg.grid.shape))

    @property
    def largest_grid(self) -> tuple[int, ...] | None:
        """The largest grid of the run's own aspect (a multiple of :func:`grid_unit`: a cubic run's the largest
        cubic grid) that fits and that the config can use, the other order of transforms included; None: none."""
        unit, extra = grid_aspect(self.cfg)
        n = max(p._largest(lambda shape: config_on_grid(self.cfg, shape), unit, extra) for p in self._orders())
        return tuple(n * u + e for u, e in zip(unit, extra, strict=True)) if n else None

    def largest_grid_refusal(self) -> str | None:
        """Why a larger grid of the run's aspect than :attr:`largest_grid` fits memory but not the config (the
        config's refusal of the largest that fits memory, one line), or None when memory alone sets it."""
        unit, extra = grid_aspect(self.cfg)
        n = max(p._largest(None, unit, extra) for p in self._orders())
        if n * unit[0] <= (self.largest_grid or (0,))[0]:
            return None
        shape = tuple(n * u + e for u, e in zip(unit, extra, strict=True))
        try:
            config_on_grid(self.cfg, shape)
        except ConfigError as err:
            return f"{_shown(shape)} fits memory, but {err}"
        return None  # only the compact layout's sizes or the other order of transforms set it apart

    def _orders(self) -> list[Plan]:
        """This plan and the other order of a step's transforms that was weighed (:attr:`other`)."""
        return [self] + ([self.other] if self.other is not None else [])

    def _largest(self, usable: Callable[[tuple[int, ...]], None] | None, unit: tuple[int, ...],
                 extra: tuple[int, ...] = (0, 0, 0)) -> int:
        from simulator.fft.layouts import LAYOUTS

        total = USABLE_FRACTION * self.available * self.devices
        return largest_cubic_grid(self.bytes_per_cell, total, LAYOUTS[self.cfg.fft.backend], self.mesh, self.compact,
                                  usable, unit, self.cfg.grid.walls.on, extra)

    def devices_to_fit(self) -> int | None:
        """The fewest devices, more than these, of this run's layout whose share of the peak fits (None: no
        count): an estimate, with these devices' bytes per cell (fewer cells per device change them a little)."""
        from simulator.fft.layouts import LAYOUTS

        need = self.bytes_per_cell * self.cells / (USABLE_FRACTION * self.available)
        layout, shape = LAYOUTS[self.cfg.fft.backend], self.cfg.grid.cells  # compact: where that layout holds
        counts = (n for n in layout.device_counts(shape, self.cfg.grid.walls.on)
                  if not self.compact or layout.compact_sizes(shape, layout.mesh_shape(n, None)) is not None)
        return next((n for n in counts if n > self.devices and n >= need), None)

    def describe_need(self) -> str:
        c = self.cfg
        return (f"{c.physics.name} {c.time.integrator} {c.precision} needs {cost.human_bytes(self.peak)} per device "
                f"({self.bytes_per_cell:.0f} B/cell on {self.devices} {self.platform} device(s))")


def _shown(shape: Sequence[int]) -> str:
    """A grid as the plan says it: ``N^3`` for a cubic one, else its list."""
    return f"{shape[0]}^{len(shape)}" if len(set(shape)) == 1 else str(list(shape))


def largest_grid_line(plan: Plan) -> str:
    """The plan's line on the largest grid that fits: cubic for a cubic run, else of the run's own aspect."""
    shape, (unit, extra) = plan.largest_grid, grid_aspect(plan.cfg)
    square = "square grid" if len(unit) == 2 else "cubic grid"
    what = square if len(set(unit)) == 1 else f"grid of this run's aspect (a multiple of {list(unit)})"
    if any(extra):
        what = f"grid of this run's aspect (a multiple of {list(unit)} and one point more across the plates)"
    if shape is None:
        return f"no {what} fits these devices"
    return f"largest {what} that fits these {plan.devices} device(s): {_shown(shape)}"


def make_plan(sim: Any, programs: Sequence[str] | None = None, memory: int | None = None,
              state: Any = None, memory_source: str = "given", gpu: str | None = None, for_gpu: bool = False) -> Plan:
    """Compile ``sim``'s programs abstractly and plan its run. ``programs`` default to those the run
    calls and its start (:func:`plan_programs`); add ``step`` for the traffic and counts of one step. ``memory``: bytes
    per device to plan for (default: what the devices have free). ``gpu``: compile for that GPU profile,
    deviceless (:func:`compiled_programs`). ``for_gpu``: the run is planned for GPUs whatever compiles it (a CPU
    standing in): each program counts the FFT workspace a GPU takes beside it, as a GPU's or ``gpu``'s compile does."""
    t0 = time.perf_counter()
    names = tuple(programs or plan_programs(sim.cfg))
    state = abstract_state(sim) if state is None else state
    compiled = compiled_programs(sim, state, names, gpu)
    devices = list(sim.fft.mesh.devices.flat)
    if memory is None:
        available, source = device_memory_available(devices)
    else:
        available, source = memory, memory_source
    traffic = ffts = None
    if "step" in compiled:
        traffic = cost.hlo_traffic(compiled["step"].as_text())
        ffts = transforms_per_step(sim, state)
    platform = "gpu" if gpu else devices[0].platform
    workspace = for_gpu or platform == "gpu"
    return Plan(sim.cfg, platform, len(devices), tuple(sim.fft.mesh.devices.shape), math.prod(sim.fft.shape),
                {n: program_bytes(c, workspace) for n, c in compiled.items() if n != "step"},
                available, source, traffic, ffts, time.perf_counter() - t0, **spectral_layout(sim),
                compiled_for=_gpu_name(gpu))


def auto_in_turn(plan: Plan, route: str, replan: Callable[[Config], Plan]) -> Plan:
    """The plan of a run whose ``fft.in_turn`` is ``auto`` (any other run's: ``plan`` itself). Where a step's
    fields may go one at a time (a compact spectrum on a GPU's route: :meth:`~simulator.fft.base.FFTBackend.in_turn`,
    less memory for more memory traffic), ``replan`` of the config with ``fft.in_turn: true`` is weighed against
    ``plan`` (all at once): ``plan`` where it fits or the other holds no less, else the other, whose config says
    ``fft.in_turn: true``; where the other holds less, the chosen plan records it (:attr:`Plan.other`)."""
    cfg = plan.cfg
    if cfg.fft.in_turn != "auto" or route != "gpu" or not plan.compact:
        return plan
    turn = replan(dataclasses.replace(cfg, fft=dataclasses.replace(cfg.fft, in_turn=True)))
    seconds = plan.seconds + turn.seconds  # the report's compile time is both plans'
    if turn.peak >= plan.peak:  # nothing to weigh (a CPU's compile standing in for a GPU's: the same)
        return dataclasses.replace(plan, seconds=seconds)
    if plan.fits:
        return dataclasses.replace(plan, other=turn, seconds=seconds)
    return dataclasses.replace(turn, other=plan, seconds=seconds)


def in_turn_line(plan: Plan) -> str:
    """How a run with ``fft.in_turn: auto`` transforms a step's fields, and why (:func:`auto_in_turn`)."""
    other = plan.other
    if plan.cfg.fft.in_turn is True:
        return (f"a step's fields one at a time (fft.in_turn auto): all at once needs {other.bytes_per_cell:.1f} bytes "
                f"per cell, more than fits")
    gain = (f" and fits grids past {plan.own_largest_cubic}^3 to {other.own_largest_cubic}^3, where auto chooses it"
            if other.own_largest_cubic > plan.own_largest_cubic else "")
    return (f"a step's fields all at once (fft.in_turn auto: they fit so); one at a time holds "
            f"{other.bytes_per_cell:.1f} bytes per cell{gain}")


def _gpu_name(gpu: str | None) -> str:
    from simulator.planning import gpu_compiler

    return gpu_compiler.SPECS[gpu].name if gpu else ""


def spectral_layout(sim: Any) -> dict[str, Any]:
    """The :class:`Plan` fields of ``sim``'s spectral layout (:func:`simulator.runtime.make_fft` chose it)."""
    return {"compact": sim.fft.compact is not None,
            "layout": f"{sim.fft.describe_layout().removeprefix(', ')} ({sim.fft.layout_reason})"}


def transforms_per_step(sim: Any, state: Any) -> int:
    """Scalar 3D transforms in one step (:meth:`~simulator.run.simulation.Simulation.step`, with an adaptive
    dt the controller's too): the FFT primitives of its jaxpr and the kept half's walled transforms
    (:data:`simulator.fft.walls.KEPT_TRANSFORMS`, the no-slip steps' on one device), counted per batched field, loops
    multiplied by their trip counts, after dead code is removed (as XLA removes it: the controller's rate is one
    diagnostic, and the others' transforms are not run)."""
    from jax._src.interpreters.partial_eval import dce_jaxpr  # the DCE jit's own lowering runs
    from jax.extend.core import jaxprs_in_params

    jaxpr = jax.make_jaxpr(sim.step)(sim.equation, state, _scalar(sim), _scalar(sim), sim.params).jaxpr
    jaxpr = dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars))[0]

    def count(jp: Any) -> int:
        total = 0
        for eqn in jp.eqns:
            if eqn.primitive.name == "distributed_fft3d":
                total += math.prod(eqn.invars[0].aval.shape[:-3])
            if eqn.params.get("name") in KEPT_TRANSFORMS:  # a nested jit: the fields its last argument stacks
                total += math.prod(eqn.invars[-1].aval.shape[:-3])
                continue
            times = eqn.params.get("length", 1) if eqn.primitive.name == "scan" else 1
            for sub in jaxprs_in_params(eqn.params):
                total += times * count(sub)
        return total

    return count(jaxpr)
