"""What ``simulator plan`` prints: a run's plan (:mod:`simulator.planning.plan`, compiled as a smaller run on
many devices: :mod:`simulator.planning.reduced`), the largest grid that fits, and a predicted step time from the
step's traffic and a device profile's bandwidths (:mod:`simulator.planning.cost`); planning for GPUs on a CPU,
compiled by XLA's GPU compiler where JAX's CUDA plug-in is (:mod:`simulator.planning.gpu_compiler`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp

from simulator.config import Config
from simulator.config.modes import modes_line
from simulator.equations import resolution
from simulator.errors import ConfigError
from simulator.fft import local as local_fft
from simulator.fft.bases import factored, fast_across, fft_friendly
from simulator.planning import cost
from simulator.planning.memory import gpu_allocator_share
from simulator.planning.plan import USABLE_FRACTION, Plan, auto_in_turn, in_turn_line, largest_grid_line, plan_programs
from simulator.planning.reduced import reduced_plan


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


#: what the job lines are made by: (predicted seconds per step or None, devices) -> lines (:mod:`.job`)
Job = Callable[[float | None, int], list[str]]


def report(plan: Plan, platform: str, profile: str | None = None, why_not_gpu: str | None = None,
           job: Job | None = None) -> list[str]:
    """The lines ``simulator plan`` prints (``why_not_gpu``: why a plan for GPUs on a CPU was not compiled
    by XLA's GPU compiler, :func:`simulator.planning.gpu_compiler.unavailable`), ending with ``job``'s lines
    at the predicted step time (:mod:`simulator.planning.job`: the steps to t_end, wall time, device-hours)."""
    lines: list[str] = []
    seconds = _report(plan, platform, profile, why_not_gpu, lines)
    return lines + (job(seconds, plan.devices) if job else [])


def _report(plan: Plan, platform: str, profile: str | None, why_not_gpu: str | None, lines: list[str]
            ) -> float | None:
    """:func:`report`'s plan lines, appended to ``lines``; returns the predicted step in seconds (None where
    not predicted: no traffic counted, or a GPU planned on a CPU with no profile named)."""
    c = plan.cfg
    h = cost.human_bytes
    stand_in = platform == "gpu" and plan.platform != "gpu"
    deviceless = bool(plan.compiled_for)
    how = "compiled without allocating in"
    if plan.coarser:
        how = (f"compiled without allocating as grid {list(plan.compiled_as[0])} on the same mesh (this grid's state "
               "alone is past a device: memory and traffic per cell scaled from that grid's, an estimate) in")
    elif plan.compiled_as:
        how = (f"compiled without allocating as grid {list(plan.compiled_as[0])} on mesh {list(plan.compiled_as[1])} "
               "(the same cells per device; the step's traffic per cell scaled to this mesh) in")
    lines.append(f"plan: {c.physics.name}, {c.time.integrator}, {c.precision}, grid {list(c.grid.shape)}, "
                 f"{c.fft.backend} on mesh {list(plan.mesh)} of {plan.devices} {plan.platform} device(s); "
                 f"{how} {plan.seconds:.1f} s")
    if stand_in:
        lines.append("  (planning for GPUs on this machine's CPU: memory and traffic are those of the same program "
                     "compiled for CPU; a GPU build differs by its fusion and scheduling choices"
                     + (f"; not compiled for a GPU: {why_not_gpu})" if why_not_gpu else ")"))
    if deviceless:
        lines.append(f"  (planning for GPUs on this machine's CPU: compiled by XLA's GPU compiler of jaxlib "
                     f"{jax.lib.__version__} for the {plan.compiled_for}, without a GPU: memory and traffic are that "
                     "build's; another jaxlib may differ)")
    if (chosen := modes_line(c.grid)) is not None:
        lines.append(chosen)
    if plan.layout:
        lines.append(f"spectral layout: {plan.layout}")
    if c.grid.domain()[2].endpoints:  # a Gauss-Lobatto axis: its transform is a real FFT of 2 (n - 1) points
        lines.append(across_line(c.grid.shape[-1]))
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
    lines.append(largest_grid_line(plan))
    if (refusal := plan.largest_grid_refusal()) is not None:  # the config, not memory, sets it: say which key
        lines.append(f"  (of the grids this config can use: {refusal})")
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
        return None
    a2a = int(t.collectives.get("all-to-all", 0))
    hidden = (f" ({int(t.hidden_exchanges)} of {int(t.async_exchanges)} asynchronous ones run while another field "
              "is transformed)") if t.async_exchanges else ""
    dims = "2D" if c.grid.plane else "3D"  # a plane runs as the box (1, Nx, Ny): its transforms are 2D
    lines.append(f"per step: {plan.ffts_per_step} scalar {dims} FFTs in {int(t.fft_calls)} FFT kernels, {a2a} "
                 f"all-to-alls{hidden}; memory traffic {h(t.memory_bytes)} per device "
                 f"({t.memory_bytes / plan.cells * plan.devices:.0f} bytes per cell, "
                 f"FFTs {t.fft_bytes / max(t.memory_bytes, 1):.0%}), {h(t.sent_bytes)} sent per device")
    name = profile or ("h100" if platform == "gpu" else "measured")
    if name == "measured":
        if stand_in or deviceless:  # no GPU here to measure
            return None
        bandwidth = measure_bandwidth()
        # named for the reader: the line reads "... ms on this machine (measured here: ...)"
        prof = cost.DeviceProfile("this machine", bandwidth, bandwidth, f"measured here: streaming 256 MiB, "
                                  f"{bandwidth / 1e9:.1f} GB/s", "links taken at the measured memory rate")
    else:
        prof = cost.PROFILES[name]
    seconds = cost.predicted_seconds(t, prof, plan.devices, c.fft.backend)
    lines.append(f"predicted step (bandwidth bound): {seconds * 1e3:.3g} ms on {prof.name} ({prof.source}; "
                 f"exchanges over {cost.links(prof, plan.devices, c.fft.backend)})")
    return seconds


def across_line(n: int) -> str:
    """The plan's line on the transform across no-slip plates of ``n`` Gauss-Lobatto points: a real FFT of ``2 (n -
    1)`` points (:mod:`simulator.fft.walls`), fast where ``n - 1`` is FFT-friendly (384 points: 2 x 383, a prime,
    2.5-4 times slower than 385's 2 x 384), and where it is not the next count that is, which keeps at least these
    Chebyshev modes (the 2/3 rule keeps degrees below 2n/3)."""
    length = f"a real FFT of 2 x {n - 1} points"
    if fft_friendly(n - 1):
        return f"across the plates: {n} points, {length}: FFT-friendly (fast)"
    better = fast_across(n)
    return (f"across the plates: {n} points, {length} ({n - 1}{factored(n - 1)}): not FFT-friendly, slower than "
            f"a smooth length; {better} points ({better - 1}{factored(better - 1)}) keep these Chebyshev modes and "
            "more, and transform fast")


def plan_lines(cfg: Config, simulation: Callable[..., Any], devices: int | None = None, platform: str | None = None,
               memory: int | None = None, profile: str | None = None, job: Job | None = None
               ) -> tuple[list[str], bool]:
    """What ``simulator plan`` prints for ``cfg`` on its first ``devices`` devices (default: the run's),
    planning for ``platform`` (default this machine's) with ``memory`` bytes per device (default: what
    the devices have free) and the bandwidths of ``profile`` (:func:`report`), and whether the run fits
    (its exit status), with ``job``'s lines at the end. ``simulation(cfg, devices)`` builds the run
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
        from simulator.planning import gpu_compiler

        name = profile if profile in gpu_compiler.SPECS else "h100"
        why_not = gpu_compiler.unavailable(name)
        gpu = None if why_not else name

    def planned(c: Config) -> Plan:
        return reduced_plan(simulation(c, chosen), (*plan_programs(c), "step"), memory, memory_source=source, gpu=gpu,
                            for_gpu=target == "gpu")

    with _gpu_fft_path(stand_in):
        plan = auto_in_turn(planned(cfg), target, planned)
    return report(plan, platform or plan.platform, profile, why_not, job), plan.fits


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
