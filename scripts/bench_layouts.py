"""What the Navier-Stokes step's data layout costs on a CPU: the measurements behind issue 22's open gap.

Three experiments, each timed A/B interleaved in one invocation (ratios within a part are
the figures to read; a run's chunk loops its steps, so every kernel is looped inside one compiled call
and reuses its buffers):

* ``concat`` (JAX, one CPU device): a three-component real field ``(3, N, N, N)`` built component by
  component and stacked, as the step builds u x w (``simulator.equations.operators.cross``, then
  ``jnp.stack``) and the projected spectrum, against the same arithmetic with no concatenation. XLA's CPU
  compiler emits the stacked kernel as a concatenate fusion; its time over the plain product's is what
  the layout (one array of three components) costs in each of those kernels.
* ``pruned`` (pyFFTW, ``pip install pyfftw``; skipped with a message without it): the inverse r2c
  transform of a three-field half spectrum that holds only the modes the 2/3 rule keeps (|m_i| < N/3),
  by FFTW's 3D plan (what the step's custom call runs) against FFTW plans staged axis by axis that skip
  the zero lines: x on the kept (ky, kz) lines only (4/9 of them), y on the kept kz planes (2/3), then z
  everywhere: 70% of the 3D transform's butterflies. Checked equal to the 3D plan before timing.
* ``inverse`` (FFTW's path, one device; skipped with a message without the extension): the compact
  Navier-Stokes rk4 step with a vector's three components inverse-transformed in one stacked call against
  one call each (``FFTBackend.stacks_inverse``, which one device takes up to ``STACKED_INVERSE_CELLS``
  cells: the limit is set for each form while its chunk compiles). Both chunks are compiled in this
  process and timed interleaved, by wall and by CPU time (all threads): the figures behind that limit.

    python scripts/bench_layouts.py                              # N = 64 128, float64 and float32
    python scripts/bench_layouts.py --sizes 128 --parts concat --precisions float64
    python scripts/bench_layouts.py --parts inverse --sizes 32 48 64 80 96 128 --precisions float64 --repeats 30

Results: a table on stdout, ``outputs/bench/layouts.csv`` and ``layouts.json``.
"""

from __future__ import annotations

import argparse
import statistics
import time

PARTS = ("concat", "pruned", "inverse")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128], help="cubic grid sizes N")
    p.add_argument("--precisions", nargs="+", default=["float64", "float32"], choices=["float32", "float64"])
    p.add_argument("--parts", nargs="+", default=list(PARTS), choices=list(PARTS))
    p.add_argument("--repeats", type=int, default=7, help="timed rounds (median reported)")
    p.add_argument("--inner", type=int, default=8, help="kernel calls looped in one compiled call")
    p.add_argument("--threads", type=int, default=None, help="FFTW threads of the pruned part (default: cores)")
    p.add_argument("--out", default="outputs/bench", help="directory for layouts.csv and layouts.json")
    return p.parse_args()


def concat_part(n: int, precision: str, repeats: int, inner: int) -> list[dict]:
    """The stacked kernels against the same products unstacked (module docstring)."""
    import jax
    import jax.numpy as jnp

    from simulator.benchmark import timed_interleaved
    from simulator.equations.operators import cross

    dtype = jnp.dtype(precision)
    key_a, key_b = jax.random.split(jax.random.key(0))
    a = jax.random.normal(key_a, (3, n, n, n), dtype)
    b = jax.random.normal(key_b, (3, n, n, n), dtype)
    kernels = {
        "product a * b": lambda a, b: a * b,
        "stack of a_i * b_i": lambda a, b: jnp.stack([a[0] * b[0], a[1] * b[1], a[2] * b[2]]),
        "u x w as the step (cross + stack)": lambda a, b: jnp.stack(cross(a, b)),
    }

    def looped(kernel):
        def body(_, c):  # each call's result feeds the next (scaled back), so no call can be skipped
            return kernel(c, b) * jnp.asarray(0.5, dtype)

        return jax.jit(lambda a: jax.lax.fori_loop(0, inner, body, a))

    compiled = {name: looped(kernel) for name, kernel in kernels.items()}
    times = timed_interleaved({name: (lambda f=f: f(a)) for name, f in compiled.items()}, repeats)
    base = times["product a * b"]
    return [{"part": "concat", "N": n, "precision": precision, "kernel": name, "ms": 1e3 * t / inner,
             "vs_baseline": t / base} for name, t in times.items()]


def pruned_part(n: int, precision: str, repeats: int, threads: int) -> list[dict]:
    """FFTW's 3D c2r of a 2/3-rule spectrum against the staged plans that skip its zero lines."""
    import numpy as np
    import pyfftw

    complex_t = np.complex128 if precision == "float64" else np.complex64
    real_t = np.float64 if precision == "float64" else np.float32
    nh, keep = n // 2 + 1, (n - 1) // 3 + 1  # modes |m| < n/3: m = 0 .. keep - 1 and their negatives
    spectrum = pyfftw.empty_aligned((3, n, n, nh), complex_t)
    real = pyfftw.empty_aligned((3, n, n, n), real_t)
    flags = ("FFTW_MEASURE", "FFTW_DESTROY_INPUT")
    unaligned = ("FFTW_MEASURE", "FFTW_UNALIGNED")

    def plan(src, dst, axes, extra=flags):
        return pyfftw.FFTW(src, dst, axes=axes, direction="FFTW_BACKWARD", flags=extra, threads=threads)

    full = plan(spectrum, real, (1, 2, 3))
    low, high = spectrum[:, :, :keep, :keep], spectrum[:, :, n - keep:, :keep]  # kept ky (kz < keep)
    planes = spectrum[:, :, :, :keep]
    staged = [plan(low, low, (1,), unaligned), plan(high, high, (1,), unaligned),
              plan(planes, planes, (2,), unaligned), plan(spectrum, real, (3,))]

    m = np.fft.fftfreq(n, 1.0 / n)
    mask = ((np.abs(m) < n / 3)[:, None, None] & (np.abs(m) < n / 3)[None, :, None]
            & (np.arange(nh) < n / 3)[None, None, :])
    rng = np.random.default_rng(0)
    source = np.fft.rfftn(rng.standard_normal((3, n, n, n)), axes=(1, 2, 3)).astype(complex_t) * mask

    def run(plans):
        spectrum[...] = source  # the c2r destroys its input: every call starts from the same spectrum
        t0 = time.perf_counter()
        for p in plans:
            p.execute()  # unnormalised, as the step's custom call (calling the plan would divide by N)
        return time.perf_counter() - t0

    run([full])
    expected = real.copy()
    run(staged)
    error = float(np.max(np.abs(real - expected)) / np.max(np.abs(expected)))
    tolerance = 1e-12 if precision == "float64" else 1e-5
    if not error <= tolerance:
        raise SystemExit(f"staged transform differs from the 3D plan by {error:.2e} (N={n}, {precision})")
    times = {"FFTW 3D plan": [], "staged, zero lines skipped": []}
    for r in range(repeats):
        order = list(times) if r % 2 == 0 else list(times)[::-1]
        for name in order:
            times[name].append(run([full] if name == "FFTW 3D plan" else staged))
    base = statistics.median(times["FFTW 3D plan"])
    return [{"part": "pruned", "N": n, "precision": precision, "kernel": name, "ms": 1e3 * statistics.median(t),
             "vs_baseline": statistics.median(t) / base, "relative_difference": error} for name, t in times.items()]


def inverse_part(n: int, precision: str, repeats: int, steps: int = 5) -> list[dict]:
    """The compact step with a vector's inverse transforms stacked against one by one (module docstring)."""
    import jax

    from simulator import config as config_mod
    from simulator.benchmark import fft_path, timed_interleaved
    from simulator.fft import base
    from simulator.run.simulation import Simulation

    overrides = [f"grid.shape={n}", f"precision={precision}", "physics.name=navier_stokes", "time.integrator=rk4",
                 "initial.name=taylor_green", "time.dt=1e-3", "fft.layout=compact"]
    limit, chunks, holders = base.STACKED_INVERSE_CELLS, {}, {}
    for form, cells in (("one by one", 0), ("stacked", n**3)):
        base.STACKED_INVERSE_CELLS = cells  # read while the step is traced: once, as its chunk compiles
        try:
            with fft_path("fftw"):
                sim = Simulation(config_mod.load(None, overrides), jax.devices()[:1])
            assert sim.fft.stacks_inverse == (form == "stacked")
            holders[form] = {"sim": sim, "s": sim.advance(sim.initial_state(), steps, 1e-3, donate=True)}
        finally:
            base.STACKED_INVERSE_CELLS = limit

        def chunk(h=holders[form]):
            h["s"] = h["sim"].advance(h["s"], steps, 1e-3, donate=True)
            return h["s"]

        chunks[form] = chunk
    cpu: dict = {}
    times = timed_interleaved(chunks, repeats, cpu=cpu)
    return [{"part": "inverse", "N": n, "precision": precision, "kernel": f"NS rk4 compact step, {form}",
             "ms": 1e3 * times[form] / steps, "vs_baseline": times[form] / times["one by one"],
             "cpu_ms": 1e3 * cpu[form] / steps, "cpu_vs_baseline": cpu[form] / cpu["one by one"]}
            for form in chunks]


def main() -> int:
    args = parse_args()
    from simulator.runtime import configure_devices

    configure_devices(1, "float64")
    import importlib.util
    import os

    from simulator.benchmark import machine, write_results
    from simulator.fft import local

    threads = args.threads or os.cpu_count() or 1
    rows: list[dict] = []
    parts = list(args.parts)
    if "pruned" in parts and importlib.util.find_spec("pyfftw") is None:
        print("# pruned part not measured: pyfftw is not installed (pip install pyfftw)", flush=True)
        parts.remove("pruned")
    if "inverse" in parts and local.native()[0] is None:
        print(f"# inverse part not measured: FFTW's path is unavailable ({local.native()[1]})", flush=True)
        parts.remove("inverse")
    print(f"{'part':7s} {'N':>4s} {'prec':7s} {'kernel':36s} {'ms':>9s} {'ratio':>6s} {'cpu ratio':>9s}", flush=True)
    for part in parts:
        for n in args.sizes:
            for precision in args.precisions:
                if part == "concat":
                    new = concat_part(n, precision, args.repeats, args.inner)
                elif part == "pruned":
                    new = pruned_part(n, precision, args.repeats, threads)
                else:
                    new = inverse_part(n, precision, args.repeats)
                for row in new:
                    cpu = f"{row['cpu_vs_baseline']:9.2f}" if "cpu_vs_baseline" in row else f"{'-':>9s}"
                    print(f"{part:7s} {n:4d} {precision:7s} {row['kernel']:36s} {row['ms']:9.3f} "
                          f"{row['vs_baseline']:6.2f} {cpu}", flush=True)
                rows += new
    print(write_results(args.out, "layouts", rows, {**machine(), "fftw_threads": threads}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
