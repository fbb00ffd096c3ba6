"""Project each solver's memory and step time to large grids on many GPUs (the tables of docs/PERFORMANCE.md).

The per-cell figures come from the planner (simulator/planning/plan.py): the step and the run's programs
compiled abstractly (nothing allocated) on virtual CPU devices at a small grid, with XLA's FFT (the path
GPUs run), on a slab of 1, 2, 4 and 8 devices and a pencil of 4 and 8; bytes per cell do not depend
on N (tests/test_plan.py). For P GPUs at N^3 the figures of the compilation on P devices (8 beyond 8)
are scaled by the one model ``simulator plan`` also uses (simulator/planning/cost.py: ``scaled_traffic``,
``predicted_seconds``):

* memory per GPU = peak bytes per cell * N^3 / P (fits when <= 90% of JAX's allocator share of it);
* time = memory traffic / HBM bandwidth + bytes sent / link bandwidth, a device sending (P-1)/P (slab)
  or (sqrt(P)-1)/sqrt(P) (pencil) of what it exchanges; NVLink within a node of 8, InfiniBand beyond.
  No overlap of communication and compute. For P <= 8 this is exactly ``simulator plan``'s figure.

These are projections from the bandwidth model, not measurements: the traffic counts every kernel
streaming its operands and results once, so they bound the step time from below; the memory figures
are the CPU compilation's (a GPU build adds cuFFT's workspace).

    python scripts/project_gpu.py                  # the default cases, tables on stdout
    python scripts/project_gpu.py --profile h200 --cases navier_stokes:lsrk4:float32
"""

from __future__ import annotations

import argparse
import os
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


#: device counts compiled (virtual CPU devices); larger counts scale the largest one's figures
COMPILED = {"slab": (1, 2, 4, 8), "pencil": (4, 8)}


def compiled_figures(case: str, backend: str, devices: int, n: int) -> tuple[float, object]:
    """(peak bytes per cell, the step's traffic per cell) compiled on ``devices`` devices at ``n``^3."""
    import jax

    from simulator.api import load_config
    from simulator.planning import cost
    from simulator.planning.plan import make_plan
    from simulator.run.simulation import Simulation

    name, integrator, precision = case.split(":")
    cfg = load_config(None, {"grid.shape": n, "physics.name": name, "time.integrator": integrator,
                             "precision": precision, "fft.backend": backend})
    p = make_plan(Simulation(cfg, jax.devices()[:devices]), ("chunk", "diagnostics", "step"), memory=1)
    return p.peak * devices / n**3, cost.per_cell(p.traffic, n**3, devices)


def projection(figures: dict, backend: str, n: int, gpus: int, profile) -> tuple[float, float]:
    """(memory per GPU in bytes, step seconds) of ``n``^3 on ``gpus`` GPUs from the compiled figures."""
    from simulator.planning import cost

    compiled = max(d for d in COMPILED[backend] if d <= gpus)
    peak, traffic = figures[backend, compiled]
    step = cost.scaled_traffic(traffic, n**3, gpus, backend)
    return peak * n**3 / gpus, cost.predicted_seconds(step, profile, gpus, backend)


def main() -> int:
    args = parse_args()
    os.environ["SIMULATOR_FFT"] = "xla"  # the local FFT path GPUs run (FFTW is CPU only)
    from simulator.runtime import configure_devices

    configure_devices(8, "float64")
    from simulator.errors import ConfigError
    from simulator.fft.layouts import LAYOUTS
    from simulator.planning import cost
    from simulator.planning.cost import PROFILES
    from simulator.planning.memory import gpu_allocator_share

    profile = PROFILES[args.profile]
    share, source = gpu_allocator_share(int(args.memory * 2**30))
    usable = 0.9 * share
    print(f"# projection on {profile.name} ({profile.source}; {profile.link} within a node of {cost.GPUS_PER_NODE}, "
          f"{cost.INTER_NODE_LINK}); {source}; a run plans 90% of it")
    for case in args.cases:
        figures = {(b, d): compiled_figures(case, b, d, args.n) for b, counts in COMPILED.items() for d in counts}
        one = figures["slab", 1]
        print(f"\n## {case}: peak {one[0]:.0f} B/cell on 1 device, {figures['slab', 8][0]:.0f} on a slab of 8; "
              "step traffic per cell on a slab of 1/2/4/8: "
              + "/".join(f"{figures['slab', d][1].memory_bytes:.0f}" for d in COMPILED["slab"]))
        print(f"{'N':>5s} {'GPUs':>5s} {'backend':7s} {'GB/GPU':>7s} {'fits':>4s} {'step ms':>9s}")
        for n in args.sizes:
            for gpus in args.gpus:
                for backend in ("slab", "pencil"):
                    if gpus < min(COMPILED[backend]):
                        continue
                    mesh = LAYOUTS[backend].mesh_shape(gpus, None)
                    try:
                        LAYOUTS[backend].check_layout((n, n, n), mesh)
                    except ConfigError:
                        continue
                    if backend == "pencil" and mesh[0] == 1:
                        continue
                    memory, seconds = projection(figures, backend, n, gpus, profile)
                    print(f"{n:5d} {gpus:5d} {backend:7s} {memory / 2**30:7.1f} "
                          f"{'yes' if memory <= usable else 'no':>4s} {1e3 * seconds:9.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
