"""Device meshes for the FFT backends (the runtime decides which devices; this lays them out)."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import numpy as np
from jax.sharding import AxisType, Mesh

from simulator.errors import RuntimeSetupError
from simulator.fft.layouts import Layout


def build_mesh(backend: type[Layout], requested: Sequence[int] | None, devices: Sequence | None = None) -> Mesh:
    """The device mesh for ``backend``, over ``devices`` (default: all global devices).

    ``requested`` is ``fft.mesh`` from the config (None: the backend's default for this device
    count). A mesh using fewer devices than exist takes the first ones, in JAX's global order.
    """
    devices = list(jax.devices() if devices is None else devices)
    shape = backend.mesh_shape(len(devices), tuple(requested) if requested is not None else None)
    need = int(np.prod(shape))
    if need > len(devices):
        raise RuntimeSetupError(
            f"fft.mesh = {list(shape)} needs {need} devices but only {len(devices)} are available"
        )
    # Auto axes: sharding is propagated by the compiler from the backends' constraints, which is
    # what custom_partitioning and with_sharding_constraint expect (make_mesh defaults to Explicit).
    axis_types = (AxisType.Auto,) * len(shape)
    return jax.make_mesh(shape, backend.axis_names, axis_types, devices=devices[:need])
