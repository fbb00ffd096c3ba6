"""CPU performance peer: FluidSim's ns3d solver on the Taylor-Green vortex, or its ns2d solver on a plane.

Standalone script, run only in a separate FluidSim environment; the package never imports it.
Install that environment (pip's pyfftw wheel bundles FFTW, so no system FFTW is needed):

    python3 -m venv /work/fluidsim-venv
    /work/fluidsim-venv/bin/pip install "fluidsim[fft]"

Run:

    /work/fluidsim-venv/bin/python scripts/peer_fluidsim.py --sizes 64 128 --json peer.json

scripts/bench_step.py --peer-python runs it with --serve instead: it then steps on request, so its
steps are timed interleaved with the benchmark's own (both feel the same load on a shared machine).

Case ``--solver ns3d`` (the default): box 2*pi, u = sin x cos y cos z, v = -cos x sin y cos z, w = 0,
nu = 1/1600, classical RK4, fixed dt = 0.01, 2/3 dealiasing, float64, one process (no MPI), nothing saved.
Reports the median wall time of `sim.time_stepping.one_time_step()` after warm-up steps. FFTs default to
fft3d.with_pyfftw, FluidSim's own default in one process where pyfftw is installed (its
``type_fft = "default"`` resolves to it) and the fastest sequential class here: --fft
fft3d.with_fftw3d (which needs a system FFTW, e.g. apt-get install libfftw3-dev, then pip install
fluidfft-fftw) measured slower, as its FFTs ignore the thread setting. The FFT class, FluidSim's
version and the threads are printed and recorded beside every figure (``--serve``: on its ``ready``
line). OMP_NUM_THREADS, set from --threads before FluidSim is imported, sets the pyfftw threads and
the OpenMP threads of FluidSim's compiled kernels; OMP_WAIT_POLICY defaults to passive (see main).

Case ``--solver ns2d``: FluidSim's ns2d (vorticity form) on a 2 pi square of n**2 points, a random vorticity
(``init_fields.type = "noise"``), nu_2 = 1e-4, classical RK4, fixed dt = 1e-3, 2/3 dealiasing, unforced, float64,
one process; FFTs fft2d.with_pyfftw (FluidSim's default in one process, ``type_fft = "default"``).

Case ``--solver sw1l``: FluidSim's rotating shallow water (sw1l) on a 2 pi square of n**2 points, a random field
(``init_fields.type = "noise"``), f = 1, c^2 = 10, nu_2 = 1e-3, classical RK4, fixed dt = 1e-3, 2/3 dealiasing,
unforced, float64, one process, fft2d.with_pyfftw: the benchmark's case, as scripts/bench_step.py's sw1l rows run.

``--evolve IN.npz OUT.npz`` (sw1l): FluidSim's sw1l stepped from the fields of IN.npz (``u``, ``v``, ``eta`` on
an (Nx, Ny) grid, indexed [i_x, i_y], and the numbers ``lx``, ``ly``, ``f``, ``c2``, ``nu_2``, ``nu_4``, ``dt``,
``steps``), its fields after the steps written to OUT.npz in the same layout: the side-by-side check of the
simulator's sw1l (tests/test_sw1l.py). FluidSim indexes its planes [i_y, i_x]: the fields are transposed on the way
in and out.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def taylor_green(n: int, fft: str) -> Any:
    """FluidSim's ns3d solver set up on an n**3 Taylor-Green vortex (the case above)."""
    import numpy as np
    from fluidsim.solvers.ns3d.solver import Simul

    params = Simul.create_default_params()
    params.oper.nx = params.oper.ny = params.oper.nz = n
    params.oper.Lx = params.oper.Ly = params.oper.Lz = 2 * np.pi
    params.oper.type_fft = fft
    params.oper.coef_dealiasing = 2 / 3
    params.nu_2 = 1 / 1600
    params.time_stepping.type_time_scheme = "RK4"
    params.time_stepping.USE_CFL = False
    params.time_stepping.deltat0 = 0.01
    params.init_fields.type = "in_script"
    params.output.HAS_TO_SAVE = False
    params.output.ONLINE_PLOT_OK = False
    params.output.periods_print.print_stdout = 0
    params.short_name_type_run = f"peer_tgv{n}"
    with contextlib.redirect_stdout(io.StringIO()):  # FluidSim's start-up banner
        sim = Simul(params)

    x, y, z = sim.oper.get_XYZ_loc()
    vx = np.sin(x) * np.cos(y) * np.cos(z)
    vy = -np.cos(x) * np.sin(y) * np.cos(z)
    sim.state.init_statephys_from(vx=vx, vy=vy, vz=np.zeros_like(vx))
    sim.state.statespect_from_statephys()
    sim.state.statephys_from_statespect()
    return sim


def plane(n: int, fft: str) -> Any:
    """FluidSim's ns2d solver set up on an n**2 random vorticity (the ns2d case above)."""
    import numpy as np
    from fluidsim.solvers.ns2d.solver import Simul

    params = Simul.create_default_params()
    params.oper.nx = params.oper.ny = n
    params.oper.Lx = params.oper.Ly = 2 * np.pi
    params.oper.type_fft = fft
    params.oper.coef_dealiasing = 2 / 3
    params.nu_2 = 1e-4
    params.time_stepping.type_time_scheme = "RK4"
    params.time_stepping.USE_CFL = False
    params.time_stepping.deltat0 = 1e-3
    params.init_fields.type = "noise"
    params.output.HAS_TO_SAVE = False
    params.output.ONLINE_PLOT_OK = False
    params.output.periods_print.print_stdout = 0
    params.short_name_type_run = f"peer_ns2d{n}"
    with contextlib.redirect_stdout(io.StringIO()):
        return Simul(params)


def shallow_water(n: int, fft: str, lx: float = 0.0, ly: float = 0.0, f: float = 1.0, c2: float = 10.0,
                  nu_2: float = 1e-3, dt: float = 1e-3, ny: int = 0, nu_4: float = 0.0) -> Any:
    """FluidSim's sw1l solver on an n x ny plane of sides lx x ly (default: n**2 and 2 pi), a random start
    (``noise``), RK4 at the fixed step dt, 2/3 dealiasing (the sw1l case above)."""
    import numpy as np
    from fluidsim.solvers.sw1l.solver import Simul

    params = Simul.create_default_params()
    params.oper.nx, params.oper.ny = n, ny or n
    params.oper.Lx, params.oper.Ly = lx or 2 * np.pi, ly or 2 * np.pi
    params.oper.type_fft = fft
    params.oper.coef_dealiasing = 2 / 3
    params.f, params.c2, params.nu_2, params.nu_4 = f, c2, nu_2, nu_4
    params.time_stepping.type_time_scheme = "RK4"
    params.time_stepping.USE_CFL = False
    params.time_stepping.deltat0 = dt
    params.init_fields.type = "noise"
    params.output.HAS_TO_SAVE = False
    params.output.ONLINE_PLOT_OK = False
    params.output.periods_print.print_stdout = 0
    params.short_name_type_run = f"peer_sw1l{n}"
    with contextlib.redirect_stdout(io.StringIO()):
        return Simul(params)


def evolve(source: Path, target: Path, fft: str) -> None:
    """``--evolve``: FluidSim's sw1l from the fields of ``source`` (see the module docstring) to ``target``."""
    import numpy as np

    given = np.load(source)
    nx, ny = given["u"].shape
    numbers = {k: float(given[k]) for k in ("lx", "ly", "f", "c2", "nu_2", "nu_4", "dt")}
    sim = shallow_water(nx, fft, ny=ny, **numbers)
    oper = sim.oper
    with contextlib.redirect_stdout(io.StringIO()):
        sim.state.init_from_uxuyetafft(*(oper.fft2(np.ascontiguousarray(given[k].T)) for k in ("u", "v", "eta")))
        for _ in range(int(given["steps"])):
            sim.time_stepping.one_time_step()
    phys = sim.state.state_phys
    np.savez(target, **{k: phys.get_var(name).T for k, name in (("u", "ux"), ("v", "uy"), ("eta", "eta"))})


#: the case of each solver, and its FluidFFT class by default (FluidSim's own default in one process)
CASES = {"ns3d": (taylor_green, "fft3d.with_pyfftw"), "ns2d": (plane, "fft2d.with_pyfftw"),
         "sw1l": (shallow_water, "fft2d.with_pyfftw")}


def time_per_step(n: int, fft: str, warmup: int, steps: int, solver: str = "ns3d") -> float:
    """Median seconds per RK4 step of the solver's case at size n."""
    sim = CASES[solver][0](n, fft)
    for _ in range(warmup):
        sim.time_stepping.one_time_step()
    samples = []
    for _ in range(steps):
        t0 = time.perf_counter()
        sim.time_stepping.one_time_step()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def serve(sizes: list[int], fft: str, warmup: int, name: str, solver: str = "ns3d") -> None:
    """Steps on request, for a benchmark that interleaves this peer with its own runs.

    Prints ``ready NAME`` (the peer as it runs: version, FFT class, threads) once every size is set up and
    warmed up; then for each stdin line ``N STEPS``
    runs STEPS steps of the n = N simulation and prints their wall seconds and the CPU seconds of this
    process, all its threads (``time.process_time``: the clock's own resolution, where the 10 ms ticks of
    /proc quantised a 5-step chunk's CPU time per step by 2 ms at 64^3).
    """
    sims = {n: CASES[solver][0](n, fft) for n in sizes}
    for sim in sims.values():
        for _ in range(warmup):
            sim.time_stepping.one_time_step()
    print(f"ready {name}", flush=True)
    for line in sys.stdin:
        n, steps = (int(v) for v in line.split())
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(steps):
            sims[n].time_stepping.one_time_step()
        print(f"{time.perf_counter() - t0:.6f} {time.process_time() - c0:.6f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--solver", default="ns3d", choices=sorted(CASES), help="FluidSim solver and its case")
    parser.add_argument("--fft", default=None, help="FluidFFT class (default: FluidSim's default for the solver)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per size")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--evolve", nargs=2, type=Path, metavar=("IN", "OUT"),
                        help="sw1l: step the fields of IN.npz, write them to OUT.npz (see the module docstring)")
    parser.add_argument("--serve", action="store_true",
                        help="step on request (stdin 'N STEPS' -> stdout seconds) for an interleaved benchmark")
    args = parser.parse_args()
    if args.evolve:
        args.solver = "sw1l"
    args.fft = args.fft or CASES[args.solver][1]

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="peer_fluidsim_") as tmp:
        # Both read when FluidSim is imported; its scratch files go to tmp, then are deleted.
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        # OpenMP threads that spin while they wait (GNU's default) slow FluidSim's steps 10x (33 ->
        # 390 ms at 64^3, measured) as soon as another process shares the cores, as in an interleaved
        # benchmark or on a shared machine; sleeping waits cost it little when the cores are free.
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        os.environ["FLUIDSIM_PATH"] = tmp
        import fluidsim

        if args.solver == "ns3d":
            from fluidfft.fft3d.operators import get_simple_3d_seq_method

            default = get_simple_3d_seq_method()  # what FluidSim's type_fft = "default" is in one process
        else:  # the planes' "default" resolves to the sequential pyfftw class where pyfftw is installed
            default = CASES[args.solver][1]
        which = "FluidSim's default" if args.fft == default else f"FluidSim's default is {default}"
        name = (f"fluidsim {fluidsim.__version__} {args.solver}, type_fft={args.fft} ({which}), "
                f"OMP_NUM_THREADS={args.threads}, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}")
        if args.evolve:
            evolve(*args.evolve, args.fft)
            print(name)
            return
        if args.serve:
            serve(args.sizes, args.fft, args.warmup, name, args.solver)
            return
        print(f"{'n':>5} {'ms/step':>10}")
        for n in args.sizes:
            ms = 1e3 * time_per_step(n, args.fft, args.warmup, args.steps, args.solver)
            results.append({"n": n, "ms_per_step": round(ms, 2)})
            print(f"{n:>5} {ms:>10.2f}  {name}", flush=True)

    if args.json:
        report = {
            "peer": name,
            "fluidsim_version": fluidsim.__version__,
            "fft_lib": args.fft,
            "omp_num_threads": args.threads,
            "results": results,
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
