"""Error types shared by the config, runtime, FFT and reading layers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def show_value(value: Any) -> str:
    """A short repr of a config value for one-line messages, spelled as the YAML the user writes (null, true,
    false; tuples as lists), not as Python (None, True). A long one keeps both ends (a path's file name, a
    list's last entries) and elides the middle."""
    text = _yaml_repr(value)
    return text if len(text) <= 80 else text[:38] + "..." + text[-39:]


def _yaml_repr(value: Any) -> str:
    """``repr``, but for YAML's spellings of null and the booleans, within lists and mappings too."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(_yaml_repr, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_yaml_repr(k)}: {_yaml_repr(v)}" for k, v in value.items()) + "}"
    return repr(value)


def counted(n: int, noun: str) -> str:
    """``n`` and the (regular) ``noun``, plural but for one: "1 snapshot", "2 snapshots", "0 points"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


class ConfigError(ValueError):
    """A bad input, reported as one line naming the key, the value and what is allowed.

    The CLI turns it into ``error: <message>`` on stderr and exit status 2.
    """

    def __init__(self, key: str, value: Any, allowed: str, problem: str = "is not allowed"):
        self.key, self.value, self.allowed, self.problem = key, value, allowed, problem
        super().__init__(f"{key} = {show_value(value)} {problem}; {allowed}")


class RuntimeSetupError(RuntimeError):
    """The process/device runtime cannot be set up as asked (e.g. device count set too late)."""


class DamagedFileError(OSError):
    """A file of a run that its reader cannot read: cut short (a run killed while writing it, a copy that
    stopped), of zero length, or not as the run writes it (another program's file of that name). One line naming
    the file and what to do. ``path`` is the file, ``reason`` the reader's error in one line (its type and first
    line), and that error is its ``__cause__``. An OSError, so that code catching OSError for a file that will
    not read still catches it; raised by ``load_run``'s readers and caught by ``simulator plot`` (which skips the
    figures of that file, naming it) and ``simulator export`` (which refuses, naming it)."""

    def __init__(self, path: str | Path, err: BaseException) -> None:
        self.path = Path(path)
        first = (str(err).splitlines() or [""])[0].removeprefix(f"{self.path}: ")  # one naming it again: once is enough
        self.reason = f"{type(err).__name__}: {first}"
        super().__init__(f"{self.path} is damaged or not as the run writes it ({self.reason}); restore it from a "
                         "copy, or move it out of the run directory to read the rest of the run")


@contextmanager
def reading(path: str | Path) -> Iterator[None]:
    """Whatever reading the file ``path`` inside the block raises, raised as :class:`DamagedFileError` naming it;
    an error the operating system reports for the file itself (an OSError with an errno: missing, permission
    denied), which names it already and says nothing of its content, a MemoryError (an intact file too large
    for this machine: "damaged" would have its user restore or move a good file), and a DamagedFileError of a
    file read within the block, pass as they are."""
    try:
        yield
    except (DamagedFileError, MemoryError):
        raise
    except OSError as err:
        if err.errno is not None:
            raise
        raise DamagedFileError(path, err) from err
    except Exception as err:  # whatever a damaged file makes h5py or a reader raise (KeyError, ValueError, ...)
        raise DamagedFileError(path, err) from err
