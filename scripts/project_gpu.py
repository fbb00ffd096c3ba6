"""Project each solver's memory and step time to large grids on many GPUs (the tables of docs/PERFORMANCE.md).

The per-cell figures come from the planner (simulator/plan.py): the run's programs compiled abstractly
(nothing allocated) on virtual CPU devices at a small grid, one device and a decomposed mesh (slab
[2], pencil [2, 2]); bytes per cell do not depend on N (tests/test_plan.py). Then, per GPU of a mesh
of P GPUs at N^3:

* memory = peak bytes per cell * N^3 / P (the decomposed mesh's figure; fits when <= 90% of 80 GB);
* time = memory traffic per cell * N^3 / P / HBM bandwidth + bytes sent / link bandwidth, where a
  slab all-to-all among P devices sends (P-1)/P of its operand and a pencil one among ~sqrt(P) sends
  (sqrt(P)-1)/sqrt(P); links: NVLink within a node of 8, one 400 Gb/s InfiniBand adapter per GPU
  beyond (half the pencil's exchanges stay within a node). No overlap of communication and compute.

These are projections from the bandwidth model (simulator/cost.py), not measurements: the traffic
counts every kernel streaming its operands and results once (an FFT too), so they bound the step time
from below; the memory figures are the CPU compilation's (a GPU build adds cuFFT's workspace).

    python scripts/project_gpu.py                  # the default cases, table on stdout
    python scripts/project_gpu.py --profile h200 --cases navier_stokes:lsrk4:float32
"""

from __future__ import annotations

import argparse
import math
import sys

CASES = ["navier_stokes:rk4:float64", "navier_stokes:lsrk4:float32", "schrodinger_poisson:kdk:float32"]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=CASES, help="equation:integrator:precision")
    p.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048, 4096])
    p.add_argument("--gpus", type=int, nargs="+", default=[1, 4, 8, 64, 512])
    p.add_argument("--profile", default="h100", choices=["h100", "h200"])
    p.add_argument("--memory", type=float, default=80.0, help="GB of memory per GPU")
    p.add_argument("--n", type=int, default=64, help="grid of the compilations the figures come from")
    return p.parse_args()


def per_cell(case: str, backend: str, devices: int, n: int) -> dict[str, float]:
    """Peak memory, memory traffic and exchanged bytes of one step, per cell over all devices."""
    import jax

    from simulator.api import load_config
    from simulator.plan import make_plan
    from simulator.run.simulation import Simulation

    name, integrator, precision = case.split(":")
    cfg = load_config(None, {"grid.shape": n, "physics.name": name, "time.integrator": integrator,
                             "precision": precision, "fft.backend": backend})
    p = make_plan(Simulation(cfg, jax.devices()[:devices]), ("chunk", "diagnostics", "step"), memory=1)
    cells = n**3 / devices
    return {"memory": p.peak / cells, "traffic": p.traffic.memory_bytes / cells,
            "exchanged": p.traffic.exchanged_bytes / cells, "ffts": p.ffts_per_step,
            "a2a": p.traffic.collectives.get("all-to-all", 0)}


def step_seconds(fig: dict[str, float], backend: str, n: int, gpus: int, profile) -> float:
    from simulator.cost import GPUS_PER_NODE, INTER_NODE_BANDWIDTH

    local = n**3 / gpus
    seconds = fig["traffic"] * local / profile.memory_bandwidth
    if gpus == 1:
        return seconds
    exchanged = fig["exchanged"] * local
    if backend == "slab":
        link = profile.link_bandwidth if gpus <= GPUS_PER_NODE else INTER_NODE_BANDWIDTH
        return seconds + exchanged * (gpus - 1) / gpus / link
    group = math.isqrt(gpus)
    share = (group - 1) / group
    if gpus <= GPUS_PER_NODE:
        return seconds + exchanged * share / profile.link_bandwidth
    return seconds + exchanged * share * (0.5 / profile.link_bandwidth + 0.5 / INTER_NODE_BANDWIDTH)


def main() -> int:
    args = parse_args()
    from simulator.runtime import configure_devices

    configure_devices(4, "float64")
    from simulator.cost import PROFILES
    from simulator.fft.layouts import LAYOUTS
    from simulator.errors import ConfigError

    profile = PROFILES[args.profile]
    usable = 0.9 * args.memory * 2**30
    print(f"# projection on {profile.name} ({profile.source}); memory per GPU {args.memory:g} GB, a run uses 90%")
    for case in args.cases:
        figs = {"slab": per_cell(case, "slab", 2, args.n), "pencil": per_cell(case, "pencil", 4, args.n)}
        one = per_cell(case, "slab", 1, args.n)
        print(f"\n## {case}: {one['memory']:.0f} B/cell on 1 device, {figs['slab']['memory']:.0f} slab [2], "
              f"{figs['pencil']['memory']:.0f} pencil [2,2]; per step {one['ffts']} FFTs, traffic "
              f"{one['traffic']:.0f} B/cell, exchanged {figs['slab']['exchanged']:.0f} B/cell in "
              f"{figs['slab']['a2a']:.0f} (slab) / {figs['pencil']['a2a']:.0f} (pencil) all-to-alls")
        print(f"{'N':>5s} {'GPUs':>5s} {'backend':7s} {'GB/GPU':>7s} {'fits':>4s} {'step ms':>9s}")
        for n in args.sizes:
            for gpus in args.gpus:
                for backend in ("slab", "pencil"):
                    if gpus == 1 and backend == "pencil":
                        continue
                    layout = LAYOUTS[backend]
                    mesh = layout.mesh_shape(gpus, None)
                    try:
                        layout.check_layout((n, n, n), mesh)
                    except ConfigError:
                        continue
                    if backend == "pencil" and mesh[0] == 1:
                        continue
                    fig = one if gpus == 1 else figs[backend]
                    memory = fig["memory"] * n**3 / gpus
                    ms = 1e3 * step_seconds(fig, backend, n, gpus, profile)
                    print(f"{n:5d} {gpus:5d} {backend:7s} {memory / 2**30:7.1f} {'yes' if memory <= usable else 'no':>4s} "
                          f"{ms:9.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
