"""Device meshes for the FFT backends (the runtime decides which devices; this lays them out)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

import jax
import numpy as np
from jax.sharding import AxisType, Mesh

from simulator.errors import RuntimeSetupError, counted
from simulator.fft.layouts import Layout


def build_mesh(backend: type[Layout], requested: Sequence[int] | None, devices: Sequence | None = None) -> Mesh:
    """The device mesh for ``backend``, over ``devices`` (default: all global devices).

    ``requested`` is ``fft.mesh`` from the config (None: the backend's default for this device
    count). A mesh using fewer devices than exist takes the first ones, in JAX's global order, from
    each process in turn (:func:`mesh_devices`).
    """
    devices = list(jax.devices() if devices is None else devices)
    shape = backend.mesh_shape(len(devices), tuple(requested) if requested is not None else None)
    need = int(np.prod(shape))
    if need > len(devices):
        have = len(devices)
        raise RuntimeSetupError(
            f"fft.mesh = {list(shape)} needs {need} devices but only {have} {'is' if have == 1 else 'are'} available; "
            f"give a mesh of at most {counted(have, 'device')}, or run on more (--cpu-devices {need} on CPUs)"
        )
    chosen = mesh_devices(devices, need)
    # Auto axes: sharding is propagated by the compiler from the backends' constraints, which is
    # what custom_partitioning and with_sharding_constraint expect (make_mesh defaults to Explicit).
    axis_types = (AxisType.Auto,) * len(shape)
    return jax.make_mesh(shape, backend.axis_names, axis_types, devices=chosen)


def mesh_devices(devices: Sequence, need: int) -> list:
    """The ``need`` of ``devices`` a mesh takes, in their order: all of them, or the first ones of each
    process in turn (one of every process, then a second of every process that has one, ...).

    A run needs every process to hold a part of its mesh (:func:`simulator.runtime.make_fft` refuses one
    that does not): a process holding none has no shard of any array, so it cannot read the run's numbers
    to the host or write its share of the files. The first ``need`` in JAX's global order (process after
    process) would leave the last processes without one (``fft.mesh: [2]`` over 2 processes of 2 devices:
    both on process 0)."""
    devices = list(devices)
    if need == len(devices):
        return devices
    by_process: dict[int, list] = {}
    for device in devices:
        by_process.setdefault(device.process_index, []).append(device)
    turns = [own[depth] for depth in range(max(map(len, by_process.values())))
             for own in by_process.values() if depth < len(own)]
    chosen = set(turns[:need])
    return [d for d in devices if d in chosen]


#: the platform whose route programs take where it is not the mesh's (:func:`as_on`)
_ROUTE_PLATFORM: ContextVar[str | None] = ContextVar("route_platform", default=None)


@contextlib.contextmanager
def as_on(platform: str) -> Iterator[None]:
    """Programs traced inside take ``platform``'s route (the planner compiles a GPU's program on a CPU): the
    transforms' stages (:func:`simulator.fft.single.stages_pay`) and their order
    (:meth:`simulator.fft.base.FFTBackend.in_turn`)."""
    token = _ROUTE_PLATFORM.set(platform)
    try:
        yield
    finally:
        _ROUTE_PLATFORM.reset(token)


def route_platform(mesh: Mesh) -> str:
    """The platform whose route the programs on ``mesh`` take: its devices', or the one :func:`as_on` sets."""
    return _ROUTE_PLATFORM.get() or mesh.devices.flat[0].platform
