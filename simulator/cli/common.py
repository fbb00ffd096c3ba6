"""What the commands share: their exit statuses, the parser's one-line errors, the config arguments and
their overrides, and starting the runtime."""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simulator import config as config_mod
from simulator.errors import ConfigError

#: the command line's own exit statuses beside a run's (:mod:`simulator.run.signals`: 0, 1, 75): bad input, and a run
#: that does not fit its devices
EXIT_BAD_INPUT, EXIT_DOES_NOT_FIT = 2, 3


#: what a missing config argument asks for: a first-time user's first command may well lack it
CONFIG_WANTED = ("; give a YAML config file's path (simulator configs lists the shipped ones, and simulator configs "
                 "taylor_green > tg.yaml writes one)")


class Parser(argparse.ArgumentParser):
    def _print_message(self, message: str, file: Any = None) -> None:
        """argparse's, but a failed write of ``--help`` or ``--version`` to stdout (``> /dev/full``) is not passed
        over: it fails as every command's output does (:func:`simulator.cli.main`: one line, exit 1)."""
        if message and file is sys.stdout:
            file.write(message)
            return
        super()._print_message(message, file)

    def error(self, message: str) -> None:  # one line, exit 2, like every other bad input
        wanted = CONFIG_WANTED if message == "the following arguments are required: config" else ""
        self.exit(EXIT_BAD_INPUT, f"error: {self.prog}: {message}{wanted}\n")

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        """argparse's, but an unrecognized flag is answered with the nearest flags of the command it follows."""
        parsed, extras = self.parse_known_args(args, namespace)
        config = getattr(parsed, "config", None)  # `128]` where the config's path was to come
        closing = [config] if isinstance(config, str) and config.count("]") + config.count("}") > config.count(
            "[") + config.count("{") else []
        cut = cut_item(getattr(parsed, "overrides", None) or (), [*closing, *extras])
        if cut or extras:
            command = self._command_parser(parsed)
            command.error(cut or f"unrecognized arguments: {' '.join(extras)}{close_flags(command, extras)}")
        return parsed

    def _command_parser(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The parser of the command (``simulator run``) whose options the line gave (known by the function it
        sets), or this one."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return next((p for p in action.choices.values()
                             if p._defaults.get("func") is getattr(parsed, "func", None)), self)
        return self


#: other tools' flags for what one of ours says (Slurm's and launchers' GPU counts: plan --devices), each answered
#: with ours where the command has it: a spelling's nearest flag is another meaning (--gpus was "--unset?")
OTHER_FLAGS = {"--gpus": "--devices", "--gpu": "--devices", "--ngpus": "--devices", "--num-gpus": "--devices",
               "--n-gpus": "--devices", "--gpus-per-node": "--devices"}


def close_flags(parser: argparse.ArgumentParser, words: Sequence[str]) -> str:
    """``; did you mean --out? (simulator run --help lists its options)`` for the flags among ``words`` that
    ``parser`` does not know, each with the nearest of its flags: ``--cpu_devices`` (a key's spelling) is
    ``--cpu-devices``, ``--output`` is ``--out``, another tool's flag ours (:data:`OTHER_FLAGS`: ``--gpus`` is
    ``--devices``). Empty when none is close."""
    import difflib

    known = [flag for action in parser._actions for flag in action.option_strings
             if flag.startswith("--") and flag != "--help"]
    hints = {}
    for word in words:
        flag = word.split("=", 1)[0]
        if not flag.startswith("-") or flag in known:
            continue
        spelt = "--" + flag.lstrip("-").replace("_", "-").lower()
        ours = spelt if spelt in known else OTHER_FLAGS.get(spelt)
        if spelt in OTHER_FLAGS and ours not in known:  # a GPU count where the command has none to take
            hints[flag] = ("a command takes every GPU it sees: choose them with CUDA_VISIBLE_DEVICES or the job's "
                           "allocation (simulator plan --devices N plans for N)")
            continue
        ratios = sorted(((difflib.SequenceMatcher(None, spelt, k).ratio(), k) for k in known), reverse=True)
        # ours, or the nearest and a second as near (--sett: --set, not --unset)
        close = [ours] if ours in known else [k for r, k in ratios[:2] if r >= max(0.6, ratios[0][0] - 0.1)]
        if close:
            hints[flag] = f"did you mean {' or '.join(close)}?"
    said = "; ".join(hint if len(hints) == 1 else f"{flag}: {hint}" for flag, hint in hints.items())
    return f"; {said} ({parser.prog} --help lists its options)" if hints else ""


def cut_item(overrides: Sequence[str], words: Sequence[str]) -> str | None:
    """What to say of a ``--set`` item the shell cut at its spaces, or None: ``--set grid.shape=[128, 128]``
    unquoted gives ``grid.shape=[128,`` to ``--set`` and ``128]`` to argparse's unrecognized arguments, or to the
    config argument (``words``: the config argument and the unrecognized ones, in order). The item is the one whose
    brackets (or braces) do not close; its rest, the words that close them."""
    from simulator.schema.overrides import Unset

    def is_open(text: str) -> bool:
        return text.count("[") > text.count("]") or text.count("{") > text.count("}")

    for item in overrides:
        if isinstance(item, Unset) or not is_open(item):
            continue
        whole = item
        for word in words:
            whole = f"{whole} {word}"
            if not is_open(whole):
                break
        if is_open(whole):
            return f"--set {item} was cut at a space by the shell: quote the whole item, --set '{item} ...'"
        # a YAML mapping needs its spaces (`{name:heavy}` is one key), a list does not
        bare = f", or write it without spaces, --set {whole.replace(' ', '')}" if ":" not in whole else ""
        return f"--set {item} was cut at a space by the shell: quote it, --set '{whole}'{bare}"
    return None


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
    """The config overrides (``KEY=VALUE``) of the runtime's own flags that the command line gives, each within
    its key's bounds (:func:`check_runtime_flags`: a flag out of range is named as given, in every command)."""
    check_runtime_flags(args)
    return [f"{key}={getattr(args, flag)}" for flag, key in RUNTIME_FLAGS.items() if getattr(args, flag) is not None]


def check_runtime_flags(args: argparse.Namespace) -> None:
    """The runtime's own flags within their config keys' bounds, else a ConfigError naming the flag: for a
    command that passes them on to the runs it starts (whose errors would blame a run's config for them)."""
    import dataclasses

    from simulator.config.devices import RuntimeConfig
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


def output_path(flag: str, given: str, *, directory: bool = False) -> Path:
    """The path ``given`` to ``flag`` (``--out``, ``--netcdf``) that a command writes, a file's or (``directory``) a
    directory's, checked before anything is read or written: ConfigError (one line, exit 2) for a name too long, a
    folder on its way that is a regular file, the path itself the wrong kind (a folder where a file goes, a file
    where a folder does), or when more than its last folder (the run's directory; the folder a file goes into) is
    missing. The commands create that last folder only: a mistyped path would otherwise grow a tree of folders
    wherever its first missing one is (at the filesystem's root for ``/scrach/run``)."""
    path = Path(given)
    for part in path.parts:  # the system's ENAMETOOLONG, said as what to change
        if len(os.fsencode(part)) > 255:
            raise ConfigError(flag, given, "use names of at most 255 bytes",
                              f"has a name of {len(os.fsencode(part))} bytes")
    folders = (path, *path.parents) if directory else path.parents  # the last folder first, the root last
    try:
        if path.exists() and path.is_dir() != directory:
            raise ConfigError(flag, given, "give a directory" if directory else "give a file's name",
                              "is a file" if directory else "is a directory")
        missing = list(itertools.takewhile(lambda folder: not folder.exists(), folders))
        held = folders[len(missing)]  # the nearest that exists: "." or "/" at the latest
        if not held.is_dir():
            raise ConfigError(flag, given, f"give a path in a folder (or move {held} away)",
                              f"lies under {held}, which is a file")
    except OSError as err:
        raise ConfigError(flag, given, "choose a usable location", f"cannot be used ({err.strerror})") from None
    if len(missing) > 1:
        raise ConfigError(flag, given, f"create them first (mkdir -p {missing[0]}), or give a path in an existing "
                          "folder: a command creates only the last folder of its path",
                          f"would need {len(missing)} new folders ({', '.join(map(str, reversed(missing)))})")
    return path
