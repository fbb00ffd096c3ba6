"""What the commands share: their exit statuses, the parser's one-line errors, the config arguments and
their overrides, and starting the runtime."""

from __future__ import annotations

import argparse

from simulator import config as config_mod

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_DOES_NOT_FIT, EXIT_INTERRUPTED = 0, 1, 2, 3, 75


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other bad input
        self.exit(EXIT_BAD_INPUT, f"error: {self.prog}: {message}\n")


def config_args(p: argparse.ArgumentParser, required: bool) -> None:
    if required:
        p.add_argument("config", help="YAML config file")
    else:
        p.add_argument("config", nargs="?", default=None, help="YAML config file (default: built-in defaults)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. --set grid.shape=[64,64,64] (repeatable)")
    p.add_argument("--cpu-devices", type=int, default=None, metavar="N",
                   help="run on N virtual CPU devices (same as --set runtime.cpu_devices=N)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="use N CPU threads: XLA's pool and FFTW's (same as --set runtime.threads=N; small grids "
                   "run faster on 1)")


def runtime_overrides(args: argparse.Namespace) -> list[str]:
    """The config overrides of the command line: ``--set`` and the runtime's own flags."""
    overrides = list(args.overrides)
    if args.cpu_devices is not None:
        overrides.append(f"runtime.cpu_devices={args.cpu_devices}")
    if args.threads is not None:
        overrides.append(f"runtime.threads={args.threads}")
    return overrides


def load(args: argparse.Namespace) -> config_mod.Config:
    return config_mod.load(args.config, runtime_overrides(args))


def start(cfg: config_mod.Config) -> str:
    from simulator.run.command import start as start_runtime

    return start_runtime(cfg)
