"""What the commands share: their exit statuses, the parser's one-line errors, the config arguments and
their overrides, and starting the runtime."""

from __future__ import annotations

import argparse
from typing import Any

from simulator import config as config_mod

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_DOES_NOT_FIT, EXIT_INTERRUPTED = 0, 1, 2, 3, 75


#: what a missing config argument asks for: a first-time user's first command may well lack it
CONFIG_WANTED = ("; give a YAML config file's path (simulator configs lists the shipped ones, and simulator configs "
                 "taylor_green > tg.yaml writes one)")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other bad input
        wanted = CONFIG_WANTED if message == "the following arguments are required: config" else ""
        self.exit(EXIT_BAD_INPUT, f"error: {self.prog}: {message}{wanted}\n")


def config_args(p: argparse.ArgumentParser, required: bool) -> None:
    if required:
        p.add_argument("config", help="YAML config file")
    else:
        p.add_argument("config", nargs="?", default=None, help="YAML config file (default: built-in defaults)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. --set grid.shape=[64,64,64] (repeatable)")
    unset_arg(p, "remove a key of the config, which then takes its default or, where other keys leave it out of "
              "the run, is no longer given, e.g. --set physics.fdm_fraction=0 --unset physics.m22 (repeatable; "
              "applied in order with --set)")
    runtime_args(p)


class _Unset(argparse.Action):
    """``--unset KEY``: an :class:`~simulator.schema.overrides.Unset` item of the ``--set`` list, in the order given."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from simulator.schema.overrides import Unset

        getattr(namespace, self.dest).append(Unset(values))


def unset_arg(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--unset", dest="overrides", action=_Unset, metavar="KEY", help=help)


def runtime_args(p: argparse.ArgumentParser, where: str = "") -> None:
    """The runtime's own flags, ``--cpu-devices`` and ``--threads``: of the run itself, or (``where``, e.g.
    " in each point's run") of the runs the command starts."""
    p.add_argument("--cpu-devices", type=int, default=None, metavar="N",
                   help=f"run on N virtual CPU devices (same as --set runtime.cpu_devices=N{where})")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help=f"use N CPU threads: XLA's pool and FFTW's (same as --set runtime.threads=N{where}; small "
                   "grids run faster on 1)")


#: the runtime's own flags (:func:`runtime_args`) and the config keys they set
RUNTIME_FLAGS = {"cpu_devices": "runtime.cpu_devices", "threads": "runtime.threads"}


def runtime_settings(args: argparse.Namespace) -> list[str]:
    """The config overrides (``KEY=VALUE``) of the runtime's own flags that the command line gives."""
    return [f"{key}={getattr(args, flag)}" for flag, key in RUNTIME_FLAGS.items() if getattr(args, flag) is not None]


def check_runtime_flags(args: argparse.Namespace) -> None:
    """The runtime's own flags within their config keys' bounds, else a ConfigError naming the flag: for a
    command that passes them on to the runs it starts (whose errors would blame a run's config for them)."""
    import dataclasses

    from simulator.config.model import RuntimeConfig
    from simulator.errors import ConfigError

    bounds = {f"runtime.{f.name}": f.metadata for f in dataclasses.fields(RuntimeConfig)}
    for flag, key in RUNTIME_FLAGS.items():
        value, meta = getattr(args, flag), bounds[key]
        if value is not None and not meta["min"] <= value <= meta["max"]:
            raise ConfigError(f"--{flag.replace('_', '-')}", value, f"give {meta['min']} to {meta['max']}",
                              "is out of range")


def runtime_flags(args: argparse.Namespace) -> list[str]:
    """The runtime's own flags as the command line gives them, for a command this one starts."""
    return [word for flag in RUNTIME_FLAGS if getattr(args, flag) is not None
            for word in (f"--{flag.replace('_', '-')}", str(getattr(args, flag)))]


def runtime_overrides(args: argparse.Namespace) -> list[str]:
    """The config overrides of the command line: ``--set`` and the runtime's own flags."""
    return [*args.overrides, *runtime_settings(args)]


def load(args: argparse.Namespace) -> config_mod.Config:
    return config_mod.load(args.config, runtime_overrides(args))


def start(cfg: config_mod.Config) -> str:
    from simulator.run.command import start as start_runtime

    return start_runtime(cfg)
