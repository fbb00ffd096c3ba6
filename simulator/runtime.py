"""Processes, devices and meshes: the only module that knows about them.

Order matters, because JAX reads some settings once, when its backends start:

1. :func:`configure_devices` sets the virtual CPU device count, the CPU threads and the precision. It must run before
   anything touches a device; asked too late it raises :class:`RuntimeSetupError` instead of being
   silently ignored.
2. :func:`initialize_processes` starts multi-process JAX where there is more than one process:
   explicitly (coordinator/num_processes/process_id from the config or from ``simulator launch``'s
   environment), or from Slurm, but only inside an ``srun`` step of a multi-task job
   (``SLURM_STEP_NODELIST`` set and ``SLURM_NTASKS > 1``); in the batch shell itself
   ``jax.distributed.initialize()`` fails. Otherwise a plain single-process run.
3. :func:`build_mesh` lays the global devices out as the FFT backend's mesh.
"""

from __future__ import annotations

import os
import platform
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata

import jax
from jax.sharding import Mesh

from simulator import cache
from simulator.config import Config
from simulator.errors import ConfigError, RuntimeSetupError
from simulator.fft import BACKENDS, FFTBackend
from simulator.fft.layouts import spectral_layout
from simulator.fft.mesh import build_mesh
from simulator.gpu_binding import gpu_binding, visible_devices
from simulator.launch import ENV_COORDINATOR, position
from simulator.threads import (
    ALLOCATOR_VARIABLE,
    GPU_ALLOCATOR,
    GPU_MEMORY_FRACTION,
    MEM_FRACTION_VARIABLE,
    XLA_THREADS_VARIABLE,
    available_cores,
)
from simulator.version import __version__

SLURM_VARIABLES = (
    "SLURM_JOB_ID",
    "SLURM_NTASKS",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NODELIST",
    "SLURM_STEP_NODELIST",
    "SLURM_STEP_GPUS",
    "SLURM_JOB_GPUS",
    "SLURM_GPUS_ON_NODE",
    "SLURM_GPUS",
    "CUDA_VISIBLE_DEVICES",
    "SLURMD_NODENAME",
    "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_RESTART_COUNT",
)



def _backends_started() -> bool:
    from jax._src import xla_bridge  # no public API tells whether backends exist yet

    return xla_bridge.backends_are_initialized()


def configure_devices(cpu_devices: int | None, precision: str, threads: int | None = None) -> None:
    """Set the virtual CPU device count, the CPU threads and the floating-point precision, before JAX starts.

    Once JAX has started, float64 can still be switched on; float32 never switches it off again.

    ``cpu_devices`` (when given) also restricts JAX to the CPU platform: a laptop-style run with
    virtual devices. ``threads`` (when given) sizes XLA's CPU thread pool (its ``PJRT_NPROC``, read
    when the CPU client starts; the FFTW transforms count the same cores, :mod:`simulator.fft.local`).
    Raises RuntimeSetupError if JAX's backends already exist with another count of either.
    """
    if threads is not None:
        if _backends_started():
            if os.environ.get(XLA_THREADS_VARIABLE) != str(threads):
                raise RuntimeSetupError(
                    f"threads = {threads} was asked for after JAX had already started its CPU thread pool "
                    f"({XLA_THREADS_VARIABLE}={os.environ.get(XLA_THREADS_VARIABLE, 'unset')}); set it first "
                    "(--threads on the command line, or runtime.threads, before any JAX work)")
        else:
            os.environ[XLA_THREADS_VARIABLE] = str(int(threads))
    if cpu_devices is not None:
        if _backends_started():
            have = len(jax.devices("cpu")) if jax.default_backend() == "cpu" else 0
            if jax.default_backend() != "cpu" or have != cpu_devices:
                raise RuntimeSetupError(
                    f"cpu_devices = {cpu_devices} was asked for after JAX had already started with "
                    f"{len(jax.devices())} {jax.default_backend()} device(s); set it first "
                    "(--cpu-devices on the command line, or runtime.cpu_devices, before any JAX work)"
                )
        else:
            jax.config.update("jax_platforms", "cpu")
            jax.config.update("jax_num_cpu_devices", int(cpu_devices))
    elif not _backends_started():  # a GPU's allocator and its share, as the planner assumes (simulator.planning.memory)
        os.environ.setdefault(MEM_FRACTION_VARIABLE, str(GPU_MEMORY_FRACTION))
        os.environ.setdefault(ALLOCATOR_VARIABLE, GPU_ALLOCATOR)
    use_precision(precision)


def use_precision(precision: str) -> None:
    """Switch JAX's 64-bit types on for a ``float64`` run (at any time), off for a ``float32`` one only before
    JAX starts: a float32 simulation in a process that already computes in float64 (a script building several)
    keeps 64-bit types on, its own arrays float32 all the same (every dtype is explicit)."""
    if precision == "float64" or not _backends_started():
        jax.config.update("jax_enable_x64", precision == "float64")


def cpu_threads() -> str:
    """This process's CPU threads (XLA's pool, the most FFTW threads), and where the count comes from."""
    given = os.environ.get(XLA_THREADS_VARIABLE, "").strip()
    where = f"{XLA_THREADS_VARIABLE}={given}" if given else "every core this process may use"
    return f"{available_cores()} ({where})"


def gpu_visible() -> bool:
    """Whether a GPU plug-in for JAX is installed, a GPU device node exists and CUDA_VISIBLE_DEVICES (or
    its ROCm peers) does not hide every GPU (asked without starting JAX, whose CPU device count can only
    be set before it starts)."""
    import glob

    plugins = [e.name for e in metadata.entry_points(group="jax_plugins")]
    shown, _ = visible_devices(os.environ)
    return bool(plugins) and shown != [] and bool(glob.glob("/dev/nvidia[0-9]*") or glob.glob("/dev/kfd"))


#: the names of GPU platforms in JAX_PLATFORMS
GPU_PLATFORMS = ("cuda", "rocm", "gpu")


def _gpu_platforms(env: Mapping[str, str]) -> list[str]:
    return [p for p in (p.strip() for p in env.get("JAX_PLATFORMS", "").split(",")) if p in GPU_PLATFORMS]


def _no_gpu_why() -> str:
    """Why JAX has no GPU: its GPU plug-in found none, or there is no plug-in."""
    plugins = sorted(e.name for e in metadata.entry_points(group="jax_plugins"))
    return (f"JAX's GPU plug-in ({', '.join(plugins)}) found no GPU it can use" if plugins else
            f"jaxlib {versions()['jaxlib']} has no GPU plug-in (install JAX for the GPU, e.g. pip install "
            "'jax[cuda12]')")


def check_platforms(cfg: Config, env: Mapping[str, str] | None = None) -> None:
    """RuntimeSetupError (one line, exit 2) before JAX starts where JAX_PLATFORMS asks for a GPU platform alone
    (``cuda``, not ``cuda,cpu``) and no GPU plug-in for JAX is installed: JAX failed in an assertion's traceback.
    The way to the CPU is named: JAX_PLATFORMS=cpu, or ``runtime.cpu_devices`` (which keeps the run on the CPU)."""
    env = os.environ if env is None else env
    asked = env.get("JAX_PLATFORMS", "")
    if cfg.runtime.cpu_devices is not None or not _gpu_platforms(env) or "cpu" in asked.split(","):
        return
    if not list(metadata.entry_points(group="jax_plugins")):
        raise RuntimeSetupError(f"JAX_PLATFORMS={asked} asks for a GPU and {_no_gpu_why()}; to run on the CPU "
                                "instead, set JAX_PLATFORMS=cpu or runtime.cpu_devices")


def missing_gpu(cfg: Config, env: Mapping[str, str] | None = None) -> str | None:
    """A GPU asked for and not found, in one line (None when GPUs run, or none was asked for): Slurm's or CUDA's
    variables give this process a GPU (:func:`simulator.gpu_binding.gpu_binding`) or JAX_PLATFORMS names a GPU
    platform beside the CPU, the config does not keep the run on the CPU (``runtime.cpu_devices``), and JAX has
    started on the CPU, from a CPU-only jaxlib or a GPU plug-in that found no GPU. Said by ``simulator info`` and
    in the run's log as a warning: on a cluster, hours of a GPU allocation would otherwise run on a CPU core
    without a word. Needs JAX started (:func:`setup`)."""
    env = os.environ if env is None else env
    binding = gpu_binding(env)
    asked = binding.where if binding.device_ids is not None else (
        f"JAX_PLATFORMS={env['JAX_PLATFORMS']}" if _gpu_platforms(env) else "")
    if not asked or cfg.runtime.cpu_devices is not None or jax.default_backend() != "cpu":
        return None
    return (f"{asked}: a GPU is asked for and none was found: {_no_gpu_why()}; this process runs on "
            f"{jax.local_device_count()} CPU device(s)")


def is_distributed() -> bool:
    """True once jax.distributed has been initialized in this process."""
    from jax._src import distributed  # no public API exposes this

    return distributed.global_state.client is not None


def slurm_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Slurm variables of this process (empty strings where unset)."""
    env = os.environ if env is None else env
    return {name: env.get(name, "") for name in SLURM_VARIABLES}


def process_mode(cfg: Config, env: Mapping[str, str] | None = None) -> str:
    """How this process finds its peers: 'explicit', 'slurm' or 'single' (:func:`simulator.launch.position`)."""
    return position(cfg.runtime, env).mode


def initialize_processes(cfg: Config, env: Mapping[str, str] | None = None) -> str:
    """Start multi-process JAX if this run spans several processes and JAX has not started them yet (a script that
    builds several simulations starts them once); returns the mode used."""
    env = os.environ if env is None else env
    where = position(cfg.runtime, env)
    if is_distributed():
        return where.mode
    if where.mode == "explicit":
        coordinator = cfg.runtime.coordinator or env[ENV_COORDINATOR]
        source = "runtime.coordinator" if cfg.runtime.coordinator is not None else ENV_COORDINATOR
        check_coordinator(coordinator, source)
        jax.distributed.initialize(coordinator_address=coordinator, num_processes=where.count, process_id=where.index)
    elif where.mode == "slurm":
        gpus = gpu_binding(env).device_ids if cfg.runtime.cpu_devices is None else None  # CPU runs: none
        coordinator = _slurm_coordinator()
        if coordinator is not None:
            check_coordinator(*coordinator)
        jax.distributed.initialize(local_device_ids=gpus)
    return where.mode


#: seconds to wait for the coordinator's host name to resolve (a DNS server that does not answer)
RESOLVE_TIMEOUT_S = 10.0


def _slurm_coordinator() -> tuple[str, str] | None:
    """The address jax.distributed takes as coordinator in a Slurm step (its own choice, read from this
    process's environment as it reads it), and where it comes from; None where JAX does not detect the
    step (it then says what is missing itself)."""
    # no public API gives the address it will use
    from jax._src.clusters import SlurmCluster

    if os.environ.get("JAX_COORDINATOR_ADDRESS"):
        return os.environ["JAX_COORDINATOR_ADDRESS"], "JAX_COORDINATOR_ADDRESS"
    if not SlurmCluster.is_env_present() or not os.environ["SLURM_JOB_ID"].isdigit():
        return None
    address = SlurmCluster.get_coordinator_address(None, os.environ.get("JAX_COORDINATOR_PORT"))
    return address, f"the first node of SLURM_STEP_NODELIST={os.environ.get('SLURM_STEP_NODELIST', '')}"


def check_coordinator(address: str, source: str) -> None:
    """Raise RuntimeSetupError unless the host of ``address`` (``host:port``) resolves within
    :data:`RESOLVE_TIMEOUT_S`. jax.distributed retries an unresolvable coordinator until its
    initialization timeout (5 minutes), every process of the job waiting; this says it at once."""
    import concurrent.futures

    host = address.rsplit(":", 1)[0].strip("[]")
    pool = concurrent.futures.ThreadPoolExecutor(1)  # getaddrinfo has no timeout of its own
    try:
        pool.submit(socket.getaddrinfo, host, None).result(timeout=RESOLVE_TIMEOUT_S)
    except concurrent.futures.TimeoutError:
        raise RuntimeSetupError(f"the coordinator {address} ({source}) did not resolve within "
                                f"{RESOLVE_TIMEOUT_S:.0f} s; check the node's name service") from None
    except OSError as err:
        raise RuntimeSetupError(f"the coordinator {address} ({source}) does not resolve ({err.strerror or err}); "
                                "every process would wait for it: give a host name or address that "
                                "resolves on every node") from None
    finally:
        pool.shutdown(wait=False)


def setup(cfg: Config, env: Mapping[str, str] | None = None, count: Callable[[], object] | None = None) -> str:
    """Configure devices and precision, then processes; returns the process mode. Calling it again in
    the same process (a script building several simulations) keeps the processes already started.
    A Slurm or launcher environment that cannot be right is refused (ConfigError) before JAX starts, and so is a
    GPU platform asked for where JAX has none (:func:`check_platforms`; ``count``: :func:`enable_cache`'s)."""
    gpu_binding(env)
    check_platforms(cfg, env)
    configure_devices(cfg.runtime.cpu_devices, cfg.precision, cfg.runtime.threads)
    enable_cache(cfg.runtime.compilation_cache, count)
    return initialize_processes(cfg, env)


def enable_cache(setting: str | bool = "auto", count: Callable[[], object] | None = None) -> cache.Status:
    """Keep this process's compiled programs in the compilation cache ``setting`` names (``runtime.compilation_cache``;
    :func:`simulator.cache.enable`), tagged with the FFTW library the native extension runs (none without it).
    ``count``: starts counting the programs compiled (:func:`simulator.run.programs.count_compilations`)."""
    from simulator.fft.local import native

    if count is not None:  # first: the run log's programs line counts every program of the launch
        count()
    module, _ = native()
    return cache.enable(setting, f"fftw={module.version() if module is not None else 'none'}")


def make_fft(cfg: Config, devices: Sequence | None = None, compact_at_least: Sequence[int] | None = None
             ) -> FFTBackend:
    """The configured FFT backend on its mesh (checks the grid against the mesh first), in the spectral
    layout :func:`simulator.fft.layouts.spectral_layout` chooses (``backend.layout_reason`` says why);
    a compact spectrum at least ``compact_at_least`` in size where given (the planner's stand-in runs)."""
    backend = BACKENDS[cfg.fft.backend]
    mesh = build_mesh(backend, cfg.fft.mesh, devices)
    _check_every_process_holds(mesh, cfg)
    compact, why = spectral_layout(cfg.fft.layout, cfg.physics.compact_spectra(), backend, cfg.grid.cells,
                                   tuple(mesh.devices.shape))
    fft = backend(cfg.grid.cells, mesh, compact=compact and (compact_at_least or True), walls=cfg.grid.walls.on,
                  basis=cfg.grid.walls.bounded)
    fft.layout_reason = {None: why, "sincos": "the plates' sine and cosine series",
                         "chebyshev": "the plates' Chebyshev series",
                         "legendre": "the plates' Legendre series"}[cfg.grid.walls.bounded]
    fft.step_in_turn = cfg.fft.in_turn is True  # auto: all at once unless the memory check chose true
    return fft


def _check_every_process_holds(mesh: Mesh, cfg: Config) -> None:
    """ConfigError unless every process of the run holds a device of ``mesh``: one holding none has no
    shard of the state, so it could neither read the run's numbers nor write its share of the files (it
    failed in the first collective read, in a traceback)."""
    processes = jax.process_count()
    holding = {d.process_index for d in mesh.devices.flat}
    if len(holding) < processes:
        wider = f"at least {processes} devices (there are {len(jax.devices())}), or run fewer processes"
        key, value, allowed = (("fft.mesh", list(mesh.devices.shape), f"give a mesh of {wider}")
                               if cfg.fft.mesh is not None else
                               ("fft.backend", cfg.fft.backend, f"use a backend that divides the grid over {wider}"))
        raise ConfigError(key, value, f"every process must hold a part of the mesh: {allowed}",
                          f"takes {mesh.devices.size} device(s) in a run of {processes} processes")


def versions() -> dict[str, str]:
    """Versions of the simulator (:mod:`simulator.version`), Python and the numerical stack (every run's log and
    record say them)."""
    out = {"python": platform.python_version(), "simulator": __version__}
    for pkg in ("jax", "jaxlib", "jaxdecomp", "numpy", "h5py"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


@dataclass(frozen=True)
class DeviceReport:
    """What this process sees: its place among processes and the devices."""

    process_index: int
    process_count: int
    platform: str
    local_devices: tuple[str, ...]
    global_device_count: int


def device_report() -> DeviceReport:
    """Describe processes and devices (starts JAX's backends if they are not started yet)."""
    return DeviceReport(
        process_index=jax.process_index(),
        process_count=jax.process_count(),
        platform=jax.default_backend(),
        local_devices=tuple(str(d) for d in jax.local_devices()),
        global_device_count=jax.device_count(),
    )
