"""Benchmark one time step of each solver against the FFTs it cannot avoid.

For each N, scheme (NS rk4, NS lsrk4, NS rk4 with one passive scalar, SP kdk, comoving SP kdk, Boussinesq
rk4, MHD rk4), backend, device count, precision and local FFT path (``--fft-paths``: ``xla``, XLA's FFT;
``fftw``, the FFTW custom call of simulator/fft/local.py), in one invocation:

* ``step_ms``: median wall time per step, from a compiled chunk of steps (the run loop itself), and
  ``vs_xla``: its ratio to the same configuration on the xla path;
* ``fft_ms``: the transforms one step must do, timed alone in the same run as the same batched calls
  (NS: per stage an inverse r2c of 6 fields and a forward of 3, with n scalars 6 + n and 3 + 3 n;
  Boussinesq 9 and 4; MHD 12 and 6; SP: a
  forward and inverse c2c of psi
  and a forward and inverse r2c of the density/potential), looped in one compiled call as the chunk
  loops its steps (both then reuse their buffers), and ``fft_share`` = step_ms / fft_ms
  (target <= 1.3: the step is FFT-bound). Chunks and FFTs of every path are timed A/B interleaved
  (each round runs each once, in a rotating order), so load on a shared machine hits all alike;
* ``ffts``: scalar 3D transforms per step; ``a2a``: all-to-alls per step in the compiled HLO of one
  step (target with slab: one per batched transform);
* ``bytes_per_cell``: the compiled chunk's memory (arguments + outputs + temporaries - donated) over
  all devices, per grid cell (target <= 64 in float32 with lsrk4: 1024^3 fits one 80 GB GPU);
* ``Mcell_steps_per_s``: N^3 * steps / s / 1e6.

With ``--peer-python PY`` (an environment with FluidSim, see scripts/peer_fluidsim.py), FluidSim's
ns3d Taylor-Green RK4 step is measured in the same invocation, its chunks of steps interleaved with
ours in the same rounds, and ``vs_fluidsim`` = our step / its step is reported for the NS rk4
float64 rows on one device.

    python scripts/bench_step.py                                   # N = 64 128, 1 CPU device
    python scripts/bench_step.py --peer-python /path/to/fluidsim-venv/bin/python
    python scripts/bench_step.py --sizes 64 128 --precisions float64 --schemes rk4 --fft-paths xla fftw
    python scripts/bench_step.py --sizes 256 512 --platform gpu    # on a GPU machine

Results: a table on stdout, outputs/bench/step.csv and step.json.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# scheme -> (physics, integrator, initial condition, extra config overrides)
SCHEMES = {
    "rk4": ("navier_stokes", "rk4", "taylor_green", []),
    "lsrk4": ("navier_stokes", "lsrk4", "taylor_green", []),
    "rk4_scalar": ("navier_stokes", "rk4", "taylor_green",
                   ["physics.scalars=[{diffusivity: 1e-3, mean_gradient: [0, 0, 1]}]", "initial.scalars.name=random"]),
    "kdk": ("schrodinger_poisson", "kdk", "random", ["grid.box=1", "initial.amplitude=0.3"]),
    "kdk_cosmo": ("fdm_cosmo", "kdk", "gaussian", ["grid.box=1"]),  # comoving: step factors from a(t)
    "bous": ("boussinesq", "rk4", "random", ["physics.coriolis=1", "initial.buoyancy=4"]),
    "mhd": ("mhd", "rk4", "orszag_tang", []),
}
STAGES = {"rk4": 4, "lsrk4": 5, "rk4_scalar": 4, "kdk": 1, "kdk_cosmo": 1, "bous": 4, "mhd": 4}
#: equations of the Navier-Stokes family: fields of the inverse and of the forward batched transform of
#: each stage (the split-step equations do a c2c pair of psi and an r2c pair of the density per step)
BATCHES = {"navier_stokes": (6, 3), "boussinesq": (9, 4), "mhd": (12, 6)}


def batches(physics: str, state: Any) -> tuple[int, int]:
    """The BATCHES of ``physics`` for ``state``: with n passive scalars after the flow's spectra (Navier-Stokes,
    Boussinesq) the inverse also transforms their n fields and the forward their 3 n products u theta."""
    n_inverse, n_forward = BATCHES[physics]
    scalars = state.shape[0] - {"navier_stokes": 3, "boussinesq": 4}.get(physics, state.shape[0])
    return n_inverse + scalars, n_forward + 3 * scalars


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128], help="cubic grid sizes N")
    p.add_argument("--schemes", nargs="+", default=list(SCHEMES), choices=list(SCHEMES))
    p.add_argument("--backends", nargs="+", default=["slab"])
    p.add_argument("--devices", type=int, nargs="+", default=[1], help="device counts to use")
    p.add_argument("--precisions", nargs="+", default=["float64", "float32"], choices=["float32", "float64"])
    p.add_argument("--steps", type=int, default=5, help="steps per timed chunk")
    p.add_argument("--repeats", type=int, default=5, help="timed rounds of chunks and of FFTs (median reported)")
    p.add_argument("--fft-paths", nargs="+", default=["xla", "fftw"], choices=["xla", "fftw"],
                   help="local FFT paths to measure (fftw: where the native extension is available)")
    p.add_argument("--platform", default="cpu", choices=["cpu", "gpu"],
                   help="cpu: virtual CPU devices (max of --devices); gpu: the visible GPUs")
    p.add_argument("--peer-python", default=None, help="python of an environment with FluidSim installed")
    p.add_argument("--out", default="outputs/bench", help="directory for step.csv and step.json")
    return p.parse_args()


class FluidSimPeer:
    """FluidSim's ns3d Taylor-Green RK4 run in its own environment (scripts/peer_fluidsim.py --serve),
    stepping on request so that its steps are timed interleaved with ours."""

    def __init__(self, python: str, sizes: list[int]):
        script = Path(__file__).with_name("peer_fluidsim.py")
        self.proc = subprocess.Popen([python, str(script), "--serve", "--sizes", *map(str, sizes)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"{script} --serve did not start (exit {self.proc.wait()})")

    def steps(self, n: int, steps: int) -> None:
        self.proc.stdin.write(f"{n} {steps}\n")
        self.proc.stdin.flush()
        float(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


@dataclass
class Prepared:
    """One configuration on one local FFT path: the simulation, its compiled chunk (the state is
    donated, so it is threaded through ``holder``) and the batched transforms one step must do."""

    sim: Any
    holder: dict
    chunk: Callable[[], Any]
    ffts: Callable[[], Any]


def prepare(config_mod, simulation_cls, overrides: list[str], devices, path: str, steps: int,
            scheme: str) -> Prepared:
    """Build the simulation with its FFT backend on local FFT ``path`` and compile its chunk of
    ``steps`` steps and the transforms of as many steps (``ffts()`` runs them; time / steps = per step)."""
    import jax
    import jax.numpy as jnp

    saved = os.environ.get("SIMULATOR_FFT")
    os.environ["SIMULATOR_FFT"] = path  # read when the backend is built
    try:
        sim = simulation_cls(config_mod.load(None, overrides), devices)
    finally:
        if saved is None:
            del os.environ["SIMULATOR_FFT"]
        else:
            os.environ["SIMULATOR_FFT"] = saved
    fft = sim.fft
    holder = {"s": sim.advance(sim.initial_state(), steps, 1e-3, donate=True)}  # compiles the chunk

    def chunk():
        holder["s"] = sim.advance(holder["s"], steps, 1e-3, donate=True)
        return holder["s"]

    # The transforms one step makes, as the same batched calls, looped inside one compiled call like
    # the chunk's steps (so both reuse their buffers from the second iteration on: timing single
    # calls would charge the transforms for fresh, page-faulting output buffers the step never pays).
    # NS family, per stage: an inverse r2c of the fields the stage needs (NS: u and curl u) and a forward
    # r2c of the products (NS: u x w), BATCHES; SP, per step: a c2c pair of psi and an r2c pair of the
    # density. The glue (concatenate, product, and a carry update that keeps the transforms live without
    # changing the state) is the minimum the step also does around them.
    state = jax.tree.map(jnp.copy, holder["s"])  # the chunk donates holder["s"]; this stays
    if isinstance(state, jax.Array):
        loops = steps * STAGES[scheme]
        n_inverse, n_forward = batches(SCHEMES[scheme][0], state)
        pairs = [jnp.asarray([(i + j) % n_inverse for i in range(n_forward)]) for j in (0, 1)]  # two-field products

        def body(_, k):
            x = fft.irfft(jnp.concatenate([k[:1]] * n_inverse))
            return k + 0.0 * fft.rfft(x[pairs[0]] * x[pairs[1]])[:1]

        looped = jax.jit(lambda k: jax.lax.fori_loop(0, loops, body, k))
        ffts = lambda: looped(state)  # noqa: E731
    else:
        def body(_, p):
            q = fft.ifft(fft.fft(p))
            return p + 0.0 * q * fft.irfft(fft.rfft(jnp.abs(q) ** 2))

        looped = jax.jit(lambda p: jax.lax.fori_loop(0, steps, body, p))
        ffts = lambda: looped(state.psi)  # noqa: E731
    return Prepared(sim, holder, chunk, ffts)


def main() -> int:
    args = parse_args()
    from simulator.runtime import configure_devices

    configure_devices(max(args.devices) if args.platform == "cpu" else None, "float64")
    import jax
    import jax.numpy as jnp

    from simulator import config as config_mod
    from simulator.benchmark import machine, memory_bytes, timed_interleaved, write_results
    from simulator.fft import BACKENDS, local
    from simulator.run.simulation import Simulation
    from simulator.fft.check import collective_counts

    peer_proc = FluidSimPeer(args.peer_python, args.sizes) if args.peer_python else None
    peer: dict[int, float] = {}  # N -> FluidSim ms per step, measured in the rounds of the rk4 float64 rows
    devices = jax.devices()
    paths = list(args.fft_paths)
    if "fftw" in paths and (local.native()[0] is None or args.platform != "cpu"):
        print(f"# fftw path not measured: {local.native()[1] or 'the FFTW path is CPU-only'}", flush=True)
        paths.remove("fftw")
    rows = []
    print(f"# {machine()['device_kind']} x{len(devices)}, {machine()['cores']} cores", flush=True)
    print(f"{'N':>4s} {'scheme':6s} {'backend':9s} {'dev':>3s} {'prec':7s} {'path':4s} {'step ms':>9s} {'vs xla':>6s} "
          f"{'fft ms':>9s} {'share':>6s} {'ffts':>4s} {'a2a':>3s} {'B/cell':>7s} {'Mcell*st/s':>10s} "
          f"{'vs fluidsim':>11s}", flush=True)
    for n in args.sizes:
        for scheme in args.schemes:
            physics, integrator, initial, extra = SCHEMES[scheme]
            for backend in args.backends:
                for nd in sorted(set(1 if backend == "single" else d for d in args.devices)):
                    for prec in args.precisions:
                        overrides = [f"grid.shape={n}", f"fft.backend={backend}", f"precision={prec}",
                                     f"physics.name={physics}", f"time.integrator={integrator}",
                                     f"initial.name={initial}", "time.dt=1e-3", *extra]
                        runs = {}
                        # jaxdecomp's local transforms are inside its package: XLA's path only
                        for path in paths if BACKENDS[backend].owns_local_transforms else ["xla"]:
                            try:
                                runs[path] = prepare(config_mod, Simulation, overrides, devices[:nd], path, args.steps,
                                                     scheme)
                            except ValueError as err:  # ConfigError: the grid does not divide over the mesh
                                print(f"# skip {scheme} {backend} on {nd}: {err}", flush=True)
                                break
                        if not runs:
                            continue
                        # steps and the FFTs alone, every path, A/B interleaved in the same rounds
                        fns = {}
                        for path, run in runs.items():
                            fns[(path, "step")] = run.chunk
                            fns[(path, "fft")] = run.ffts
                        with_peer = peer_proc is not None and scheme == "rk4" and prec == "float64" and nd == 1
                        if with_peer:
                            fns["fluidsim"] = lambda n=n: peer_proc.steps(n, args.steps)
                        times = timed_interleaved(fns, repeats=args.repeats)
                        if with_peer:
                            peer[n] = 1e3 * times["fluidsim"] / args.steps
                        for path, run in runs.items():
                            sim = run.sim
                            eq, dtype = sim.equation, sim.dtype
                            step_s = times[(path, "step")] / args.steps
                            compiled = sim._chunks[True].lower(eq, run.holder["s"], jnp.asarray(0.0, dtype), 1,
                                                        jnp.asarray(1e-3, dtype), sim.params).compile()
                            mem = memory_bytes(compiled)
                            step = sim.scheme.load()(eq)
                            one = jax.jit(lambda e, s, p, st=step: st(s, 0.0, jnp.asarray(1e-3, dtype), p))
                            a2a = collective_counts(one.lower(eq, run.holder["s"], sim.params).compile().as_text())["all-to-all"]
                            if scheme == "lsrk4":  # its stages are a rolled loop: the HLO holds one stage
                                a2a *= STAGES[scheme]
                            fft_s = times[(path, "fft")] / args.steps
                            ffts = STAGES[scheme] * sum(batches(physics, run.holder["s"])) if physics in BATCHES else 4
                            xla_s = times[("xla", "step")] / args.steps if "xla" in runs else None
                            ratio_peer = step_s * 1e3 / peer[n] if with_peer else None
                            row = {
                                "N": n, "scheme": scheme, "backend": backend, "devices": nd, "precision": prec,
                                "fft_path": path, "local_fft": sim.fft.local.describe(jax.default_backend()),
                                "step_ms": 1e3 * step_s, "vs_xla": None if xla_s is None else step_s / xla_s,
                                "fft_ms": 1e3 * fft_s, "fft_share": step_s / fft_s,
                                "ffts": ffts, "all_to_all": a2a,
                                "bytes_per_cell": None if mem is None else mem * nd / n**3,
                                "Mcell_steps_per_s": n**3 / step_s / 1e6,
                                "fluidsim_ms": peer.get(n) if ratio_peer is not None else None,
                                "vs_fluidsim": ratio_peer, "repeats": args.repeats, "steps": args.steps,
                            }
                            rows.append(row)
                            bpc = "-" if mem is None else f"{row['bytes_per_cell']:7.1f}"
                            vs = "-" if ratio_peer is None else f"{ratio_peer:.2f}"
                            vx = "-" if xla_s is None else f"{step_s / xla_s:6.2f}"
                            print(f"{n:4d} {scheme:6s} {backend:9s} {nd:3d} {prec:7s} {path:4s} {row['step_ms']:9.2f} "
                                  f"{vx:>6s} {row['fft_ms']:9.2f} {row['fft_share']:6.2f} {ffts:4d} {a2a:3d} {bpc:>7s} "
                                  f"{row['Mcell_steps_per_s']:10.2f} {vs:>11s}", flush=True)
    if peer_proc is not None:
        peer_proc.close()
    for n, ms in sorted(peer.items()):
        print(f"{n:4d} fluidsim ns3d rk4 float64: {ms:.2f} ms/step (peer, interleaved with the rows above)",
              flush=True)
    write_results(args.out, "step", rows, {**machine(), "fluidsim_ms_per_step": peer, "fft_paths": paths})
    return 0


if __name__ == "__main__":
    sys.exit(main())
