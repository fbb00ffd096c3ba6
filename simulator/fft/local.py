"""The local (per-device) FFTs every backend runs: FFTW on CPU through an XLA FFI custom call, or XLA's FFT.

The distributed backends are all-to-alls around local transforms of the shards (the slab's 1D
transform along z and 2D over (x, y), the pencil's 1D transforms, the fused 3D transform on one
device). They call :class:`LocalFFT` instead of ``jnp.fft``; it has NumPy's semantics
(``rfftn``/``irfftn``/``fftn``/``ifftn`` over any ``axes``, normalisation ``"backward"``: forward
unnormalised, inverse divides by the product of the transformed sizes) and two implementations:

* ``fftw``: FFTW 3 (double and float, multi-threaded) called from the compiled program as an XLA FFI
  custom call (simulator/fft/native/fftw_ffi.cc), on the buffers XLA hands over, in XLA's row-major
  layout: no copies and no transposes. A threaded plan's jobs run on XLA's own intra-op threads (FFTW's
  ``threads_set_callback``), not on threads of FFTW's that would compete with them for the cores. CPU
  only: a backend on GPUs resolves to XLA's FFT (cuFFT), and a program built with FFTW lowers for CPU
  only. On CPU it is 2-4x faster than XLA's FFT (DUCC). It also has FFTW's real-to-real DCT-I (REDFT00,
  :meth:`LocalFFT.dct1`), which the Chebyshev transform between plates runs where it is the faster
  (:func:`simulator.fft.walls.direct_dct1`).
* ``xla``: ``jnp.fft``, in pieces past 2^31 elements (:mod:`simulator.fft.large`). Used when the native
  extension is not built (no FFTW headers at install time) or fails to load, when asked for, and by the
  jaxdecomp backend, whose transforms are inside the jaxdecomp package.

Environment (read when a backend is built, see :func:`resolve`):

* ``SIMULATOR_FFT=auto|fftw|xla`` (default ``auto``: fftw where the extension is available);
  ``fftw`` when it is not available is an error, naming why.
* ``SIMULATOR_FFT_THREADS=N``: FFTW threads per transform, at most (default: the cores this process
  may use, or ``runtime.threads`` (XLA's ``PJRT_NPROC``) where fewer, divided by the mesh devices it
  drives, at least 1: virtual CPU devices run their transforms concurrently). A transform gets one
  thread per ``SIMULATOR_FFT_THREAD_GRAIN`` points (default :data:`THREAD_GRAIN`, 2^17), never more
  than N: on smaller ones the threads' start and join cost more than they share
  (:meth:`LocalFFT.threads_for`). A grain of 1 gives every transform N threads.
* ``SIMULATOR_FFTW_PLANNER=estimate|measure|patient`` (default ``measure``): FFTW's planning
  effort. ``measure`` times candidate plans once per transform (about 1-3 s at 128^3, milliseconds
  at test sizes) and runs up to 2x faster than ``estimate`` (a cost model, no timing) at 128^3.
* ``SIMULATOR_FFTW_WISDOM=PATH|off`` (default ``~/.cache/simulator/fftw-wisdom-<FFTW version>``, or
  under ``$XDG_CACHE_HOME``): where measured plans are kept (``PATH.f64``, ``PATH.f32``) and shared
  between processes. Timing makes the choice of plan, and so the round-off, vary from process to
  process; with the shared file every process after the first that measured a transform uses the same
  plan, which keeps restarts bitwise equal to uninterrupted runs. ``off`` (or an unwritable
  directory) loses that for measured plans; ``estimate`` plans need no file to be reproducible.

Plans are made on first use and cached per (transform, shape, axes, dtype, threads, alignment) in the
extension; the custom-call targets are registered with XLA on first use, never at import.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from simulator.errors import ConfigError, RuntimeSetupError
from simulator.fft import large
from simulator.fft.kernels import REBUILD
from simulator.threads import available_cores

ENV_PATH = "SIMULATOR_FFT"
ENV_THREADS = "SIMULATOR_FFT_THREADS"
ENV_GRAIN = "SIMULATOR_FFT_THREAD_GRAIN"
ENV_PLANNER = "SIMULATOR_FFTW_PLANNER"
ENV_WISDOM = "SIMULATOR_FFTW_WISDOM"
PATHS = ("auto", "fftw", "xla")
PLANNERS = ("estimate", "measure", "patient")  # index = the extension's planner attribute

# transform kinds of the extension (fftw_ffi.cc)
_R2C, _C2R, _C2C_FORWARD, _C2C_BACKWARD, _DCT1 = 0, 1, 2, 3, 4

Axes = tuple[int, ...]


# ---- availability ----------------------------------------------------------------------------------


def _fftw_header_found() -> bool:
    """Whether fftw3.h is in a standard include directory (to explain a missing extension)."""
    dirs = ["/usr/include", "/usr/local/include"]
    if os.environ.get("FFTW_DIR"):
        dirs.append(os.path.join(os.environ["FFTW_DIR"], "include"))
    for var in ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH"):
        dirs += [d for d in os.environ.get(var, "").split(os.pathsep) if d]
    return any(Path(d, "fftw3.h").is_file() for d in dirs)


@functools.cache
def native() -> tuple[ModuleType | None, str]:
    """The native extension ``simulator.fft._fftw``, or None and why it is unavailable."""
    if importlib.util.find_spec("simulator.fft._fftw") is None:
        if not _fftw_header_found():
            return None, ("native extension not built: fftw3.h not found (Debian: apt-get install "
                          f"libfftw3-dev, then {REBUILD})")
        return None, f"native extension not built ({REBUILD}, with a C++ compiler, builds it)"
    try:
        from simulator.fft import _fftw
    except ImportError as err:
        return None, f"native extension failed to load: {err}"
    return _fftw, ""


def wisdom_path() -> str:
    """Base path of the FFTW wisdom files shared between processes ('' for none; see the module doc)."""
    module, _ = native()
    setting = os.environ.get(ENV_WISDOM, "").strip()
    if setting == "off" or module is None:
        return ""
    if setting:
        path = Path(setting).expanduser()
    else:
        from simulator.cache import root

        path = root() / f"fftw-wisdom-{module.version()}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ""
    return str(path)


@functools.cache
def _register() -> None:
    """Register the extension's handlers as XLA FFI targets for the CPU platform (once, on first use)."""
    module, _ = native()
    assert module is not None
    module.set_wisdom(wisdom_path())
    for name, capsule in module.handlers().items():
        jax.ffi.register_ffi_target(name, capsule, platform="cpu")


def _env_count(name: str, what: str) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(name, text, f"give a whole number of {what}, at least 1")
    return int(text)


# ---- the local transforms ------------------------------------------------------------------------

#: points per FFTW thread: a transform of fewer than 2 * THREAD_GRAIN points runs on one thread. Measured
#: on the 2-core development machine (2026-11-25, Navier-Stokes rk2 steps, interleaved rounds): at 32^3
#: one thread per transform instead of two made the compact step 1.5x faster (1.95 against 2.95 ms in
#: float64, 1.85 against 3.06 in float32) and the phase-shifted one 1.1x; at 48^3 and 64^3 the grains
#: 2^16, 2^17 and 2^18 were alike, within the rounds' spread; at 128^3 every transform has more than
#: 2^18 points, so nothing changes there. Again once FFTW's jobs ran on XLA's threads (2026-11-25,
#: rk4, three invocations): grain 1 made the 32^3 compact step 1.20x (float64) and 1.34x (float32) slower,
#: 2^15 stayed within 0.97-1.05x of 2^17 from 32^3 to 64^3.
THREAD_GRAIN = 1 << 17


@dataclass(frozen=True)
class LocalFFT:
    """The implementation of one backend's local transforms (hashable: it keys traced stages).

    ``name`` is ``"fftw"`` or ``"xla"``; ``reason`` says why that one; ``threads`` (at most), ``grain``
    (points per thread, :meth:`threads_for`) and ``planner`` configure FFTW. All transforms take and
    return arrays in XLA's row-major layout and accept any number of untransformed (batch) axes around
    the transformed ones.
    """

    name: str
    reason: str
    threads: int = 1
    planner: str = "measure"
    grain: int = THREAD_GRAIN

    def describe(self, platform: str = "cpu") -> str:
        """One line for ``simulator info`` and the run log: which FFT runs the local transforms, and why."""
        if platform != "cpu":
            return f"xla (XLA's FFT on {platform}; the FFTW path is CPU-only)"
        if self.name == "fftw":
            module, _ = native()
            version = module.version().split("-")[1] if module is not None else "?"
            threads = (f"up to {self.threads} threads, one per {self.grain} points" if self.threads > 1
                       else "1 thread")
            return f"fftw (FFTW {version}, {threads}, {self.planner} plans)"
        return f"xla ({self.reason})"

    @property
    def tag(self) -> str:
        """What decides the code of this local FFT's transforms, as a name (letters, digits, ``_``): a
        program's text names each distributed stage after it (:mod:`simulator.fft.slab`)."""
        if self.name != "fftw":
            return self.name
        return f"fftw_t{self.threads}_{self.planner}_g{self.grain}"

    def threads_for(self, points: int) -> int:
        """FFTW threads for a transform of ``points`` points (a shard's, batch axes included): one per
        ``grain`` points, at least 1, at most ``threads``."""
        return max(1, min(self.threads, points // self.grain))

    def rfftn(self, x: jax.Array, axes: Sequence[int]) -> jax.Array:
        """Real-to-complex transform over ``axes``; the last of them keeps ``n // 2 + 1`` entries."""
        axes = _negative(axes, x.ndim)
        xla = functools.partial(large.transform, "rfftn", axes=axes)
        return self._dispatch(functools.partial(_fftw_rfftn, axes=axes, fft=self), xla, x)

    def irfftn(self, k: jax.Array, axes: Sequence[int], n: int) -> jax.Array:
        """Inverse of :meth:`rfftn`: a real array with ``n`` points along the last of ``axes``.

        The half axis is zero-padded or truncated to ``n // 2 + 1`` entries first (NumPy's ``s``).
        """
        axes = _negative(axes, k.ndim)
        xla = functools.partial(large.transform, "irfftn", axes=axes, n=int(n))
        return self._dispatch(functools.partial(_fftw_irfftn, axes=axes, n=int(n), fft=self), xla, k)

    def fftn(self, x: jax.Array, axes: Sequence[int]) -> jax.Array:
        """Complex-to-complex forward transform over ``axes`` (a real input is made complex)."""
        axes = _negative(axes, x.ndim)
        xla = functools.partial(large.transform, "fftn", axes=axes)
        return self._dispatch(functools.partial(_fftw_c2c, axes=axes, inverse=False, fft=self), xla, x)

    def ifftn(self, k: jax.Array, axes: Sequence[int]) -> jax.Array:
        """Complex-to-complex inverse transform over ``axes``, divided by the product of their sizes."""
        axes = _negative(axes, k.ndim)
        xla = functools.partial(large.transform, "ifftn", axes=axes)
        return self._dispatch(functools.partial(_fftw_c2c, axes=axes, inverse=True, fft=self), xla, k)

    def dct1(self, x: jax.Array) -> jax.Array:
        """FFTW's REDFT00 of a real ``x`` ``(..., N)`` over its last axis, N >= 2: ``y_k = x_0 + (-1)^k x_{N-1} + 2
        sum_{j=1}^{N-2} x_j cos(pi j k / (N - 1))`` (scipy's unnormalised DCT-I), real, ``(..., N)``. The FFTW path
        only (:func:`simulator.fft.walls.dct1_of` chooses it, and the even extension's real FFT elsewhere)."""
        if self.name != "fftw":
            raise ValueError(f"the DCT-I runs on the fftw path; this local FFT is {self.name}")
        _register()
        return _dct1(x, (-1,), x.shape[-1], self)

    def _dispatch(self, fftw: Callable[[jax.Array], jax.Array], xla: Callable[[jax.Array], jax.Array],
                  x: jax.Array) -> jax.Array:
        if self.name != "fftw":
            return xla(x)
        _register()
        # FFTW is resolved for CPU devices only (resolve gives XLA's FFT elsewhere), so the program calls it
        # directly: a lax.platform_dependent choice would trace XLA's branch too, in pieces past 2^31 points
        # (large.py), only for XLA to drop it; planning 8192^3 on 4 devices took 5 times as long
        return fftw(x)

    def _call(self, target: str, kind: int | None, x: jax.Array, axes: Axes,
              results: Sequence[jax.ShapeDtypeStruct], aliases: dict[int, int] | None = None):
        attrs = {"axes": np.asarray(axes, np.int64), "nthreads": np.int64(self.threads_for(math.prod(x.shape))),
                 "planner": np.int64(PLANNERS.index(self.planner))}
        if kind is not None:
            attrs["kind"] = np.int64(kind)
        call = jax.ffi.ffi_call(target, tuple(results), vmap_method="broadcast_all", input_output_aliases=aliases)
        return call(x, **attrs)


def _negative(axes: Sequence[int], ndim: int) -> Axes:
    """Axes counted from the end, so they stay right when vmap adds leading axes."""
    out = tuple(int(a) - ndim if int(a) >= 0 else int(a) for a in axes)
    if not out or any(not -ndim <= a < 0 for a in out) or len(set(out)) != len(out):
        raise ValueError(f"bad FFT axes {tuple(axes)} for an array of rank {ndim}")
    return out


def _complex(dtype) -> jnp.dtype:
    return jnp.result_type(dtype, jnp.complex64)


def _like(x: jax.Array, shape: Sequence[int], dtype) -> jax.ShapeDtypeStruct:
    """A result type for the custom call that varies over the same shard_map axes as its operand."""
    t = jax.typeof(x)
    return jax.ShapeDtypeStruct(tuple(shape), dtype, sharding=t.sharding, manual_axis_type=t.manual_axis_type)


# The custom call has no differentiation rule of its own. Each unnormalised core transform below is
# a linear map whose transpose is again a core transform (the rules of jax._src.lax.fft, written for
# unnormalised transforms), so reverse-mode AD works through the FFTW path and runs on FFTW too.


def _r2c_call(x: jax.Array, axes: Axes, n: int, fft: LocalFFT) -> jax.Array:
    out = list(x.shape)
    out[axes[-1]] = n // 2 + 1
    (y,) = fft._call("simulator_fftw", _R2C, x, axes, [_like(x, out, _complex(x.dtype))])
    return y


def _r2c_bwd(axes: Axes, n: int, fft: LocalFFT, _, g: jax.Array) -> tuple[jax.Array]:
    # r2c = (keep the half axis) o c2c o (real -> complex); transposed: zero-pad, c2c, real part
    return (jnp.real(_c2c(_pad_to(g, axes[-1], n), axes, False, fft)),)


def _c2r_call(k: jax.Array, axes: Axes, n: int, fft: LocalFFT) -> jax.Array:
    out = list(k.shape)
    out[axes[-1]] = n
    real = jnp.finfo(k.dtype).dtype
    # FFTW's multi-dimensional c2r destroys its input: it works on a result aliased to the operand
    y, _ = fft._call("simulator_fftw_c2r", None, k, axes,
                     [_like(k, out, real), _like(k, k.shape, k.dtype)], {0: 1})
    return y


def _c2r_bwd(axes: Axes, n: int, fft: LocalFFT, _, t: jax.Array) -> tuple[jax.Array]:
    # each inner entry of the half axis stands for itself and its conjugate partner (weight 2)
    weight = np.full(n // 2 + 1, 2.0)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    shape = [1] * t.ndim
    shape[axes[-1]] = weight.size
    k = _r2c(t, axes, n, fft)
    return (jnp.conj(k * jnp.asarray(weight.reshape(shape), t.dtype)),)


def _c2c_call(x: jax.Array, axes: Axes, inverse: bool, fft: LocalFFT) -> jax.Array:
    kind = _C2C_BACKWARD if inverse else _C2C_FORWARD
    # in place: the result reuses the operand's buffer when the operand is dead after the call (XLA
    # copies it first otherwise), one buffer less between the stages of a distributed transform
    (y,) = fft._call("simulator_fftw", kind, x, axes, [_like(x, x.shape, x.dtype)], {0: 0})
    return y


def _c2c_bwd(axes: Axes, inverse: bool, fft: LocalFFT, _, g: jax.Array) -> tuple[jax.Array]:
    return (_c2c(g, axes, inverse, fft),)  # the DFT matrix is symmetric


def _dct1_call(x: jax.Array, axes: Axes, n: int, fft: LocalFFT) -> jax.Array:
    # in place, as the complex transforms: FFTW's r2r plans preserve their input out of place too
    (y,) = fft._call("simulator_fftw", _DCT1, x, axes, [_like(x, x.shape, x.dtype)], {0: 0})
    return y


def _dct1_bwd(axes: Axes, n: int, fft: LocalFFT, _, g: jax.Array) -> tuple[jax.Array]:
    # the DCT-I's matrix is C diag(e), C symmetric and e = (1, 2, .., 2, 1): its transpose is diag(e) C =
    # diag(e) (C diag(e)) diag(1/e)
    e = jnp.where((jnp.arange(n) == 0) | (jnp.arange(n) == n - 1), 1.0, 2.0).astype(g.dtype)
    return (e * _dct1(g / e, axes, n, fft),)


def _linear(call: Callable[..., jax.Array], transpose: Callable[..., tuple[jax.Array]]) -> Callable[..., jax.Array]:
    """``call(x, *static)``, linear in ``x``, with ``transpose(*static, None, g)`` as its VJP."""
    fn = jax.custom_vjp(call, nondiff_argnums=(1, 2, 3))
    fn.defvjp(lambda x, *static: (call(x, *static), None), transpose)
    return fn


_r2c = _linear(_r2c_call, _r2c_bwd)
_c2r = _linear(_c2r_call, _c2r_bwd)
_c2c = _linear(_c2c_call, _c2c_bwd)
_dct1 = _linear(_dct1_call, _dct1_bwd)


def _pad_to(k: jax.Array, axis: int, n: int) -> jax.Array:
    """``k`` zero-padded or truncated to ``n`` entries along ``axis``."""
    if k.shape[axis] < n:
        pad = [(0, 0)] * k.ndim
        pad[axis] = (0, n - k.shape[axis])
        return jnp.pad(k, pad)
    return lax.slice_in_dim(k, 0, n, axis=axis) if k.shape[axis] > n else k


def _fftw_rfftn(x: jax.Array, axes: Axes, fft: LocalFFT) -> jax.Array:
    return _r2c(x, axes, x.shape[axes[-1]], fft)


def _fftw_irfftn(k: jax.Array, axes: Axes, n: int, fft: LocalFFT) -> jax.Array:
    k = _pad_to(k, axes[-1], n // 2 + 1)
    size = math.prod(k.shape[a] for a in axes[:-1]) * n
    # the 1/N of the inverse is applied to the input, where it fuses with the pad (and with whatever
    # elementwise work produced k) instead of costing a pass over the output
    return _c2r(k * jnp.asarray(1.0 / size, jnp.finfo(k.dtype).dtype), axes, n, fft)


def _fftw_c2c(x: jax.Array, axes: Axes, inverse: bool, fft: LocalFFT) -> jax.Array:
    x = x.astype(_complex(x.dtype))
    if inverse:
        size = math.prod(x.shape[a] for a in axes)
        x = x * jnp.asarray(1.0 / size, jnp.finfo(x.dtype).dtype)
    return _c2c(x, axes, inverse, fft)


# ---- choosing the path ---------------------------------------------------------------------------


def resolve(requested: str | None = None, devices: int = 1, threads: int | None = None,
            planner: str | None = None, platform: str = "cpu", grain: int | None = None) -> LocalFFT:
    """The local FFT for a backend driving ``devices`` devices of this process, on ``platform``.

    Off CPU (GPUs) it is XLA's FFT (cuFFT), and the FFTW extension is never loaded: not even looked for.

    ``requested`` (default: ``$SIMULATOR_FFT``, else ``auto``), ``threads`` (default:
    ``$SIMULATOR_FFT_THREADS``, else cores / devices), ``grain`` (default ``$SIMULATOR_FFT_THREAD_GRAIN``,
    else :data:`THREAD_GRAIN`) and ``planner`` (default:
    ``$SIMULATOR_FFTW_PLANNER``, else ``measure``). Raises RuntimeSetupError when ``fftw`` is asked
    for and the extension is unavailable, ConfigError for a value that is not allowed.
    """
    source = "argument"
    if requested is None:
        requested, source = os.environ.get(ENV_PATH, "").strip() or "auto", ENV_PATH
    if requested not in PATHS:
        raise ConfigError(ENV_PATH, requested, f"expected one of {', '.join(PATHS)}")
    if platform != "cpu":
        if requested == "fftw":
            raise RuntimeSetupError(f"{ENV_PATH}=fftw on {platform}: the FFTW path is CPU-only (use auto or xla)")
        return LocalFFT("xla", f"XLA's FFT on {platform}; the FFTW path is CPU-only")
    if planner is None:
        planner = os.environ.get(ENV_PLANNER, "").strip() or "measure"
    if planner not in PLANNERS:
        raise ConfigError(ENV_PLANNER, planner, f"expected one of {', '.join(PLANNERS)}")
    if requested == "xla":
        why = f"{ENV_PATH}=xla" if source == ENV_PATH else "asked for"
        return LocalFFT("xla", why)
    module, why_not = native()
    if module is None:
        if requested == "fftw":
            asked = f"{ENV_PATH}=fftw" if source == ENV_PATH else "local_fft='fftw'"
            raise RuntimeSetupError(f"{asked} but the FFTW path is unavailable: {why_not}")
        return LocalFFT("xla", why_not)
    if threads is None:
        threads = _env_count(ENV_THREADS, "threads") or max(1, available_cores() // max(1, devices))
    if grain is None:
        grain = _env_count(ENV_GRAIN, "points per thread") or THREAD_GRAIN
    return LocalFFT("fftw", "native extension", int(threads), planner, int(grain))
