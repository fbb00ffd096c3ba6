"""``simulator sweep``: a parameter sweep expanded and validated, run here or as one Slurm array job, collected."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any

from simulator.cli.common import (
    RUNTIME_FLAGS,
    check_runtime_flags,
    output_path,
    runtime_args,
    runtime_flags,
    runtime_settings,
    unset_arg,
)
from simulator.errors import ConfigError, counted
from simulator.launch import ENV_NUM_PROCESSES, srun_tasks
from simulator.run.signals import EXIT_INTERRUPTED, EXIT_OK


def cmd_sweep(args: argparse.Namespace) -> int:
    from pathlib import Path

    from simulator import sweep, sweep_collect, sweep_file

    if args.jobs is not None and args.jobs < 1:
        raise ConfigError("--jobs", args.jobs, "give at least 1", "is not allowed")
    check_runtime_flags(args)  # named as given, before a point's config is blamed for them
    _overrides(args)  # a --set of a key the points cannot take: refused before the sweep's directory is locked
    if args.point is not None:
        return sweep.run_point(Path(args.target), _array_index("--point", args.point, "point"), _overrides(args),
                               _flags(args), started=args.started)
    if args.group is not None:
        return sweep.run_group(Path(args.target), _array_index("--group", args.group, "group"), _overrides(args),
                               _flags(args), started=args.started)
    launched = os.environ.get(ENV_NUM_PROCESSES)
    if launched:  # every process would prepare and run the whole sweep (and all but one be refused by its lock)
        raise ConfigError("simulator launch -n", int(launched), "run the sweep in one process (`simulator sweep FILE "
                          "--local --cpu-devices D` gives each point D devices), or one point on these processes: "
                          f"`simulator launch -n {launched} sweep DIR --point I` (an ensemble group: --group G)",
                          "cannot run a whole sweep")
    if (tasks := srun_tasks()) > 1:  # an srun step's tasks, as a run finds them: each would run it all
        raise ConfigError("SLURM_NTASKS", tasks, "run the sweep in one task (`simulator sweep FILE --local` in "
                          "the job script, without srun), or one point on these tasks: `srun simulator sweep DIR "
                          "--point I` (an ensemble group: --group G)",
                          "cannot run a whole sweep (an srun step's tasks)")
    for flag, key in RUNTIME_FLAGS.items():
        if getattr(args, flag) is not None and (args.submit or args.collect):
            raise ConfigError(f"--{flag.replace('_', '-')}", getattr(args, flag), "give it with --local, --point or "
                              f"--group, or set {key} in the sweep file's set (what array tasks run with)",
                              f"is not passed on by {'--submit' if args.submit else '--collect'}")
    if args.overrides and (args.submit or args.collect):
        from simulator.schema.overrides import Unset

        first = args.overrides[0]
        raise ConfigError("--unset" if isinstance(first, Unset) else "--set", str(first), "give it with --local, "
                          "--point or --group (the sweep template passes runtime.cpu_devices=null to a task with "
                          "GPUs), or in the sweep file's set",
                          f"is not passed on by {'--submit' if args.submit else '--collect'}")
    if args.batch is not None and args.batch < 1:
        raise ConfigError("--batch", args.batch, "give at least 1 member per batched program", "is not allowed")
    if args.collect:
        directory = Path(args.target)
        path, rows = sweep_collect.collect(directory)
        finished = sum(r["status"] == "finished" for r in rows)
        for row in rows:  # a point with a damaged file: collected without results, or (its status) of state unknown
            if "note" in row:
                lacks = "" if "time" in row else " has no results"
                print(f"warning: point {row['index']}{lacks} in {path}: {row['note']}", file=sys.stderr)
        print(f"{path}: {counted(len(rows), 'point')}, {finished} finished")
        from simulator import plots

        for written in plots.plot_sweep_dir(directory, args.diagnostic, args.against):
            print(written)
        return EXIT_OK
    spec = sweep_file.load(args.target)
    directory = output_path("--out", args.out, directory=True) if args.out else sweep.default_directory(spec)
    from simulator.run.lock import RunLock

    lock = RunLock(directory)  # the sweep's own: a second start of it is refused (exit 2) before it writes
    lock.acquire()
    try:
        return _sweep_locked(args, spec, directory)
    finally:
        lock.release()


def _sweep_locked(args: argparse.Namespace, spec: Any, directory: Any) -> int:
    """``sweep FILE [--local | --submit]`` holding the sweep directory's lock (``spec``: the loaded
    :class:`simulator.sweep_file.Sweep`, ``directory``: its Path)."""
    from pathlib import Path

    from simulator import sweep, sweep_slurm

    ensemble = args.ensemble or args.batch is not None or spec.ensemble
    # before any write: a point no ensemble can hold, or the flags cannot run
    configs = [sweep.point_config(spec, point, directory, _overrides(args)) for point in spec.points]
    if ensemble:
        from simulator.run.grouping import check_member

        for cfg in configs:
            check_member(cfg)
    manifest = sweep.prepare(spec, directory)
    print(f"sweep {spec.name}: {counted(len(spec.points), 'point')} over {', '.join(spec.swept)}; all valid; manifest "
          f"{directory / sweep.MANIFEST}")
    for p in manifest["points"]:
        print(f"  {p['index']:3d} {sweep.point_state(directory, p['name']):11s} "
              + " ".join(f"{k}={v}" for k, v in p["params"].items()))
    for point, cfg in zip(spec.points, configs, strict=True):  # as `simulator validate` says them of one config
        for line in cfg.physics.cautions(cfg):
            print(f"warning: point {point.index} ({sweep.point_label(point.params)}): {line}", file=sys.stderr)
    groups = None
    if ensemble:
        groups = sweep.write_groups(directory, manifest, args.batch or spec.batch)
        print(f"ensemble: {len(groups)} group(s) of the same structure, one batched program each: "
              + "; ".join(f"{g}: points {', '.join(map(str, m))}" for g, m in enumerate(groups)))
    out = f" --out {args.out}" if args.out else ""
    flags = "".join(f" {shlex.quote(word)}" for word in _flags(args))
    if args.submit:
        sweep_slurm.submit(directory, manifest, Path(args.script) if args.script else None, dry_run=args.dry_run,
                           groups=groups, report=print)
    elif args.local:
        code = sweep.run_local(directory, manifest, args.jobs or sweep.jobs_default(manifest), groups=groups,
                               report=print, flags=_flags(args))
        if code == EXIT_INTERRUPTED:
            print(f"resume with: simulator sweep {args.target}{out} --local{flags}{' --ensemble' if groups else ''}")
        return code
    else:
        print(f"next: simulator sweep {args.target}{out} --local{flags} [-j K], or --submit (one Slurm array job)")
    return EXIT_OK


def add_sweep(sub: Any) -> None:
    p = sub.add_parser("sweep", help="expand and validate a parameter sweep; run it here or as one Slurm array job; "
                       "collect its results")
    p.add_argument("target", help="the sweep file (SWEEP.yaml), or with --point, --group or --collect its directory")
    p.add_argument("--out", default=None, metavar="DIR", help="the sweep's directory (default: outputs/<name>)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--local", action="store_true", help="run the unfinished points on this machine")
    mode.add_argument("--submit", action="store_true",
                      help="submit one Slurm array job running the unfinished points")
    mode.add_argument("--point", type=int, nargs="?", const=-1, default=None, metavar="I",
                      help="run point I of the sweep directory (default: $SLURM_ARRAY_TASK_ID); what array tasks run")
    mode.add_argument("--group", type=int, nargs="?", const=-1, default=None, metavar="G",
                      help="run ensemble group G of the sweep directory as one batched program (default: "
                      "$SLURM_ARRAY_TASK_ID); what array tasks of an ensemble sweep run")
    mode.add_argument("--collect", action="store_true",
                      help="write DIR/collected.csv (parameters, final and peak diagnostics) and the sweep's plots")
    p.add_argument("-j", "--jobs", type=int, default=None, metavar="K",
                   help="with --local: points at once (default: max_parallel, at most the CPU count)")
    p.add_argument("--ensemble", action="store_true",
                   help="with --local/--submit: run the points that differ only in traced values (physical "
                   "parameters, initial conditions, dt) as one batched program per group (as 'ensemble: true')")
    p.add_argument("--batch", type=int, default=None, metavar="K",
                   help="with --ensemble: at most K members per batched program (as 'batch: K'; implies --ensemble)")
    p.add_argument("--script", default=None, metavar="FILE",
                   help="with --submit: the array job script (default: slurm/sweep.sbatch, else where there is none "
                   "the template shipped with the package: simulator slurm sweep)")
    p.add_argument("--dry-run", action="store_true", help="with --submit: print the sbatch command, submit nothing")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="with --local, --point or --group: a runtime key of each point's run, e.g. --set "
                   "runtime.cpu_devices=null for the GPUs whatever the sweep's config asks (repeatable)")
    unset_arg(p, "with --local, --point or --group: remove a runtime key of each point's run, which then takes its "
              "default, e.g. --unset runtime.threads (repeatable)")
    runtime_args(p, " in each point's run; with --local, --point or --group")
    p.add_argument("--diagnostic", default=None, metavar="NAME",
                   help="with --collect: the column to plot (e.g. peak_dissipation; default: chosen from the table)")
    p.add_argument("--against", default=None, metavar="KEY",
                   help="with --collect: the swept key on the x axis (default: the first swept key)")
    p.set_defaults(func=cmd_sweep)


def _overrides(args: argparse.Namespace) -> list[str]:
    """The config overrides (``KEY=VALUE``) each point's run takes from the command line: ``--set`` of the runtime's
    keys, and the runtime's flags. Another key is refused: the manifest and ``--collect`` would give the point the
    values of the sweep file, not those it ran with."""
    from simulator import config as config_mod
    from simulator.schema.overrides import Unset

    for item in args.overrides:
        flag = "--unset" if isinstance(item, Unset) else "--set"
        if not item.split("=", 1)[0].strip().startswith("runtime."):
            raise ConfigError(flag, str(item), "give a runtime.* key (e.g. runtime.cpu_devices=null); set the others "
                              "in the sweep file's set, grid, zip or points", "is not passed on to a sweep's points")
        if isinstance(item, Unset):  # a point's resolved config holds every runtime key: a known one may be removed
            _runtime_key(item)
            continue
        try:  # named as the flag it is, before a point's config is blamed for it
            config_mod.load(None, [item])
        except ConfigError as err:
            raise ConfigError(f"--set {err.key}", err.value, err.allowed, err.problem) from None
    return [*args.overrides, *runtime_settings(args)]


def _runtime_key(key: str) -> None:
    """A ConfigError naming ``--unset KEY`` for a ``runtime.*`` key the runtime section does not have."""
    import dataclasses

    from simulator.config import RuntimeConfig
    from simulator.schema.build import did_you_mean

    known = [f"runtime.{f.name}" for f in dataclasses.fields(RuntimeConfig)]
    if key.strip() not in known:
        close = did_you_mean(key.strip(), known)
        raise ConfigError("--unset", str(key), (f"did you mean {close!r}? " if close else "") + "the runtime's keys: "
                          + ", ".join(known), "is an unknown key")


def _flags(args: argparse.Namespace) -> list[str]:
    """The words of the command line that give a point's run :func:`_overrides`, for the commands this one starts."""
    from simulator.schema.overrides import command_words

    return [*command_words(args.overrides), *runtime_flags(args)]


def _array_index(flag: str, given: int, what: str) -> int:
    """The index ``flag`` gave, or (given as a negative number: the flag without a value) the Slurm array
    task's; a one-line ConfigError when neither is there."""
    index = given if given >= 0 else os.environ.get("SLURM_ARRAY_TASK_ID")
    if index is None or not str(index).isdigit():
        raise ConfigError(flag, index, f"give the {what} index, or run inside a Slurm array task",
                          "is not set (SLURM_ARRAY_TASK_ID is unset)")
    return int(index)
