"""XLA's GPU compiler without a GPU: a run's programs, lowered on this machine, compiled for an NVIDIA GPU.

JAX's CUDA plug-in (``pip install "jax[cuda13]"``, about 4 GB) carries XLA's GPU compiler, which compiles
for a GPU described in words on a machine that has none (``jax.experimental.topologies``: deviceless
ahead-of-time compilation). ``simulator plan --platform gpu`` on a CPU uses it where the plug-in is
installed: the run's programs are lowered on virtual CPU devices along a GPU's route (XLA's FFT, the GPU's
transforms and their order: :func:`simulator.fft.mesh.as_on`) and their StableHLO is compiled for
:data:`SPECS`'s GPU on as many devices, so the memory, the traffic and the schedule the planner reads are
the GPU build's own. Without the plug-in the planner compiles for the CPU instead (the stand-in) and says
so. What the two differ by (Navier-Stokes, compact, one device, ``scripts/bench_compact.py --target``): at
128^3 the lsrk4 float32 chunk is 35.4 B/cell on both (30.7 for the H100 with ``fft.in_turn``, which the CPU's
compile does not see), the snapshot fields 39.7 for the H100 against 48.7; the GPU's all-to-alls are
asynchronous, and its schedule runs other transforms between an exchange's start and its end
(docs/PERFORMANCE.md).

The figures are those of the installed jaxlib's compiler, not of every jaxlib: at git c80c953 the rk4 float32
chunk at 128^3 compiled by jaxlib 0.10.2's GPU compiler holds 72.2 B/cell, where a real H100 with jaxlib 0.11.2
held 60.2 (its copy of the state removed by the newer XLA). A run on GPUs checks its fit with its own compile.

The compile options come from one of JAX's internals (``jax._src.interpreters.pxla.create_compile_options``,
what ``jit(...).lower(...).compile()`` calls): where it or the topology fails with the installed jaxlib, the
planner falls back to the stand-in and says why (:func:`unavailable`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import metadata
from typing import Any

#: the JAX plug-in that carries XLA's CUDA compiler (``jax[cuda13]``; ``jax[cuda12]`` installs xla_cuda12)
PLUGINS = ("xla_cuda13", "xla_cuda12")


@dataclass(frozen=True)
class GpuSpec:
    """What XLA's GPU compiler is told of a GPU (its ``TargetConfig``): the datasheet's figures."""

    name: str
    memory_bytes: int
    memory_bandwidth: float
    l2_bytes: int
    cores: int = 132
    clock_ghz: float = 1.98
    compute_capability: int = 9

    def target_config(self) -> str:
        """The GPU as a ``stream_executor.GpuTargetConfigProto`` in text form."""
        return f"""gpu_device_info {{
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_core: 233472
  threads_per_core_limit: 2048
  core_count: {self.cores}
  fpus_per_core: 128
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: {int(self.memory_bandwidth)}
  l2_cache_size: {self.l2_bytes}
  clock_rate_ghz: {self.clock_ghz}
  device_memory_size: {self.memory_bytes}
  shared_memory_per_block_optin: 232448
  cuda_compute_capability {{ major: {self.compute_capability} }}
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
}}
platform_name: "CUDA"
dnn_version_info {{ major: 9 minor: 10 }}
runtime_version {{ major: 13 minor: 0 }}
device_description_str: "{self.name}"
"""


#: by the planner's device profile (:data:`simulator.planning.cost.PROFILES`): NVIDIA's H100 SXM5 and H200 SXM
#: datasheets
SPECS = {
    "h100": GpuSpec("NVIDIA H100 80GB HBM3", 84_942_979_072, 3.35e12, 50 << 20),
    "h200": GpuSpec("NVIDIA H200", 150_754_820_096, 4.8e12, 50 << 20),
}


def plugin() -> str | None:
    """The installed JAX plug-in that carries XLA's CUDA compiler, or None."""
    names = {e.name for e in metadata.entry_points(group="jax_plugins")}
    return next((p for p in PLUGINS if p in names), None)


def unavailable(profile: str) -> str | None:
    """Why programs cannot be compiled for ``profile``'s GPU here (None: they can)."""
    if profile not in SPECS:
        return f"no GPU description for profile {profile!r} (known: {', '.join(SPECS)})"
    if plugin() is None:
        return 'JAX\'s CUDA plug-in is not installed (pip install "jax[cuda13]" compiles for GPUs without one)'
    try:
        _devices(profile, 1)
    except Exception as err:  # noqa: BLE001 - any failure of the plug-in is a reason to fall back, said in words
        return f"XLA's GPU compiler did not start: {str(err).splitlines()[0][:200]}"
    return None


def topology(devices: int) -> str:
    """The topology string of ``devices`` GPUs: one host up to 8, else hosts of 8."""
    return f"1x{devices // 8}x8" if devices > 8 and devices % 8 == 0 else f"1x1x{devices}"


@functools.cache
def _devices(profile: str, devices: int) -> tuple[Any, ...]:
    from jax.experimental import topologies

    topo = topologies.get_topology_desc(platform="cuda", target_config=SPECS[profile].target_config(),
                                        topology=topology(devices))
    return tuple(topo.devices)[:devices]


class Compiled:
    """A program compiled for a GPU without one: what the planner reads of a ``jax.stages.Compiled``."""

    def __init__(self, executable: Any):
        self._executable = executable

    def memory_analysis(self) -> Any:
        return self._executable.get_compiled_memory_stats()

    def as_text(self) -> str:
        return self._executable.hlo_modules()[0].to_string()


def compile_lowered(lowered: Any, profile: str, options: dict[str, Any] | None = None) -> Compiled:
    """``lowered`` (a ``jax.stages.Lowered`` traced on as many CPU devices as it shards over) compiled by XLA's
    GPU compiler for ``profile``'s GPU, deviceless; ``options``: XLA's debug options, as ``Lowered.compile``'s."""
    import numpy as np
    from jax._src.interpreters import pxla
    from jax._src.lib import xla_client

    module = lowered._lowering.stablehlo()
    args = lowered._lowering.compile_args
    devices = _devices(profile, int(args["num_devices"]))
    client = devices[0].client
    to_inputs, to_outputs = pxla.get_prop_to_input_output(args["in_shardings"], args["out_shardings"],
                                                          len(args["ordered_effects"]))
    compile_options = pxla.create_compile_options(module, args["tuple_args"], to_inputs, to_outputs, client,
                                                  np.array(devices, dtype=object), dict(options or {}))
    executable = client.compile(module, executable_devices=xla_client.DeviceList(devices),
                                compile_options=compile_options)
    return Compiled(executable)
