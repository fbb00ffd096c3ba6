"""Benchmark the no-slip step against Dedalus: Dedalus' 2D Rayleigh-Benard example (no-slip plates, Lx = 4,
Ra = 1e6, Pr = 1, RK222, float64; configs/convection_2d_noslip.yaml) stepped by ``convection2d_noslip`` on one CPU
device, interleaved in the same rounds with Dedalus 3 serving its own steps (scripts/peer_dedalus.py --serve, one
thread, one process), as scripts/bench_step.py interleaves with FluidSim.

The sizes are Dedalus' modes, ``--sizes 256x64 1024x256``: it keeps NX x NZ modes and transforms them on a grid
3/2 as large (dealias = 3/2 padding); this simulator keeps the modes the 2/3 rule leaves of its grid, so its grid
for the same modes is 3/2 of theirs (384 x 96 for 256 x 64: the shipped config), the row ``same modes``. The row
``same modes, fast`` steps the same modes with the fewest points across whose Chebyshev transform has an
FFT-friendly length (385 for 384, whose 2 x 383 is not; 97 for 96), where that differs. The row
``same grid`` steps a grid of NX x NZ points (2/3 of Dedalus' modes kept), for the per-point cost.

Per size: the median wall and CPU milliseconds of a step (a chunk of --steps fixed-dt steps, dt = 0.005 as the
peer's, --repeats rounds, the order rotated from round to round), the ratio to Dedalus' step (wall and CPU); the
set-up to the first step (building the simulation, its initial state and compiling its chunk, in this process,
against Dedalus' solver set-up and first step); and a cold and a warm launch (``simulator run`` of the config in a
fresh process, the first with an empty compilation cache, the second with the cache it filled) to its first progress
line, against a fresh Dedalus process to the end of its first step (``peer_dedalus.py launch``). The memory per cell
of the step's compiled chunk (``simulator plan``'s figure) against a periodic plane's (ns2d, RK4, the same grid) at
--memory-size.

``--case channel`` benchmarks the channel step instead: the pressure-driven channel of scripts/peer_dedalus.py's
``channel`` case (Moser, Kim & Mansour's box 4 pi x 4 pi/3 x 2, Re = 2800, G = 2/Re, laminar Poiseuille flow plus
noise of 0.3, RK222, float64) stepped by the equation ``channel`` (configs/channel_retau180.yaml under the pressure
drive, without its CFL) and by Dedalus serving the same case, at Dedalus' modes ``--sizes 64x64x64 128x128x128``
(streamwise x spanwise x across the plates). Channel papers' 64 x 65 x 64 counts 65 Gauss-Lobatto points across,
degree 64: ``--sizes 64x64x65 128x128x129`` (the count across last; any count is taken between plates). The defaults
keep 64 and 128 Chebyshev modes, degree 63 and 127, on both sides. Dedalus keeps NX x NY x NZ modes on a grid 3/2 as
large; the 2/3 rule of this simulator keeps, of a grid of 3 N / 2 points (3 NZ / 2 Gauss-Lobatto points across), the
same modes: N periodic ones (|m| < N / 2) and NZ Chebyshev coefficients, the row ``same modes``; ``same grid`` steps
NX x NY x NZ points. No launch rows; Dedalus' peak resident memory beside its set-up (128 x 128 x 128 modes need
about 15 GiB of it). ``--pieces`` adds the CPU time of our step's pieces (transforms, explicit terms, stage solve,
mass operator) at each size's same-modes grid.

    python scripts/bench_walls.py --peer-python /path/to/dedalus-venv/bin/python
    python scripts/bench_walls.py --sizes 256x64 --repeats 3      # without a peer: our figures alone
    python scripts/bench_walls.py --case channel --peer-python /path/to/dedalus-venv/bin/python --repeats 3

Results: a table on stdout, outputs/bench/walls.csv and walls.json (``--case channel``: channel.csv and
channel.json), with ``uptime``'s load beside them.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from simulator.benchmark import ServedPeer  # no JAX: the device is configured later
from simulator.schema.overrides import REMOVED

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "convection_2d_noslip.yaml"
DT = 0.005
#: per case: Dedalus' case in scripts/peer_dedalus.py, the config and its overrides, the default sizes (Dedalus'
#: modes), the results' name
CASES = {
    "convection": ("step", CONFIG, {"time.cfl": None}, [(256, 64), (1024, 256)], "walls"),
    "channel": ("channel", ROOT / "configs" / "channel_retau180.yaml",
                {"time.cfl": None, "physics.drive": "pressure", "physics.flux": REMOVED},
                [(64, 64, 64), (128, 128, 128)], "channel"),
}


def size(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split("x"))


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", choices=list(CASES), default="convection")
    p.add_argument("--sizes", type=size, nargs="+", default=None,
                   help="Dedalus' modes NXxNZ (convection: 256x64 1024x256) or NXxNYxNZ (channel: 64x64x64 "
                        "128x128x128; 65 or 129 across the plates: 64x64x65)")
    p.add_argument("--steps", type=int, default=5, help="steps per timed chunk")
    p.add_argument("--repeats", type=int, default=5, help="timed rounds (median reported)")
    p.add_argument("--peer-python", default=os.environ.get("SIMULATOR_DEDALUS_PYTHON"),
                   help="python of an environment with Dedalus 3 (default $SIMULATOR_DEDALUS_PYTHON)")
    p.add_argument("--no-launch", action="store_true", help="skip the fresh-process launch timings")
    p.add_argument("--pieces", action="store_true",
                   help="channel: the CPU time of the step's pieces at each size's same-modes grid")
    p.add_argument("--memory-size", type=int, default=64, help="N of the N x N memory comparison (0: none)")
    p.add_argument("--out", default="outputs/bench", help="directory for the results (walls or channel .csv, .json)")
    args = p.parse_args()
    args.sizes = args.sizes or CASES[args.case][3]
    dims = len(CASES[args.case][3][0])
    if any(len(s) != dims for s in args.sizes):
        p.error(f"--sizes {' '.join('x'.join(map(str, s)) for s in args.sizes)}: the {args.case} case takes "
                f"{'NXxNZ' if dims == 2 else 'NXxNYxNZ'}")
    return args


def label(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


class DedalusPeer(ServedPeer):
    """Dedalus' case (``step`` or ``channel``) at every size, set up and warmed up, stepping on request."""

    def __init__(self, python: str, case: str, sizes: list[tuple[int, ...]]):
        super().__init__(python, Path(__file__).with_name("peer_dedalus.py"), case, "--dt", str(DT), "--sizes",
                         *map(label, sizes))

    def steps(self, shape: tuple[int, ...], steps: int) -> None:
        self.request(hash(shape), " ".join(map(str, (*shape, steps))))


def dedalus_setup(python: str, case: str, shape: tuple[int, ...], launch: bool) -> dict[str, float]:
    """Dedalus' solver set-up, its first step and (``launch``) a fresh process to the end of its first step
    (peer_dedalus.py, one timed step)."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "step.json"
        subprocess.run([python, str(Path(__file__).with_name("peer_dedalus.py")), case, "--sizes", label(shape),
                        "--dt", str(DT), "--steps", "1", "--warmup", "0", "--json", str(out),
                        *([] if launch else ["--no-launch"])], check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())["rows"][0]


def first_line(command: list[str], env: dict[str, str], pattern: str) -> float:
    """Seconds from launching ``command`` to the first line of its output matching ``pattern`` (then it is
    stopped: only the launch is timed)."""
    start = time.monotonic()
    proc = subprocess.Popen(command, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    assert proc.stdout is not None
    seen = float("nan")
    for line in proc.stdout:
        if re.search(pattern, line):
            seen = time.monotonic() - start
            break
    proc.kill()
    proc.wait()
    return seen


def our_launch(grid: tuple[int, int], scratch: Path) -> tuple[float, float]:
    """``(cold, warm)``: launches of the config at ``grid`` to their first progress line, the first with an empty
    compilation cache (it compiles every program and fills the cache), the second with that cache."""
    env = {**{k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"},
           "SIMULATOR_COMPILATION_CACHE": str(scratch / "xla"), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "simulator", "run", str(CONFIG), "--set", f"grid.shape=[{grid[0]}, {grid[1]}]",
               "--set", "time.cfl=null", "--set", "output.chunk=1", "--out", str(scratch / "run"), "--overwrite"]
    cold = first_line(command, env, r"INFO step \d+ t=")
    return cold, first_line(command, env, r"INFO step \d+ t=")


def memory_per_cell(n: int) -> dict[str, float]:
    """Bytes per cell of the compiled chunk (what ``simulator plan`` reports) of the no-slip plane and of a
    periodic plane (ns2d, RK4), both float64 at n x n."""
    import jax

    from simulator.api import load_config
    from simulator.planning import plan
    from simulator.run.simulation import Simulation

    out = {}
    for name, extra in (("noslip", {"physics.name": "convection2d_noslip", "time.cfl": None}),
                        ("periodic", {"physics.name": "ns2d", "time.integrator": "rk4"})):
        values = {"grid.shape": n, "precision": "float64", **extra}
        sim = Simulation(load_config(str(CONFIG) if name == "noslip" else None, values), jax.devices()[:1])
        out[name] = plan.make_plan(sim, ("chunk",), memory=1 << 34).bytes_per_cell
    return out


def pieces(sim, repeats: int) -> dict[str, float]:
    """CPU milliseconds of the channel step's pieces, each compiled alone and timed interleaved (median of
    ``repeats``): the velocity and its gradient to the grid (the explicit terms' one batched inverse transform),
    the advection back to its spectrum (their forward transform), the explicit terms whole (both transforms, the
    products, the dealiasing and the curls), one stage solve (the banded solves of every mode and the influence
    matrix), the mass operator and a whole step; a step is two explicit evaluations, two stage solves and two
    mass operations, the factorisations held from its chunk."""
    import jax
    import jax.numpy as jnp

    from simulator.benchmark import timed_interleaved
    from simulator.time import imex

    # the layout the chunk steps on (on one device the kept columns of the half spectrum)
    eq, params = sim.equation.stepping(), sim.params
    state, t, dt = sim.equation.to_stepping(sim.initial_state()), jnp.zeros(()), jnp.asarray(DT)
    core, factored = eq.core(params), eq.imex_factor(dt, params, imex.RK222)
    m = len(eq.velocity_hat(state))
    spectra = jnp.stack(eq.velocity_hat(state) * (1 + m))
    grid = jax.jit(eq._inverse)(spectra[:m])
    functions = {
        "inverse transform": (jax.jit(eq._inverse), spectra),
        "forward transform": (jax.jit(eq._forward), grid),
        "explicit terms": (jax.jit(eq.explicit), state, t),
        "stage solve": (jax.jit(lambda f, x: core.solver(f)(x)), factored, state),
        "mass": (jax.jit(core.mass), state),
        "step": (jax.jit(lambda x, f: eq.imex_step(x, t, dt, params, imex.RK222, f)), state, factored),
    }
    cpu: dict[str, float] = {}
    timed_interleaved({k: (lambda f=f, a=a: f(*a)) for k, (f, *a) in functions.items()}, repeats=repeats, cpu=cpu)
    return {k: round(1e3 * v, 2) for k, v in cpu.items()}


def main() -> int:
    args = parse_args()
    from simulator.runtime import configure_devices

    configure_devices(1, "float64")
    import jax

    from simulator.api import load_config
    from simulator.benchmark import machine, timed_interleaved, write_results
    from simulator.fft.bases import fast_across
    from simulator.run.simulation import Simulation

    load = os.getloadavg()
    case, config, overrides, _, stem = CASES[args.case]
    launch = args.case == "convection" and not args.no_launch  # Dedalus' launch is its 2D example's
    peer = DedalusPeer(args.peer_python, case, args.sizes) if args.peer_python else None
    if peer is not None:
        print(f"# peer: {peer.name}", flush=True)
    rows = []
    for shape in args.sizes:
        same = tuple(3 * n // 2 for n in shape)
        grids = {"same modes": same, "same modes, fast": (*same[:-1], fast_across(same[-1])), "same grid": shape}
        if grids["same modes, fast"] == same:  # the count across already transforms fast
            del grids["same modes, fast"]
        fns, setup, sims = {}, {}, {}
        for name, grid in grids.items():
            start = time.perf_counter()
            sim = Simulation(load_config(str(config), {**overrides, "grid.shape": list(grid)}), jax.devices()[:1])
            holder = {"s": sim.advance(sim.initial_state(), args.steps, DT, donate=True)}  # compiles the chunk
            jax.block_until_ready(holder["s"])
            setup[name], sims[name] = time.perf_counter() - start, sim

            def chunk(sim=sim, holder=holder):
                holder["s"] = sim.advance(holder["s"], args.steps, DT, donate=True)
                return holder["s"]

            fns[name] = chunk
        if peer is not None:
            fns["dedalus"] = lambda shape=shape: peer.steps(shape, args.steps)
        cpu: dict[str, float] = {}
        wall = timed_interleaved(fns, repeats=args.repeats, cpu=cpu)
        ours_cpu = {name: cpu[name] for name in grids}
        peer_ms = wall["dedalus"] * 1e3 / args.steps if peer is not None else None
        peer_cpu_ms = (sorted(peer.cpu[hash(shape)])[len(peer.cpu[hash(shape)]) // 2] * 1e3 / args.steps
                       if peer is not None else None)
        reference = dedalus_setup(args.peer_python, case, shape, launch) if peer is not None else {}
        for name, grid in grids.items():
            ms, cpu_ms = wall[name] * 1e3 / args.steps, ours_cpu[name] * 1e3 / args.steps
            row = {"dedalus_modes": label(shape), "row": name, "grid": label(grid), "ms": round(ms, 2),
                   "cpu_ms": round(cpu_ms, 2), "setup_s": round(setup[name], 2)}
            if peer is not None:
                row.update(dedalus_ms=round(peer_ms, 2), dedalus_cpu_ms=round(peer_cpu_ms, 2),
                           ratio=round(ms / peer_ms, 3), cpu_ratio=round(cpu_ms / peer_cpu_ms, 3),
                           dedalus_setup_s=reference.get("setup_s"), dedalus_first_step_s=reference.get("first_step_s"),
                           dedalus_max_rss_gib=reference.get("max_rss_gib"))
            if launch and name == "same modes":  # the config's own grid
                with tempfile.TemporaryDirectory() as tmp:
                    cold, warm = our_launch(grid, Path(tmp))
                    row.update(cold_launch_to_step_s=round(cold, 2), warm_launch_to_step_s=round(warm, 2))
                if peer is not None:
                    row["dedalus_launch_to_step_1_s"] = reference.get("to_step_1_s")
            if args.pieces and args.case == "channel" and name == "same modes":
                row.update({f"{k} cpu_ms": v for k, v in pieces(sims[name], args.repeats).items()})
            rows.append(row)
            print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    if peer is not None:
        peer.close()
    memory = memory_per_cell(args.memory_size) if args.memory_size and args.case == "convection" else {}
    if memory:
        print(f"memory per cell at {args.memory_size}^2 float64: no-slip {memory['noslip']:.0f} B, periodic plane "
              f"{memory['periodic']:.0f} B ({memory['noslip'] / memory['periodic']:.2f}x)", flush=True)
    meta = {**machine(), "load_before": load, "load_after": os.getloadavg(), "peer": peer.name if peer else None,
            "memory_per_cell": memory, "memory_size": args.memory_size}
    print(write_results(args.out, stem, rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
