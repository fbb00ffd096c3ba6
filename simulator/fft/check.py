"""Checking a distributed FFT against NumPy without gathering it, and reading its compiled HLO.

Used by ``simulator check`` (a self-check on whatever devices and processes a job has), by the test
suite and by the benchmark. The reference is computed with NumPy on the host from the same seeded
input; each process compares only the shards it holds, and the errors are reduced over processes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

from simulator.fft.base import FFTBackend, complex_dtype

_COLLECTIVES = {
    "all-to-all": r"\ball-to-all(?:-start)?\(",
    "all-gather": r"\ball-gather(?:-start)?\(",
    "all-reduce": r"\ball-reduce(?:-start)?\(",
    "collective-permute": r"\bcollective-permute(?:-start)?\(",
}
_SHAPE = re.compile(r"\b(?:f16|bf16|f32|f64|c64|c128|s32|s64|u32|pred)\[([0-9,]*)\]")


def host_field(shape: tuple[int, ...], real: bool, seed: int = 0) -> np.ndarray:
    """A seeded random float64/complex128 field on the host, shape ``(*batch, Nx, Ny, Nz)``.

    Real fields have their z-Nyquist content removed, so they survive an rfft round trip exactly
    (the project's half spectrum drops that plane; see simulator.fft.base).
    """
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if not real:
        return x + 1j * rng.standard_normal(shape)
    k = np.fft.rfftn(x, axes=(-3, -2, -1))
    k[..., -1] = 0.0
    return np.fft.irfftn(k, s=shape[-3:], axes=(-3, -2, -1))


def distribute(host: np.ndarray, sharding: jax.sharding.Sharding, dtype) -> jax.Array:
    """A process-spanning array from a host array, each process filling only its own shards."""
    return jax.make_array_from_callback(host.shape, sharding, lambda idx: host[idx].astype(dtype), dtype=dtype)


def max_relative_error(arr: jax.Array, ref: np.ndarray) -> float:
    """max |arr - ref| / max |ref| over every shard of ``arr``, reduced over all processes."""
    local = 0.0
    for shard in arr.addressable_shards:
        diff = np.abs(np.asarray(shard.data) - ref[shard.index])
        local = max(local, float(diff.max(initial=0.0)))
    worst = multihost_utils.process_allgather(np.array(local), tiled=False)
    return float(np.max(worst)) / float(np.abs(ref).max())


def collective_counts(hlo_text: str) -> dict[str, int]:
    """Number of each collective in a compiled HLO module's text."""
    return {name: len(re.findall(pattern, hlo_text)) for name, pattern in _COLLECTIVES.items()}


def largest_buffer(hlo_text: str) -> int:
    """Element count of the largest array shape that appears in the compiled (per-device) HLO."""
    sizes = [int(np.prod([int(d) for d in dims.split(",") if d])) for dims in _SHAPE.findall(hlo_text)]
    return max(sizes, default=0)


def kept_modes_field(fft: FFTBackend, x: np.ndarray) -> np.ndarray:
    """``x`` with only the modes of ``fft``'s compact spectrum left: what a compact round trip returns."""
    k = np.fft.rfftn(x, axes=(-3, -2, -1))
    # mode numbers are NumPy's signed indices into the rfftn axes (negative ones count from the end)
    keep = (Ellipsis, *np.ix_(*(fft.mode_numbers(a, True).astype(np.int64) for a in range(3))))
    kept = np.zeros_like(k)
    kept[keep] = k[keep]
    return np.fft.irfftn(kept, s=x.shape[-3:], axes=(-3, -2, -1))


@dataclass(frozen=True)
class CheckResult:
    """One transform checked: errors against NumPy and the collectives it compiles to."""

    backend: str
    mesh: tuple[int, ...]
    kind: str
    forward_error: float
    roundtrip_error: float
    forward_collectives: dict[str, int]
    inverse_collectives: dict[str, int]
    tolerance: float

    @property
    def ok(self) -> bool:
        return self.forward_error <= self.tolerance and self.roundtrip_error <= self.tolerance


def tolerance(dtype) -> float:
    """The largest error :func:`check_transform` passes, relative to the largest value of the reference:
    1e-12 in float64; in float32, 1e-5, a few hundred float32 ulps, which covers the O(eps * log2 N)
    growth of FFT round-off at the sizes the check uses."""
    return 1e-12 if jnp.dtype(dtype) == jnp.float64 else 1e-5


def check_transform(fft: FFTBackend, real: bool, dtype, batch: int = 3, seed: int = 0) -> CheckResult:
    """Forward against numpy.fft and the inverse round trip for one backend and transform kind (a
    backend built ``compact`` checks its compact spectrum, whose round trip keeps only the kept modes),
    each passing below :func:`tolerance`.
    """
    shape = (batch, *fft.shape) if batch else tuple(fft.shape)
    x = host_field(shape, real, seed)
    in_dtype = dtype if real else complex_dtype(dtype)
    xs = distribute(x, fft.real_sharding(len(shape) - 3), in_dtype)
    fwd = jax.jit(fft.rfft if real else fft.fft).lower(xs).compile()
    k = fwd(xs)
    inv = jax.jit(fft.irfft if real else fft.ifft).lower(k).compile()
    back = inv(k)
    ref = fft.reference_spectrum(x, real)
    kept = x if not (real and fft.compact is not None) else kept_modes_field(fft, x)
    return CheckResult(
        backend=fft.name,
        mesh=tuple(fft.mesh.devices.shape),
        kind=("compact" if fft.compact is not None else "r2c") if real else "c2c",
        forward_error=max_relative_error(k, ref),
        roundtrip_error=max_relative_error(back, kept),
        forward_collectives=collective_counts(fwd.as_text()),
        inverse_collectives=collective_counts(inv.as_text()),
        tolerance=tolerance(dtype),
    )
