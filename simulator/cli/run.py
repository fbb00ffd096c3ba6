"""``simulator validate``, ``run``, ``plan``, ``config-docs`` and ``configs``: a config checked, run, planned
against its devices' memory, the reference of its keys, and the configs and Slurm templates shipped with the
package."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from simulator import config as config_mod
from simulator.cli.common import EXIT_DOES_NOT_FIT, config_args, load, output_path, runtime_overrides, start
from simulator.config.modes import modes_line
from simulator.errors import ConfigError
from simulator.run.signals import EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    cfg = load(args)
    sys.stdout.write(config_mod.dump(cfg))
    if (chosen := modes_line(cfg.grid)) is not None:  # on stderr: stdout stays the resolved config's YAML
        print(chosen, file=sys.stderr)
    cautions(cfg)
    return EXIT_OK


def cautions(cfg: Any) -> None:
    """The physics' cautions about a valid config (:meth:`simulator.equations.spec.EquationParams.cautions`),
    one ``warning:`` line each on stderr."""
    for line in cfg.physics.cautions(cfg):
        print(f"warning: {line}", file=sys.stderr)


def add_validate(sub: Any) -> None:
    p = sub.add_parser("validate", help="validate a config and print it with every default filled in")
    config_args(p, required=True)
    p.set_defaults(func=cmd_validate)


def cmd_run(args: argparse.Namespace) -> int:
    from simulator.planning import admit
    from simulator.run.command import run_file

    if args.out:
        output_path("--out", args.out, directory=True)
    return run_file(args.config, runtime_overrides(args), args.out, add_to_t_end=args.add_to_t_end, admit=admit,
                    overwrite=args.overwrite, restart=args.restart, resume=args.resume,
                    allow_physics_change=args.allow_physics_change, started=args.started)


class RestartPath(argparse.Action):
    """``--restart [PATH]``, refusing a YAML file as PATH: ``simulator run --restart CONFIG`` gives the config
    to the option (its PATH is optional), and argparse would then say that the config is missing."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if isinstance(values, str) and values.lower().endswith((".yaml", ".yml")):
            raise argparse.ArgumentError(self, f"{values!r} is a config file, not a checkpoint; give the config "
                                         "first, simulator run CONFIG --restart [PATH] (PATH: a checkpoint's "
                                         ".h5/.json or a run directory)")
        setattr(namespace, self.dest, values)


def add_run(sub: Any) -> None:
    p = sub.add_parser("run", help="run a simulation")
    config_args(p, required=True)
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output directory (default: output.dir or outputs/<name>)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run in a directory that already holds one (its files are removed)")
    p.add_argument("--restart", nargs="?", const="latest", default=None, metavar="PATH", action=RestartPath,
                   help="continue from the latest complete checkpoint of the output directory, or from PATH "
                   "(a checkpoint's .h5/.json or a run directory)")
    p.add_argument("--resume", action="store_true",
                   help="continue from the output directory's latest checkpoint if it has one, else start a new "
                   "run there; a finished run exits 0 at once (what a requeued job script runs)")
    p.add_argument("--allow-physics-change", action="store_true",
                   help="with --restart: accept physical parameters that differ from the checkpoint's")
    p.add_argument("--add-to-t-end", type=float, default=None, metavar="T",
                   help="with --restart: run on to the restarted run's t_end + T (extends a finished or "
                   "interrupted run; the log and the resume hint give the new time.t_end)")
    p.set_defaults(func=cmd_run)


def cmd_plan(args: argparse.Namespace) -> int:
    from simulator import runtime

    bounds = next(f.metadata for f in dataclasses.fields(config_mod.RuntimeConfig) if f.name == "cpu_devices")
    if args.devices is not None and not bounds["min"] <= args.devices <= bounds["max"]:
        # named as given: it would be blamed on runtime.cpu_devices below, or slice the GPUs (-2: all but two)
        raise ConfigError("--devices", args.devices, f"give {bounds['min']} to {bounds['max']}", "is out of range")
    overrides = runtime_overrides(args)
    gpu = args.platform == "gpu" and runtime.gpu_visible()
    if args.devices is not None and not gpu:
        overrides.append(f"runtime.cpu_devices={args.devices}")  # virtual CPU devices stand in for GPUs
    configs = _planned_configs(args, overrides)
    if args.platform == "gpu" and not gpu and configs[0][1].runtime.cpu_devices is None:
        # JAX kept to the CPU: with a CUDA plug-in installed and no GPU it would otherwise try (and fail, loudly)
        # to start one; the plug-in's compiler still compiles for GPUs (simulator.planning.gpu_compiler)
        configs = _planned_configs(args, [*overrides, "runtime.cpu_devices=1"])
    from simulator.planning.cost import memory_option
    from simulator.planning.job import job_lines, measured, sweep_lines
    from simulator.run.grouping import groups
    from simulator.run.rundir import output_dir

    memory = memory_option(args.memory, args.platform == "gpu" and not gpu)
    labels, cfgs = [label for label, _ in configs], [cfg for _, cfg in configs]
    runs = [measured(Path(args.run) if args.run and len(cfgs) == 1 else output_dir(cfg, None)) for cfg in cfgs]
    start(cfgs[0])
    import jax

    from simulator.planning.report import plan_lines
    from simulator.run.simulation import Simulation

    fits, out, seconds = True, [], {}
    for group in groups(cfgs):  # one plan per structure: its points differ only in traced numbers and t_end
        first = cfgs[group[0]]

        def job(step: float | None, devices: int, group: list[int] = group) -> list[str]:
            seconds.update(dict.fromkeys(group, step))
            return job_lines(cfgs[group[0]], step, devices, runs[group[0]]) if len(cfgs) == 1 else []

        if len(cfgs) > 1:
            out.append(f"points {', '.join(labels[i].split()[0] for i in group)}, planned as {labels[group[0]]}:")
        lines, fit = plan_lines(first, Simulation, args.devices, args.platform, memory, args.profile, job)
        out += lines
        fits = fits and fit
    if len(cfgs) > 1:
        out += sweep_lines([(labels[i], cfg, runs[i]) for i, cfg in enumerate(cfgs)], seconds,
                           args.devices or jax.device_count())
    if jax.process_index() == 0:
        print("\n".join(out))
        cautions(cfgs[0])
    return EXIT_OK if fits else EXIT_DOES_NOT_FIT


def _planned_configs(args: argparse.Namespace, overrides: list[Any]) -> list[tuple[str, Any]]:
    """(label, config) of what ``simulator plan`` plans: the run's config, or each point of a sweep file (its
    points' ``--set`` applied to every one, their directories the sweep's: ``outputs/<sweep name>/pNNN``)."""
    raw = config_mod.read_yaml(args.config) if args.config else {}
    if not ("base" in raw and set(raw) <= set(config_mod.SWEEP_KEYS)):
        if args.run and not Path(args.run).is_dir():
            raise ConfigError("--run", args.run, "give a run directory (one holding status.json and run.log)",
                              "is not a directory")
        return [("run", config_mod.load(args.config, overrides))]
    if args.run:
        raise ConfigError("--run", args.run, "leave it out: each point's own directory is read",
                          f"does not apply to the sweep {args.config}")
    from simulator import sweep, sweep_file

    planned = sweep_file.load(args.config)
    directory = sweep.default_directory(planned)
    return [(f"{point.name} ({', '.join(f'{k}={v}' for k, v in point.params.items())})",
             sweep.point_config(planned, point, directory, overrides)) for point in planned.points]


def add_plan(sub: Any) -> None:
    p = sub.add_parser("plan", help="plan a run or a sweep without allocating: memory per device, the largest grid "
                       "that fits, FFTs and all-to-alls per step, a predicted step time, and the job: the steps to "
                       "time.t_end, wall time and device-hours, predicted and as the run measured them",
                       epilog="exit status: 0 the run fits; 3 it does not fit (the plan says how many devices "
                       "would); 2 bad input")
    config_args(p, required=False)
    p.add_argument("--devices", type=int, metavar="N", help="plan for N devices, 1 to 4096 (default: the devices "
                   "the run would use; virtual CPUs if no GPU is seen)")
    p.add_argument("--platform", choices=("cpu", "gpu"), help="default: this machine's; gpu and no GPU: give --memory "
                   "(compiled by XLA's GPU compiler where JAX's CUDA plug-in is installed, else for this CPU)")
    p.add_argument("--memory", metavar="SIZE", help="memory per device, e.g. 80GB (KB, MB and GB count in 1024s, "
                   "as KiB, MiB and GiB; default: what the devices have free)")
    p.add_argument("--profile", choices=("measured", "h100", "h200"),
                   help="bandwidths of the predicted step: measured here (CPU default) or a GPU's datasheet figures; "
                   "the GPU compiled for without one (default h100)")
    p.add_argument("--run", default=None, metavar="DIR",
                   help="the run directory whose measured step rate (its run.log) and progress (status.json) the job "
                   "lines use (default: the config's output directory, where it holds a run; a sweep's points: "
                   "their own directories)")
    p.set_defaults(func=cmd_plan)


def cmd_config_docs(args: argparse.Namespace) -> int:
    sys.stdout.write(config_mod.config_docs())
    return EXIT_OK


def add_config_docs(sub: Any) -> None:
    p = sub.add_parser("config-docs", help="print the config reference (Markdown) generated from the schema and the "
                       "registered equations (the docs site's reference page)")
    p.set_defaults(func=cmd_config_docs)


def _shipped(command: str, what: str, found: dict[str, Any], name: str | None) -> int:
    """List ``found`` (name and summary) or print the one called ``name``: ``simulator configs`` and ``simulator
    slurm``; a name not among them is a one-line error naming the close one."""
    from simulator import shipped
    from simulator.schema.build import did_you_mean

    if name is None:
        width = max(map(len, found), default=0)
        for key, path in found.items():
            print(f"{key:<{width}}  {shipped.summary(path)}")
        return EXIT_OK
    if name not in found:
        close = did_you_mean(name, list(found))
        raise ConfigError(command, name, f"one of: {', '.join(found) or 'none shipped here'}"
                          + (f" (did you mean {close!r}?)" if close else ""), f"is not a shipped {what}")
    sys.stdout.write(found[name].read_text(encoding="utf-8"))
    return EXIT_OK


def cmd_configs(args: argparse.Namespace) -> int:
    from simulator import shipped

    return _shipped("simulator configs", "config", shipped.configs(), args.name)


def cmd_slurm(args: argparse.Namespace) -> int:
    from simulator import shipped

    return _shipped("simulator slurm", "Slurm template", shipped.templates(), args.name)


def add_configs(sub: Any) -> None:
    p = sub.add_parser("configs", help="list the configs shipped with the package, or print one (redirect it to a "
                       "file of your own: simulator configs taylor_green > tg.yaml)")
    p.add_argument("name", nargs="?", help="the shipped config to print (its YAML, comments included)")
    p.set_defaults(func=cmd_configs)


def add_slurm(sub: Any) -> None:
    p = sub.add_parser("slurm", help="list the Slurm job templates shipped with the package, or print one (redirect "
                       "it to a file of your own and edit its site-specific lines: simulator slurm cpu > cpu.sbatch)")
    p.add_argument("name", nargs="?", help="the template to print (cpu, gpu_node, gpu_nodes, sweep)")
    p.set_defaults(func=cmd_slurm)
