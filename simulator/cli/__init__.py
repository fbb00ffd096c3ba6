"""The one command-line entry point: ``simulator <command>`` (or ``python -m simulator``).

Exit status: 0 success; 1 a check or run failed (NaN/Inf, a failed write); 2 bad input (config,
arguments, device setup, a refused output directory or restart, a damaged file read), reported as one line on stderr;
3 ``simulator plan``: the run does not fit its devices' memory (the plan is printed, with the device
count that would fit it); 75 a run stopped by SIGTERM, SIGUSR1 or SIGINT after writing a checkpoint (resume with
--restart), or an export stopped by one (no partial file left: run it again); 141 the reader of its output closed the
pipe (``| head``). A stdout that cannot be written (``> /dev/full``) is one line on stderr and status 1, whatever the
command.

Every command's lines for the user are written here, each command in its module (:mod:`.run`: validate, run,
plan, config-docs, configs; :mod:`.results`: plot, animate, export; :mod:`.devices`: info, check, launch;
:mod:`.sweep`), what they share in :mod:`.common`: the library returns data and reports through callbacks, only
this package prints.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from simulator import config as config_mod
from simulator.cli import devices, results, run, sweep
from simulator.cli.common import EXIT_BAD_INPUT, Parser
from simulator.errors import ConfigError, DamagedFileError, RuntimeSetupError
from simulator.run.signals import EXIT_FAILED

#: 128 + SIGPIPE, the status of a shell tool whose reader closed the pipe
EXIT_BROKEN_PIPE = 141


def version_line() -> str:
    """``simulator 0.2.0 (jax 0.10.2, jaxlib 0.10.2, python 3.11.7)``: the simulator's version from its one source
    (:mod:`simulator.version`, the code that runs, even where an editable install's metadata is older), the
    others from the installed packages' metadata, so that asking for it starts no JAX."""
    import platform
    from importlib import metadata

    from simulator.version import __version__

    def installed(package: str) -> str:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return "not installed"

    stack = ", ".join(f"{name} {installed(name)}" for name in ("jax", "jaxlib", "jaxdecomp"))
    return f"simulator {__version__} ({stack}, python {platform.python_version()})"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="simulator", description="Distributed pseudo-spectral simulator (JAX).")
    parser.add_argument("--version", action="version", version=version_line(), help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for add in (run.add_validate, results.add_plot, results.add_animate, results.add_export, run.add_run, run.add_plan,
                devices.add_info, devices.add_check, run.add_config_docs, run.add_configs, run.add_slurm,
                sweep.add_sweep, devices.add_launch):
        add(sub)
    return parser


def reference_markdown() -> str:
    """The command-line reference (Markdown) generated from the parser: each command's purpose, usage and
    options, as ``simulator CMD --help`` prints them (the docs site's reference page is this text)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    purpose = {a.dest: a.help for a in sub._choices_actions}
    parts = []
    for name, p in sub.choices.items():
        p.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100)
        parts.append(f"## `simulator {name}`\n\n{purpose[name][0].upper()}{purpose[name][1:]}.\n\n"
                     f"```text\n{p.format_help().rstrip()}\n```\n")
    return "\n".join(parts)


class StdoutError(OSError):
    """Standard output cannot be written (``> /dev/full``, a full disk, a quota): raised by :class:`_Stdout`,
    so that it is told apart from every other OSError of a command (a file it writes, which names its path)."""


class _Stdout:
    """``sys.stdout`` while a command runs: a failed write or flush is a :class:`StdoutError` (a closed pipe stays
    the BrokenPipeError ``| head`` gives); everything else is the stream's own."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self._guarded(self.stream.write, text)

    def flush(self) -> None:
        self._guarded(self.stream.flush)

    @staticmethod
    def _guarded(call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as err:
            raise StdoutError(err.errno, err.strerror) from err

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def main(argv: Sequence[str] | None = None, started: float | None = None) -> int:
    """Run one command; its exit status. Every line a command writes to stdout goes through :class:`_Stdout`, and
    is flushed here: a stdout that cannot be written is one line on stderr, exit status 1, for every command.
    ``started``: the :func:`time.monotonic` of the command's start (the console command's entry point), which a
    run's ``runtime.max_wall`` counts from; None: from when the run itself begins."""
    stdout = sys.stdout
    if stdout is not None:  # None where the caller closed it (`>&-`)
        sys.stdout = _Stdout(stdout)  # type: ignore[assignment]
    try:
        return _command(sys.argv[1:] if argv is None else list(argv), started)
    except BrokenPipeError:  # `simulator configs | head`: the reader has what it wanted; exit as a shell tool does
        _discard(stdout)
        _exit_now_if_distributed(EXIT_BROKEN_PIPE)
        return EXIT_BROKEN_PIPE
    except StdoutError as err:
        _discard(stdout)
        print(f"error: cannot write to standard output ({err.strerror}); write it to a file or a disk with room",
              file=sys.stderr)
        _exit_now_if_distributed(EXIT_FAILED)
        return EXIT_FAILED
    finally:
        sys.stdout = stdout


def _command(argv: list[str], started: float | None) -> int:
    try:
        config_mod.check_overrides(argv)  # before argparse: "--set grid.shape 32" is more than "unrecognized: 32"
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        args = build_parser().parse_args(argv)
    except SystemExit:  # --help, --version, a refusal: what argparse printed is flushed here, where a failure is said
        _flush()
        raise
    args.started = started  # what the commands that run a simulation count runtime.max_wall from
    sweeps = args.func is sweep.cmd_sweep and (args.local or args.point is not None or args.group is not None)
    if args.func is not run.cmd_run and not sweeps:  # steps nothing: stop signals caught since start-up act now
        from simulator.run.signals import release_early

        release_early()
    try:
        if isinstance(getattr(args, "config", None), str):  # a missing or unreadable config: before JAX is imported
            config_mod.read_yaml(args.config)
        code = args.func(args)
        _flush()
        return code
    except (BrokenPipeError, StdoutError):
        raise
    except (ConfigError, RuntimeSetupError, DamagedFileError) as err:  # a damaged input file too: it names it
        print(f"error: {err}", file=sys.stderr)
        _exit_now_if_distributed(EXIT_BAD_INPUT)
        return EXIT_BAD_INPUT
    except Exception:
        traceback.print_exc()
        _exit_now_if_distributed(EXIT_FAILED)
        return EXIT_FAILED


def _flush() -> None:
    if sys.stdout is not None:
        sys.stdout.flush()


def _discard(stdout: TextIO | None) -> None:
    """Point stdout at nothing: Python flushes it again at exit, and would report the failure once more."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())  # type: ignore[union-attr]
    except (AttributeError, OSError, ValueError):  # no file descriptor (a test's captured stream): nothing to flush
        pass


def _exit_now_if_distributed(code: int) -> None:
    from simulator.run.command import exit_now_if_distributed

    exit_now_if_distributed(code)
