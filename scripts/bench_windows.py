"""Benchmark the particles' window kernels alone: the native CPU gather and scatter against XLA's own
implementation of the same primitives (simulator/fft/window.py), in the same invocation.

For each N, window and precision: N^3 points on an N^3 grid held whole by one device, the cell centres
displaced by a Gaussian of 0.3 cells, in lattice order (as one device's cold dark matter particles lie), or
shuffled with ``--shuffled``. Four programs are compiled and timed A/B interleaved in the same rounds
(simulator/benchmark.py), the caches evicted before each call (a step's other work leaves them cold; the
eviction is not timed):

* ``gather_ms``: the native gather of a 3-component field (the force's or a velocity's interpolation);
* ``scatter_ms``: the native scatter of one value per point (the mass assignment);
* ``xla_gather_ms``, ``xla_scatter_ms``: XLA's implementation of the same;
* ``gather_vs_xla``, ``scatter_vs_xla``: native over XLA's;
* ``ns_per_point``: (gather_ms + scatter_ms) per point;
* ``threads``: the native calls' threads (:func:`simulator.fft.kernels.threads_for`, as a run on one device
  chooses them); ``load_before``, ``load_after``: the 1-minute load average around the row.

    python scripts/bench_windows.py                          # N = 64, every window, float32 and float64
    python scripts/bench_windows.py --sizes 32 64 --windows cic --precision float64

Results: a table on stdout, ``outputs/bench/windows.csv`` and ``windows.json`` (rewritten after every row).
"""

from __future__ import annotations

import argparse
import functools
import os


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64], help="N: N^3 points on an N^3 grid")
    p.add_argument("--windows", nargs="+", default=["cic", "tsc", "lagrange4"], choices=["cic", "tsc", "lagrange4"])
    p.add_argument("--precision", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    p.add_argument("--shuffled", action="store_true", help="the points in random order instead of lattice order")
    p.add_argument("--repeats", type=int, default=15, help="timed rounds (median reported)")
    p.add_argument("--out", default="outputs/bench", help="directory for windows.csv and windows.json")
    return p.parse_args()


def main() -> int:
    args = parse_args()
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    from simulator.benchmark import machine, timed_interleaved, write_results
    from simulator.fft import kernels
    from simulator.fft.window import Block, gather, scatter

    if kernels.native()[0] is None:
        print(f"# the native kernels are unavailable: {kernels.native()[1]}")
        return 1
    sweep = np.ones((64 << 20) // 8)  # 64 MiB read: more than the cores' own caches
    info = machine()
    rows = []
    print(f"# {info['device_kind']}, {info['cores']} cores, points in {'random' if args.shuffled else 'lattice'} "
          f"order, {args.repeats} rounds")
    print(f"{'N':>4s} {'window':9s} {'precision':9s} {'thr':>3s} {'gather ms':>9s} {'xla':>8s} {'vs xla':>6s} "
          f"{'scatter ms':>10s} {'xla':>8s} {'vs xla':>6s} {'ns/point':>8s} {'load':>11s}", flush=True)
    for n in args.sizes:
        rng = np.random.default_rng(0)
        dx = 1.0 / n
        cells = np.stack(np.meshgrid(*[np.arange(n)] * 3, indexing="ij"), -1).reshape(-1, 3)
        points = np.mod((cells + 0.5 + rng.normal(0, 0.3, cells.shape)) * dx, 1.0)
        if args.shuffled:
            points = points[rng.permutation(len(points))]
        block = Block((n,) * 3, (dx,) * 3)
        starts = jnp.zeros(3, jnp.int32)
        threads = kernels.threads_for(len(points), 1)
        for precision in args.precision:
            x = jnp.asarray(points, precision)
            field = jnp.asarray(rng.normal(size=(3, n, n, n)), precision)
            values = jnp.asarray(rng.uniform(size=(1, n**3)), precision)
            for window in args.windows:
                kw = {"window": window, "block": block}
                fns = {}
                for impl in ("native", "xla"):
                    common = {"starts": starts, "impl": impl, "threads": threads, **kw}
                    g = jax.jit(functools.partial(gather, **common))
                    s = jax.jit(functools.partial(scatter, extent=(n,) * 3, **common))
                    fns[f"{impl}_gather"] = functools.partial(g, field, x)
                    fns[f"{impl}_scatter"] = functools.partial(s, values, x)
                load_before = os.getloadavg()[0]
                ms = {k: 1e3 * v for k, v in timed_interleaved(fns, args.repeats, before=sweep.sum).items()}
                row = {"n": n, "points": n**3, "window": window, "precision": precision, "threads": threads,
                       "shuffled": args.shuffled, "gather_ms": ms["native_gather"], "xla_gather_ms": ms["xla_gather"],
                       "gather_vs_xla": ms["native_gather"] / ms["xla_gather"], "scatter_ms": ms["native_scatter"],
                       "xla_scatter_ms": ms["xla_scatter"], "scatter_vs_xla": ms["native_scatter"] / ms["xla_scatter"],
                       "ns_per_point": 1e6 * (ms["native_gather"] + ms["native_scatter"]) / n**3,
                       "load_before": load_before, "load_after": os.getloadavg()[0]}
                rows.append(row)
                done = write_results(args.out, "windows", rows, info)
                print(f"{n:4d} {window:9s} {precision:9s} {threads:3d} {row['gather_ms']:9.2f} "
                      f"{row['xla_gather_ms']:8.2f} {row['gather_vs_xla']:6.3f} {row['scatter_ms']:10.2f} "
                      f"{row['xla_scatter_ms']:8.2f} {row['scatter_vs_xla']:6.3f} {row['ns_per_point']:8.1f} "
                      f"{load_before:5.2f}-{row['load_after']:5.2f}", flush=True)
    print(done)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
