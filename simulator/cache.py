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

Every entry carries a checksum. An entry that fails it (damaged, truncated, written by anything else) is
ignored with one warning, removed and compiled again; a directory that cannot be made or written, or a
full disk, is one warning and the launch goes on compiling what it cannot load. Entries are written to a
temporary file renamed into place, so processes writing the same entry at once (the processes of one run,
the tasks of a job array on a shared filesystem) leave one whole entry.

Where FFTW's measured plans are kept (:mod:`simulator.fft.local`) is the same root: :func:`root`.

Imports no JAX at module level, and nothing of the package: :func:`enable` imports JAX, when a command
starts its runtime (:func:`simulator.runtime.enable_cache`).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import math
import os
import platform
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

#: environment variable: where compiled programs are kept (a path), or ``off``
ENV = "SIMULATOR_COMPILATION_CACHE"
#: environment variable: the cache's bound in bytes (a K, M or G suffix allowed)
ENV_SIZE = "SIMULATOR_COMPILATION_CACHE_SIZE"
DEFAULT_SIZE = 2 * 1024**3
#: the first bytes of every entry, then the SHA-256 of the payload, then the payload (JAX's compressed
#: executable)
MAGIC = b"simulator-xla-1\n"
SUFFIX = ".xla"
#: a temporary file this old was left by a process that died while writing: removed when the cache is pruned
STALE_TMP_S = 3600.0


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


class _Warnings:
    """Each problem said once per process (a cache that cannot be written is one line, not one per program)."""

    def __init__(self) -> None:
        self.said: set[str] = set()
        self.lock = threading.Lock()

    def once(self, kind: str, message: str) -> None:
        with self.lock:
            if kind in self.said:
                return
            self.said.add(kind)
        logging.getLogger("simulator").warning("compilation cache: %s", message)


_warn = _Warnings()


class ProgramCache:
    """JAX's cache interface (``get``/``put`` of compressed executables by JAX's key, and ``_path``) over a directory:
    checksummed entries named by the key and :func:`build_tag`, written atomically, pruned to a size bound
    by last use (see the module docstring)."""

    def __init__(self, path: Path, max_size: int, tag: str):
        self.path = self._path = path
        self.max_size = max_size
        self.tag = tag
        self.writable = True

    def file(self, key: str) -> Path:
        """The entry of JAX's ``key`` (its program's name kept for people reading the directory)."""
        name = key.split("-")[0][:60]
        return self.path / f"{name}-{hashlib.sha256(f'{self.tag}:{key}'.encode()).hexdigest()[:40]}{SUFFIX}"

    def get(self, key: str) -> bytes | None:
        path = self.file(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            _warn.once("read", f"cannot read {path} ({err.strerror}): compiling instead")
            return None
        head = len(MAGIC) + 32
        payload = data[head:]
        if data[:len(MAGIC)] != MAGIC or hashlib.sha256(payload).digest() != data[len(MAGIC):head]:
            _warn.once(f"damaged:{path.name}", f"{path} is damaged or not one of ours: ignored, compiling again")
            try:
                path.unlink()
            except OSError:
                pass
            return None
        try:
            os.utime(path)  # last use, for pruning
        except OSError:
            pass
        return payload

    def put(self, key: str, value: bytes) -> None:
        if not self.writable:
            return
        path = self.file(key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(MAGIC + hashlib.sha256(value).digest() + value)
            os.replace(tmp, path)  # atomic: a reader sees the whole entry or none
        except OSError as err:
            self.writable = False
            try:
                tmp.unlink()
            except OSError:
                pass
            _warn.once("write", f"cannot write to {self.path} ({err.strerror}): this launch's further programs "
                                "are compiled, not cached")
            return
        self.prune()

    def prune(self) -> None:
        """Remove the least recently used entries until the cache holds at most its bound (and temporary files
        a dead writer left). Other processes may prune at the same time: a file already gone is skipped."""
        entries = []
        now = time.time()
        for path in self.path.iterdir():
            try:
                stat = path.stat()
            except OSError:
                continue
            if path.name.endswith(".tmp"):
                if now - stat.st_mtime > STALE_TMP_S:
                    _unlink(path)
            elif path.suffix == SUFFIX:
                entries.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_size:
                break
            _unlink(path)
            total -= size

    def clear(self) -> None:
        for path in self.path.glob(f"*{SUFFIX}"):
            _unlink(path)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


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
    cannot be made or written is one warning and no cache. (:func:`simulator.runtime.enable_cache` calls it.)"""
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
            probe = path / f".probe.{os.getpid()}.tmp"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as err:
            _warn.once("dir", f"cannot use {path} ({err.strerror}): programs are compiled, not cached")
            status = Status(None, f"{path} is not writable")
            _install(None)
            _state["status"] = status
            return status
        if not hasattr(compilation_cache, "_cache"):  # a JAX whose cache we do not know how to hold
            _warn.once("jax", f"this JAX ({jax.__version__}) has no cache hook the simulator knows: programs are "
                              "compiled, not cached")
            status = Status(None, f"not supported by JAX {jax.__version__}")
            _state["status"] = status
            return status
        cache = ProgramCache(path, bound, build_tag(local_fft))
        _install(cache)
        why = ("runtime.compilation_cache" if setting not in ("", "auto", True)
               else ENV if os.environ.get(ENV, "").strip() else "the default")
        status = Status(path, f"{why}; bound {bound / 1024**3:.3g} GiB")
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
            _warn.once("serialize", f"cannot keep {module_name} ({type(err).__name__}: {err}): compiled, not cached")

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
