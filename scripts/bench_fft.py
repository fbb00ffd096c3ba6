"""Benchmark the distributed FFT backends on each local FFT path against jnp.fft and scipy.fft.

For each N, backend, device count, transform kind (r2c, c2c), precision and local FFT path (``xla``:
XLA's FFT; ``fftw``: the FFTW custom call, see simulator/fft/local.py): the median wall time of a
forward + inverse pair of a ``--batch``-component field (``--inner`` pairs looped in one compiled
call, as a run's chunk loops its steps, so buffers are reused rather than page-faulted in), its ratio to the same
backend on the xla path (``vs_xla``), to ``jnp.fft`` on one device, to ``scipy.fft`` (workers = all cores) and to the
floor (``vs_copy``: a streaming pass over the bytes a pair must move at the least, the field and its
spectrum each read and written once, on one device: how far a transform is from the bandwidth limit), the
all-to-alls in the compiled HLO, and the compiled memory footprint (``compiled.memory_analysis()``:
arguments + outputs + temporaries, per device, times the devices in the mesh) in bytes per grid cell.
All candidates of one (N, kind, precision) are timed in the same invocation, A/B interleaved
(every round runs each once, in a rotating order), so the ratios hold even on a loaded machine.

    python scripts/bench_fft.py                       # N = 64 128 256, 1 and 8 virtual CPU devices
    python scripts/bench_fft.py --sizes 64 128 --devices 1 --backends single --batch 3 --fft-paths xla fftw
    python scripts/bench_fft.py --sizes 256 512 --devices 1 --platform gpu

Virtual CPU devices share the same cores: on a CPU they show correctness and communication cost, not
parallel speed-up. Results: a table on stdout and CSV + JSON under outputs/bench/.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256], help="cubic grid sizes N")
    p.add_argument("--devices", type=int, nargs="+", default=[1, 8], help="device counts to use")
    p.add_argument("--backends", nargs="+", default=["slab", "pencil", "jaxdecomp", "single"])
    p.add_argument("--kinds", nargs="+", default=["r2c", "c2c"], choices=["r2c", "c2c"])
    p.add_argument("--precisions", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    p.add_argument("--batch", type=int, default=1, help="field components transformed together (NS: 3)")
    p.add_argument("--fft-paths", nargs="+", default=["xla", "fftw"], choices=["xla", "fftw"],
                   help="local FFT paths to measure (fftw: where the native extension is available)")
    p.add_argument("--repeats", type=int, default=15, help="timed rounds (median reported)")
    p.add_argument("--inner", type=int, default=4,
                   help="pairs per timed call, looped in one compiled program (time / inner reported): as in "
                        "a run's chunk, buffers are then reused instead of freshly allocated (page faults) per pair")
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

    from simulator.benchmark import machine, memory_bytes, timed_interleaved, write_results
    from simulator.fft import BACKENDS, local
    from simulator.fft.check import collective_counts, distribute, host_field
    from simulator.runtime import build_mesh

    devices = jax.devices()
    cores = os.cpu_count() or 1

    def looped(pair):
        """``args.inner`` pairs in one compiled call (a round trip leaves the field as it was)."""
        return jax.jit(lambda a: jax.lax.fori_loop(0, args.inner, lambda _, b: pair(b), a))

    paths = list(args.fft_paths)
    if "fftw" in paths and (local.native()[0] is None or args.platform != "cpu"):
        why = local.native()[1] or "the FFTW path is CPU-only"
        print(f"# fftw path not measured: {why}", flush=True)
        paths.remove("fftw")
    rows = []
    print(f"# {len(devices)} {jax.default_backend()} device(s) available, {cores} cores, "
          f"{platform.processor() or platform.machine()}; batch {args.batch}", flush=True)
    print(f"{'N':>4s} {'backend':9s} {'dev':>3s} {'kind':4s} {'prec':7s} {'path':4s} {'fwd+inv ms':>10s} "
          f"{'vs xla':>6s} {'vs jnp':>7s} {'vs scipy':>8s} {'vs copy':>7s} {'a2a':>3s} {'B/cell':>7s}", flush=True)
    for n in args.sizes:
        shape = (n, n, n)
        axes = (-3, -2, -1)
        for prec in args.precisions:
            for kind in args.kinds:
                real = kind == "r2c"
                x = host_field((args.batch, *shape) if args.batch > 1 else shape, real, seed=1)
                x = x.astype(np.float32 if (real and prec == "float32") else
                             np.float64 if real else
                             np.complex64 if prec == "float32" else np.complex128)
                # the baselines: jnp.fft on one device and scipy.fft on all cores, in the same rounds
                one = jax.device_put(x, devices[0])
                f_ref = looped(lambda a: jnp.fft.irfftn(jnp.fft.rfftn(a, axes=axes), s=shape, axes=axes) if real
                               else jnp.fft.ifftn(jnp.fft.fftn(a, axes=axes), axes=axes))

                def scipy_pair():
                    if real:
                        k = scipy.fft.rfftn(x, axes=axes, workers=cores)
                        return scipy.fft.irfftn(k, s=shape, axes=axes, workers=cores)
                    return scipy.fft.ifftn(scipy.fft.fftn(x, axes=axes, workers=cores), axes=axes, workers=cores)

                # the floor: a streaming pass over the bytes a pair must move at the least (the forward reads the
                # field and writes its spectrum, the inverse reads that and writes a field), timed the same way
                spec = (*x.shape[:-1], n // 2 + 1) if real else x.shape
                spec_dtype = jnp.complex64 if x.dtype in (np.float32, np.complex64) else jnp.complex128
                floor_in = (one, jax.device_put(jnp.zeros(spec, spec_dtype), devices[0]))
                f_floor = looped(lambda ab: (ab[0] * 0.5 + ab[0], ab[1] * 0.5 + ab[1]))
                candidates = {"jnp": lambda: f_ref(one), "scipy": scipy_pair, "copy": lambda: f_floor(floor_in)}
                cases = {}
                for name in args.backends:
                    cls = BACKENDS[name]
                    for nd in sorted(set(1 if name == "single" else d for d in args.devices)):
                        mesh_shape = cls.mesh_shape(nd, None)
                        try:
                            cls.check_layout(shape, mesh_shape)
                        except ValueError as err:
                            print(f"# skip {name} on {nd}: {err}", flush=True)
                            continue
                        for path in paths if cls.owns_local_transforms else ["xla"]:
                            fft = cls(shape, build_mesh(cls, None, devices[:nd]), local_fft=path)
                            xs = distribute(x, fft.real_sharding(x.ndim - 3), x.dtype)
                            pair = looped(lambda a, f=fft: f.irfft(f.rfft(a)) if real else f.ifft(f.fft(a)))
                            compiled = pair.lower(xs).compile()
                            cases[(name, nd, path)] = (fft, compiled, xs, mesh_shape)
                            candidates[(name, nd, path)] = lambda c=compiled, a=xs: c(a)
                times = {k: t / args.inner for k, t in timed_interleaved(candidates, repeats=args.repeats).items()}
                times["scipy"] *= args.inner  # one pair per call: scipy allocates its outputs anyway
                t_jnp, t_scipy, t_copy = times["jnp"], times["scipy"], times["copy"]
                for (name, nd, path), (fft, compiled, xs, mesh_shape) in cases.items():
                    t = times[(name, nd, path)]
                    t_xla = times.get((name, nd, "xla"))
                    err = float(np.max(np.abs(np.asarray(compiled(xs)) - x)) / np.max(np.abs(x)))
                    per_device = memory_bytes(compiled)  # the analysis is of one device's program
                    mem = None if per_device is None else per_device * nd
                    row = {
                        "N": n, "backend": name, "devices": nd, "mesh": "x".join(map(str, mesh_shape)),
                        "kind": kind, "precision": prec, "batch": args.batch, "fft_path": path,
                        "local_fft": fft.local.describe(jax.default_backend()), "fwd_inv_ms": 1e3 * t,
                        "vs_xla": None if t_xla is None else t / t_xla,
                        "jnp_single_ms": 1e3 * t_jnp, "scipy_ms": 1e3 * t_scipy,
                        "ratio_vs_jnp": t / t_jnp, "ratio_vs_scipy": t / t_scipy,
                        "copy_ms": 1e3 * t_copy, "ratio_vs_copy": t / t_copy,
                        "all_to_all": collective_counts(compiled.as_text())["all-to-all"],
                        "bytes_per_cell": None if mem is None else mem / n**3,
                        "roundtrip_error": err, "repeats": args.repeats, "inner": args.inner,
                    }
                    rows.append(row)
                    # rewritten after every row: a benchmark stopped at its time limit keeps what it measured
                    write_results(args.out, "fft", rows, {**machine(), "fft_paths": paths})
                    bpc = "-" if mem is None else f"{mem / n**3:7.1f}"
                    vs_xla = "-" if t_xla is None else f"{t / t_xla:6.2f}"
                    print(f"{n:4d} {name:9s} {nd:3d} {kind:4s} {prec:7s} {path:4s} {row['fwd_inv_ms']:10.2f} "
                          f"{vs_xla:>6s} {row['ratio_vs_jnp']:7.2f} {row['ratio_vs_scipy']:8.2f} "
                          f"{row['ratio_vs_copy']:7.2f} {row['all_to_all']:3d} {bpc:>7s}", flush=True)
                print(f"{n:4d} {'jnp.fft':9s} {1:3d} {kind:4s} {prec:7s} {'xla':4s} {1e3 * t_jnp:10.2f}   "
                      "(baseline)", flush=True)
                print(f"{n:4d} {'copy':9s} {1:3d} {kind:4s} {prec:7s} {'xla':4s} {1e3 * t_copy:10.2f}   "
                      "(floor: a streaming pass over the bytes a pair moves)", flush=True)
                print(f"{n:4d} {'scipy':9s} {'-':>3s} {kind:4s} {prec:7s} {'-':4s} {1e3 * t_scipy:10.2f}   "
                      f"(workers={cores})", flush=True)
    print(write_results(args.out, "fft", rows, {**machine(), "fft_paths": paths}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
