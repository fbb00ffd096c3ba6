"""How much memory a run may still allocate: per device (a GPU's allocator limit less what it uses) or
on the host (MemAvailable, or what a cgroup limit leaves), with where each figure comes from.
Used by :mod:`simulator.planning.plan`.

On a GPU, JAX's allocator takes ``XLA_PYTHON_CLIENT_MEM_FRACTION`` of the device's memory when it starts
(JAX's default: 0.75). The runtime sets it to :data:`simulator.threads.GPU_MEMORY_FRACTION`, and the allocator
to :data:`simulator.threads.GPU_ALLOCATOR`, unless the environment already does (the GPU job scripts in slurm/
export the same), and ``simulator plan --platform gpu --memory 80GB`` plans with the same share, so that a grid
the planner says fits is one the run's own check admits."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simulator.planning import cost
from simulator.threads import GPU_MEMORY_FRACTION, MEM_FRACTION_VARIABLE


def gpu_allocator_fraction(env: Mapping[str, str] | None = None) -> tuple[float, str]:
    """The share of each GPU's memory JAX's allocator gets in this environment, and where it comes from."""
    env = os.environ if env is None else env
    text = env.get(MEM_FRACTION_VARIABLE)
    if text:
        return float(text), f"{MEM_FRACTION_VARIABLE}={text}"
    return GPU_MEMORY_FRACTION, f"{MEM_FRACTION_VARIABLE}={GPU_MEMORY_FRACTION} (the runtime's default)"


def gpu_allocator_share(memory: int, env: Mapping[str, str] | None = None) -> tuple[int, str]:
    """What JAX's allocator will hold on a GPU of ``memory`` bytes: the figure the runtime's own check
    sees there (its allocator's ``bytes_limit``), and where it comes from."""
    fraction, source = gpu_allocator_fraction(env)
    return int(memory * fraction), f"{cost.human_bytes(memory)} given x {source}, JAX's allocator share"


def _cgroup_free() -> tuple[int, str] | None:
    """Memory left under this process's cgroup limit (v2 or v1), if one is set."""
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            limit = Path(limit_file).read_text().strip()
            usage = int(Path(usage_file).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:
            return int(limit) - usage, f"cgroup limit {cost.human_bytes(int(limit))} less its usage"
    return None


def host_memory_available() -> tuple[int, str]:
    """Bytes this process may still allocate on the host, and where the figure comes from: the smaller
    of MemAvailable (/proc/meminfo) and what the cgroup limit leaves (containers, batch jobs)."""
    candidates = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                candidates.append((int(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"))
    except OSError:
        pass
    group = _cgroup_free()
    if group is not None:
        candidates.append(group)
    if not candidates:
        pages = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        candidates.append((pages, "available physical pages (sysconf)"))
    return min(candidates)


def gpu_total_memory(device: Any) -> int | None:
    """A CUDA device's memory in bytes from the driver (``cuDeviceTotalMem``), or None where the driver
    cannot say (no ``libcuda``, another vendor's GPU). Asked only where JAX's allocator reports no limit."""
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        handle, size = ctypes.c_int(), ctypes.c_size_t()
        if (cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(handle), int(device.local_hardware_id))
                or cuda.cuDeviceTotalMem_v2(ctypes.byref(size), handle)):
            return None
    except (OSError, AttributeError, TypeError):
        return None
    return int(size.value)


def device_memory_available(devices: Sequence[Any]) -> tuple[int, str]:
    """Bytes each device may still allocate, and where the figure comes from. GPUs report their
    allocator's limit less what is in use; virtual CPU devices share the host's memory, divided by the
    devices this process drives.

    Where a GPU's allocator reports no limit, the share :func:`gpu_allocator_share` gives of the device's
    memory stands for it: CUDA's stream-ordered pool started without preallocation
    (``XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async`` with ``XLA_PYTHON_CLIENT_PREALLOCATE=false``) reports a
    limit of 0, and the ``platform`` allocator no statistics (both seen on an H200 with JAX 0.11.2; the
    limit of 0 made every run's memory check fail there)."""
    import jax

    local = [d for d in devices if d.process_index == jax.process_index()]
    if local and local[0].platform != "cpu":
        stats = [d.memory_stats() or {} for d in local]
        if all(s.get("bytes_limit") for s in stats):
            free = min(s["bytes_limit"] - s.get("bytes_in_use", 0) for s in stats)
            return free, f"{local[0].platform} allocator limit less bytes in use"
        totals = [gpu_total_memory(d) for d in local]
        if all(totals):
            free = min(gpu_allocator_share(t)[0] - s.get("bytes_in_use", 0) for t, s in zip(totals, stats))
            return free, (f"{gpu_allocator_share(min(totals))[1]} (the allocator reports no limit) less bytes "
                          "in use")
    total, source = host_memory_available()
    return total // max(len(local), 1), f"{source}, shared by {max(len(local), 1)} device(s)"
