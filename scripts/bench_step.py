"""Benchmark one time step of each solver against the FFTs it cannot avoid.

For each N, scheme (NS rk4, NS lsrk4, SP kdk, Boussinesq rk4, MHD rk4), backend, device count and
precision, in one invocation:

* ``step_ms``: median wall time per step, from a compiled chunk of steps (the run loop itself);
* ``fft_ms``: the transforms one step must do, timed alone in the same run as the same batched calls
  (NS: per stage an inverse r2c of 6 fields and a forward of 3; Boussinesq 9 and 4; MHD 12 and 6; SP:
  a forward and inverse c2c of psi and a forward and inverse r2c of the density/potential), and
  ``fft_share`` = step_ms / fft_ms
  (target <= 1.3: the step is FFT-bound);
* ``ffts``: scalar 3D transforms per step; ``a2a``: all-to-alls per step in the compiled HLO of one
  step (target with slab: one per batched transform);
* ``bytes_per_cell``: the compiled chunk's memory (arguments + outputs + temporaries - donated) over
  all devices, per grid cell (target <= 64 in float32 with lsrk4: 1024^3 fits one 80 GB GPU);
* ``Mcell_steps_per_s``: N^3 * steps / s / 1e6.

With ``--peer-python PY`` (an environment with FluidSim, see scripts/peer_fluidsim.py), FluidSim's
ns3d Taylor-Green RK4 step is measured in the same invocation and ``vs_fluidsim`` = our step / its
step is reported for the NS rk4 float64 rows.

    python scripts/bench_step.py                                   # N = 64 128, 1 CPU device
    python scripts/bench_step.py --peer-python /path/to/fluidsim-venv/bin/python
    python scripts/bench_step.py --sizes 256 512 --platform gpu    # on a GPU machine

Results: a table on stdout, outputs/bench/step.csv and step.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

# scheme -> (physics, integrator, initial condition, extra config overrides)
SCHEMES = {
    "rk4": ("navier_stokes", "rk4", "taylor_green", []),
    "lsrk4": ("navier_stokes", "lsrk4", "taylor_green", []),
    "kdk": ("schrodinger_poisson", "kdk", "random", ["grid.box=1", "initial.amplitude=0.3"]),
    "bous": ("boussinesq", "rk4", "random", ["physics.coriolis=1", "initial.buoyancy=4"]),
    "mhd": ("mhd", "rk4", "orszag_tang", []),
}
STAGES = {"rk4": 4, "lsrk4": 5, "kdk": 1, "bous": 4, "mhd": 4}
#: equations of the Navier-Stokes family beyond NS itself: fields of the inverse and of the forward
#: batched transform of each stage
BATCHES = {"boussinesq": (9, 4), "mhd": (12, 6)}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128], help="cubic grid sizes N")
    p.add_argument("--schemes", nargs="+", default=list(SCHEMES), choices=list(SCHEMES))
    p.add_argument("--backends", nargs="+", default=["slab"])
    p.add_argument("--devices", type=int, nargs="+", default=[1], help="device counts to use")
    p.add_argument("--precisions", nargs="+", default=["float64", "float32"], choices=["float32", "float64"])
    p.add_argument("--steps", type=int, default=5, help="steps per timed chunk")
    p.add_argument("--repeats", type=int, default=3, help="timed chunks (median reported)")
    p.add_argument("--platform", default="cpu", choices=["cpu", "gpu"],
                   help="cpu: virtual CPU devices (max of --devices); gpu: the visible GPUs")
    p.add_argument("--peer-python", default=None, help="python of an environment with FluidSim installed")
    p.add_argument("--out", default="outputs/bench", help="directory for step.csv and step.json")
    return p.parse_args()


def fluidsim_peer(python: str, sizes: list[int]) -> dict[int, float]:
    """ms per FluidSim ns3d Taylor-Green RK4 step, by N, measured now in its own environment."""
    script = Path(__file__).with_name("peer_fluidsim.py")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "peer.json"
        subprocess.run([python, str(script), "--sizes", *map(str, sizes), "--json", str(out)], check=True)
        return {r["n"]: r["ms_per_step"] for r in json.loads(out.read_text())["results"]}


def main() -> int:
    args = parse_args()
    from simulator.runtime import configure_devices

    configure_devices(max(args.devices) if args.platform == "cpu" else None, "float64")
    import jax
    import jax.numpy as jnp

    from simulator import config as config_mod
    from simulator.benchmark import machine, memory_bytes, timed, write_results
    from simulator.run.simulation import Simulation
    from simulator.fft.check import collective_counts

    peer = fluidsim_peer(args.peer_python, args.sizes) if args.peer_python else {}
    devices = jax.devices()
    rows = []
    print(f"# {machine()['device_kind']} x{len(devices)}, {machine()['cores']} cores", flush=True)
    print(f"{'N':>4s} {'scheme':6s} {'backend':9s} {'dev':>3s} {'prec':7s} {'step ms':>9s} {'fft ms':>9s} "
          f"{'share':>6s} {'ffts':>4s} {'a2a':>3s} {'B/cell':>7s} {'Mcell*st/s':>10s} {'vs fluidsim':>11s}", flush=True)
    for n in args.sizes:
        for scheme in args.schemes:
            physics, integrator, initial, extra = SCHEMES[scheme]
            for backend in args.backends:
                for nd in sorted(set(1 if backend == "single" else d for d in args.devices)):
                    for prec in args.precisions:
                        overrides = [f"grid.shape={n}", f"fft.backend={backend}", f"precision={prec}",
                                     f"physics.name={physics}", f"time.integrator={integrator}",
                                     f"initial.name={initial}", "time.dt=1e-3", *extra]
                        try:
                            cfg = config_mod.load(None, overrides)
                            sim = Simulation(cfg, devices[:nd])
                        except ValueError as err:  # ConfigError: the grid does not divide over the mesh
                            print(f"# skip {scheme} {backend} on {nd}: {err}", flush=True)
                            continue
                        eq, fft, dtype = sim.equation, sim.fft, sim.dtype
                        state = sim.initial_state()
                        # the chunk: compiled once, then timed; the state is donated, so thread it through
                        holder = {"s": sim.advance(state, args.steps, 1e-3, donate=True)}

                        def chunk():
                            holder["s"] = sim.advance(holder["s"], args.steps, 1e-3, donate=True)
                            return holder["s"]

                        step_s = timed(chunk, repeats=args.repeats) / args.steps
                        compiled = sim._chunks[True].lower(eq, holder["s"], jnp.asarray(0.0, dtype), 1,
                                                    jnp.asarray(1e-3, dtype), sim.params).compile()
                        mem = memory_bytes(compiled)
                        step = sim.scheme.load()(eq)
                        one = jax.jit(lambda e, s, p, st=step: st(s, 0.0, jnp.asarray(1e-3, dtype), p))
                        a2a = collective_counts(one.lower(eq, holder["s"], sim.params).compile().as_text())["all-to-all"]
                        if scheme == "lsrk4":  # its stages are a rolled loop: the HLO holds one stage
                            a2a *= STAGES[scheme]
                        if physics == "navier_stokes":
                            spec6 = jnp.concatenate([holder["s"], holder["s"]])
                            bundle = jax.jit(lambda k6, f=fft: f.rfft(f.irfft(k6)[:3]))
                            fft_s = STAGES[scheme] * timed(bundle, spec6, repeats=args.repeats)
                            ffts = STAGES[scheme] * 9
                        elif physics in BATCHES:
                            n_inverse, n_forward = BATCHES[physics]
                            spec = jnp.concatenate([holder["s"][:1]] * n_inverse)
                            bundle = jax.jit(lambda k, f=fft, m=n_forward: f.rfft(f.irfft(k)[:m]))
                            fft_s = STAGES[scheme] * timed(bundle, spec, repeats=args.repeats)
                            ffts = STAGES[scheme] * (n_inverse + n_forward)
                        else:
                            bundle = jax.jit(lambda psi, f=fft: (f.ifft(f.fft(psi)), f.irfft(f.rfft(jnp.abs(psi)))))
                            fft_s = timed(bundle, holder["s"].psi, repeats=args.repeats)
                            ffts = 4
                        ratio_peer = (step_s * 1e3 / peer[n]) if (n in peer and scheme == "rk4"
                                                                  and prec == "float64" and nd == 1) else None
                        row = {
                            "N": n, "scheme": scheme, "backend": backend, "devices": nd, "precision": prec,
                            "step_ms": 1e3 * step_s, "fft_ms": 1e3 * fft_s, "fft_share": step_s / fft_s,
                            "ffts": ffts, "all_to_all": a2a,
                            "bytes_per_cell": None if mem is None else mem * nd / n**3,
                            "Mcell_steps_per_s": n**3 / step_s / 1e6,
                            "fluidsim_ms": peer.get(n) if ratio_peer is not None else None,
                            "vs_fluidsim": ratio_peer,
                        }
                        rows.append(row)
                        bpc = "-" if mem is None else f"{row['bytes_per_cell']:7.1f}"
                        vs = "-" if ratio_peer is None else f"{ratio_peer:.2f}"
                        print(f"{n:4d} {scheme:6s} {backend:9s} {nd:3d} {prec:7s} {row['step_ms']:9.2f} "
                              f"{row['fft_ms']:9.2f} {row['fft_share']:6.2f} {ffts:4d} {a2a:3d} {bpc:>7s} "
                              f"{row['Mcell_steps_per_s']:10.2f} {vs:>11s}", flush=True)
    for n, ms in sorted(peer.items()):
        print(f"{n:4d} fluidsim ns3d rk4 float64: {ms:.2f} ms/step (peer, measured in this run)", flush=True)
    write_results(args.out, "step", rows, {**machine(), "fluidsim_ms_per_step": peer})
    return 0


if __name__ == "__main__":
    sys.exit(main())
