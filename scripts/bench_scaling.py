"""Strong scaling on this machine: one Navier-Stokes step on the same grid over 1 device x 2 threads,
2 devices x 1 thread (one process, a slab of 2 virtual CPU devices) and 2 processes x 1 device (a slab
over two processes started as ``simulator launch`` starts them: simulator/launch.py), with the cost of
distribution measured, not projected.

Per layout, N and spectral layout (``--spectra``: ``fft.layout`` full and compact, both compiled and timed in
the same process and rounds; float64 IF-RK4 Taylor-Green, slab backend, local FFT path ``--fft-path``), in
one process per layout (each layout needs its own device count and threads before JAX starts):

* ``step_ms``: median wall time per step of the compiled chunk (the run loop's program);
* ``fft_ms``: the step's transforms alone, as the step makes them (kinds, batch shapes, order and loops
  read from its jaxpr: scripts/bench_step.py), all-to-alls included on a slab of 2;
* ``a2a_ms``: the step's all-to-alls alone: as many as its compiled HLO holds, each moving one
  transform's exchange (a three-field half spectrum, complex, between y- and kz-sharding), looped in one
  compiled call;
* ``local_ms`` = step_ms - a2a_ms: the work each device does on its own (transforms, elementwise passes);
* ``speedup``: the 1 device x 2 threads step over this layout's step.

Threads: ``SIMULATOR_FFT_THREADS`` (FFTW) is 2 for the one-device layout and 1 for the others, and the
one-thread layouts run XLA's CPU kernels single-threaded (``--xla_cpu_multi_thread_eigen=false``), so
that every layout uses the machine's 2 cores once. Timings are A/B interleaved within a layout (bench_step's
rounds) but layouts run one after another: on a shared machine compare them with the load in mind.

    python scripts/bench_scaling.py                       # N = 64 128, FFTW path where available
    python scripts/bench_scaling.py --sizes 64 --fft-path xla

Results: a table on stdout, outputs/bench/scaling.csv and scaling.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: layout -> (processes, CPU devices per process, FFTW threads per device)
LAYOUTS = {"1 device x 2 threads": (1, 1, 2), "2 devices x 1 thread": (1, 2, 1), "2 processes x 1 device": (2, 1, 1)}
SINGLE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128], help="cubic grid sizes N")
    p.add_argument("--fft-path", default="auto", choices=["auto", "fftw", "xla"], help="local FFT path")
    p.add_argument("--spectra", nargs="+", default=["full", "compact"], choices=["full", "compact"],
                   help="spectral layouts (fft.layout), measured in the same process and rounds")
    p.add_argument("--steps", type=int, default=3, help="steps per timed chunk")
    p.add_argument("--repeats", type=int, default=3, help="timed rounds (median reported)")
    p.add_argument("--out", default="outputs/bench", help="directory for scaling.csv and scaling.json")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # a layout's process: JSON results here
    p.add_argument("--cpu-devices", type=int, default=1, help=argparse.SUPPRESS)
    return p.parse_args()


def exchange_seconds(sim: Any, count: int, exchanged_bytes: float, repeats: int) -> float:
    """Seconds of ``count`` all-to-alls of one transform's exchange on the simulation's slab, alternating
    between y- and kz-sharding of a complex spectrum of the step's own (``exchanged_bytes`` per device over
    the ``count`` exchanges: three fields of the half spectrum, or one component of the compact one,
    (Kx, Ny, Kz), as the compact stages exchange it), looped in one compiled call."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    from simulator.benchmark import timed
    from simulator.fft.slab import AXIS

    mesh = sim.fft.mesh
    n = sim.fft.shape
    kx, kz = (sim.fft.compact[0], sim.fft.compact[2]) if sim.fft.compact else (n[0], n[2] // 2)
    fields = exchanged_bytes / count * mesh.devices.size / (16 * kx * n[1] * kz)  # complex128
    if fields != round(fields):
        raise RuntimeError(f"an exchange of {exchanged_bytes / count:.0f} B per device is no whole number of fields")
    spec = PartitionSpec(None, None, None, AXIS)
    x = jax.jit(lambda: jnp.zeros((round(fields), kx, n[1], kz), jnp.complex128),
                out_shardings=NamedSharding(mesh, spec))()

    def body(_, k):
        k = jax.lax.all_to_all(k, AXIS, split_axis=2, concat_axis=3, tiled=True)  # kz-sharded -> y-sharded
        return jax.lax.all_to_all(k, AXIS, split_axis=3, concat_axis=2, tiled=True)  # and back

    looped = jax.jit(jax.shard_map(lambda k: jax.lax.fori_loop(0, count // 2, body, k), mesh=mesh,
                                   in_specs=spec, out_specs=spec))
    return timed(looped, x, repeats=repeats) * count / (2 * (count // 2))


def worker(args: argparse.Namespace) -> None:
    """One layout: every N measured in this process (and its peers), process 0 writes the rows."""
    from simulator.runtime import configure_devices, initialize_processes

    configure_devices(args.cpu_devices, "float64")
    from simulator import config as config_mod

    initialize_processes(config_mod.load(None))
    import jax
    from bench_step import prepare

    from simulator.benchmark import timed_interleaved
    from simulator.fft import local
    from simulator.planning import cost, plan
    from simulator.run.simulation import Simulation

    path = args.fft_path if args.fft_path != "auto" else ("fftw" if local.native()[0] is not None else "xla")
    rows = []
    for n in args.sizes:
        runs, fns = {}, {}
        for spectra in args.spectra:
            overrides = [f"grid.shape={n}", "physics.name=navier_stokes", "time.integrator=rk4",
                         "initial.name=taylor_green", "time.dt=1e-3", "precision=float64", f"fft.layout={spectra}"]
            runs[spectra] = run = prepare(config_mod, Simulation, overrides, jax.devices(), path, args.steps, "rk4")
            fns[(spectra, "step")], fns[(spectra, "fft")] = run.chunk, run.ffts
        times = timed_interleaved(fns, repeats=args.repeats)
        for spectra, run in runs.items():
            state = plan.abstract_state(run.sim)
            traffic = cost.hlo_traffic(plan.compiled_programs(run.sim, state, ["step"])["step"].as_text())
            a2a = int(traffic.collectives.get("all-to-all", 0))
            exchange = exchange_seconds(run.sim, a2a, traffic.exchanged_bytes, args.repeats) if a2a else 0.0
            rows.append({"N": n, "spectra": spectra, "spectrum": run.sim.fft.describe_layout().removeprefix(", "),
                         "fft_path": path, "devices": jax.device_count(), "processes": jax.process_count(),
                         "step_ms": 1e3 * times[(spectra, "step")] / args.steps,
                         "fft_ms": 1e3 * times[(spectra, "fft")] / args.steps, "a2a_per_step": a2a,
                         "a2a_ms": 1e3 * exchange, "local_fft": run.sim.fft.local.describe(jax.default_backend())})
    if jax.process_index() == 0:
        Path(args.worker).write_text(json.dumps(rows))


def run_layout(name: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The rows of one layout, measured in its own process(es)."""
    from simulator.launch import launch

    processes, devices, threads = LAYOUTS[name]
    env = dict(os.environ, SIMULATOR_FFT_THREADS=str(threads))
    if threads == 1:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + SINGLE_THREAD_XLA).strip()
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "rows.json"
        argv = [sys.executable, __file__, "--worker", str(result), "--cpu-devices", str(devices),
                "--fft-path", args.fft_path, "--steps", str(args.steps), "--repeats", str(args.repeats),
                "--sizes", *map(str, args.sizes), "--spectra", *args.spectra]
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)  # launch() hands its own environment to the children
        try:
            code = launch(processes, argv, timeout=1800) if processes > 1 else subprocess.call(argv, env=env)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        if code != 0:
            raise RuntimeError(f"layout {name!r}: its process exited {code}")
        return [{"layout": name, "threads_per_device": threads, **row} for row in json.loads(result.read_text())]


def main() -> int:
    args = parse_args()
    if args.worker:
        worker(args)
        return 0
    from simulator.benchmark import write_results

    rows = []
    for name in LAYOUTS:
        rows.extend(run_layout(name, args))
    base = {(r["N"], r["spectra"]): r["step_ms"] for r in rows if r["layout"] == next(iter(LAYOUTS))}
    load = os.getloadavg()[0]
    print(f"# strong scaling, float64 rk4 Taylor-Green, slab; load average {load:.1f} on {os.cpu_count()} cores")
    print(f"{'N':>4s} {'spectra':7s} {'layout':24s} {'path':4s} {'step ms':>9s} {'fft ms':>9s} {'a2a':>4s} "
          f"{'a2a ms':>8s} {'local ms':>9s} {'a2a share':>9s} {'speedup':>7s}")
    for r in sorted(rows, key=lambda r: (r["N"], r["spectra"], list(LAYOUTS).index(r["layout"]))):
        r["local_ms"] = r["step_ms"] - r["a2a_ms"]
        r["speedup"] = base[(r["N"], r["spectra"])] / r["step_ms"]
        r["load_average"] = load
        print(f"{r['N']:4d} {r['spectra']:7s} {r['layout']:24s} {r['fft_path']:4s} {r['step_ms']:9.1f} "
              f"{r['fft_ms']:9.1f} {r['a2a_per_step']:4d} {r['a2a_ms']:8.1f} {r['local_ms']:9.1f} "
              f"{r['a2a_ms'] / r['step_ms']:9.2f} {r['speedup']:7.2f}", flush=True)
    print(write_results(args.out, "scaling", rows, {"argv": sys.argv, "load_average": load, "cores": os.cpu_count()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
