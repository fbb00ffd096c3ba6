"""Benchmark one time step of each solver against the FFTs it cannot avoid.

For each N, scheme (NS with each semi-linear scheme of the registry: rk2, rk3, rk4, lsrk4; NS rk4 with one
passive scalar, SP kdk, comoving SP kdk, Boussinesq rk4, MHD rk4; in a plane at ``--plane-sizes``, ns2d rk4 and
rotating shallow water sw1l rk4), backend, device count, precision and
local FFT path (``--fft-paths``: ``xla``, XLA's FFT; ``fftw``, the FFTW custom call of
simulator/fft/local.py), in one invocation:

* ``step_ms``: median wall time per step, from a compiled chunk of steps (the run loop itself), and
  ``vs_xla``: its ratio to the same configuration on the xla path; each in every spectral layout of
  ``--layouts`` (``fft.layout``: ``full``, the half spectrum, and ``compact``, the 2/3 rule's modes only,
  where the physics allows it), ``vs_full``: the ratio of the compact step to the full one;
* ``fft_ms``: the transforms one step must do, timed alone in the same run as the same calls with the
  step's own batch shapes and order (read from the step's jaxpr: NS per stage an inverse r2c of u, one of
  curl u and a forward r2c of u x w, three fields each; SP per step a forward and inverse c2c of psi and
  a forward and inverse r2c of the density/potential), loops looped as the step loops them, in one compiled
  call as the chunk loops its steps (both then reuse their buffers), with the glue that keeps each
  transform live (products of the inverse transforms' outputs feed the forward ones), and
  ``fft_share`` = step_ms / fft_ms (target <= 1.3: the step is FFT-bound). Chunks and FFTs of every
  path are timed A/B interleaved (each round runs each once, in a rotating order), so load on a shared
  machine hits all alike;
* ``ffts``: scalar 3D transforms per step (the FFT primitives of its jaxpr, loops counted); ``a2a``:
  all-to-alls per step in the compiled HLO of one step, loops multiplied by their trip counts
  (target with slab: one per batched transform);
* ``bound_ms`` and ``vs_bound``: the bandwidth bound of the step, the bytes its compiled kernels must
  move (each reads its operands and writes its results once: simulator/planning/cost.py) over this machine's
  memory bandwidth, measured in the same rounds by a streaming kernel (``bandwidth_GBs``), and the
  step's ratio to it;
* ``bytes_per_cell``: the compiled chunk's memory (arguments + outputs + temporaries - donated) over
  all devices, per grid cell;
* ``Mcell_steps_per_s``: N^3 * steps / s / 1e6.

A memory table follows (``--memory-size N``, default 64; ``0`` skips it): every registered equation
with every integrator it takes, in both precisions, on each local FFT path (``--fft-paths``: XLA's FFT,
the path GPUs run through cuFFT, and FFTW's) and each device count of ``--memory-devices`` (default 1
and 4: a slab of 4 virtual CPU devices), compiled abstractly by the planner (simulator/planning/plan.py, nothing
allocated): bytes per cell of the chunk and of the run's peak (chunk, diagnostics, spectra, snapshot
fields), against issue 22's targets on the XLA path (Navier-Stokes lsrk4 float32 <= 56, rk4 float32 <= 64,
rk4 float64 <= 128, Schrodinger-Poisson kdk float32 <= 32, peak); outputs/bench/memory.csv and
memory.json. CPU compilations: a GPU compiles the same programs with its own scheduler and fusions
(docs/PERFORMANCE.md gives both). On CPU the process starts as many virtual devices as the largest of
``--devices`` and ``--memory-devices`` (the timed rows use the first ``--devices`` of them).

With ``--peer-python PY`` (an environment with FluidSim, see scripts/peer_fluidsim.py), FluidSim's
ns3d Taylor-Green RK4 step (its ns2d and sw1l beside the planar rows of the same names: ``--schemes sw1l``
against FluidSim's sw1l at f = 1, c^2 = 10, nu_2 = 1e-3) is measured in the same invocation, its chunks of steps
interleaved with ours in the same rounds, and ``vs_fluidsim`` = our step / its step is reported for the NS rk4
float64 rows (and the planar rows) on one device, by wall time and by CPU time (all threads of each process: on a loaded
machine, the work each does rather than the time it waited for a core).

    python scripts/bench_step.py                                   # N = 64 128, 1 CPU device
    python scripts/bench_step.py --peer-python /path/to/fluidsim-venv/bin/python
    python scripts/bench_step.py --sizes 64 128 --precisions float64 --schemes rk4 --fft-paths xla fftw
    python scripts/bench_step.py --sizes 256 512 --platform gpu    # on a GPU machine
    python scripts/bench_step.py --sizes 64 --schemes rk4 --memory-size 128   # memory table at 128^3
    python scripts/bench_step.py --schemes sw1l --precisions float64 --layouts full --memory-size 0 \
        --peer-python /path/to/fluidsim-venv/bin/python          # shallow water at 512^2 to 2048^2
    python scripts/bench_step.py --memory-only --memory-size 64    # the memory table alone

Results: a table on stdout, outputs/bench/step.csv and step.json (and memory.csv, memory.json).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.benchmark import ServedPeer  # no JAX: the devices are configured later
from simulator.time.schemes import SEMILINEAR, compatible

# scheme -> (physics, integrator, initial condition, extra config overrides): Navier-Stokes with every
# semi-linear scheme of the registry, then the other equations and configurations
SCHEMES = {
    **{name: ("navier_stokes", name, "taylor_green", []) for name in compatible(SEMILINEAR)},
    "rk4_scalar": ("navier_stokes", "rk4", "taylor_green",
                   ["physics.scalars=[{diffusivity: 1e-3, mean_gradient: [0, 0, 1]}]", "initial.scalars.name=random"]),
    "kdk": ("schrodinger_poisson", "kdk", "random", ["grid.box=1", "initial.amplitude=0.3"]),
    "kdk_cosmo": ("fdm_cosmo", "kdk", "gaussian", ["grid.box=1"]),  # comoving: step factors from a(t)
    "bous": ("boussinesq", "rk4", "random", ["physics.coriolis=1", "initial.buoyancy=4"]),
    "mhd": ("mhd", "rk4", "orszag_tang", []),
    # the plane (Navier-Stokes in vorticity form) at --plane-sizes N^2, beside scripts/peer_fluidsim.py's ns2d case
    "ns2d": ("ns2d", "rk4", "random", ["physics.viscosity=1e-4"]),
    # rotating shallow water beside scripts/peer_fluidsim.py's sw1l case: f = 1, c^2 = 10, nu_2 = 1e-3
    "sw1l": ("sw1l", "rk4", "random", ["physics.coriolis=1", f"physics.wave_speed={10 ** 0.5!r}",
                                       "physics.viscosity=1e-3"]),
}
#: the planar schemes, run at --plane-sizes against FluidSim's solver of the same name (the others at --sizes,
#: against its ns3d)
PLANAR = ("ns2d", "sw1l")
#: issue 22's memory targets on the XLA FFT path: (equation, scheme, precision) -> peak bytes per cell
TARGETS = {("navier_stokes", "lsrk4", "float32"): 56, ("navier_stokes", "rk4", "float32"): 64,
           ("navier_stokes", "rk4", "float64"): 128, ("schrodinger_poisson", "kdk", "float32"): 32}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128], help="cubic grid sizes N")
    p.add_argument("--plane-sizes", type=int, nargs="+", default=[512, 1024, 2048],
                   help="square grid sizes N of the planar schemes (ns2d, sw1l)")
    p.add_argument("--schemes", nargs="+", default=list(SCHEMES), choices=list(SCHEMES))
    p.add_argument("--backends", nargs="+", default=["slab"])
    p.add_argument("--devices", type=int, nargs="+", default=[1], help="device counts to use")
    p.add_argument("--precisions", nargs="+", default=["float64", "float32"], choices=["float32", "float64"])
    p.add_argument("--steps", type=int, default=5, help="steps per timed chunk")
    p.add_argument("--repeats", type=int, default=5, help="timed rounds of chunks and of FFTs (median reported)")
    p.add_argument("--fft-paths", nargs="+", default=["xla", "fftw"], choices=["xla", "fftw"],
                   help="local FFT paths to measure (fftw: where the native extension is available)")
    p.add_argument("--layouts", nargs="+", default=["full", "compact"], choices=["full", "compact"],
                   help="spectral layouts (fft.layout) to measure; the compact one only where the physics allows it")
    p.add_argument("--platform", default="cpu", choices=["cpu", "gpu"],
                   help="cpu: virtual CPU devices (max of --devices); gpu: the visible GPUs")
    p.add_argument("--peer-python", default=None, help="python of an environment with FluidSim installed")
    p.add_argument("--memory-size", type=int, default=64,
                   help="N of the memory table of every equation, integrator and precision (0: no table)")
    p.add_argument("--memory-devices", type=int, nargs="+", default=[1, 4],
                   help="device counts of the memory table (a slab over that many devices)")
    p.add_argument("--memory-only", action="store_true", help="the memory table alone, no timings")
    p.add_argument("--out", default="outputs/bench", help="directory for step.csv and step.json")
    return p.parse_args()


class FluidSimPeer(ServedPeer):
    """FluidSim's ns3d Taylor-Green RK4 run in its own environment (scripts/peer_fluidsim.py --serve),
    stepping on request so that its steps are timed interleaved with ours."""

    def __init__(self, python: str, sizes: list[int], solver: str = "ns3d"):
        super().__init__(python, Path(__file__).with_name("peer_fluidsim.py"), "--sizes", *map(str, sizes),
                         "--solver", solver)

    def steps(self, n: int, steps: int) -> None:
        """Run ``steps`` steps at size n; the peer's CPU seconds (all its threads, as it measures them: the
        same clock as ours) go to ``self.cpu[n]``."""
        self.request(n, f"{n} {steps}")


@dataclass
class Prepared:
    """One configuration on one local FFT path: the simulation, its compiled chunk (the state is
    donated, so it is threaded through ``holder``) and the batched transforms one step must do."""

    sim: Any
    holder: dict
    chunk: Callable[[], Any]
    ffts: Callable[[], Any]


def prepare(config_mod, simulation_cls, overrides: list[str], devices, path: str, steps: int,
            scheme: str) -> Prepared:
    """Build the simulation with its FFT backend on local FFT ``path`` and compile its chunk of
    ``steps`` steps and the transforms of as many steps (``ffts()`` runs them; time / steps = per step)."""
    import jax
    import jax.numpy as jnp

    from simulator.benchmark import fft_path, replay, seed_arrays, transform_calls
    from simulator.planning import plan

    with fft_path(path):
        sim = simulation_cls(config_mod.load(None, overrides), devices)
    fft = sim.fft
    holder = {"s": sim.advance(sim.initial_state(), steps, 1e-3, donate=True)}  # compiles the chunk

    def chunk():
        holder["s"] = sim.advance(holder["s"], steps, 1e-3, donate=True)
        return holder["s"]

    # The transforms one step makes, as the same calls (kind, batch shape, order, loops: read from the
    # step's jaxpr), looped inside one compiled call like the chunk's steps (so both reuse their buffers
    # from the second iteration on: timing single calls would charge the transforms for fresh,
    # page-faulting output buffers the step never pays).
    state = jax.tree.map(jnp.copy, holder["s"])  # the chunk donates holder["s"]; this stays
    calls = transform_calls(sim, plan.abstract_state(sim))
    seeds = seed_arrays(fft, state)
    looped = jax.jit(lambda s: jax.lax.fori_loop(0, steps, lambda _, s: replay(fft, calls, s), s))
    return Prepared(sim, holder, chunk, lambda: looped(seeds))


def main() -> int:
    args = parse_args()
    from simulator.runtime import configure_devices

    wanted = max(args.devices + (args.memory_devices if args.memory_size else []))
    configure_devices(wanted if args.platform == "cpu" else None, "float64")
    import jax
    import jax.numpy as jnp

    from simulator import config as config_mod
    from simulator.benchmark import (
        machine,
        memory_bytes,
        timed_interleaved,
        write_results,
    )
    from simulator.fft import BACKENDS, local
    from simulator.planning import cost, plan
    from simulator.run.simulation import Simulation

    planar = [s for s in args.schemes if s in PLANAR]
    peers = {}  # FluidSim's solver -> its served process: ns3d beside the box's rows, ns2d and sw1l beside the plane's
    if args.peer_python:
        if len(planar) < len(args.schemes):
            peers["ns3d"] = FluidSimPeer(args.peer_python, args.sizes)
        for scheme in planar:
            peers[scheme] = FluidSimPeer(args.peer_python, args.plane_sizes, scheme)
    peer: dict[tuple[str, int], float] = {}  # (solver, N) -> FluidSim ms per step, in the rounds of our rows beside it
    peer_cpu: dict[tuple[str, int], float] = {}  # (solver, N) -> FluidSim CPU ms per step (all its threads)
    peer_name = "; ".join(p.name for p in peers.values()) or None  # versions, FFT classes and threads
    for proc in peers.values():
        print(f"# peer: {proc.name}", flush=True)
    devices = jax.devices()
    paths = list(args.fft_paths)
    if "fftw" in paths and (local.native()[0] is None or args.platform != "cpu"):
        print(f"# fftw path not measured: {local.native()[1] or 'the FFTW path is CPU-only'}", flush=True)
        paths.remove("fftw")
    if args.memory_only:
        memory_table(args.memory_size, args.out, paths, args.memory_devices)
        return 0
    rows = []
    # the machine's memory bandwidth, timed in the same rounds as the steps: passes of y = x + 1 over
    # 256 MiB, in place, looped in one compiled call (each pass reads and writes every byte once)
    stream_bytes = 2 * (256 << 20) * 8
    sweep = jax.jit(lambda v: jax.lax.fori_loop(0, 8, lambda i, v: v + 1, v), donate_argnums=0)
    stream_holder = {"x": jax.device_put(jnp.zeros(64 << 20, jnp.float32), devices[0])}

    def stream():
        stream_holder["x"] = sweep(stream_holder["x"])
        return stream_holder["x"]

    print(f"# {machine()['device_kind']} x{len(devices)}, {machine()['cores']} cores", flush=True)
    print(f"{'N':>4s} {'scheme':6s} {'backend':9s} {'dev':>3s} {'prec':7s} {'path':4s} {'layout':7s} {'step ms':>9s} "
          f"{'vs full':>7s} {'vs xla':>6s} "
          f"{'fft ms':>9s} {'share':>6s} {'bound ms':>8s} {'vs bnd':>6s} {'ffts':>4s} {'a2a':>3s} {'B/cell':>7s} "
          f"{'Mcell*st/s':>10s} {'vs fluidsim':>11s}", flush=True)
    cases = [(n, s) for n in args.sizes for s in args.schemes if s not in PLANAR]
    cases += [(n, s) for n in args.plane_sizes for s in planar]
    for n, scheme in cases:
        physics, integrator, initial, extra = SCHEMES[scheme]
        solver = scheme if scheme in PLANAR else "ns3d"
        cells = n ** (2 if scheme in PLANAR else 3)
        for backend in args.backends:
            for nd in sorted({1 if backend == "single" else d for d in args.devices}):
                for prec in args.precisions:
                    overrides = [f"grid.shape={n}", f"fft.backend={backend}", f"precision={prec}",
                                 f"physics.name={physics}", f"time.integrator={integrator}",
                                 f"initial.name={initial}", "time.dt=1e-3", *extra]
                    runs = {}
                    # jaxdecomp's local transforms are inside its package: XLA's path only
                    for path in paths if BACKENDS[backend].owns_local_transforms else ["xla"]:
                        for layout in args.layouts:
                            try:
                                run = prepare(config_mod, Simulation, [*overrides, f"fft.layout={layout}"],
                                              devices[:nd], path, args.steps, scheme)
                            except ValueError as err:  # ConfigError: no such layout or mesh for this grid
                                print(f"# skip {scheme} {backend} {layout} on {nd}: {err}", flush=True)
                                continue
                            runs[(path, layout)] = run
                    if not runs:
                        continue
                    # steps and the FFTs alone, every path, A/B interleaved in the same rounds
                    fns = {}
                    for key, run in runs.items():
                        fns[(key, "step")] = run.chunk
                        fns[(key, "fft")] = run.ffts
                    # FluidSim beside our float64 rows of its scheme (its ns2d beside our float32 row too: our
                    # runs' default precision, against FluidSim's float64, its only one)
                    peer_proc = peers.get(solver)
                    with_peer = (peer_proc is not None and scheme in ("rk4", *PLANAR) and nd == 1
                                 and (prec == "float64" or scheme in PLANAR))
                    if with_peer:
                        fns["fluidsim"] = lambda n=n, proc=peer_proc: proc.steps(n, args.steps)
                    fns["stream"] = stream
                    cpu: dict = {}
                    if with_peer:
                        peer_proc.cpu.pop(n, None)
                    times = timed_interleaved(fns, repeats=args.repeats, cpu=cpu)
                    bandwidth = stream_bytes / times["stream"]
                    if with_peer:
                        peer[(solver, n)] = 1e3 * times["fluidsim"] / args.steps
                        peer_cpu[(solver, n)] = (1e3 * statistics.median(peer_proc.cpu[n][-args.repeats:])
                                                 / args.steps)
                    for (path, layout), run in runs.items():
                        key = (path, layout)
                        sim = run.sim
                        step_s = times[(key, "step")] / args.steps
                        state = plan.abstract_state(sim)
                        programs = plan.compiled_programs(sim, state, ["chunk", "step"])
                        mem = memory_bytes(programs["chunk"])
                        traffic = cost.hlo_traffic(programs["step"].as_text())
                        a2a = int(traffic.collectives.get("all-to-all", 0))
                        bound_s = traffic.memory_bytes / bandwidth  # one device's traffic at its bandwidth
                        fft_s = times[(key, "fft")] / args.steps
                        ffts = plan.transforms_per_step(sim, state)
                        xla_s = times[(("xla", layout), "step")] / args.steps if ("xla", layout) in runs else None
                        full_s = times[((path, "full"), "step")] / args.steps if (path, "full") in runs else None
                        ratio_peer = step_s * 1e3 / peer[(solver, n)] if with_peer else None
                        cpu_ms = 1e3 * cpu[(key, "step")] / args.steps
                        row = {
                            "N": n, "scheme": scheme, "backend": backend, "devices": nd, "precision": prec,
                            "fft_path": path, "local_fft": sim.fft.local.describe(jax.default_backend()),
                            "layout": "compact" if sim.fft.compact is not None else "full",
                            "step_ms": 1e3 * step_s, "vs_xla": None if xla_s is None else step_s / xla_s,
                            "vs_full": None if full_s is None else step_s / full_s,
                            "fft_ms": 1e3 * fft_s, "fft_share": step_s / fft_s,
                            "bound_ms": 1e3 * bound_s, "vs_bound": step_s / bound_s,
                            "bandwidth_GBs": bandwidth / 1e9,
                            "traffic_bytes_per_cell": traffic.memory_bytes * nd / cells, "ffts": ffts,
                            "all_to_all": a2a,
                            "bytes_per_cell": None if mem is None else mem * nd / cells,
                            "Mcell_steps_per_s": cells / step_s / 1e6,
                            "fluidsim": peer_proc.name if ratio_peer is not None else None,
                            "fluidsim_ms": peer.get((solver, n)) if ratio_peer is not None else None,
                            "vs_fluidsim": ratio_peer, "step_cpu_ms": cpu_ms,
                            "fluidsim_cpu_ms": peer_cpu.get((solver, n)) if ratio_peer is not None else None,
                            "vs_fluidsim_cpu": cpu_ms / peer_cpu[(solver, n)] if ratio_peer is not None else None,
                            "repeats": args.repeats, "steps": args.steps,
                        }
                        rows.append(row)
                        # rewritten after every row: a benchmark stopped at its limit keeps what it measured
                        write_results(args.out, "step", rows, {**machine(), "fluidsim_ms_per_step": shown(peer),
                                                               "fluidsim": peer_name, "fft_paths": paths})
                        bpc = "-" if mem is None else f"{row['bytes_per_cell']:7.1f}"
                        vs = "-" if ratio_peer is None else f"{ratio_peer:.2f}"
                        vx = "-" if xla_s is None else f"{step_s / xla_s:6.2f}"
                        vf = "-" if full_s is None else f"{step_s / full_s:.2f}"
                        print(f"{n:4d} {scheme:6s} {backend:9s} {nd:3d} {prec:7s} {path:4s} {row['layout']:7s} "
                              f"{row['step_ms']:9.2f} {vf:>7s} "
                              f"{vx:>6s} {row['fft_ms']:9.2f} {row['fft_share']:6.2f} {row['bound_ms']:8.2f} "
                              f"{row['vs_bound']:6.2f} {ffts:4d} {a2a:3d} {bpc:>7s} "
                              f"{row['Mcell_steps_per_s']:10.2f} {vs:>11s}", flush=True)
    for proc in peers.values():
        proc.close()
    for line in summary_lines(rows, paths[-1]):
        print(line, flush=True)
    meta = {**machine(), "fluidsim_ms_per_step": shown(peer), "fluidsim": peer_name, "fft_paths": paths}
    print(write_results(args.out, "step", rows, meta), flush=True)
    if args.memory_size:
        memory_table(args.memory_size, args.out, paths, args.memory_devices)
    return 0


def summary_lines(rows: list[dict[str, Any]], path: str) -> list[str]:
    """The closing summary: one line per row of FFT path ``path`` measured beside FluidSim, by FluidSim's solver
    (ns3d, then ns2d) and size, each with the FluidSim figures of that row's own rounds (``fluidsim_ms``,
    ``fluidsim_cpu_ms``): every precision and backend is timed in rounds of its own, so a size's FluidSim time
    differs from row to row."""
    beside = [r for r in rows if r["vs_fluidsim"] is not None and r["fft_path"] == path]
    beside.sort(key=lambda r: (r["scheme"] in PLANAR, r["N"]))  # stable: the rows' own order within a size
    return [f"{r['N']:4d} {r['fluidsim']} rk4 float64: {r['fluidsim_ms']:.2f} ms/step (peer, interleaved with this "
            f"row's rounds); ours {r['scheme']} {r['backend']} {r['precision']} {r['layout']} layout: "
            f"{r['step_ms']:.2f} ms/step, wall ratio {r['vs_fluidsim']:.2f}, CPU time per step (all threads) ours "
            f"{r['step_cpu_ms']:.2f} ms, FluidSim {r['fluidsim_cpu_ms']:.2f} ms, ratio {r['vs_fluidsim_cpu']:.2f}"
            for r in beside]


def shown(peer: dict[tuple[str, int], float]) -> dict[str, float]:
    """The peer's figures keyed ``"ns2d 512"`` for the results file (JSON keys are strings)."""
    return {f"{solver} {n}": ms for (solver, n), ms in sorted(peer.items())}


def memory_table(n: int, out: str, paths: list[str], device_counts: list[int]) -> None:
    """Bytes per cell of every registered equation, integrator and precision at N = n, on each local FFT
    path and each device count (a slab), from the planner's abstract compilation (nothing allocated)."""
    import jax

    from simulator import config as config_mod
    from simulator.benchmark import fft_path, machine, write_results
    from simulator.equations import registry
    from simulator.planning.plan import make_plan
    from simulator.run.simulation import Simulation
    from simulator.time.schemes import compatible

    counts = [d for d in device_counts if d <= len(jax.devices())]
    if counts != device_counts:
        print(f"# memory table: only {len(jax.devices())} device(s), not {max(device_counts)}", flush=True)
    rows = []
    print(f"# memory at {n}^3 (compiled abstractly for {jax.default_backend()}): bytes per cell over all devices "
          f"of the chunk and of the run's peak; target: issue 22's, on the xla path")
    print(f"{'equation':20s} {'scheme':6s} {'prec':7s} {'path':4s} {'dev':>3s} {'chunk':>7s} {'peak':>7s} "
          f"{'target':>9s}  programs (B/cell)")
    for name, info in registry().items():
        for scheme in compatible(info.protocol, info.diagonal_linear):
            for prec in ("float32", "float64"):
                cfg = config_mod.load(None, [f"grid.shape={n}", f"physics.name={name}", f"time.integrator={scheme}",
                                             f"precision={prec}", "output.snapshots.at_end=true"])
                target = TARGETS.get((name, scheme, prec))
                for path in paths:
                    for nd in counts:
                        with fft_path(path):
                            sim = Simulation(cfg, jax.devices()[:nd])
                        p = make_plan(sim, ("chunk", "diagnostics", "spectra", "fields"), memory=1)
                        per_cell = {k: v * nd / n**3 for k, v in p.program_bytes.items()}
                        met = None if target is None or path != "xla" else p.bytes_per_cell <= target
                        rows.append({"N": n, "equation": name, "scheme": scheme, "precision": prec, "fft_path": path,
                                     "devices": nd, "chunk_bytes_per_cell": per_cell["chunk"],
                                     "peak_bytes_per_cell": p.bytes_per_cell, "target": target, "target_met": met,
                                     **{f"{k}_bytes_per_cell": v for k, v in per_cell.items() if k != "chunk"}})
                        mark = "" if met is None else f"{target} {'met' if met else 'NOT'}"
                        print(f"{name:20s} {scheme:6s} {prec:7s} {path:4s} {nd:3d} {per_cell['chunk']:7.1f} "
                              f"{p.bytes_per_cell:7.1f} {mark:>9s}  "
                              + ", ".join(f"{k} {v:.1f}" for k, v in per_cell.items()), flush=True)
    print(write_results(out, "memory", rows, {**machine(), "fft_paths": paths, "device_counts": counts}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
