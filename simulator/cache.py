"""The persistent cache of compiled programs: every program a launch compiles is kept on disk, and every later
launch of the same structure (a second run, a restart, a sweep point, a job-array task, a test) loads it.

Where it lives (:func:`location`): ``runtime.compilation_cache`` in the config, when it is a path or ``off``;
otherwise the environment variable ``SIMULATOR_COMPILATION_CACHE`` (a path, or ``off``); otherwise
``$XDG_CACHE_HOME/simulator/xla`` (``~/.cache/simulator/xla``). ``SIMULATOR_COMPILATION_CACHE_SIZE``
bounds it (bytes, or with a K, M or G suffix; default 2G): past the bound the least recently used programs
are removed.

What keys a program (it is loaded only where every part is equal):

* JAX's key: the program's StableHLO text, jaxlib's version, the XLA flags (``XLA_FLAGS``), the compile
  options (the devices it is laid over among them) and the platform's version and topology. The slab
  backend's stages are ``custom_partitioning`` callbacks whose program text holds a per-process handle;
  that handle is left out of the key (``jax_remove_custom_partitioning_ptr_from_cache_key``), and what the
  callbacks produce is named in the text instead (:mod:`simulator.fft.slab` names each stage after its
  local FFT: FFTW or XLA's, threads, planner).
* this build's tag (:func:`build_tag`): the versions of jax, jaxlib and jaxdecomp, the FFTW library the
  native extension runs, the source of :mod:`simulator.fft` and the extension itself (the code the
  callbacks run, which no program text shows), and the CPU (XLA compiles CPU programs for this CPU's
  instruction set).

Every entry carries a checksum of its payload together with the key it was written for
(:mod:`simulator.cache_entries`). An entry that fails it (damaged, truncated, written by anything else, or a
whole entry copied, synced or renamed onto another program's name) is ignored with one warning, removed and
compiled again. A directory that cannot be made, or a full disk, is one warning and the launch goes on
compiling what it cannot load. A directory that cannot be written (filled once and mounted read-only for a
job array or a container) is one warning and is read: its programs are loaded, the others compiled and kept
nowhere, and nothing in it changes. Entries are written to a temporary file renamed into place, so processes
writing the same entry at once (the processes of one run, the tasks of a job array on a shared filesystem)
leave one whole entry.

Where FFTW's measured plans are kept (:mod:`simulator.fft.local`) is the same root: :func:`root`.

Imports no JAX at module level, and nothing of the package but :mod:`simulator.cache_entries` (the directory's
entries, standard library alone): :func:`enable` imports JAX, when a command starts its runtime
(:func:`simulator.runtime.enable_cache`).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
import os
import platform
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from simulator.cache_entries import SUFFIX, ProgramCache, read_only, warn

__all__ = ["ENV", "ENV_SIZE", "SUFFIX", "ProgramCache", "Status", "build_tag", "enable", "hold_writes", "location",
           "root", "size_bound", "status", "write_held"]

#: environment variable: where compiled programs are kept (a path), or ``off``
ENV = "SIMULATOR_COMPILATION_CACHE"
#: environment variable: the cache's bound in bytes (a K, M or G suffix allowed)
ENV_SIZE = "SIMULATOR_COMPILATION_CACHE_SIZE"
DEFAULT_SIZE = 2 * 1024**3


def root() -> Path:
    """The simulator's cache root: ``$XDG_CACHE_HOME/simulator``, else ``~/.cache/simulator``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "simulator"


def location(setting: str | bool = "auto") -> Path | None:
    """The directory of compiled programs for the config setting ``runtime.compilation_cache`` (``auto`` or
    true: the environment variable, else :func:`root`/xla); None where it is ``off`` (or false)."""
    setting = {True: "auto", False: "off"}.get(setting, setting) if isinstance(setting, bool) else setting
    chosen = setting if setting not in ("", "auto") else os.environ.get(ENV, "").strip() or "auto"
    if chosen == "off":
        return None
    return root() / "xla" if chosen == "auto" else Path(chosen).expanduser()


def size_bound() -> int:
    """The cache's bound in bytes from ``SIMULATOR_COMPILATION_CACHE_SIZE`` (:data:`DEFAULT_SIZE` when unset).

    Raises :class:`simulator.errors.ConfigError` (a ValueError) naming the variable for a value that is not a
    positive size (``0``, ``nan``, ``abc``) or not a finite one (``inf``, ``1e400``, ``infG``: no count of bytes)."""
    text = os.environ.get(ENV_SIZE, "").strip()
    if not text:
        return DEFAULT_SIZE
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1].upper(), 1)
    try:
        value = float(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        value = -1.0
    if value > 0 and not math.isinf(value):
        return int(value)
    from simulator.errors import ConfigError

    raise ConfigError(ENV_SIZE, text, "give bytes, or a number with a K, M or G suffix, such as 500M or 2G",
                      "is not a finite size" if value > 0 else "is not a positive size")


@functools.cache
def build_tag(local_fft: str = "") -> str:
    """A digest of what decides a program but is not in its text: versions, the FFT package's source and
    native extension, ``local_fft`` (the FFTW library the extension runs: :func:`simulator.runtime.enable_cache`
    says), the CPU (see the module docstring)."""
    digest = hashlib.sha256()
    for package in ("jax", "jaxlib", "jaxdecomp"):
        try:
            digest.update(f"{package}={metadata.version(package)};".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{package}=none;".encode())
    fft = Path(__file__).parent / "fft"
    for path in sorted(p for p in fft.rglob("*") if p.is_file() and p.suffix in (".py", ".so", ".cc", ".h")):
        digest.update(str(path.relative_to(fft)).encode())
        digest.update(path.read_bytes())
    digest.update(f"{local_fft};".encode())
    digest.update(_cpu().encode())
    return digest.hexdigest()[:16]


def _cpu() -> str:
    """This CPU: its architecture and (Linux) model and instruction-set flags."""
    text = platform.machine()
    try:
        info = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return text
    for line in info.splitlines():
        if line.split(":")[0].strip() in ("model name", "flags", "Features"):
            text += "|" + line.split(":", 1)[1].strip()
        if line.startswith("flags") or line.startswith("Features"):
            break  # the first processor's: every core of a node has the same
    return text


@dataclass(frozen=True)
class Status:
    """The cache a process uses: its directory (None: none) and why (one line for the run log)."""

    path: Path | None
    why: str

    def describe(self) -> str:
        return f"compilation cache: {self.path} ({self.why})" if self.path else f"compilation cache: off ({self.why})"


_state: dict[str, Any] = {"status": None}
_state_lock = threading.Lock()


def enable(setting: str | bool = "auto", local_fft: str = "") -> Status:
    """Use the cache ``setting`` names (``runtime.compilation_cache``: ``auto``, ``off`` or a path; see
    :func:`location`) for every program this process compiles from now on; ``local_fft`` goes into the
    :func:`build_tag`. Idempotent; a second call with another setting switches to it. A directory that
    cannot be made is one warning and no cache; one that cannot be written is one warning and is only read.
    (:func:`simulator.runtime.enable_cache` calls it.)"""
    import jax
    from jax._src import compilation_cache

    with _state_lock:
        path = location(setting)
        current = _state["status"]
        if current is not None and current.path == path:
            return current
        if path is None:
            status = Status(None, f"{ENV}=off" if setting in ("", "auto", True) else "runtime.compilation_cache = off")
            _install(None)
            _state["status"] = status
            return status
        bound = size_bound()
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            warn.once("dir", f"cannot use {path} ({err.strerror}): programs are compiled, not cached")
            status = Status(None, f"{path} cannot be made")
            _install(None)
            _state["status"] = status
            return status
        unwritable = read_only(path)
        if unwritable:
            warn.once("dir", f"{path} cannot be written ({unwritable}): its programs are loaded, and those it lacks "
                             "are compiled and not kept")
        if not hasattr(compilation_cache, "_cache"):  # a JAX whose cache we do not know how to hold
            warn.once("jax", f"this JAX ({jax.__version__}) has no cache hook the simulator knows: programs are "
                              "compiled, not cached")
            status = Status(None, f"not supported by JAX {jax.__version__}")
            _state["status"] = status
            return status
        cache = ProgramCache(path, bound, build_tag(local_fft), writable=not unwritable)
        _install(cache)
        why = ("runtime.compilation_cache" if setting not in ("", "auto", True)
               else ENV if os.environ.get(ENV, "").strip() else "the default")
        status = Status(path, f"{why}; read-only" if unwritable else f"{why}; bound {bound / 1024**3:.3g} GiB")
        _state["status"] = status
        return status


def _install(cache: Any) -> None:
    """Make ``cache`` (None: none) the persistent cache JAX reads and writes, for every program however quick
    to compile (this CPU's small output programs compile in tenths of a second, and load in milliseconds)."""
    import jax
    from jax._src import compilation_cache

    compilation_cache.reset_cache()
    if cache is None:
        jax.config.update("jax_enable_compilation_cache", False)
        return
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(cache.path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_remove_custom_partitioning_ptr_from_cache_key", True)
    # JAX would also point XLA's GPU autotuning cache into the directory, and that path is then part of every
    # key: a copy of the cache (to a node's local disk) would match nothing. The programs hold their tuning.
    jax.config.update("jax_persistent_cache_enable_xla_caches", "none")
    compilation_cache._cache = cache  # JAX's module-level cache object: the hook set_cache_dir fills with its own
    _every_process_writes()


@functools.cache
def _every_process_writes() -> None:
    """Every process writes the programs it compiles (JAX: process 0 alone): a CPU's key differs per process, so
    process 1 compiled every program at every launch; a GPU's is one for all (JAX's rule). Atomic (:meth:`put`)."""
    from jax._src import compilation_cache, compiler, distributed

    write = getattr(compiler, "_cache_write", None)
    expected = ["cache_key", "compile_time_secs", "module_name", "backend", "executable", "host_callbacks"]
    if write is None or list(inspect.signature(write).parameters) != expected:  # not the hook written for here
        return

    def now(key: str, seconds: float, module_name: str, backend: Any, executable: Any, callbacks: Any) -> None:
        if distributed.global_state.process_id == 0 or backend.platform == "gpu" or callbacks:
            return write(key, seconds, module_name, backend, executable, callbacks)
        try:
            compilation_cache.put_executable_and_time(key, module_name, executable, backend, int(seconds))
        except Exception as err:  # as JAX's own write: a program that cannot be kept is compiled next time
            warn.once("serialize", f"cannot keep {module_name} ({type(err).__name__}: {err}): compiled, not cached")

    def cache_write(*args: Any) -> None:
        with _held_lock:
            if _held["writes"] is not None:
                _held["writes"].append(functools.partial(now, *args))
                return
        now(*args)

    compiler._cache_write = cache_write


#: the writes held (:func:`hold_writes`), or None while programs are written as they are compiled
_held: dict[str, list[Callable[[], None]] | None] = {"writes": None}
_held_lock = threading.Lock()


def hold_writes() -> bool:
    """Hold the programs compiled from now on, on any thread, until :func:`write_held`; whether this call began
    the holding (False: they were held already, and whoever began it writes them). A run compiles its programs
    on worker threads while its main thread builds the initial state (:mod:`simulator.run.programs`), and XLA's
    serialisation of a CPU program for the cache (``executable.serialize()``) once crashed a process with a
    segfault beside that thread's device put: held, they are serialised by the thread that waited for them all."""
    with _held_lock:
        if _held["writes"] is None:
            _held["writes"] = []
            return True
        return False


def write_held() -> None:
    """Write, on this thread, the programs held since :func:`hold_writes`, and hold no more."""
    with _held_lock:
        writes, _held["writes"] = _held["writes"] or [], None
    for write in writes:
        write()


def status() -> Status | None:
    """The cache this process uses (None before :func:`enable`)."""
    return _state["status"]
