"""The one command-line entry point: ``simulator <command>`` (or ``python -m simulator``).

Exit status: 0 success; 1 a check or run failed (NaN/Inf, a failed write); 2 bad input (config,
arguments, device setup, a refused output directory or restart), reported as one line on stderr;
3 ``simulator plan``: the run does not fit its devices' memory (the plan is printed, with the device
count that would fit it); 75 a run stopped by SIGTERM, SIGUSR1 or SIGINT after writing a checkpoint (resume with --restart), or an
export stopped by one (no partial file left: run it again).

It is longer than 400 lines because every command's lines for the user are written here: the library
returns data and reports through callbacks, only this module prints.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from simulator import config as config_mod
from simulator.errors import ConfigError, RuntimeSetupError

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_DOES_NOT_FIT, EXIT_INTERRUPTED = 0, 1, 2, 3, 75


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other bad input
        self.exit(EXIT_BAD_INPUT, f"error: {self.prog}: {message}\n")


def _config_args(p: argparse.ArgumentParser, required: bool) -> None:
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


def _runtime_overrides(args: argparse.Namespace) -> list[str]:
    """The config overrides of the command line: ``--set`` and the runtime's own flags."""
    overrides = list(args.overrides)
    if args.cpu_devices is not None:
        overrides.append(f"runtime.cpu_devices={args.cpu_devices}")
    if args.threads is not None:
        overrides.append(f"runtime.threads={args.threads}")
    return overrides


def _load(args: argparse.Namespace) -> config_mod.Config:
    return config_mod.load(args.config, _runtime_overrides(args))


def _start(cfg: config_mod.Config) -> str:
    from simulator.run.command import start

    return start(cfg)


def cmd_validate(args: argparse.Namespace) -> int:
    cfg = _load(args)
    sys.stdout.write(config_mod.dump(cfg))
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from simulator import plots

    from simulator.output.hdf5 import OutputWriteError

    try:
        written = plots.plot(Path(args.run_dir), times=args.times, field=args.field, axis=args.axis,
                             frames=args.frames, pdf=args.pdf, diagnostic=args.diagnostic, against=args.against,
                             window=args.window)
    except OutputWriteError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAILED
    for path in written:
        print(path)
    if written.skipped:  # each named above; the figures of the intact files are written
        print(f"some figures were skipped: {args.run_dir} has damaged files (exit status 1)", file=sys.stderr)
    return EXIT_OK if written and not written.skipped else EXIT_FAILED


def cmd_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from simulator.cost import parse_bytes
    from simulator import export
    from simulator.output.hdf5 import OutputWriteError

    try:
        max_size = parse_bytes(args.max_size)
    except (ValueError, OverflowError):
        raise ConfigError("--max-size", args.max_size, "give a size such as 8GiB or 500MB", "is not a size") from None
    if args.fields and args.merge and not args.netcdf:
        raise ConfigError("--fields", " ".join(args.fields), "add --netcdf FILE: --merge copies every field",
                          "applies to the netCDF file only")
    run_dir = Path(args.run_dir)
    netcdf: export.NetcdfPlan | None = None
    merge: export.MergePlan | None = None
    stop = _StopOnSignal()
    try:
        with stop:
            # every refusal comes before anything is written: both plans first
            netcdf = (export.plan_netcdf(run_dir, args.netcdf and Path(args.netcdf), fields=args.fields,
                                         max_size=max_size, overwrite=args.overwrite)
                      if args.netcdf or not args.merge else None)
            merge = export.plan_merge(run_dir, overwrite=args.overwrite) if args.merge else None
            written = export.write_merge(merge) if merge else []
            if netcdf:
                written.append(export.write_netcdf(netcdf))
    except BaseException as err:
        if stop.signal:  # whatever the signal unwound through, the writers removed their temporary files
            target = netcdf.path if netcdf else run_dir / "snapshots" / export.MERGED if merge else run_dir
            print(f"error: {stop.signal} stopped the export before {target} was complete; no partial file is left "
                  "and an earlier export there is kept: run the command again", file=sys.stderr)
            return EXIT_INTERRUPTED
        if isinstance(err, OutputWriteError):
            print(f"error: {err}", file=sys.stderr)
            return EXIT_FAILED
        raise
    for path in written:
        print(path)
    if netcdf:
        print(f"{netcdf.path}: {len(netcdf.run.snapshots) if netcdf.fields else 0} snapshots of "
              f"{', '.join(netcdf.fields) or 'no field'}{'; ' + ', '.join(netcdf.groups) if netcdf.groups else ''}; "
              f"{export.size_text(netcdf.size)}", file=sys.stderr)
        if netcdf.left_out:
            print(f"{netcdf.path} leaves out: {'; '.join(netcdf.left_out)}", file=sys.stderr)
    return EXIT_OK


class _Stopped(BaseException):
    """Raised by :class:`_StopOnSignal`: unwinds a write (not an Exception, so no ``except Exception`` stops it)."""


class _StopOnSignal:
    """SIGTERM, SIGUSR1 or SIGINT during a command that writes files (``export``) end it at once, by raising
    :class:`_Stopped` where it is, so that its writers remove their temporary files on the way out; later
    signals are ignored until then, so the clean-up is not cut short. ``signal``: the name of the first."""

    def __init__(self) -> None:
        self.signal: str | None = None
        self._previous: dict[int, Any] = {}

    def _stop(self, signum: int, _frame: Any) -> None:
        import signal

        if self.signal is None:
            self.signal = signal.Signals(signum).name
            raise _Stopped(self.signal)

    def __enter__(self) -> _StopOnSignal:
        import signal

        from simulator.run.signals import STOP_SIGNALS

        self._previous = {sig: signal.signal(sig, self._stop) for sig in STOP_SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        import signal

        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def cmd_config_docs(args: argparse.Namespace) -> int:
    sys.stdout.write(config_mod.config_docs())
    return EXIT_OK


def cmd_info(args: argparse.Namespace) -> int:
    cfg = _load(args)
    mode = _start(cfg)
    import jax

    from simulator import runtime
    from simulator.fft import BACKENDS

    rep = runtime.device_report()
    if rep.process_index == 0:  # devices and versions first; Slurm's variables only inside a Slurm job
        print(f"global devices:        {rep.global_device_count} {rep.platform}: "
              f"{', '.join(str(d) for d in jax.devices())}")
        print("versions:              " + ", ".join(f"{k} {v}" for k, v in runtime.versions().items()))
        print(f"processes:             {rep.process_count} (process mode: {mode})")
        print(f"CPU threads:           {runtime.cpu_threads()}")
        backend = BACKENDS[cfg.fft.backend]
        shape = backend.mesh_shape(rep.global_device_count, cfg.fft.mesh)
        print(f"config mesh:           {cfg.fft.backend} {list(shape)} {backend.axis_names} "
              f"for grid {list(cfg.grid.shape)} in {cfg.precision}")
        backend.check_layout(cfg.grid.shape, shape)
        fft = runtime.make_fft(cfg)
        print(f"layout:                {fft.describe()}")
        print(f"local FFT:             {fft.local.describe(rep.platform)}")
        slurm = runtime.slurm_environment()
        if any(slurm.values()):
            print("Slurm environment:")
            for name, value in slurm.items():
                print(f"  {name:20s} {value or '-'}")
    # every process reports its own devices, so a mis-bound GPU or task is visible
    print(f"process {rep.process_index}/{rep.process_count} local devices: {', '.join(rep.local_devices)}; GPU binding: {runtime.gpu_binding().reason}")
    return EXIT_OK


#: virtual CPU devices ``simulator check`` runs on where no count is given, fewer where the grid does not divide
CHECK_CPU_DEVICES = (4, 2)


def _check_config(args: argparse.Namespace) -> config_mod.Config:
    """The config ``simulator check`` runs: a single CPU process given no device count checks on several
    virtual devices (:data:`CHECK_CPU_DEVICES`, the first the grid divides over), as one device would
    exchange nothing between devices; the count must be set before JAX starts."""
    from simulator import runtime

    cfg = _load(args)
    if cfg.runtime.cpu_devices is not None or runtime.process_mode(cfg) != "single" or runtime.gpu_visible():
        return cfg
    for count in CHECK_CPU_DEVICES:
        try:
            return config_mod.load(args.config, [*_runtime_overrides(args), f"runtime.cpu_devices={count}"])
        except ConfigError:  # the grid does not divide over that many: fewer
            continue
    return cfg


def cmd_check(args: argparse.Namespace) -> int:
    cfg = _check_config(args)
    _start(cfg)
    import jax
    import jax.numpy as jnp

    from simulator import runtime
    from simulator.fft import BACKENDS
    from simulator.fft.check import check_transform, tolerance
    from simulator.fft.local import resolve as resolve_local_fft

    names = sorted(BACKENDS) if args.all_backends else [cfg.fft.backend]
    dtype = jnp.float64 if cfg.precision == "float64" else jnp.float32
    rank0 = jax.process_index() == 0
    if rank0:
        alone = (" (one device: no exchange between devices is checked; give --cpu-devices N)"
                 if jax.device_count() == 1 else "")
        print(f"FFT self-check on {jax.device_count()} {jax.default_backend()} device(s){alone}, "
              f"{jax.process_count()} process(es), grid {list(cfg.grid.shape)}, {cfg.precision}, "
              f"tolerance {tolerance(dtype):g} (the largest error over NumPy's largest value)")
        # which local FFT the backends that run their own transforms use (FFTW, or XLA's FFT and why)
        platform = jax.default_backend()
        local = resolve_local_fft(None, jax.local_device_count(), platform=platform)
        print(f"local FFT: {local.describe(platform)}")
        print(f"{'backend':10s} {'mesh':8s} {'kind':7s} {'fwd err':>9s} {'roundtrip':>9s} "
              f"{'a2a fwd/inv':>11s} {'gather':>6s}  result")
    failed = 0
    for name in names:
        backend = BACKENDS[name]
        mesh_req = cfg.fft.mesh if name == cfg.fft.backend else None
        shape = backend.mesh_shape(jax.device_count(), mesh_req)
        try:
            backend.check_layout(cfg.grid.shape, shape)
        except ConfigError as err:
            if rank0:
                print(f"{name:10s} {'x'.join(map(str, shape)):8s} skipped: {err}")
            if not args.all_backends:
                raise
            continue
        mesh = runtime.build_mesh(backend, mesh_req)
        ffts = [(backend(cfg.grid.shape, mesh), real) for real in (True, False)]
        if backend.compact_sizes(cfg.grid.shape, shape, None) is not None:  # the 2/3 rule's layout too
            ffts.append((backend(cfg.grid.shape, mesh, compact=True), True))
        for fft, real in ffts:
            r = check_transform(fft, real, dtype, seed=args.seed)
            failed += not r.ok
            if rank0:
                a2a = f"{r.forward_collectives['all-to-all']}/{r.inverse_collectives['all-to-all']}"
                gathers = r.forward_collectives["all-gather"] + r.inverse_collectives["all-gather"]
                print(f"{r.backend:10s} {'x'.join(map(str, r.mesh)):8s} {r.kind:7s} {r.forward_error:9.1e} "
                      f"{r.roundtrip_error:9.1e} {a2a:>11s} {gathers:6d}  "
                      f"{'ok' if r.ok else f'FAILED (tolerance {r.tolerance:g})'}")
    return EXIT_FAILED if failed else EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    from simulator import runtime

    overrides = _runtime_overrides(args)
    gpu = args.platform == "gpu" and runtime.gpu_visible()
    if args.devices is not None and not gpu:
        overrides.append(f"runtime.cpu_devices={args.devices}")  # virtual CPU devices stand in for GPUs
    cfg = config_mod.load(args.config, overrides)
    if args.platform == "gpu" and not gpu and cfg.runtime.cpu_devices is None:
        # JAX kept to the CPU: with a CUDA plug-in installed and no GPU it would otherwise try (and fail, loudly)
        # to start one; the plug-in's compiler still compiles for GPUs (simulator.gpu_compiler)
        cfg = config_mod.load(args.config, [*overrides, "runtime.cpu_devices=1"])
    from simulator.cost import memory_option

    memory = memory_option(args.memory, args.platform == "gpu" and not gpu)
    _start(cfg)
    import jax

    from simulator import plan
    from simulator.run.simulation import Simulation

    lines, fits = plan.plan_lines(cfg, Simulation, args.devices, args.platform, memory, args.profile)
    if jax.process_index() == 0:
        print("\n".join(lines))
    return EXIT_OK if fits else EXIT_DOES_NOT_FIT


def cmd_run(args: argparse.Namespace) -> int:
    from simulator.run.command import run_file

    return run_file(args.config, _runtime_overrides(args), args.out, add_to_t_end=args.add_to_t_end,
                    overwrite=args.overwrite, restart=args.restart, resume=args.resume,
                    allow_physics_change=args.allow_physics_change)


def cmd_sweep(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from simulator import sweep

    if args.jobs is not None and args.jobs < 1:
        raise ConfigError("--jobs", args.jobs, "give at least 1", "is not allowed")
    if args.point is not None:
        index = args.point if args.point >= 0 else os.environ.get("SLURM_ARRAY_TASK_ID")
        if index is None or not str(index).isdigit():
            raise ConfigError("--point", index, "give the point index, or run inside a Slurm array task",
                              "is not set (SLURM_ARRAY_TASK_ID is unset)")
        return sweep.run_point(Path(args.target), int(index))
    if args.group is not None:
        index = args.group if args.group >= 0 else os.environ.get("SLURM_ARRAY_TASK_ID")
        if index is None or not str(index).isdigit():
            raise ConfigError("--group", index, "give the group index, or run inside a Slurm array task",
                              "is not set (SLURM_ARRAY_TASK_ID is unset)")
        return sweep.run_group(Path(args.target), int(index))
    if args.batch is not None and args.batch < 1:
        raise ConfigError("--batch", args.batch, "give at least 1 member per batched program", "is not allowed")
    if args.collect:
        directory = Path(args.target)
        path, rows = sweep.collect(directory)
        finished = sum(r["status"] == "finished" for r in rows)
        print(f"{path}: {len(rows)} points, {finished} finished")
        from simulator import plots

        for written in plots.plot_sweep_dir(directory, args.diagnostic, args.against):
            print(written)
        return EXIT_OK
    spec = sweep.load(args.target)
    directory = Path(args.out) if args.out else sweep.default_directory(spec)
    from simulator.run.lock import RunLock

    lock = RunLock(directory)  # the sweep's own: a second start of it is refused (exit 2) before it writes
    lock.acquire()
    try:
        return _sweep_locked(args, spec, directory)
    finally:
        lock.release()


def _sweep_locked(args: argparse.Namespace, spec: Any, directory: Any) -> int:
    """``sweep FILE [--local | --submit]`` holding the sweep directory's lock (``spec``: the loaded
    :class:`simulator.sweep.Sweep`, ``directory``: its Path)."""
    from pathlib import Path

    from simulator import sweep, sweep_slurm

    manifest = sweep.prepare(spec, directory)
    print(f"sweep {spec.name}: {len(spec.points)} points over {', '.join(spec.swept)}; all valid; manifest "
          f"{directory / sweep.MANIFEST}")
    for p in manifest["points"]:
        print(f"  {p['index']:3d} {sweep.point_state(directory, p['name']):11s} "
              + " ".join(f"{k}={v}" for k, v in p["params"].items()))
    groups = None
    if args.ensemble or args.batch is not None or spec.ensemble:
        groups = sweep.write_groups(directory, manifest, args.batch or spec.batch)
        print(f"ensemble: {len(groups)} group(s) of the same structure, one batched program each: "
              + "; ".join(f"{g}: points {', '.join(map(str, m))}" for g, m in enumerate(groups)))
    out = f" --out {args.out}" if args.out else ""
    if args.submit:
        sweep_slurm.submit(directory, manifest, Path(args.script), dry_run=args.dry_run, groups=groups, report=print)
    elif args.local:
        code = sweep.run_local(directory, manifest, args.jobs or sweep.jobs_default(manifest), groups=groups,
                               report=print)
        if code == EXIT_INTERRUPTED:
            print(f"resume with: simulator sweep {args.target}{out} --local{' --ensemble' if groups else ''}")
        return code
    else:
        print(f"next: simulator sweep {args.target}{out} --local [-j K], or --submit (one Slurm array job)")
    return EXIT_OK


def cmd_launch(args: argparse.Namespace) -> int:
    from simulator.launch import launch

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ConfigError("launch", "", "give a command, e.g. simulator launch -n 2 info", "is missing a command")
    if args.n < 1:
        raise ConfigError("-n", args.n, "give at least 1 process", "is out of range")
    if args.cpu_devices is not None:
        command = [command[0], "--cpu-devices", str(args.cpu_devices), *command[1:]]
    return launch(args.n, [sys.executable, "-m", "simulator", *command], timeout=args.timeout, verbose=args.verbose)


def version_line() -> str:
    """``simulator 0.1.0 (jax 0.10.2, jaxlib 0.10.2, python 3.11.7)``, read from the installed packages'
    metadata, so that asking for it starts no JAX; the simulator's own from ``simulator.__version__`` when
    it runs from a source tree that was never installed."""
    import platform
    from importlib import metadata

    import simulator

    def installed(package: str, otherwise: str = "not installed") -> str:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return otherwise

    stack = ", ".join(f"{name} {installed(name)}" for name in ("jax", "jaxlib", "jaxdecomp"))
    own = installed("simulator", getattr(simulator, "__version__", "unknown"))
    return f"simulator {own} ({stack}, python {platform.python_version()})"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="simulator", description="Distributed pseudo-spectral simulator (JAX).")
    parser.add_argument("--version", action="version", version=version_line(), help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("validate", help="validate a config and print it with every default filled in")
    _config_args(p, required=True)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("plot", help="figures of a run (time series, spectra, slices) or of a collected sweep")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory, or a sweep directory (one holding sweep.yaml)")
    p.add_argument("--pdf", action="store_true", help="also write each figure as PDF (not the frames)")
    p.add_argument("--frames", action="store_true",
                   help="also write plots/frames/slice_NNNN.png, one per snapshot with common colour limits (a movie)")
    p.add_argument("--times", type=float, nargs="+", default=None, metavar="T",
                   help="spectra at the rows nearest these times (default: 5 from first to last)")
    p.add_argument("--window", "--average", dest="window", type=float, nargs=2, default=None, metavar=("T0", "T1"),
                   help="time window of the time-averaged figures, the compensated spectrum's mean, the structure "
                   "functions and the PDFs, ends included (default: the second half of the run; --average is its "
                   "older name)")
    p.add_argument("--field", default=None, metavar="NAME",
                   help="snapshot field the slice shows (default: the equation's plot.slice_field: vorticity, "
                   "density, current, buoyancy, ...; `scalar` shows the first passive scalars, one panel each)")
    p.add_argument("--axis", choices=("x", "y", "z"), default="z", help="normal of the slice plane (default: z)")
    p.add_argument("--diagnostic", default=None, metavar="NAME",
                   help="sweep: the collected column, final_X, peak_X or X (= final_X) (default: peak_dissipation or "
                   "peak_max_density, else the first final_ column)")
    p.add_argument("--against", default=None, metavar="KEY",
                   help="sweep: the swept key on the x axis (default: the first)")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("export", help="a run's snapshots, spectra, time series, statistics, tasks and particles in "
                       "one netCDF file; or its snapshots' shards merged into self-contained HDF5 files")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory")
    p.add_argument("--netcdf", default=None, metavar="FILE",
                   help="the netCDF file (default: RUN_DIR/export/run.nc; written unless only --merge is given)")
    p.add_argument("--fields", nargs="+", default=None, metavar="NAME",
                   help="the snapshot fields of the netCDF file (default: every field of every snapshot)")
    p.add_argument("--merge", action="store_true",
                   help="write RUN_DIR/snapshots/merged/sNNNNNNNN.h5 (+ .xdmf, series.xdmf): each snapshot in one "
                   "file, the shards copied in (the shards and the index stay)")
    p.add_argument("--max-size", default="8GiB", metavar="SIZE",
                   help="refuse a netCDF file larger than this (default: 8GiB); statistics, tasks and particles "
                   "that do not fit are left out, named in one line")
    p.add_argument("--overwrite", action="store_true", help="replace an existing export")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("run", help="run a simulation")
    _config_args(p, required=True)
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output directory (default: output.dir or outputs/<name>)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run in a directory that already holds one (its files are removed)")
    p.add_argument("--restart", nargs="?", const="latest", default=None, metavar="PATH",
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

    p = sub.add_parser("plan", help="plan a run without allocating: memory per device, the largest grid that fits, "
                       "FFTs and all-to-alls per step, a predicted step time",
                       epilog="exit status: 0 the run fits; 3 it does not fit (the plan says how many devices "
                       "would); 2 bad input")
    _config_args(p, required=False)
    p.add_argument("--devices", type=int, metavar="N", help="plan for N devices (virtual CPUs if no GPU is seen)")
    p.add_argument("--platform", choices=("cpu", "gpu"), help="default: this machine's; gpu and no GPU: give --memory "
                   "(compiled by XLA's GPU compiler where JAX's CUDA plug-in is installed, else for this CPU)")
    p.add_argument("--memory", metavar="SIZE", help="memory per device, e.g. 80GB (default: what the devices have free)")
    p.add_argument("--profile", choices=("measured", "h100", "h200"),
                   help="bandwidths of the predicted step: measured here (CPU default) or a GPU's datasheet figures; "
                   "the GPU compiled for without one (default h100)")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("info", help="devices, versions, processes, the mesh a config would use; inside a Slurm "
                       "job its variables")
    _config_args(p, required=False)
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("check", help="self-check the distributed FFT against NumPy on this job's devices",
                       epilog=f"On a CPU without --cpu-devices (or runtime.cpu_devices), {CHECK_CPU_DEVICES[0]} "
                       f"virtual devices (or {CHECK_CPU_DEVICES[1]}, or 1, where the grid does not divide), so "
                       "that the exchange between devices is checked. Exit status 1 if any error is above "
                       "the tolerance the first line states.")
    _config_args(p, required=False)
    p.add_argument("--all-backends", action="store_true", help="check every backend, not only the configured one")
    p.add_argument("--seed", type=int, default=0, help="seed of the random test field")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("config-docs", help="print the config reference (Markdown) generated from the schema and the "
                       "registered equations (the docs site's reference page)")
    p.set_defaults(func=cmd_config_docs)

    p = sub.add_parser("sweep", help="expand and validate a parameter sweep; run it here or as one Slurm array job; "
                       "collect its results")
    p.add_argument("target", help="the sweep file (SWEEP.yaml), or with --point/--collect its directory")
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
    p.add_argument("--script", default="slurm/sweep.sbatch", metavar="FILE",
                   help="with --submit: the array job script (default: slurm/sweep.sbatch)")
    p.add_argument("--dry-run", action="store_true", help="with --submit: print the sbatch command, submit nothing")
    p.add_argument("--diagnostic", default=None, metavar="NAME",
                   help="with --collect: the column to plot (e.g. peak_dissipation; default: chosen from the table)")
    p.add_argument("--against", default=None, metavar="KEY",
                   help="with --collect: the swept key on the x axis (default: the first swept key)")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("launch", help="run a simulator command in N local processes (a laptop stand-in for srun)")
    p.add_argument("-n", type=int, required=True, help="number of processes")
    p.add_argument("--cpu-devices", type=int, default=None, metavar="D", help="virtual CPU devices per process")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="end all processes after S seconds")
    p.add_argument("--verbose", action="store_true",
                   help="forward every line the processes print, gloo's connection reports included")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the simulator command and its arguments")
    p.set_defaults(func=cmd_launch)
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


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        config_mod.check_overrides(argv)  # before argparse: "--set grid.shape 32" is more than "unrecognized: 32"
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    args = build_parser().parse_args(argv)
    sweeps = args.func is cmd_sweep and (args.local or args.point is not None or args.group is not None)
    if args.func is not cmd_run and not sweeps:  # steps nothing: stop signals caught since start-up act now
        from simulator.run.signals import release_early

        release_early()
    try:
        return args.func(args)
    except (ConfigError, RuntimeSetupError) as err:
        print(f"error: {err}", file=sys.stderr)
        _exit_now_if_distributed(EXIT_BAD_INPUT)
        return EXIT_BAD_INPUT
    except Exception:
        traceback.print_exc()
        _exit_now_if_distributed(EXIT_FAILED)
        return EXIT_FAILED


def _exit_now_if_distributed(code: int) -> None:
    from simulator.run.command import exit_now_if_distributed

    exit_now_if_distributed(code)
