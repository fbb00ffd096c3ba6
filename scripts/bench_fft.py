"""Benchmark the distributed FFT backends against jnp.fft on one device and scipy.fft.

For each N, backend, device count, transform kind (r2c, c2c) and precision: the median wall time of a
forward + inverse pair after warm-up, its ratio to ``jnp.fft`` on one device and to ``scipy.fft``
(workers = all cores), both measured in the same invocation, the all-to-alls in the compiled HLO, and
the compiled memory footprint (``compiled.memory_analysis()``: arguments + outputs + temporaries, per
device, times the devices in the mesh) in bytes per grid cell.

    python scripts/bench_fft.py                       # N = 64 128 256, 1 and 8 virtual CPU devices
    python scripts/bench_fft.py --sizes 256 512 --devices 1 --platform gpu

Virtual CPU devices share the same cores: on a CPU they show correctness and communication cost, not
parallel speed-up. Results: a table on stdout and CSV + JSON under outputs/bench/.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256], help="cubic grid sizes N")
    p.add_argument("--devices", type=int, nargs="+", default=[1, 8], help="device counts to use")
    p.add_argument("--backends", nargs="+", default=["slab", "pencil", "jaxdecomp", "single"])
    p.add_argument("--kinds", nargs="+", default=["r2c", "c2c"], choices=["r2c", "c2c"])
    p.add_argument("--precisions", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    p.add_argument("--repeats", type=int, default=5, help="timed repetitions (median reported)")
    p.add_argument("--platform", default="cpu", choices=["cpu", "gpu"],
                   help="cpu: virtual CPU devices (max of --devices); gpu: the visible GPUs")
    p.add_argument("--out", default="outputs/bench", help="directory for fft.csv and fft.json")
    return p.parse_args()


def main() -> int:
    args = parse_args()
    from simulator.runtime import configure_devices

    configure_devices(max(args.devices) if args.platform == "cpu" else None, "float64")
    import jax
    import jax.numpy as jnp
    import numpy as np
    import scipy.fft

    from simulator.fft import BACKENDS
    from simulator.fft.check import collective_counts, distribute, host_field
    from simulator.benchmark import machine, memory_bytes, timed, write_results
    from simulator.runtime import build_mesh

    devices = jax.devices()
    cores = os.cpu_count() or 1
    rows = []
    print(f"# {len(devices)} {jax.default_backend()} device(s) available, {cores} cores, "
          f"{platform.processor() or platform.machine()}", flush=True)
    header = (f"{'N':>4s} {'backend':9s} {'dev':>3s} {'kind':4s} {'prec':7s} {'fwd+inv ms':>10s} "
              f"{'vs jnp':>7s} {'vs scipy':>8s} {'a2a':>3s} {'B/cell':>7s}")
    print(header, flush=True)
    for n in args.sizes:
        shape = (n, n, n)
        for prec in args.precisions:
            rdt = jnp.float32 if prec == "float32" else jnp.float64
            for kind in args.kinds:
                real = kind == "r2c"
                x = host_field(shape, real, seed=1)
                x = x.astype(np.float32 if (real and prec == "float32") else
                             np.float64 if real else
                             np.complex64 if prec == "float32" else np.complex128)
                # baselines in this same invocation: jnp.fft on one device, scipy.fft on all cores
                one = jax.device_put(x, devices[0])
                f_ref = jax.jit(lambda a: jnp.fft.irfftn(jnp.fft.rfftn(a), s=shape) if real
                                else jnp.fft.ifftn(jnp.fft.fftn(a)))
                t_jnp = timed(f_ref, one, repeats=args.repeats)

                def scipy_pair(a):
                    if real:
                        return scipy.fft.irfftn(scipy.fft.rfftn(a, workers=cores), s=shape, workers=cores)
                    return scipy.fft.ifftn(scipy.fft.fftn(a, workers=cores), workers=cores)

                t0 = time.perf_counter()
                scipy_pair(x)
                ts = []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    scipy_pair(x)
                    ts.append(time.perf_counter() - t0)
                t_scipy = statistics.median(ts)
                for name in args.backends:
                    cls = BACKENDS[name]
                    for nd in sorted(set(1 if name == "single" else d for d in args.devices)):
                        mesh_shape = cls.mesh_shape(nd, None)
                        try:
                            cls.check_layout(shape, mesh_shape)
                        except ValueError as err:
                            print(f"# skip {name} on {nd}: {err}", flush=True)
                            continue
                        fft = cls(shape, build_mesh(cls, None, devices[:nd]))
                        xs = distribute(x, fft.real_sharding(), x.dtype)
                        pair = jax.jit(lambda a, f=fft: f.irfft(f.rfft(a)) if real else f.ifft(f.fft(a)))
                        compiled = pair.lower(xs).compile()
                        t = timed(compiled, xs, repeats=args.repeats)
                        err = float(np.max(np.abs(np.asarray(compiled(xs)) - x)) / np.max(np.abs(x)))
                        per_device = memory_bytes(compiled)  # the analysis is of one device's program
                        mem = None if per_device is None else per_device * nd
                        row = {
                            "N": n, "backend": name, "devices": nd, "mesh": "x".join(map(str, mesh_shape)),
                            "kind": kind, "precision": prec, "fwd_inv_ms": 1e3 * t,
                            "jnp_single_ms": 1e3 * t_jnp, "scipy_ms": 1e3 * t_scipy,
                            "ratio_vs_jnp": t / t_jnp, "ratio_vs_scipy": t / t_scipy,
                            "all_to_all": collective_counts(compiled.as_text())["all-to-all"],
                            "bytes_per_cell": None if mem is None else mem / n**3,
                            "roundtrip_error": err, "dtype": str(np.dtype(rdt)),
                        }
                        rows.append(row)
                        bpc = "-" if mem is None else f"{mem / n**3:7.1f}"
                        print(f"{n:4d} {name:9s} {nd:3d} {kind:4s} {prec:7s} {row['fwd_inv_ms']:10.2f} "
                              f"{row['ratio_vs_jnp']:7.2f} {row['ratio_vs_scipy']:8.2f} {row['all_to_all']:3d} "
                              f"{bpc:>7s}", flush=True)
                print(f"{n:4d} {'jnp.fft':9s} {1:3d} {kind:4s} {prec:7s} {1e3 * t_jnp:10.2f}   (baseline)", flush=True)
                print(f"{n:4d} {'scipy':9s} {'-':>3s} {kind:4s} {prec:7s} {1e3 * t_scipy:10.2f}   "
                      f"(workers={cores})", flush=True)
    write_results(args.out, "fft", rows, machine())
    return 0


if __name__ == "__main__":
    sys.exit(main())
