"""``simulator info``, ``check`` and ``launch``: this job's devices and processes, the distributed FFT checked
on them, and a command run in several local processes."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from simulator import config as config_mod
from simulator.cli.common import config_args, load, runtime_overrides, start
from simulator.errors import ConfigError
from simulator.run.signals import EXIT_FAILED, EXIT_OK


def cmd_info(args: argparse.Namespace) -> int:
    cfg = load(args)
    mode = start(cfg)
    import jax

    from simulator import runtime
    from simulator.fft import BACKENDS, kernels

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
        backend.check_layout(cfg.grid.cells, shape, walls=cfg.grid.walls.on)
        fft = runtime.make_fft(cfg)
        print(f"layout:                {fft.describe()}")
        print(f"local FFT:             {fft.local.describe(rep.platform)}")
        print(f"particle kernels:      {kernels.describe(rep.platform)}")
        slurm = runtime.slurm_environment()
        if any(slurm.values()):
            print("Slurm environment:")
            for name, value in slurm.items():
                print(f"  {name:20s} {value or '-'}")
    # every process reports its own devices, so a mis-bound GPU or task is visible
    missing = runtime.missing_gpu(cfg)
    print(f"process {rep.process_index}/{rep.process_count} local devices: {', '.join(rep.local_devices)}; "
          f"GPU binding: {missing or runtime.gpu_binding().reason}")
    if missing:
        print(f"warning: {missing}", file=sys.stderr)
    return EXIT_OK


def add_info(sub: Any) -> None:
    p = sub.add_parser("info", help="devices, versions, processes, the mesh a config would use; inside a Slurm "
                       "job its variables")
    config_args(p, required=False)
    p.set_defaults(func=cmd_info)


#: virtual CPU devices ``simulator check`` runs on where no count is given, fewer where the grid does not divide


CHECK_CPU_DEVICES = (4, 2)


def _check_config(args: argparse.Namespace) -> config_mod.Config:
    """The config ``simulator check`` runs: a single CPU process given no device count checks on several
    virtual devices (:data:`CHECK_CPU_DEVICES`, the first the grid divides over), as one device would
    exchange nothing between devices; the count must be set before JAX starts."""
    from simulator import runtime

    cfg = load(args)
    if cfg.runtime.cpu_devices is not None or runtime.process_mode(cfg) != "single" or runtime.gpu_visible():
        return cfg
    for count in CHECK_CPU_DEVICES:
        try:
            return config_mod.load(args.config, [*runtime_overrides(args), f"runtime.cpu_devices={count}"])
        except ConfigError:  # the grid does not divide over that many: fewer
            continue
    return cfg


def cmd_check(args: argparse.Namespace) -> int:
    cfg = _check_config(args)
    start(cfg)
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
            backend.check_installed()
            backend.check_layout(cfg.grid.cells, shape)
        except ConfigError as err:
            if rank0:
                print(f"{name:10s} {'x'.join(map(str, shape)):8s} skipped: {err}")
            if not args.all_backends:
                raise
            continue
        mesh = runtime.build_mesh(backend, mesh_req)
        ffts = [(backend(cfg.grid.cells, mesh), real) for real in (True, False)]
        if backend.compact_sizes(cfg.grid.cells, shape, None) is not None:  # the 2/3 rule's layout too
            ffts.append((backend(cfg.grid.cells, mesh, compact=True), True))
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


def add_check(sub: Any) -> None:
    p = sub.add_parser("check", help="self-check the distributed FFT against NumPy on this job's devices",
                       epilog=f"On a CPU without --cpu-devices (or runtime.cpu_devices), {CHECK_CPU_DEVICES[0]} "
                       f"virtual devices (or {CHECK_CPU_DEVICES[1]}, or 1, where the grid does not divide), so "
                       "that the exchange between devices is checked. Exit status 1 if any error is above "
                       "the tolerance the first line states.")
    config_args(p, required=False)
    p.add_argument("--all-backends", action="store_true", help="check every backend, not only the configured one")
    p.add_argument("--seed", type=int, default=0, help="seed of the random test field")
    p.set_defaults(func=cmd_check)


def cmd_launch(args: argparse.Namespace) -> int:
    from simulator.launch import launch

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ConfigError("launch", "", "give a command, e.g. simulator launch -n 2 info", "is missing a command")
    if args.n < 1:
        raise ConfigError("-n", args.n, "give at least 1 process", "is out of range")
    if command[0] == "simulator":  # `launch -n 2 simulator run ...`: argparse would list every command
        raise ConfigError("launch", " ".join(command), f"give the command without 'simulator': simulator launch -n "
                          f"{args.n} {' '.join(command[1:]) or 'info'}", "names the program twice")
    if args.cpu_devices is not None:
        command = [command[0], "--cpu-devices", str(args.cpu_devices), *command[1:]]
    return launch(args.n, [sys.executable, "-m", "simulator", *command], timeout=args.timeout, verbose=args.verbose)


def add_launch(sub: Any) -> None:
    p = sub.add_parser("launch", help="run a simulator command in N local processes (a laptop stand-in for srun)")
    p.add_argument("-n", type=int, required=True, help="number of processes")
    p.add_argument("--cpu-devices", type=int, default=None, metavar="D", help="virtual CPU devices per process")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="end all processes after S seconds")
    p.add_argument("--verbose", action="store_true",
                   help="forward every line the processes print, gloo's connection reports included")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the simulator command and its arguments")
    p.set_defaults(func=cmd_launch)

