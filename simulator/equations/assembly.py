"""Stacking spectra into multi-component arrays in a form XLA compiles correctly at every size.

Measured on an H100 (JAX 0.11.2, CUDA 13; docs/PERFORMANCE.md, "Measured on one H100"): XLA's GPU code
generator returns wrong values from a fused concatenation that reads slices of a complex array of 2^30
or more elements (and fewer than 2^31, where it indexes in 32 bits). ``jnp.stack([c[0] * 2, c[1],
c[2] + c[0]])`` of a complex64 ``c`` of shape ``(3, 1024, 1024, 512)`` came back with ``c[0]`` where
``c[2]`` was read (component 2 starts 2^30 elements in, 2^31 floats), and the low-storage RK4 step of
Navier-Stokes at 1024^3 on one GPU ended with 3/2 of Taylor-Green's energy: its fused update stacks the
projected components of the nonlinear term. Materialising the parts before the concatenation
(an optimisation barrier) left it wrong. The same expression written as a selection over the component
index (``jnp.where(i == 0, a, jnp.where(i == 1, b, c))``) is an elementwise kernel, and is right, as are
slices, elementwise products and reductions of the whole array.

:func:`stack` and :func:`concatenate` are ``jnp.stack`` / ``jnp.concatenate`` along the leading
(component) axis; with ``select`` (or a complex result of :data:`COMPLEX_LIMIT` elements or more per
device) they build the result by selection instead. Each component of the selection is evaluated at
every point, so the kernel reads every input component once per output component: on the H100 at
1024^3 the rk4 step takes 940 ms against 819 ms for the (wrong) stacking program (+15%), lsrk4 1215
against 997 ms (+22%). Below the limit nothing changes. The flow equations'
:class:`~simulator.equations.operators.SpectralOperators` decide ``select`` once per grid from the size
of a velocity spectrum on one device.

Also measured there: XLA's sibling multi-output fusion of reductions over slices of such an array
(``[jnp.sum(abs(c[i])) for i in range(3)]``) is wrong the same way; :func:`compiler_options` turns that
pass off for the diagnostics, spectra, fields, flow statistics and tasks of such a run (the chunk of steps, which
reduces nothing over the state, keeps it: right, and 14% faster at 1024^3). Not covered: an ensemble whose
batched state passes the limit while each member's stays below it, and the jaxdecomp backend's own
stacking of its transforms (both far beyond one GPU's memory at the sizes where they would matter).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

#: complex arrays with at least this many elements on one device are assembled by selection
COMPLEX_LIMIT = 2**30


def is_large(elements_per_device: float, dtype: Any) -> bool:
    """Whether a complex array of this many elements per device is past :data:`COMPLEX_LIMIT`."""
    return jnp.issubdtype(dtype, jnp.complexfloating) and elements_per_device >= COMPLEX_LIMIT


def stack(parts: Sequence[jax.Array], select: bool = False, devices: int = 1) -> jax.Array:
    """``jnp.stack(parts)`` (parts broadcast to one shape), by selection over the component index when
    ``select`` or when the result is complex with :data:`COMPLEX_LIMIT` elements per device or more."""
    shape = jnp.broadcast_shapes(*(jnp.shape(p) for p in parts))
    dtype = jnp.result_type(*parts)
    if not (select or len(parts) * np.prod(shape) / devices >= COMPLEX_LIMIT) or \
            not jnp.issubdtype(dtype, jnp.complexfloating):
        return jnp.stack([jnp.broadcast_to(p, shape) for p in parts])
    index = jax.lax.broadcasted_iota(jnp.int32, (len(parts),) + (1,) * len(shape), 0)
    out = jnp.asarray(parts[-1], dtype)
    for i in range(len(parts) - 2, -1, -1):
        out = jnp.where(index == i, jnp.asarray(parts[i], dtype), out)
    return jnp.broadcast_to(out, (len(parts), *shape))


def concatenate(blocks: Sequence[jax.Array], select: bool = False, devices: int = 1) -> jax.Array:
    """``jnp.concatenate(blocks)`` along the leading axis, by :func:`stack` of their components."""
    return stack([b[i] for b in blocks for i in range(b.shape[0])], select, devices)


def compiler_options(elements_per_device: float, base: dict[str, str] | None = None) -> dict[str, str]:
    """XLA options for the programs of a run whose largest complex array holds ``elements_per_device`` on
    one device: ``base``, plus sibling multi-output fusion turned off past :data:`COMPLEX_LIMIT`."""
    options = dict(base or {})
    if elements_per_device >= COMPLEX_LIMIT:
        passes = [p for p in options.get("xla_disable_hlo_passes", "").split(",") if p]
        options["xla_disable_hlo_passes"] = ",".join([*passes, "multi_output_fusion"])
    return options
