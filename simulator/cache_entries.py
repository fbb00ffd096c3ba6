"""The directory of the persistent cache of compiled programs (:mod:`simulator.cache`): its entries, each
checksummed together with the key it was written for, written atomically, pruned to a bound by last use; a
directory that cannot be written is read and left as it is.

Imports nothing but the standard library (:mod:`simulator.cache` is imported by the FFT package, before JAX).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from pathlib import Path

#: the first bytes of every entry, then the SHA-256 of the key it is written for, then the SHA-256 of that key and
#: the payload together, then the payload (JAX's compressed executable). The format is part of every entry's name
#: too: the entries of an earlier format are never read, and leave with the least recently used.
MAGIC = b"simulator-xla-2\n"
SUFFIX = ".xla"
#: a temporary file this old was left by a process that died while writing: removed when the cache is pruned
STALE_TMP_S = 3600.0
#: a process lists the directory again after this many of its own writes at the latest (other processes' writes
#: are seen then), and sooner where its own writes since the last listing may have passed the bound: a listing
#: costs a stat of every entry, and one per write made a launch's compiles quadratic in the entries (a test
#: suite's cache of thousands of small programs)
RESCAN_PUTS = 64


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


warn = _Warnings()


class ProgramCache:
    """JAX's cache interface (``get``/``put`` of compressed executables by JAX's key, and ``_path``) over a directory:
    checksummed entries named by the key and :func:`build_tag`, written atomically, pruned to a size bound
    by last use (see the module docstring)."""

    def __init__(self, path: Path, max_size: int, tag: str, writable: bool = True):
        self.path = self._path = path
        self.max_size = max_size
        self.tag = tag
        #: False for a read-only directory (one filled once and mounted read-only for a job array or a container):
        #: its entries are loaded, and nothing is written there, not even an entry's time of last use
        self.writable = writable
        #: the bytes the directory held at this process's last listing (None: not listed yet), and the bytes and
        #: entries this process wrote since (:meth:`put` prunes by them, :data:`RESCAN_PUTS`)
        self._listed: int | None = None
        self._written = self._puts = 0

    def _key(self, key: str) -> bytes:
        """What an entry is written for: JAX's ``key`` and this build's tag."""
        return f"{self.tag}:{key}".encode()

    def file(self, key: str) -> Path:
        """The entry of JAX's ``key`` (its program's name kept for people reading the directory)."""
        name = key.split("-")[0][:60]
        return self.path / f"{name}-{hashlib.sha256(MAGIC + self._key(key)).hexdigest()[:40]}{SUFFIX}"

    def get(self, key: str) -> bytes | None:
        """The payload of ``key``'s entry; None where there is none, or it fails its checksum, which binds the
        payload to the key it was written for: an entry copied, synced or renamed onto another program's name is
        ignored (one warning naming it) and the program compiled, as a damaged one is."""
        path = self.file(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            warn.once("read", f"cannot read {path} ({err.strerror}): compiling instead")
            return None
        named, head = len(MAGIC) + 32, len(MAGIC) + 64
        payload = data[head:]
        mine = self._key(key)
        if data[:len(MAGIC)] != MAGIC or hashlib.sha256(mine + payload).digest() != data[named:head]:
            why = ("is another program's entry (copied or renamed onto this name)"
                   if data[:len(MAGIC)] == MAGIC and data[len(MAGIC):named] != hashlib.sha256(mine).digest()
                   else "is damaged or not one of ours")
            warn.once(f"damaged:{path.name}", f"{path} {why}: ignored, compiling again")
            if self.writable:
                _unlink(path)
            return None
        if self.writable:
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
        mine = self._key(key)
        try:
            with open(tmp, "wb") as f:
                f.write(MAGIC + hashlib.sha256(mine).digest() + hashlib.sha256(mine + value).digest() + value)
            os.replace(tmp, path)  # atomic: a reader sees the whole entry or none
        except OSError as err:
            self.writable = False
            try:
                tmp.unlink()
            except OSError:
                pass
            warn.once("write", f"cannot write to {self.path} ({err.strerror}): this launch's further programs "
                                "are compiled, not cached")
            return
        self._written += len(value)
        self._puts += 1
        if self._listed is None or self._puts >= RESCAN_PUTS or self._listed + self._written > self.max_size:
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
        self._listed, self._written, self._puts = total, 0, 0

    def clear(self) -> None:
        for path in self.path.glob(f"*{SUFFIX}"):
            _unlink(path)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def read_only(path: Path) -> str:
    """Why ``path`` cannot be written (the error of a probe file written and removed), or "" where it can. The
    probe is the one honest test: permissions say nothing of a read-only mount, nor of root, which writes anyway."""
    probe = path / f".probe.{os.getpid()}.tmp"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        return err.strerror or type(err).__name__
    return ""
