"""The walled flows on one GPU, in one time-boxed command: equality with the CPU, step times, a channel's transition.

    python scripts/gpu_walls.py --out outputs/bench/gpu-walls --budget 420      # on a machine with one GPU
    python scripts/gpu_walls.py --dry-run --out outputs/bench/gpu-walls-dry    # anywhere: toy sizes, CPU

Stages, each a fresh process (so that float32 runs without float64 switched on, and a grid that does not fit
ends its stage alone) with its share of ``--budget`` seconds; every stage appends its rows to ``walls.json`` in
``--out`` as it goes, so a stage cut short keeps what it measured:

1. ``equality``: each shipped walled config (no-slip convection plane and box, free-slip convection plane, the
   channel and Couette flow) at a small grid in float64, 20 steps of its own dt from its own initial state, once on
   the GPU and once on the CPU of the same process: the largest difference of the final spectral state relative to
   its largest coefficient (the CPU path is the one the test suite checks against exact solutions and Dedalus).
2. ``step``: ``configs/convection_3d_noslip.yaml`` at 512 x 512 x 256 points and ``configs/channel_retau180.yaml``
   at 128^3, each in float64 and float32: the seconds to compile the chunk and take its first step, the median
   of three timed chunks per step (a chunk sized to about two seconds from a first timed step), and the device's
   peak bytes in use (per cell).
3. ``transition``: the channel at 128^3 in float64 (the config's precision and dt = 0.005 held fixed) from its own
   laminar-plus-noise start for the rest of the budget (or until a diagnostic is not finite), its diagnostics
   (Re_tau, bulk velocity, kinetic energy, CFL) every 100 steps into ``transition.csv``.

``--dry-run`` runs the same stages on the CPU at toy grids (the script's own check; its figures mean nothing).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
#: the equality stage's configs and small grids (their count across the plates last)
EQUALITY = {"convection_2d_noslip": [32, 17], "convection_3d_noslip": [16, 16, 17], "convection_2d": [32, 17],
            "channel_retau180": [16, 16, 17], "channel_couette": [16, 17]}
#: the step stage's cases: name -> (config, grid, toy grid of a dry run)
STEP = {"convection_box": ("convection_3d_noslip", [512, 512, 256], [8, 8, 9]),
        "channel": ("channel_retau180", [128, 128, 128], [8, 8, 9])}
#: the stages in the order run, with the share of the budget each may take (the transition takes the rest)
PLAN = [("equality", None, "float64", 0.2), ("step", "convection_box", "float64", 0.2),
        ("step", "convection_box", "float32", 0.15), ("step", "channel", "float32", 0.12),
        ("transition", "channel", "float64", None)]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="outputs/bench/gpu-walls")
    p.add_argument("--budget", type=float, default=420.0, help="seconds for all stages together")
    p.add_argument("--dry-run", action="store_true", help="CPU, toy sizes: checks the script itself")
    p.add_argument("--stage", nargs=4, metavar=("STAGE", "CASE", "PRECISION", "SECONDS"), help=argparse.SUPPRESS)
    return p.parse_args()


def append(out: Path, row: dict) -> None:
    """Add ``row`` to ``walls.json`` (read, extend, write: one process at a time writes it) and print it."""
    path = out / "walls.json"
    rows = json.loads(path.read_text()) if path.exists() else []
    path.write_text(json.dumps([*rows, row], indent=1))
    print(json.dumps(row), flush=True)


def simulation(name: str, grid: list[int], precision: str, devices: list, **extra):
    from simulator.api import load_config
    from simulator.run.simulation import Simulation

    values = {"grid.shape": grid, "precision": precision, "output.snapshots": None, **extra}
    return Simulation(load_config(str(CONFIGS / f"{name}.yaml"), values), devices)


def equality(out: Path, dry: bool) -> None:
    """Stage 1: GPU against CPU, float64, per config."""
    import jax
    import numpy as np

    accelerator = jax.devices()[:1]
    cpu = jax.devices("cpu")[:1]
    for name, grid in EQUALITY.items():
        finals = []
        for devices in (accelerator, cpu):
            sim = simulation(name, grid, "float64", devices)
            state = sim.advance(sim.initial_state(), 20, sim.cfg.time.dt)
            finals.append([np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(state)])
        scale = max(float(np.abs(leaf).max()) for leaf in finals[1])
        worst = max(float(np.abs(a - b).max()) for a, b in zip(*finals, strict=True))
        append(out, {"stage": "equality", "config": name, "grid": grid, "steps": 20,
                     "platform": accelerator[0].platform, "max_abs_difference": worst, "max_abs": scale,
                     "relative": worst / scale, "dry_run": dry})


def step_time(out: Path, case: str, precision: str, dry: bool, deadline: float) -> tuple:
    """Stage 2: compile, then the median of three chunks of about two seconds; returns the simulation and state."""
    import jax

    name, grid, toy = STEP[case]
    grid = toy if dry else grid
    device = jax.devices()[0]
    start = time.perf_counter()
    sim = simulation(name, grid, precision, [device], **{"time.cfl": None})
    dt = sim.cfg.time.dt
    state = sim.advance(sim.initial_state(), 1, dt, donate=True)
    jax.block_until_ready(state)
    compile_s = time.perf_counter() - start
    t = dt
    begin = time.perf_counter()
    state = jax.block_until_ready(sim.advance(state, 1, dt, t=t, donate=True))
    one = time.perf_counter() - begin
    t += dt
    steps = max(1, min(500, int(2.0 / max(one, 1e-6))))
    times = []
    for _ in range(3):
        if time.monotonic() + 1.5 * steps * one > deadline:
            break
        begin = time.perf_counter()
        state = jax.block_until_ready(sim.advance(state, steps, dt, t=t, donate=True))
        times.append((time.perf_counter() - begin) / steps)
        t += steps * dt
    stats = device.memory_stats() or {}
    peak = stats.get("peak_bytes_in_use")
    cells = 1
    for n in grid:
        cells *= n
    ms = sorted(times)[len(times) // 2] * 1e3 if times else one * 1e3
    append(out, {"stage": "step", "case": case, "config": name, "grid": grid, "precision": precision,
                 "platform": device.platform, "device_kind": device.device_kind, "compile_and_first_step_s":
                 round(compile_s, 2), "ms_per_step": round(ms, 3), "chunks_timed": len(times), "steps_per_chunk": steps,
                 "peak_bytes": peak, "bytes_per_cell": round(peak / cells, 1) if peak else None, "dry_run": dry})
    return sim, state, t


def transition(out: Path, dry: bool, deadline: float) -> None:
    """Stage 3: the channel's step time in float64, then its transition until the deadline, Re_tau(t) to a CSV."""
    import math

    sim, _, _ = step_time(out, "channel", "float64", dry, deadline)
    state, t = sim.initial_state(), 0.0  # the same program from the config's own start
    dt, chunk = sim.cfg.time.dt, 100
    path = out / "transition.csv"
    fields = ["t", "steps", "wall_s", "re_tau", "u_tau", "bulk_velocity", "kinetic_energy", "cfl", "divergence"]
    steps, begin, first = 0, time.monotonic(), None
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        while True:
            report = sim.report(state, dt, t=t)
            first = report["re_tau"] if first is None else first
            writer.writerow({"t": round(t, 6), "steps": steps, "wall_s": round(time.monotonic() - begin, 2),
                             **{k: report[k] for k in fields[3:]}})
            fh.flush()
            last = time.monotonic()
            chunk_s = (last - begin) / max(steps // chunk, 1) if steps else 0.0
            if last + 1.5 * chunk_s + 2 > deadline or not math.isfinite(report["re_tau"]):
                break
            state = sim.advance(state, chunk, dt, t=t, donate=True)
            steps, t = steps + chunk, t + chunk * dt
    append(out, {"stage": "transition", "config": "channel_retau180", "grid": STEP["channel"][2 if dry else 1],
                 "precision": "float64", "steps": steps, "t_end": round(t, 4), "wall_s": round(last - begin, 1),
                 "re_tau_first": first, "re_tau_last": report["re_tau"], "dry_run": dry})


def worker(out: Path, stage: str, case: str, precision: str, seconds: float, dry: bool) -> None:
    sys.path.insert(0, str(ROOT))  # a stage run by hand, without the driver's PYTHONPATH
    from simulator.runtime import configure_devices

    configure_devices(1 if dry else None, precision)
    deadline = time.monotonic() + seconds
    if stage == "equality":
        equality(out, dry)
    elif stage == "step":
        step_time(out, case, precision, dry, deadline)
    else:
        transition(out, dry, deadline)


def main() -> int:
    args = parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.stage:
        stage, case, precision, seconds = args.stage
        worker(out, stage, case, precision, float(seconds), args.dry_run)
        return 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "XLA_PYTHON_CLIENT_MEM_FRACTION": os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.92")}
    end = time.monotonic() + args.budget
    failed = 0
    for stage, case, precision, share in PLAN:
        left = end - time.monotonic()
        seconds = left - 5 if share is None else min(share * args.budget, left - 5)
        if seconds < 10:
            print(f"# {stage} {case} {precision}: skipped, {left:.0f} s of the budget left", flush=True)
            continue
        command = [sys.executable, __file__, "--out", str(out), "--stage", stage, str(case), precision,
                   f"{seconds - 8:.0f}"] + (["--dry-run"] if args.dry_run else [])
        begin = time.monotonic()
        try:
            done = subprocess.run(command, env=env, timeout=seconds, capture_output=True, text=True)
            code, text = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as err:
            code, text = 124, (err.stdout or b"").decode(errors="replace") if isinstance(err.stdout, bytes) \
                else (err.stdout or "")
        failed += code != 0
        print(f"# {stage} {case} {precision}: exit {code} in {time.monotonic() - begin:.0f} s", flush=True)
        if code != 0:
            print(text[-3000:], flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
