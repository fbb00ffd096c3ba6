"""Error types shared by the config, runtime and FFT layers."""

from __future__ import annotations

from typing import Any


def show_value(value: Any) -> str:
    """A short repr of a config value for one-line messages (tuples shown as YAML-like lists). A long
    one keeps both ends (a path's file name, a list's last entries) and elides the middle."""
    if isinstance(value, tuple):
        value = list(value)
    text = repr(value)
    return text if len(text) <= 80 else text[:38] + "..." + text[-39:]


class ConfigError(ValueError):
    """A bad input, reported as one line naming the key, the value and what is allowed.

    The CLI turns it into ``error: <message>`` on stderr and exit status 2.
    """

    def __init__(self, key: str, value: Any, allowed: str, problem: str = "is not allowed"):
        self.key, self.value, self.allowed, self.problem = key, value, allowed, problem
        super().__init__(f"{key} = {show_value(value)} {problem}; {allowed}")


class RuntimeSetupError(RuntimeError):
    """The process/device runtime cannot be set up as asked (e.g. device count set too late)."""
