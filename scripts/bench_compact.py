"""The compact spectral layout against the full one, from the compiled programs alone (exact: no timing).

For each case (equation, integrator, precision, grid, backend, devices) the run's programs are compiled
abstractly by the planner (:func:`simulator.planning.plan.make_plan`: the state as ``jax.ShapeDtypeStruct``s, nothing
allocated) in both spectral layouts, ``fft.layout = full`` (the half spectrum, the baseline) and ``compact``
(only the 2/3 rule's modes, :mod:`simulator.fft.compact`), on XLA's local FFT: the path GPUs run, which
``simulator plan --platform gpu`` compiles on a CPU (``SIMULATOR_FFT=xla``). Per layout the table gives

* bytes per cell over all devices (``compiled.memory_analysis()``: arguments + outputs + temporaries -
  donated, per device, times the devices, over the cells: :func:`simulator.planning.plan.program_bytes`) of the
  chunk of steps, of the largest of the run's other programs (diagnostics, snapshot fields, spectra...:
  :func:`simulator.planning.plan.run_programs`) and the peak of them all;
* the all-to-alls of one step, the bytes they exchange per device (their operands in the step's optimized
  HLO, loops times their trip counts: :func:`simulator.planning.cost.hlo_traffic`) and of those the bytes each
  device sends to the others; compiled for a GPU (``--target``), how many are asynchronous and how many of
  those run while another field is transformed (an FFT scheduled between their start and their done);
* compact / full of each, against the full layout compiled in the same invocation.

Part ``largest``: the planner's largest cubic grid on one GPU of ``--memory`` (JAX's allocator share of it, as
``simulator plan --platform gpu --memory 80GB`` takes it), from the plan of ``--largest-grid`` in each
layout (:attr:`simulator.planning.plan.Plan.largest_cubic`), and that grid planned in turn: its peak must fit.

    python scripts/bench_compact.py              # the default cases below (a few minutes on 2 cores)
    python scripts/bench_compact.py --parts memory --sizes 64 --schemes lsrk4:float32 --meshes slab:1 slab:4
    python scripts/bench_compact.py --parts exchange --exchange-sizes 64 128 --exchange-meshes slab:4 pencil:4
    python scripts/bench_compact.py --target h100     # compiled by XLA's GPU compiler for an H100

``--target h100`` (or ``h200``) compiles the same programs with XLA's GPU compiler for that GPU, without one
(:mod:`simulator.planning.gpu_compiler`; needs JAX's CUDA plug-in, ``pip install "jax[cuda13]"``): the GPU build's own
memory and exchanges. The default, ``cpu``, compiles them for this machine's CPU standing in, as ``simulator
plan --platform gpu`` does without the plug-in; XLA's CPU compiler schedules for concurrency and fuses
differently, so its bytes per cell differ from the GPU build's (docs/PERFORMANCE.md has both).

Results: a table on stdout, ``outputs/bench/compact.csv`` and ``compact.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYOUTS = ("full", "compact")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default=str(ROOT / "configs" / "taylor_green.yaml"),
                   help="the run's config (its programs are planned; default: Navier-Stokes Taylor-Green)")
    p.add_argument("--parts", nargs="+", default=["memory", "exchange", "largest"],
                   choices=["memory", "exchange", "largest"])
    p.add_argument("--schemes", nargs="+", default=["lsrk4:float32", "rk4:float32", "rk4:float64"],
                   help="INTEGRATOR:PRECISION (memory part; the first one for the other parts)")
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128], help="cubic grid sizes N (memory part)")
    p.add_argument("--meshes", nargs="+", default=["slab:1", "slab:4"],
                   help="BACKEND:DEVICES of the memory part (virtual CPU devices)")
    p.add_argument("--exchange-meshes", nargs="+",
                   default=["slab:2", "slab:4", "slab:8", "pencil:2", "pencil:4", "pencil:8"],
                   help="BACKEND:DEVICES of the exchange part (first scheme)")
    p.add_argument("--exchange-sizes", type=int, nargs="+", default=[128],
                   help="grid sizes of the exchange part (at 64^3 a slab of 4 or 8 rounds Kz from 22 up to 24)")
    p.add_argument("--largest-grid", type=int, default=1024, help="grid planned on one GPU (largest part)")
    p.add_argument("--largest-configs", nargs="+", default=["defaults", str(ROOT / "configs" / "taylor_green.yaml")],
                   help="configs of the largest part ('defaults': the built-in ones, a run without snapshots)")
    p.add_argument("--memory", default="80GB", help="memory of that GPU (largest part)")
    p.add_argument("--target", default="cpu", choices=["cpu", "h100", "h200"],
                   help="compile for this machine's CPU standing in for a GPU (cpu), or for that GPU by XLA's GPU "
                   "compiler without one (needs JAX's CUDA plug-in: pip install 'jax[cuda13]')")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="a config override for every case (as simulator's --set), e.g. fft.in_turn=true")
    p.add_argument("--out", default="outputs/bench", help="directory for compact.csv and compact.json")
    return p.parse_args()


def _mesh(text: str) -> tuple[str, int]:
    backend, _, devices = text.partition(":")
    return backend, int(devices or 1)


#: config overrides of every case (--set), "KEY=VALUE" as simulator's --set takes them
OVERRIDES: list[str] = []


def plan_case(config: str, n: int, integrator: str, precision: str, backend: str, devices: int, layout: str,
              memory: int | None = None, gpu: str | None = None) -> tuple[dict, object]:
    """One layout of one case: the planner's figures as a row (bytes per cell over all devices), and the plan."""
    import jax

    from simulator.api import load_config
    from simulator.fft.mesh import as_on
    from simulator.planning import plan
    from simulator.run.simulation import Simulation

    cfg = load_config(None if config == "defaults" else config,
                      [*OVERRIDES, f"grid.shape={n}", f"time.integrator={integrator}", f"precision={precision}",
                       f"fft.backend={backend}", f"fft.layout={layout}"])
    sim = Simulation(cfg, jax.devices()[:devices])
    t0 = time.perf_counter()
    with as_on("gpu"):  # and a GPU's route to a compact spectrum on one device, as the planner takes it
        p = plan.make_plan(sim, (*plan.run_programs(cfg), "step"), memory=memory or 1 << 40, gpu=gpu)
    per_cell = {name: b * p.devices / p.cells for name, b in p.program_bytes.items()}
    others = {name: v for name, v in per_cell.items() if name != "chunk"}
    other = max(others, key=others.get) if others else ""
    t = p.traffic
    row = {"config": Path(config).stem, "equation": cfg.physics.name, "integrator": integrator,
           "precision": precision, "N": n, "backend": backend, "mesh": "x".join(map(str, p.mesh)),
           "devices": p.devices, "layout": layout, "spectrum": sim.fft.describe_layout().removeprefix(", "),
           "why": sim.fft.layout_reason,
           "chunk_B_per_cell": per_cell["chunk"], "other_program": other,
           "other_B_per_cell": others.get(other, 0.0), "peak_B_per_cell": p.bytes_per_cell,
           "all_to_alls": int(t.collectives.get("all-to-all", 0)), "a2a_bytes_per_device": t.exchanged_bytes,
           "a2a_async": int(t.async_exchanges), "a2a_hidden": int(t.hidden_exchanges),
           "a2a_sent_per_device": t.sent_bytes, "ffts_per_step": p.ffts_per_step,
           "compile_s": time.perf_counter() - t0}
    return row, p


def with_ratios(rows: list[dict]) -> list[dict]:
    """compact / full of each figure, against the full row of the same case."""
    key = ("part", "config", "integrator", "precision", "N", "backend", "devices")
    full = {tuple(r[k] for k in key): r for r in rows if r["layout"] == "full"}
    for r in rows:
        base = full.get(tuple(r[k] for k in key))
        for name in ("chunk_B_per_cell", "other_B_per_cell", "peak_B_per_cell", "a2a_bytes_per_device"):
            if base is not None and base.get(name):
                r[f"{name.removesuffix('_per_cell').removesuffix('_per_device')}_ratio"] = r[name] / base[name]
    return rows


def print_row(r: dict) -> None:
    ratios = " ".join(f"{r[k]:5.2f}" if k in r else f"{'-':>5s}" for k in ("chunk_B_ratio", "peak_B_ratio",
                                                                                "a2a_bytes_ratio"))
    print(f"{r['part']:8s} {r['config'][:12]:12s} {r['equation'][:13]:13s} {r['integrator']:5s} {r['precision']:7s} "
          f"{r['N']:5d} {r['backend']:6s} {r['mesh']:>5s} {r['layout']:7s} {r['chunk_B_per_cell']:6.1f} "
          f"{r['other_program'][:11]:>11s} {r['other_B_per_cell']:6.1f} {r['peak_B_per_cell']:6.1f} "
          f"{r['all_to_alls']:4d} {r['a2a_bytes_per_device'] / 2**20:9.2f} {ratios} {r.get('largest', ''):>7}",
          flush=True)


def main() -> int:
    args = parse_args()
    OVERRIDES.extend(args.overrides)
    meshes = [_mesh(m) for m in args.meshes] if "memory" in args.parts else []
    exchange = [_mesh(m) for m in args.exchange_meshes] if "exchange" in args.parts else []
    from simulator.runtime import configure_devices

    precisions = {s.partition(":")[2] for s in args.schemes}
    configure_devices(max([d for _, d in meshes + exchange] + [1]), "float64" if "float64" in precisions else "float32")
    os.environ["SIMULATOR_FFT"] = "xla"  # the GPU's path (simulator plan --platform gpu on a CPU)
    gpu = None
    if args.target != "cpu":
        from simulator.planning import gpu_compiler

        if (why := gpu_compiler.unavailable(args.target)) is not None:
            print(f"error: --target {args.target}: {why}", flush=True)
            return 2
        gpu = args.target

    from simulator.benchmark import machine, write_results
    from simulator.planning import plan
    from simulator.planning.cost import memory_option
    from simulator.planning.memory import gpu_allocator_share

    schemes = [tuple(s.split(":")) for s in args.schemes]
    cases = []  # (part, N, integrator, precision, backend, devices)
    for integrator, precision in schemes:
        for n in args.sizes:
            cases += [("memory", n, integrator, precision, b, d) for b, d in meshes]
    cases += [("exchange", n, *schemes[0], b, d) for n in args.exchange_sizes for b, d in exchange]
    print(f"{'part':8s} {'config':12s} {'equation':13s} {'integ':5s} {'prec':7s} {'N':>5s} {'backend':6s} {'mesh':>5s} "
          f"{'layout':7s} {'chunk':>6s} {'other':>11s} {'B/cell':>6s} {'peak':>6s} {'a2a':>4s} {'MiB/dev':>9s} "
          f"{'chunk':>5s} {'peak':>5s} {'a2a':>5s} {'largest':>7s}", flush=True)
    print(f"{'':8s} {'':12s} {'':13s} {'':5s} {'':7s} {'':5s} {'':6s} {'':5s} {'':7s} {'B/cell':>6s} {'program':>11s} "
          f"{'':6s} {'B/cell':>6s} {'':4s} {'per step':>9s} {'compact / full':>17s}", flush=True)
    rows: list[dict] = []
    for part, n, integrator, precision, backend, devices in cases:
        new = []
        for layout in LAYOUTS:
            row, _ = plan_case(args.config, n, integrator, precision, backend, devices, layout, gpu=gpu)
            new.append({"part": part, **row})
        for r in with_ratios(new):
            print_row(r)
        rows += new
    if "largest" in args.parts:
        integrator, precision = schemes[0]
        memory, source = gpu_allocator_share(memory_option(args.memory, True))
        new = []
        for config, layout in ((c, la) for c in args.largest_configs for la in LAYOUTS):
            row, p = plan_case(config, args.largest_grid, integrator, precision, "slab", 1, layout, memory, gpu)
            largest = p.largest_cubic
            # the grid it proposes, planned in turn: its peak must fit (bytes per cell vary a little with N)
            check, q = plan_case(config, largest, integrator, precision, "slab", 1, layout, memory, gpu)
            new.append({"part": "largest", **row, "memory": args.memory, "available": p.available,
                        "available_source": source, "largest": largest,
                        "largest_peak_B_per_cell": check["peak_B_per_cell"], "largest_fits": q.fits,
                        "largest_spectrum": check["spectrum"]})
        for r in with_ratios(new):
            print_row(r)
            print(f"#   {r['config']}, {r['layout']}: planned at {r['N']}^3 {r['peak_B_per_cell']:.1f} B/cell -> "
                  f"largest cubic grid {r['largest']}^3 on one GPU of {args.memory} ({source}); "
                  f"planned at {r['largest']}^3: {r['largest_peak_B_per_cell']:.1f} B/cell, "
                  f"{'fits' if r['largest_fits'] else 'DOES NOT FIT'} ({r['largest_spectrum']})", flush=True)
        rows += new
    meta = {**machine(), "fft_path": "xla", "target": args.target, "overrides": args.overrides, "config": args.config,
            "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
            "usable_fraction": plan.USABLE_FRACTION}
    print(write_results(args.out, "compact", rows, meta), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
