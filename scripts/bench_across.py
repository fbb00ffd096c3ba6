"""CPU time of the Chebyshev transform across no-slip plates at a few counts of Gauss-Lobatto points: which sizes are
fast (docs/explanation/chebyshev.md, "Which sizes are fast"; ``grid.modes`` chooses counts whose ``2 (N - 1)`` is
FFT-friendly).

The forward transform (:func:`simulator.fft.walls.chebyshev_forward` by :func:`~simulator.fft.walls.dct1_of`: FFTW's
REDFT00 where ``N - 1`` is FFT-friendly, else the even extension's real FFT) of a ``(columns, N)`` float64 field's
columns, one FFTW thread, compiled once per size; ``--rounds`` rounds, each timing every size in a rotating order
(``--calls`` calls each), so that the load on a shared machine falls on every size alike. Prints per size the median
CPU milliseconds of one transform (``time.process_time``) and the machine's load (``os.getloadavg``) before and after,
and writes them to ``--out``/across.csv and .json (outputs/bench/).

    python scripts/bench_across.py                       # 96, 97, 128, 129, 384, 385 points, 1536 columns
    python scripts/bench_across.py --sizes 95 96 97 --columns 384 --rounds 9
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from simulator.benchmark import machine, write_results
from simulator.fft import local
from simulator.fft.bases import factored, fft_friendly
from simulator.fft.walls import chebyshev_forward, dct1_of, direct_dct1

jax.config.update("jax_enable_x64", True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[96, 97, 128, 129, 384, 385])
    parser.add_argument("--columns", type=int, default=1536, help="columns transformed at once (a plane's Nx)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20, help="transforms timed per size per round")
    parser.add_argument("--out", default="outputs/bench", help="directory of the results file, across.csv")
    args = parser.parse_args()
    fft = local.resolve(threads=1)
    rng = np.random.default_rng(0)
    transforms, fields = {}, {}
    for n in args.sizes:
        transforms[n] = jax.jit(lambda f: chebyshev_forward(lambda x: dct1_of(fft, x), f))
        fields[n] = jnp.asarray(rng.standard_normal((args.columns, n)))
        transforms[n](fields[n]).block_until_ready()  # compiled before the rounds
    load = os.getloadavg()[0]
    times: dict[int, list[float]] = {n: [] for n in args.sizes}
    for r in range(args.rounds):
        order = args.sizes[r % len(args.sizes):] + args.sizes[:r % len(args.sizes)]
        for n in order:
            start = time.process_time()
            for _ in range(args.calls):
                transforms[n](fields[n]).block_until_ready()
            times[n].append((time.process_time() - start) / args.calls * 1e3)
    print(f"forward Chebyshev transform of {args.columns} columns, float64, local FFT {fft.describe()}, "
          f"{args.rounds} rounds of {args.calls} calls; load {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    after = os.getloadavg()[0]
    print("| points across | N - 1 | what runs | CPU ms |")
    print("|---|---|---|---|")
    rows = []
    for n in args.sizes:
        how = "DCT-I (REDFT00)" if fft.name == "fftw" and direct_dct1(n) else "even extension's real FFT"
        friendly = "" if fft_friendly(n - 1) else " (not FFT-friendly)"
        print(f"| {n} | {n - 1}{factored(n - 1)}{friendly} | {how} | {statistics.median(times[n]):.2f} |")
        rows.append({"points": n, "fft_friendly": fft_friendly(n - 1), "transform": how, "columns": args.columns,
                     "cpu_ms": round(statistics.median(times[n]), 4), "local_fft": fft.name})
    print(write_results(args.out, "across", rows, {**machine(), "local_fft": fft.describe(), "load_before": load,
                                                    "load_after": after}))


if __name__ == "__main__":
    main()
