"""``<run>/.lock``: the lock a run holds on its directory while it may change anything there (no JAX).

Taking it is atomic and telling a dead owner from a live one is safe; see :class:`RunLock`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import socket
import time
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError
from simulator.log import get_logger
from simulator.output.hdf5 import OutputWriteError, describe_os_error
from simulator.run.rundir import FULL, LOCK_FILE, read_status


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot; Linux), to tell it from a later one with its pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    # a process killed but not yet waited for by its parent (a run started from Python and killed) still answers
    # kill(0) until reaped; it holds nothing (its flock was dropped at exit)
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True  # no /proc (not Linux): as before


class RunLock:
    """``<run>/.lock``, held by process 0 while a run changes anything in its directory.

    Taking it is atomic: the owner's record (pid, host, boot, process start time, Slurm job) is written
    to a private file, ``flock``-ed, and hard-linked to ``.lock`` (which fails if one exists), so a lock
    is never visible empty or half written. The owner keeps the ``flock`` for its lifetime; the kernel
    drops it when the process dies, ``kill -9`` included.

    An existing lock is *stale* only when its owner is provably dead: its ``flock`` is free and either
    it ran on this host and its process is gone (or the pid now belongs to a later process, or the
    host has rebooted since), or it is an earlier allocation of this same Slurm job (requeued). A stale
    lock is taken over in place while holding its ``flock``, so two runs cannot both take it. Anything
    else, an unreadable lock included, is a live run: the new one is refused.
    """

    def __init__(self, run_dir: Path):
        self.path = run_dir / LOCK_FILE
        self.fd: int | None = None
        self.created_dir = False
        self.replaced: dict[str, Any] | None = None

    @staticmethod
    def record() -> dict[str, Any]:
        pid = os.getpid()
        return {"pid": pid, "host": socket.gethostname(), "started": time.time(), "boot_id": _boot_id(),
                "process_start": _process_start(pid), "slurm_job_id": os.environ.get("SLURM_JOB_ID", ""),
                "slurm_restart_count": os.environ.get("SLURM_RESTART_COUNT", "")}

    def acquire(self) -> None:
        """Take the lock, creating the run directory if needed. ConfigError (exit 2) when a live run
        holds it or the directory cannot be made; OutputWriteError (exit 1) when the disk is full."""
        directory = self.path.parent
        if not directory.exists():
            try:
                directory.mkdir(parents=True)
                self.created_dir = True
            except FileExistsError:
                pass
            except OSError as err:
                if err.errno in FULL:
                    raise OutputWriteError(f"creating {directory} failed: {describe_os_error(err)}") from err
                raise ConfigError("--out", str(directory), "choose a writable location",
                                  f"cannot be created ({err.strerror})") from None
        text = json.dumps(self.record()).encode()
        try:
            for _ in range(10):
                if self._create(text):
                    return
                outcome, owner = self._take_over(text)
                if outcome == "taken":
                    self.replaced = owner
                    get_logger().warning("took over the stale lock %s of a run that no longer runs (pid %s on %s)",
                                         self.path, (owner or {}).get("pid"), (owner or {}).get("host"))
                    return
                if outcome == "live":
                    break
            self._refuse()
        except BaseException:
            self._remove_created_dir()
            raise

    def _create(self, text: bytes) -> bool:
        """Create ``.lock`` holding ``text`` at once (a private file, flock-ed, then hard-linked); False
        if a lock exists."""
        tmp = self.path.with_name(f"{LOCK_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
        except OSError as err:
            self._failed(err)
        keep = False
        try:
            _flock(fd)
            _write_all(fd, text)
            os.fsync(fd)
            try:
                os.link(tmp, self.path)
                keep = True
            except FileExistsError:
                pass
            except OSError as err:
                if err.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV):
                    raise
                return self._create_exclusive(text)  # no hard links on this file system
        except OSError as err:
            self._failed(err)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
            if keep:
                self.fd = fd
            else:
                os.close(fd)
        return keep

    def _create_exclusive(self, text: bytes) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
        except FileExistsError:
            return False
        self.fd = fd
        _flock(fd)
        _write_all(fd, text)
        return True

    def _failed(self, err: OSError) -> None:
        if err.errno in FULL:
            raise OutputWriteError(f"writing {self.path} failed: {describe_os_error(err)}") from err
        raise ConfigError("--out", str(self.path.parent), "choose a directory this user can write to",
                          f"cannot be written ({err.strerror})") from None

    def _take_over(self, text: bytes) -> tuple[str, dict[str, Any] | None]:
        """("taken", old owner) after taking over a stale lock in place; ("live", owner) when its owner
        may live; ("retry", None) when the lock went away or changed meanwhile."""
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return "retry", None
        except IsADirectoryError:  # not the run directory's fault: name the lock file
            raise ConfigError("lock file", str(self.path), "remove it (a run's lock is a plain file)",
                              "is a directory") from None
        except OSError as err:
            self._failed(err)
        taken = False
        try:
            free = _flock(fd)
            owner = _parse(_read_all(fd))
            if free is False or owner is None or not _stale(owner):
                return "live", owner
            if os.stat(self.path).st_ino != os.fstat(fd).st_ino:
                return "retry", None  # released and taken by another run between our open and our flock
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            _write_all(fd, text)
            os.fsync(fd)
            taken = True
            return "taken", owner
        except FileNotFoundError:
            return "retry", None
        except OSError as err:
            self._failed(err)
        finally:
            if taken:
                self.fd = fd
            else:
                os.close(fd)
        return "retry", None

    def _refuse(self) -> None:
        try:
            owner = _parse(self.path.read_bytes())
        except OSError:
            owner = None
        if owner is None:
            raise ConfigError("--out", str(self.path.parent), f"if no run is writing there, remove {self.path}",
                              "holds a lock that names no owner")
        raise ConfigError("--out", str(self.path.parent), "wait for that run to end, or remove the .lock file if it "
                          "is dead", f"is in use by a running process (pid {owner.get('pid')} on "
                          f"{owner.get('host')})")

    def _remove_created_dir(self) -> None:
        if self.created_dir:
            with contextlib.suppress(OSError):
                self.path.parent.rmdir()  # only if still empty
            self.created_dir = False

    def release(self) -> None:
        """Give the lock back (remove ``.lock`` if it is still ours); a directory this lock created and
        nothing was written into is removed too."""
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == os.fstat(self.fd).st_ino:
                self.path.unlink()
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = None
        self._remove_created_dir()

    @property
    def held(self) -> bool:
        return self.fd is not None


def _flock(fd: int) -> bool | None:
    """Try an exclusive ``flock`` without waiting: True taken, False held by another process, None
    unsupported by this file system."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    except OSError as err:
        if err.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL, errno.ENOSYS):
            return None
        raise


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _parse(data: bytes) -> dict[str, Any] | None:
    try:
        owner = json.loads(data)
    except ValueError:
        return None
    return owner if isinstance(owner, dict) and isinstance(owner.get("pid"), int) else None


def owner_gone(run_dir: Path) -> bool:
    """Whether no process holds ``run_dir`` any more: no ``.lock``, or one whose owner is provably dead (it
    ran on this host and its process is gone). Read only, without ``flock``: a reader must never hold the lock
    a starting run is taking over. False where the owner may live (another host, an unreadable lock)."""
    try:
        owner = _parse((run_dir / LOCK_FILE).read_bytes())
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return owner is not None and _stale(owner)


def state_now(run_dir: Path, state: str | None) -> str | None:
    """A run's recorded ``state``, but ``stopped`` where it is ``running`` and :func:`owner_gone`: killed without a
    word (``kill -9``, an out-of-memory kill, a lost node), it never wrote its end."""
    if state != "running" or not owner_gone(run_dir):
        return state
    state = (read_status(run_dir) or {}).get("state")  # a run writes its last status before it gives the lock back
    return "stopped" if state == "running" else state


def _stale(owner: dict[str, Any]) -> bool:
    """Whether the lock's owner is provably dead (its flock being free already)."""
    me = RunLock.record()
    job = owner.get("slurm_job_id")
    if job and job == me["slurm_job_id"]:
        with contextlib.suppress(TypeError, ValueError):
            if int(owner.get("slurm_restart_count") or 0) < int(me["slurm_restart_count"] or 0):
                return True  # an earlier allocation of this job: Slurm never runs two at once
    if owner.get("host") != me["host"]:
        return False  # another host: its processes cannot be seen from here
    if owner.get("boot_id") and me["boot_id"] and owner["boot_id"] != me["boot_id"]:
        return True  # this host has rebooted since
    if not _alive(owner["pid"]):
        return True
    started, now = owner.get("process_start"), _process_start(owner["pid"])
    return started is not None and now is not None and now != started  # the pid now names a later process
