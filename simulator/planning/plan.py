"""Plan a run before it allocates: its memory per device, the largest grid that fits, the transforms,
all-to-alls and memory traffic of one step, and a predicted step time.

Everything comes from the run's own compiled programs, lowered with abstract arrays
(``jax.ShapeDtypeStruct`` with the run's shardings): no field is allocated, for any registered
equation (the state's shapes come from the equation's ``from_fields`` traced abstractly). Memory is
``compiled.memory_analysis()`` (arguments + outputs + temporaries - donated, per device) of the
compiled chunk of steps and of the programs a run calls between chunks (diagnostics, spectra,
snapshot fields, flow statistics, output tasks); traffic and counts come from the optimized HLO of one step
(:mod:`simulator.cost`). Bytes per cell do not depend on the grid size for these programs (checked
in tests/test_plan.py): the largest grid that fits follows from them.

On many devices (64 or more, 8 x :data:`COMPILED_DEVICES`) ``simulator plan`` compiles a smaller run in
its stead whose devices each hold the same cells (:func:`reduced_plan`: the grid r times smaller along
each axis on r^3 times fewer devices, at least :data:`COMPILED_DEVICES`): XLA's compile time grows with
the device count (a CPU all-to-all among P devices is packed from P slices: 4096^3 on 512 took
minutes), while what a device holds depends on its cells (and the size classes they fall in:
transforms split below 2^31 points, spectra stacked by selection past 2^30 elements), not on how many
devices there are beyond a few. The
step's traffic is the smaller run's per cell, scaled by :func:`simulator.cost.scaled_traffic`, the
model ``scripts/project_gpu.py`` projects with. tests/test_plan.py compares both with the programs
compiled for the run itself.

``simulator plan`` prints :func:`make_plan`'s report; ``simulator run`` admits a run only if its plan
fits (:mod:`simulator.run.admission`, before it writes anything). The module is longer than 400 lines
because the plan, the smaller run it may be compiled as and the report of both are one reading.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from simulator import cost
from simulator.memory import device_memory_available, gpu_allocator_share
from simulator.config import Config
from simulator.errors import ConfigError
from simulator.fft import local as local_fft
from simulator.equations import resolution

#: share of the available memory a run may plan to use (the rest: the runtime, FFT plans, I/O buffers)
USABLE_FRACTION = 0.9
#: ``simulator plan`` compiles a run of 8 times this many devices or more as a smaller run of at least this
#: many with the same cells per device (:func:`reduced_plan`). Below it a device's bytes per cell still
#: change with the device count (XLA's fusion of the all-to-alls: the spectra take 52 B/cell on 2 devices,
#: 62 on 4 to 32), and scripts/project_gpu.py scales the figures of this many
COMPILED_DEVICES = 8


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
        elif space == "particles":  # (Np, 3), every device holds all of them
            sharding = sim.fft.replicated_sharding()
        else:
            sharding = (sim.fft.spectral_sharding if space == "spectral" else sim.fft.real_sharding)(leaf.ndim - 3)
        out.append(jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding))
    return jax.tree.unflatten(tree, out)


def _scalar(sim: Any, dtype: Any = None) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct((), dtype or sim.dtype, sharding=sim.scalar_sharding)


def compiled_programs(sim: Any, state: Any, programs: Sequence[str], gpu: str | None = None) -> dict[str, Any]:
    """The named programs of a run, compiled for the abstract ``state``: ``chunk`` (the donated chunk
    of steps the run loop calls), ``step`` (one step, for its HLO), and the output kinds' device programs
    (``diagnostics``, ``spectra``, ``fields``, ``statistics``, ``tasks``, ``particles``, ``trajectories``, a
    registered kind's: :meth:`~simulator.run.simulation.Simulation.lower`).

    Compiled with :func:`footprint_options`; the programs compile concurrently (XLA releases the GIL).
    ``gpu``: a GPU profile of :data:`simulator.gpu_compiler.SPECS`, to compile for that GPU with XLA's GPU
    compiler, deviceless, instead of for ``sim``'s devices (trace along a GPU's route: :func:`_gpu_fft_path`).
    """
    dt = _scalar(sim)
    lowered = {}
    for name in programs:
        if name == "step":
            lowered[name] = jax.jit(sim.step, compiler_options=sim.chunk_options).lower(
                sim.equation, state, _scalar(sim), dt, sim.params)
        else:
            lowered[name] = sim.lower(name, state, _scalar(sim), dt)
    if gpu is None:
        def compile_one(low: Any) -> Any:
            return low.compile(footprint_options())
    else:
        from simulator import gpu_compiler

        def compile_one(low: Any) -> Any:
            return gpu_compiler.compile_lowered(low, gpu, footprint_options())
    from simulator.run.programs import compile_all

    return compile_all(lowered, compile_one)


#: the XLA flag that selects the CPU fusion emitters (see :func:`footprint_options`)
FUSION_EMITTERS = "xla_cpu_use_fusion_emitters"


def footprint_options() -> dict[str, Any]:
    """How the planner compiles a program for its footprint: at LLVM optimisation level 0 (memory and HLO come
    from XLA's HLO passes and buffer assignment, which machine-code optimisation does not change, and the
    compile takes half the time). Where XLA_FLAGS chooses the CPU fusion emitters (the test suite selects the
    older LLVM IR ones, tests/conftest.py), XLA's own are put back: the older ones size some fusions' buffers
    differently and refuse a scatter of 2^31 indices or more, which a plan of a grid too large for this
    machine holds. Only then: a jaxlib without that flag would refuse the option."""
    options: dict[str, Any] = {"xla_backend_optimization_level": 0}
    if f"--{FUSION_EMITTERS}" in os.environ.get("XLA_FLAGS", ""):
        options[FUSION_EMITTERS] = True
    return options


def program_bytes(compiled: Any) -> int:
    """Peak bytes one device holds for a compiled program: arguments + outputs + temporaries - donated."""
    m = compiled.memory_analysis()
    return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes)


def run_programs(cfg: Config) -> tuple[str, ...]:
    """The programs a run of ``cfg`` calls: the chunk, then those of the output kinds it writes (the
    diagnostics always; spectra, snapshot fields, flow statistics, the output tasks, the particle snapshots and
    trajectories and registered kinds when it writes them: :func:`simulator.output.kinds.programs`)."""
    from simulator.output import kinds

    return ("chunk", *kinds.programs(cfg))


# ---- the plan -------------------------------------------------------------------------------------------


def fft_friendly(n: int) -> bool:
    """Whether n has no prime factor above 7 (sizes FFT libraries transform fastest)."""
    for p in (2, 3, 5, 7):
        while n % p == 0 and n > 1:
            n //= p
    return n == 1


def largest_cubic_grid(bytes_per_cell: float, total_bytes: float, layout: Any, mesh_shape: tuple[int, ...],
                       compact: bool = False) -> int:
    """The largest N (FFT-friendly, valid for the layout on this mesh) with N^3 * bytes_per_cell <= total_bytes;
    ``compact``: one the compact spectral layout holds (elsewhere a run falls back to the half spectrum, which needs
    more; scripts/bench_compact.py plans the N proposed: compact sizes round with N, a cell's bytes barely)."""
    if total_bytes <= 0:  # a device already fuller than its share: no grid fits
        return 0
    n = int((total_bytes / bytes_per_cell) ** (1 / 3)) + 1
    while n >= 2:
        if n**3 * bytes_per_cell <= total_bytes and fft_friendly(n):
            try:
                layout.check_layout((n, n, n), mesh_shape)
                if not compact or layout.compact_sizes((n, n, n), mesh_shape) is not None:
                    return n
            except ConfigError:
                pass
        n -= 1
    return 0


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
    #: the (grid, mesh) compiled in its stead, each device holding the same cells (:func:`reduced_plan`)
    compiled_as: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    #: whether the run's spectra are compact, and its spectral layout in words with why (:func:`spectral_layout`)
    compact: bool = False
    layout: str = ""
    #: the GPU the programs were compiled for without one (:mod:`simulator.gpu_compiler`), else ""
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
        """The largest cubic grid that fits with these programs' bytes per cell."""
        from simulator.fft.layouts import LAYOUTS

        total = USABLE_FRACTION * self.available * self.devices
        return largest_cubic_grid(self.bytes_per_cell, total, LAYOUTS[self.cfg.fft.backend], self.mesh, self.compact)

    def devices_to_fit(self) -> int | None:
        """The fewest devices, more than these, of this run's layout whose share of the peak fits (None: no
        count): an estimate, with these devices' bytes per cell (fewer cells per device change them a little)."""
        from simulator.fft.layouts import LAYOUTS

        need = self.bytes_per_cell * self.cells / (USABLE_FRACTION * self.available)
        layout, shape = LAYOUTS[self.cfg.fft.backend], self.cfg.grid.shape  # compact: where that layout holds
        counts = (n for n in layout.device_counts(shape)
                  if not self.compact or layout.compact_sizes(shape, layout.mesh_shape(n, None)) is not None)
        return next((n for n in counts if n > self.devices and n >= need), None)

    def describe_need(self) -> str:
        c = self.cfg
        return (f"{c.physics.name} {c.time.integrator} {c.precision} needs {cost.human_bytes(self.peak)} per device "
                f"({self.bytes_per_cell:.0f} B/cell on {self.devices} {self.platform} device(s))")


def make_plan(sim: Any, programs: Sequence[str] | None = None, memory: int | None = None,
              state: Any = None, memory_source: str = "given", gpu: str | None = None) -> Plan:
    """Compile ``sim``'s programs abstractly and plan its run. ``programs`` default to those the run
    calls (:func:`run_programs`); add ``step`` for the traffic and counts of one step. ``memory``: bytes
    per device to plan for (default: what the devices have free). ``gpu``: compile for that GPU profile,
    deviceless (:func:`compiled_programs`)."""
    t0 = time.perf_counter()
    names = tuple(programs or run_programs(sim.cfg))
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
    return Plan(sim.cfg, "gpu" if gpu else devices[0].platform, len(devices), tuple(sim.fft.mesh.devices.shape),
                math.prod(sim.fft.shape), {n: program_bytes(c) for n, c in compiled.items() if n != "step"},
                available, source, traffic, ffts, time.perf_counter() - t0, **spectral_layout(sim),
                compiled_for=_gpu_name(gpu))


def auto_in_turn(plan: Plan, route: str, replan: Callable[[Config], Plan]) -> Plan:
    """The plan of a run whose ``fft.in_turn`` is ``auto`` (any other run's: ``plan`` itself). Where a step's
    fields may go one at a time (a compact spectrum on a GPU's ``route``: :meth:`~simulator.fft.base.FFTBackend.in_turn`,
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
    return (f"a step's fields all at once (fft.in_turn auto: they fit so); one at a time holds {other.bytes_per_cell:.1f} "
            f"bytes per cell{gain}")


def _gpu_name(gpu: str | None) -> str:
    from simulator import gpu_compiler

    return gpu_compiler.SPECS[gpu].name if gpu else ""


def spectral_layout(sim: Any) -> dict[str, Any]:
    """The :class:`Plan` fields of ``sim``'s spectral layout (:func:`simulator.runtime.make_fft` chose it)."""
    return {"compact": sim.fft.compact is not None,
            "layout": f"{sim.fft.describe_layout().removeprefix(', ')} ({sim.fft.layout_reason})"}


def smaller_run(cfg: Config, mesh: tuple[int, ...]) -> Config | None:
    """``cfg`` made a smaller run whose devices each hold the same cells as ``cfg``'s on ``mesh``: the
    grid's axes divided by r and the mesh's devices by r^3 (split over its axes keeping its proportions
    as far as they allow, every axis exchanging among 4 devices or more still), for the largest r that leaves
    at least :data:`COMPILED_DEVICES` devices and a config that validates (the layout, statistics
    separations, tasks); None when there is none (fewer than 8 x COMPILED_DEVICES devices: compile them)."""
    from simulator.config.model import validate

    devices = math.prod(mesh)
    for r in range(round(devices ** (1 / 3)), 1, -1):
        if devices % r**3 or devices // r**3 < COMPILED_DEVICES or any(n % r for n in cfg.grid.shape):
            continue
        grid = dataclasses.replace(cfg.grid, shape=tuple(n // r for n in cfg.grid.shape))
        # every axis exchanging among 4 or more devices still (XLA fuses an exchange between 2 otherwise)
        candidates = [m for m in _divided(mesh, r**3) if all(a >= min(b, 4) for a, b in zip(m, mesh, strict=True))]
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
                 gpu: str | None = None) -> Plan:
    """:func:`make_plan` of ``sim`` (a mesh of P devices) from its programs compiled for the smaller run of
    :func:`smaller_run` (P / r^3 devices, each holding the same cells, r times fewer along each axis): the
    bytes per device are that run's, the step's traffic its own per cell scaled to P devices
    (:func:`simulator.cost.scaled_traffic`); memory available as on P devices. Without a smaller run the
    programs are compiled as they are. The smaller run is built by ``sim``'s own class (so the planner
    names no simulation class: the run layer above it hands one in). ``gpu``: as :func:`make_plan`'s."""
    mesh = tuple(int(n) for n in sim.fft.mesh.devices.shape)
    small = smaller_run(sim.cfg, mesh)
    if small is None:
        return make_plan(sim, programs, memory, memory_source=memory_source, gpu=gpu)
    t0 = time.perf_counter()
    devices = list(sim.fft.mesh.devices.flat)
    if memory is None:
        memory, memory_source = device_memory_available(devices)
    # a compact spectrum r times smaller along each axis, as the run's own per device (not the smaller
    # grid's own sizes: those are rounded to another mesh and would hold another share of the modes)
    r = sim.fft.shape[0] // small.grid.shape[0]
    at_least = None if sim.fft.compact is None else tuple(-(-k // r) for k in sim.fft.compact)
    p = make_plan(type(sim)(small, devices[:math.prod(small.fft.mesh)], compact_at_least=at_least), programs,
                  memory, memory_source=memory_source, gpu=gpu)
    cells, n = math.prod(sim.fft.shape), len(devices)
    traffic = p.traffic
    if traffic is not None:
        traffic = cost.scaled_traffic(cost.per_cell(traffic, p.cells, p.devices), cells, n, sim.cfg.fft.backend)
    return Plan(sim.cfg, p.platform, n, mesh, cells, p.program_bytes, memory, memory_source, traffic,
                p.ffts_per_step, time.perf_counter() - t0, compiled_as=(small.grid.shape, tuple(small.fft.mesh)),
                **spectral_layout(sim), compiled_for=p.compiled_for)


def transforms_per_step(sim: Any, state: Any) -> int:
    """Scalar 3D transforms in one step (:meth:`~simulator.run.simulation.Simulation.step`, with an adaptive
    dt the controller's too): the FFT primitives of its jaxpr, counted per batched field, loops multiplied
    by their trip counts, after dead code is removed (as XLA removes it: the controller's rate is one
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
            times = eqn.params.get("length", 1) if eqn.primitive.name == "scan" else 1
            for sub in jaxprs_in_params(eqn.params):
                total += times * count(sub)
        return total

    return count(jaxpr)


def measure_bandwidth(device: Any = None, nbytes: int = 256 << 20, sweeps: int = 8, repeats: int = 5) -> float:
    """Memory bandwidth of ``device`` in bytes/s: ``sweeps`` passes of y = x + 1 over ``nbytes`` of float32
    in one compiled loop (each pass reads and writes every element once, in place), median of
    ``repeats`` timed runs after a warm-up."""
    import statistics

    device = device or jax.devices()[0]
    x = jax.device_put(jnp.zeros(nbytes // 4, jnp.float32), device)
    sweep = jax.jit(lambda v: jax.lax.fori_loop(0, sweeps, lambda i, v: v + 1, v), donate_argnums=0)
    x = sweep(x).block_until_ready()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        x = sweep(x).block_until_ready()
        times.append(time.perf_counter() - t0)
    return 2 * nbytes * sweeps / statistics.median(times)


def report(plan: Plan, platform: str, profile: str | None = None, why_not_gpu: str | None = None) -> list[str]:
    """The lines ``simulator plan`` prints (``why_not_gpu``: why a plan for GPUs on a CPU was not compiled
    by XLA's GPU compiler, :func:`simulator.gpu_compiler.unavailable`)."""
    c = plan.cfg
    h = cost.human_bytes
    stand_in = platform == "gpu" and plan.platform != "gpu"
    deviceless = bool(plan.compiled_for)
    how = "compiled without allocating in"
    if plan.compiled_as:
        how = (f"compiled without allocating as grid {list(plan.compiled_as[0])} on mesh {list(plan.compiled_as[1])} "
               "(the same cells per device; the step's traffic per cell scaled to this mesh) in")
    lines = [f"plan: {c.physics.name}, {c.time.integrator}, {c.precision}, grid {list(c.grid.shape)}, {c.fft.backend} on "
             f"mesh {list(plan.mesh)} of {plan.devices} {plan.platform} device(s); {how} {plan.seconds:.1f} s"]
    if stand_in:
        lines.append("  (planning for GPUs on this machine's CPU: memory and traffic are those of the same program "
                     "compiled for CPU; a GPU build differs by its fusion and scheduling choices"
                     + (f"; not compiled for a GPU: {why_not_gpu})" if why_not_gpu else ")"))
    if deviceless:
        lines.append(f"  (planning for GPUs on this machine's CPU: compiled by XLA's GPU compiler of jaxlib "
                     f"{jax.lib.__version__} for the {plan.compiled_for}, without a GPU: memory and traffic are that "
                     "build's; another jaxlib may differ)")
    if plan.layout:
        lines.append(f"spectral layout: {plan.layout}")
    if (resolved := resolution.plan_line(c)) is not None:
        lines.append(resolved)
    if (hint := resolution.plan_hint(c)) is not None:
        lines.append(hint)
    lines.append("memory per device: " + ", ".join(f"{n} {h(b)}" for n, b in plan.program_bytes.items())
                 + f"; peak {h(plan.peak)} = {plan.bytes_per_cell:.1f} bytes per cell over all devices")
    if c.particles:
        from simulator import particles

        lines.append(particles.describe(c, plan.devices))
    verdict = "fits" if plan.fits else "DOES NOT FIT"
    lines.append(f"available per device: {h(plan.available)} ({plan.available_source}); a run may plan "
                 f"{USABLE_FRACTION:.0%} of it: {verdict}")
    n = plan.largest_cubic
    lines.append(f"largest cubic grid that fits these {plan.devices} device(s): {n}^3" if n else
                 "no grid fits these devices")
    if plan.other is not None:
        lines.append(in_turn_line(plan))
    if not plan.fits and plan.platform == "gpu" and plan.compact and c.fft.in_turn is False \
            and max(plan.program_bytes, key=plan.program_bytes.get) == "chunk":
        lines.append("hint: fft.in_turn=true transforms a step's fields one at a time on GPUs: about 13% less memory "
                     "in the step, about 27% more memory traffic (from scripts/bench_compact.py --target h100)")
    if not plan.fits:  # its exit status is 3: a script branches on it, this line says what would fit
        more = plan.devices_to_fit()
        lines.append(f"devices that would fit it: {more} of the {c.fft.backend} layout (an estimate from these "
                     f"{plan.bytes_per_cell:.1f} bytes per cell)" if more else f"no device count of the "
                     f"{c.fft.backend} layout fits it: fewer cells, float32, lsrk4, or another backend")
    t = plan.traffic
    if t is None:
        return lines
    a2a = int(t.collectives.get("all-to-all", 0))
    hidden = (f" ({int(t.hidden_exchanges)} of {int(t.async_exchanges)} asynchronous ones run while another field "
              "is transformed)") if t.async_exchanges else ""
    lines.append(f"per step: {plan.ffts_per_step} scalar 3D FFTs in {int(t.fft_calls)} FFT kernels, {a2a} "
                 f"all-to-alls{hidden}; memory traffic {h(t.memory_bytes)} per device ({t.memory_bytes / plan.cells * plan.devices:.0f}"
                 f" bytes per cell, FFTs {t.fft_bytes / max(t.memory_bytes, 1):.0%}), {h(t.sent_bytes)} sent per device")
    name = profile or ("h100" if platform == "gpu" else "measured")
    if name == "measured":
        if stand_in or deviceless:  # no GPU here to measure
            return lines
        bandwidth = measure_bandwidth()
        prof = cost.DeviceProfile("measured", bandwidth, bandwidth, f"measured here: streaming 256 MiB, "
                                  f"{bandwidth / 1e9:.1f} GB/s", "links taken at the measured memory rate")
    else:
        prof = cost.PROFILES[name]
    seconds = cost.predicted_seconds(t, prof, plan.devices, c.fft.backend)
    lines.append(f"predicted step (bandwidth bound): {seconds * 1e3:.3g} ms on {prof.name} ({prof.source}; "
                 f"exchanges over {cost.links(prof, plan.devices, c.fft.backend)})")
    return lines


def plan_lines(cfg: Config, simulation: Callable[..., Any], devices: int | None = None, platform: str | None = None,
               memory: int | None = None, profile: str | None = None) -> tuple[list[str], bool]:
    """What ``simulator plan`` prints for ``cfg`` on its first ``devices`` devices (default: the run's),
    planning for ``platform`` (default this machine's) with ``memory`` bytes per device (default: what
    the devices have free) and the bandwidths of ``profile`` (:func:`report`), and whether the run fits
    (its exit status). ``simulation(cfg, devices)`` builds the run
    (:class:`~simulator.run.simulation.Simulation`). The runtime must be started."""
    target = platform or jax.default_backend()
    check_platform(cfg, target)
    chosen = jax.devices()[:devices] if devices is not None else None
    source = "given"
    if memory is not None and target == "gpu":  # the allocator's share of it
        memory, source = gpu_allocator_share(memory)
    stand_in = target == "gpu" and jax.default_backend() == "cpu"
    gpu = why_not = None
    if stand_in:  # XLA's GPU compiler where JAX's CUDA plug-in is installed (no GPU needed)
        from simulator import gpu_compiler

        name = profile if profile in gpu_compiler.SPECS else "h100"
        why_not = gpu_compiler.unavailable(name)
        gpu = None if why_not else name

    def planned(c: Config) -> Plan:
        return reduced_plan(simulation(c, chosen), (*run_programs(c), "step"), memory, memory_source=source, gpu=gpu)

    with _gpu_fft_path(stand_in):
        plan = auto_in_turn(planned(cfg), target, planned)
    return report(plan, platform or plan.platform, profile, why_not), plan.fits


def check_platform(cfg: Config, platform: str) -> None:
    """Refuse to plan for ``platform`` a run that cannot run there (ConfigError naming the key): particles
    by NUFFT (jax-finufft: CPU only) off CPU, which this machine's CPU standing in would plan as if they could."""
    from simulator.particles.interpolation import METHODS

    for i, species in enumerate(cfg.particles):
        method = METHODS[species.interpolation]
        if method.platforms is not None and platform not in method.platforms:
            raise ConfigError(f"particles[{i}].interpolation", method.name, f"use {method.instead} on {platform}: "
                              f"{method.platform_note}", f"cannot run on {platform}")


@contextlib.contextmanager
def _gpu_fft_path(stand_in: bool) -> Iterator[None]:
    """Planning for GPUs on a CPU: compile with XLA's FFT, the path GPUs run (cuFFT), not FFTW's custom
    calls, whose buffers differ (the FFTW path needs fewer bytes per cell: it would promise grids a GPU
    cannot hold), and a GPU's route to a compact spectrum on one device (:func:`simulator.fft.single.stages_pay`)
    and order of transforms (:meth:`simulator.fft.base.FFTBackend.in_turn`)."""
    from simulator.fft.mesh import as_on

    if not stand_in:
        yield
        return
    before = os.environ.get(local_fft.ENV_PATH)
    os.environ[local_fft.ENV_PATH] = "xla"
    try:
        with as_on("gpu"):
            yield
    finally:
        if before is None:
            os.environ.pop(local_fft.ENV_PATH, None)
        else:
            os.environ[local_fft.ENV_PATH] = before
