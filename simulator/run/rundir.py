"""The run directory: where it is, whether a run may start there, its lock, its status, resuming.

Nothing here imports JAX: the CLI decides all of this before JAX starts, so a refused run changes
nothing and costs nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any

import yaml

from simulator.config import Config, keys_of
from simulator.errors import ConfigError
from simulator.log import get_logger
from simulator.output import checkpoints
from simulator.output.hdf5 import OutputWriteError, describe_os_error

#: what a run writes into its directory; --overwrite removes exactly these
RUN_FILES = ("config.yaml", "status.json", "run.log", "timeseries.csv", "spectra.h5", "segments", "snapshots",
             "checkpoints")
#: ``<run>/status.json``: state (running, interrupted, finished, failed), step, time, exit code, host, time stamp
STATUS_FILE = "status.json"


def output_dir(cfg: Config, override: str | None) -> Path:
    return Path(override or cfg.output.dir or Path("outputs") / cfg.name)


def prepare_output(path: Path, overwrite: bool, restart: str | None = None) -> None:
    """Check the run directory before anything starts: a new run needs a new or empty directory (or
    ``overwrite``, which removes the previous run's files); a restart needs the existing run."""
    if restart is not None:
        if overwrite:
            raise ConfigError("--overwrite", True, "use --restart to continue a run or --overwrite to replace it",
                              "cannot be combined with --restart")
        target = path if restart == "latest" else Path(restart)
        if not target.exists():
            raise ConfigError("--restart", str(target), "give a run directory or a checkpoint file that exists",
                              "does not exist")
        return
    if path.exists() and not path.is_dir():
        raise ConfigError("--out", str(path), "give a directory", "is a file")
    if path.exists() and any(path.iterdir()):
        if not overwrite:
            raise ConfigError("--out", str(path), "choose a new directory, pass --restart to continue it, or "
                              "--overwrite to replace it", "already holds a run")
        for name in RUN_FILES:
            target = path / name
            if target.is_dir():
                shutil.rmtree(target, ignore_errors=True)
            else:
                target.unlink(missing_ok=True)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError("--out", str(path), "choose a writable location", f"cannot be created ({err.strerror})") from None


def resume_target(cfg: Config, path: Path) -> str | None:
    """What ``--resume`` does in ``path``: "latest" when it holds a complete checkpoint, None (start
    from t = 0) when it holds no run, or a run of the same physics and grid that never reached its
    first checkpoint (that partial output is replaced). A job script can therefore run the same
    command on every (re)queued allocation. Anything else is refused, so no other run is touched."""
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        return None
    if checkpoints.find(path) is not None:
        return "latest"
    earlier = path / "config.yaml"
    try:
        old = yaml.safe_load(earlier.read_text())["config"]
        same = not physics_changes(old, cfg)
    except (OSError, TypeError, KeyError, AttributeError, yaml.YAMLError):
        same = False
    if not same:
        raise ConfigError("--resume", str(path), "give the directory of this config's run, or a new one",
                          "holds files but no checkpoint of a run with this physics and grid")
    get_logger().warning("%s has no complete checkpoint: starting again from t = 0, replacing its partial output",
                         path)
    prepare_output(path, overwrite=True)
    return None


def read_status(path: Path) -> dict[str, Any] | None:
    """The run's ``status.json`` as a dict, or None where there is none (or it cannot be read)."""
    try:
        return json.loads((path / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return None


def write_status(path: Path, state: str, step: int | None, t: float | None, code: int | None = None) -> None:
    """Replace ``status.json`` atomically (a reader never sees half a file). Process 0 only."""
    tmp = path / f".{STATUS_FILE}.tmp"
    try:
        tmp.write_text(json.dumps({"state": state, "step": step, "time": t, "exit_code": code,
                                   "host": socket.gethostname(), "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z")}))
        os.replace(tmp, path / STATUS_FILE)
    except OSError as err:
        raise OutputWriteError(f"writing {path / STATUS_FILE} failed: {describe_os_error(err)}") from err


class RunLock:
    """``<run>/.lock`` (pid and host), held by process 0 while a run writes into the directory.

    A second run into the same directory is refused while the first one lives; a lock left by a
    process that no longer exists on this host is recognised as stale and replaced.
    """

    def __init__(self, run_dir: Path):
        self.path = run_dir / ".lock"
        self.held = False

    def acquire(self) -> None:
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if not self._stale():
                    break
                get_logger().warning("removing the stale lock %s of a process that no longer runs", self.path)
                self.path.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as fh:
                json.dump(me, fh)
            self.held = True
            return
        try:
            other = json.loads(self.path.read_text())
        except (OSError, ValueError):
            other = {}
        raise ConfigError("--out", str(self.path.parent), "wait for that run to end, or remove the .lock file if it "
                          "is dead", f"is in use by a running process (pid {other.get('pid')} on "
                          f"{other.get('host')})")

    def _stale(self) -> bool:
        try:
            other = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return True  # unreadable: a writer died between creating and filling it
        if other.get("host") != socket.gethostname():
            return False  # cannot tell for another host: assume it lives
        try:
            os.kill(int(other["pid"]), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def release(self) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False


def physics_changes(old: dict[str, Any], cfg: Config) -> list[str]:
    """Dotted keys of ``physics`` and ``grid`` whose value in ``cfg`` differs from the resolved config
    ``old`` (a dict, as stored with a run). Keys ``old`` holds that ``cfg``'s equation does not have
    (the first config format stored every equation's keys) are ignored; a key ``old`` lacks counts as
    changed unless ``cfg`` holds its default. Keys declared ``schedule=True`` (they say when, not what:
    a cosmological run's final and output redshifts) may change, as ``time.t_end`` may."""
    import dataclasses

    import numpy as np

    diffs = []
    for key, value in keys_of(cfg).items():
        section, name = key.split(".")
        if next(f for f in dataclasses.fields(getattr(cfg, section)) if f.name == name).metadata.get("schedule"):
            continue
        stored = old.get(section, {})
        if name not in stored:
            default = getattr(type(getattr(cfg, section))(), name)
            if value != default:
                diffs.append(key)
            continue
        if np.any(np.asarray(stored[name], dtype=object) != np.asarray(value, dtype=object)):
            diffs.append(key)
    return diffs
