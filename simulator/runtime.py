"""Processes, devices and meshes: the only module that knows about them.

Order matters, because JAX reads some settings once, when its backends start:

1. :func:`configure_devices` sets the virtual CPU device count and the precision. It must run before
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
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata

import jax

from simulator.config import Config
from simulator.errors import RuntimeSetupError
from simulator.fft import BACKENDS, FFTBackend
from simulator.fft.mesh import build_mesh

SLURM_VARIABLES = (
    "SLURM_JOB_ID",
    "SLURM_NTASKS",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NODELIST",
    "SLURM_STEP_NODELIST",
    "SLURM_STEP_GPUS",
    "SLURM_GPUS",
    "SLURMD_NODENAME",
    "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_RESTART_COUNT",
)

#: environment through which ``simulator launch`` tells each local process its place
ENV_COORDINATOR = "SIMULATOR_COORDINATOR"
ENV_NUM_PROCESSES = "SIMULATOR_NUM_PROCESSES"
ENV_PROCESS_ID = "SIMULATOR_PROCESS_ID"


def _backends_started() -> bool:
    from jax._src import xla_bridge  # no public API tells whether backends exist yet

    return xla_bridge.backends_are_initialized()


def configure_devices(cpu_devices: int | None, precision: str) -> None:
    """Set the virtual CPU device count and the floating-point precision, before JAX starts.

    Once JAX has started, float64 can still be switched on; float32 never switches it off again.

    ``cpu_devices`` (when given) also restricts JAX to the CPU platform: a laptop-style run with
    virtual devices. Raises RuntimeSetupError if JAX's backends already exist with another count.
    """
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
    if precision == "float64" or not _backends_started():
        jax.config.update("jax_enable_x64", precision == "float64")
    # else: a float32 simulation in a process that already computes in float64 (a script building
    # several) keeps 64-bit types on; its own arrays are float32 all the same (every dtype is explicit)


def gpu_visible() -> bool:
    """Whether a GPU plug-in for JAX is installed and a GPU device node exists (asked without starting JAX,
    whose CPU device count can only be set before it starts)."""
    import glob

    plugins = [e.name for e in metadata.entry_points(group="jax_plugins")]
    return bool(plugins) and bool(glob.glob("/dev/nvidia[0-9]*") or glob.glob("/dev/kfd"))


def is_distributed() -> bool:
    """True once jax.distributed has been initialized in this process."""
    from jax._src import distributed  # no public API exposes this

    return distributed.global_state.client is not None


def exit_now(code: int) -> None:
    """End this process at once with ``code``, skipping jax.distributed's shutdown barrier.

    A normal exit runs that barrier, which waits (minutes) for peers that are themselves blocked
    waiting for this process in a collective. Leaving at once lets the launcher or
    ``srun --kill-on-bad-exit`` see the failure and end the others.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def slurm_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Slurm variables of this process (empty strings where unset)."""
    env = os.environ if env is None else env
    return {name: env.get(name, "") for name in SLURM_VARIABLES}


def process_mode(cfg: Config, env: Mapping[str, str] | None = None) -> str:
    """How this process finds its peers: 'explicit', 'slurm' or 'single'."""
    env = os.environ if env is None else env
    if cfg.runtime.coordinator is not None or env.get(ENV_COORDINATOR):
        return "explicit"
    if env.get("SLURM_STEP_NODELIST") and int(env.get("SLURM_NTASKS", "1") or 1) > 1:
        return "slurm"
    return "single"


def initialize_processes(cfg: Config, env: Mapping[str, str] | None = None) -> str:
    """Start multi-process JAX if this run spans several processes; returns the mode used."""
    env = os.environ if env is None else env
    mode = process_mode(cfg, env)
    if mode == "explicit":
        coordinator = cfg.runtime.coordinator or env[ENV_COORDINATOR]
        num = cfg.runtime.num_processes if cfg.runtime.num_processes is not None else int(env[ENV_NUM_PROCESSES])
        pid = cfg.runtime.process_id if cfg.runtime.process_id is not None else int(env[ENV_PROCESS_ID])
        jax.distributed.initialize(coordinator_address=coordinator, num_processes=num, process_id=pid)
    elif mode == "slurm":
        jax.distributed.initialize()
    return mode


def setup(cfg: Config, env: Mapping[str, str] | None = None) -> str:
    """Configure devices and precision, then processes; returns the process mode. Calling it again in
    the same process (a script building several simulations) keeps the processes already started."""
    configure_devices(cfg.runtime.cpu_devices, cfg.precision)
    if is_distributed():
        return process_mode(cfg, env)
    return initialize_processes(cfg, env)


def make_fft(cfg: Config, devices: Sequence | None = None) -> FFTBackend:
    """The configured FFT backend on its mesh (checks the grid against the mesh first)."""
    backend = BACKENDS[cfg.fft.backend]
    return backend(cfg.grid.shape, build_mesh(backend, cfg.fft.mesh, devices))


def versions() -> dict[str, str]:
    """Versions of Python and the numerical stack (recorded with every run)."""
    out = {"python": platform.python_version()}
    for pkg in ("simulator", "jax", "jaxlib", "jaxdecomp", "numpy", "h5py"):
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
