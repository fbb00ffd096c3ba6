"""Which implementation runs the particles' kernels (the windows' gather and scatter, :mod:`simulator.fft.window`;
the rows a hand-over moves, :mod:`simulator.fft.owned`), and on how many threads.

``native``: the extension ``simulator.fft._particles`` (simulator/fft/native/particles_ffi.cc), XLA FFI custom calls
on CPU, built with FFTW's extension by setup.py (it needs no library; without a C++ compiler it is not built). An
extension built from older source, lacking a handler this code calls, is not used (it says how to rebuild).
``xla``: XLA's own operations, on every platform.

Environment: ``SIMULATOR_PARTICLES=auto|native|xla`` (default ``auto``: native on CPU where the extension loads),
read when a program is traced.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from types import ModuleType

from simulator.errors import ConfigError

ENV_PATH = "SIMULATOR_PARTICLES"
PATHS = ("auto", "native", "xla")

#: the native extension's handlers this code calls (an extension built from older source lacks some: not used)
HANDLERS = ("simulator_window_gather", "simulator_window_scatter", "simulator_leavers", "simulator_first",
            "simulator_take_rows", "simulator_put_rows")
#: points per thread of a native window: fewer points than twice this run on one thread
THREAD_GRAIN = 1 << 14


#: how to build the native extensions after the fact: a plain ``pip install`` of the version installed does
#: nothing ("Requirement already satisfied"), so the reinstall is forced, its dependencies left as they are
REBUILD = "bash scripts/setup.sh in a checkout, or pip install --force-reinstall --no-deps of the package again"


@functools.cache
def native() -> tuple[ModuleType | None, str]:
    """The native extension ``simulator.fft._particles``, or None and why it is unavailable."""
    if importlib.util.find_spec("simulator.fft._particles") is None:
        return None, f"native extension not built ({REBUILD}, with a C++ compiler, builds it)"
    try:
        from simulator.fft import _particles
    except ImportError as err:
        return None, f"native extension failed to load: {err}"
    missing = sorted(set(HANDLERS) - set(_particles.handlers()))
    if missing:
        return None, (f"native extension older than this code (no {', '.join(missing)}): bash scripts/setup.sh in a "
                      "checkout, or pip install again, rebuilds it")
    import jax

    for name, capsule in _particles.handlers().items():
        jax.ffi.register_ffi_target(name, capsule, platform="cpu")
    return _particles, ""


def implementation(platform: str) -> str:
    """``native`` or ``xla``: the particles' kernels' implementation on ``platform`` (see the module docstring).
    ``SIMULATOR_PARTICLES=native`` where the extension cannot serve is a one-line ConfigError saying why (not
    XLA's path in its stead, 5-10x slower on CPU)."""
    return _chosen(platform)[0]


def describe(platform: str) -> str:
    """One line for ``simulator info``: the implementation on ``platform`` and, for XLA's, why not the native one."""
    path, why = _chosen(platform)
    return path if not why else f"{path} ({why})"


def _chosen(platform: str) -> tuple[str, str]:
    requested = os.environ.get(ENV_PATH, "").strip() or "auto"
    if requested not in PATHS:
        raise ConfigError(ENV_PATH, requested, f"expected one of {', '.join(PATHS)}")
    if requested == "xla":
        return "xla", f"{ENV_PATH}=xla"
    if platform != "cpu":
        if requested == "native":
            raise ConfigError(ENV_PATH, requested, f"the native kernels run on CPU only, not {platform}: "
                              "leave it unset (auto) or xla")
        return "xla", f"the native kernels run on CPU only; this is {platform}"
    module, why = native()
    if module is None:
        if requested == "native":
            raise ConfigError(ENV_PATH, requested, f"{why}; or leave it unset (auto) to run XLA's instead")
        return "xla", why
    return "native", ""


def threads_for(points: int, devices: int) -> int:
    """Threads of one native call on ``points`` points, one of ``devices`` devices of this process running
    theirs at the same time: one per :data:`THREAD_GRAIN` points, at most the cores per device."""
    from simulator.threads import available_cores

    return max(1, min(available_cores() // max(1, devices), points // THREAD_GRAIN))
