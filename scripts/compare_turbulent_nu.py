"""Dedalus' turbulent 2D no-slip convection example and configs/convection_2d_noslip.yaml side by side: the
time-averaged Nusselt number of each, with its statistical error from batch means.

Both runs are Dedalus' 2D Rayleigh-Benard example (scripts/peer_dedalus.py describes it): Ra = 1e6, Pr = 1, Lx = 4,
free-fall units (depth 1, temperature difference 1, kappa = (Ra Pr)^(-1/2)), no-slip plates, RK222, the conductive
profile plus noise of 1e-3 damped at the plates. Dedalus steps its 256 x 64 modes (dealias 3/2) under its example's
CFL (safety 0.5, threshold 0.05, cadence 10, max dt 0.125); the simulator runs the shipped config (the same modes on
its 384 x 96 grid, CFL 0.5 set every step, max dt 0.125). Each records Nu through the volume, 1 + <w b> / kappa
(the volume mean of <w b> - kappa d<b>/dz, in units of the conductive flux kappa), and through each plate, -d<b>/dz
there (<.> the horizontal mean); both codes define the three alike.

The statistics (``statistics`` below, on :mod:`simulator.observables.averages`, which ``simulator plot --window``
states its means with) resample each series onto a uniform time grid (--spacing, linear
interpolation), keep the window [--window-start, T] after the transient (T/2 by default), and estimate the mean's
error by batch means over a fixed number of contiguous blocks (--blocks, 10; Schmeiser 1982 advises 10 to 30): the
standard deviation of the block means over the square root of their number. The blocks must outlast the series'
correlations for their means to be independent: each is checked to span at least 5 integrated autocorrelation
times (Sokal's windowed estimate, Madras & Sokal 1988; ``blocks_outlast_tau``). A fixed count rather than a
multiple of that time, because the Nusselt number at Ra = 1e6 oscillates as the rolls do (periods of about 5): an
oscillation's autocorrelation changes sign, its integrated time stays short, and blocks a few such times long would
be shorter than one period. results.json lists the error for blocks of 1, 2, 4, ... samples beside it
(``blocking``, Flyvbjerg & Petersen 1989): it rises to a plateau once blocks outlast the correlations. The two
means agree when they differ by less than twice their combined error (the square root of the sum of their squared
errors): for Gaussian block means, a 95% interval with many blocks, about 92% with 10 (Student's t, 9 degrees of
freedom).

Run it with the project's python; Dedalus' side runs in its own environment (--dedalus-python, or
SIMULATOR_DEDALUS_PYTHON), as ``dedalus`` below, beside the simulator's run, one process each:

    .venv/bin/python scripts/compare_turbulent_nu.py --t-end 300 --dedalus-python dedalus-venv/bin/python

It writes outputs/turbulent_nu/ (--out): dedalus.csv and dedalus.json (Dedalus' series and its run), ours/ (the
simulator's run directory), results.json (both means, errors, block lengths and whether they agree), and prints the
results. --analyse-only re-reads the series already there (of runs still going, too: T is then the time both have
reached).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the statistics' one implementation (numpy only: Dedalus' environment imports it too)
from simulator.observables.averages import (  # noqa: E402
    BLOCK_TAUS,
    blocking,
    resample,
    time_average,
)

CONFIG = ROOT / "configs" / "convection_2d_noslip.yaml"
#: the series each code records, in each code's names
SERIES = {"volume": "nusselt", "bottom": "nusselt_bottom", "top": "nusselt_top"}


def statistics(t: np.ndarray, y: np.ndarray, start: float, end: float, spacing: float,
               blocks: int) -> dict[str, Any]:
    """The time average of the series y(t) (1-D arrays, t increasing) over [start, end] and its error: y resampled
    every ``spacing`` by linear interpolation, its integrated autocorrelation time tau, and batch means over
    ``blocks`` equal blocks (leftover samples dropped at the start), as ``simulator plot --window`` states a series'
    mean (:mod:`simulator.observables.averages`); the error of the plain estimate sqrt(var 2 tau / T) beside it as a
    check, and the error against the block length."""
    samples = resample(t, y, start, end, spacing)
    average = time_average(samples, spacing, start, blocks)
    return {"mean": average.mean, "error": average.error, "blocks": average.blocks,
            "block_length": average.block_length, "blocking": blocking(samples, spacing), "tau_int": average.tau_int,
            "error_from_tau": average.error_from_tau, "std": average.std, "samples": average.samples,
            "blocks_outlast_tau": average.blocks_outlast_tau}


def compare(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """The difference of two means, their combined error and whether they agree (within twice that error)."""
    combined = math.hypot(ours["error"], theirs["error"])
    difference = ours["mean"] - theirs["mean"]
    return {"difference": difference, "combined_error": combined, "z": difference / combined,
            "agree": abs(difference) <= 2 * combined}


def read_columns(path: Path, names: list[str]) -> dict[str, np.ndarray]:
    """The named columns of a CSV file with a header row, as float arrays, from the rows that hold all of them (a
    run still writing may have left its last row short)."""
    with path.open() as f:
        rows = [row for row in csv.DictReader(f) if all(row.get(name) not in (None, "") for name in names)]
    return {name: np.array([float(row[name]) for row in rows]) for name in names}


def run_dedalus(t_end: float, csv_path: Path, sample: float) -> dict[str, Any]:
    """Dedalus' example to t_end under its own CFL, Nu recorded every ``sample`` of simulated time (the first step
    past each multiple) in csv_path (columns t, dt, volume, bottom, top), flushed row by row; the run's figures."""
    sys.path.insert(0, str(Path(__file__).parent))
    import dedalus.public as d3  # configures Dedalus' logging, quietened next
    import peer_dedalus

    peer_dedalus.quiet()
    solver, setup, names, coords = peer_dedalus.example(256, 64)
    tasks = peer_dedalus.nusselt_tasks(names, coords, 4.0, 1e6 ** -0.5)
    max_dt = 0.125  # the example's CFL, as it sets it
    cfl = d3.CFL(solver, initial_dt=max_dt, cadence=10, safety=0.5, threshold=0.05, max_change=1.5,
                 min_change=0.5, max_dt=max_dt)
    cfl.add_velocity(names["u"])
    solver.stop_sim_time = t_end
    c0, t0 = time.process_time(), time.perf_counter()
    next_sample = 0.0
    with csv_path.open("w") as f:
        f.write("t,dt,volume,bottom,top\n")
        dt = max_dt
        while solver.proceed:
            if solver.sim_time >= next_sample:
                nu = peer_dedalus.evaluate(tasks)
                f.write(f"{float(solver.sim_time)!r},{float(dt)!r},{nu['volume']!r},{nu['bottom']!r},{nu['top']!r}\n")
                f.flush()
                next_sample = sample * (1 + math.floor(solver.sim_time / sample))
            dt = cfl.compute_timestep()
            solver.step(dt)
    return {"peer": peer_dedalus.peer_name("2D Rayleigh-Benard example (no-slip, Lx = 4, Ra = 1e6, Pr = 1, RK222, "
                                           "RealFourier x ChebyshevT 256 x 64, dealias 3/2, its CFL)"),
            "t_end": solver.sim_time, "steps": solver.iteration, "setup_s": setup[0],
            "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}


def series(out: Path) -> dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Each code's time and Nu series (volume, bottom, top) from the runs under ``out``."""
    found = {}
    theirs = out / "dedalus.csv"
    if theirs.exists():
        columns = read_columns(theirs, ["t", *SERIES])
        found["dedalus"] = (columns["t"], {name: columns[name] for name in SERIES})
    ours = out / "ours" / "timeseries.csv"
    if ours.exists():
        columns = read_columns(ours, ["time", *SERIES.values()])
        found["simulator"] = (columns["time"], {name: columns[column] for name, column in SERIES.items()})
    return found


def analyse(out: Path, t_end: float, window_start: float | None, spacing: float, blocks: int
            ) -> dict[str, Any]:
    """Both codes' time-averaged Nu over the window and whether they agree: results.json's content."""
    found = series(out)
    if set(found) != {"dedalus", "simulator"}:
        raise SystemExit(f"{out}: the series of both runs are needed, found {sorted(found) or 'none'}")
    reached = min(t_end, *(t[-1] for t, _ in found.values()))
    start = reached / 2 if window_start is None else window_start
    report: dict[str, Any] = {"t_end": reached, "window": [start, reached], "spacing": spacing,
                              "blocks": blocks, "codes": {}}
    for code, (t, values) in found.items():
        report["codes"][code] = {name: statistics(t, y, start, reached, spacing, blocks)
                                 for name, y in values.items()}
    ours, theirs = report["codes"]["simulator"], report["codes"]["dedalus"]
    report["comparison"] = {name: compare(ours[name], theirs[name]) for name in SERIES}
    for name in ("dedalus.json", "ours/status.json"):
        if (out / name).exists():
            report[name.split("/")[0].removesuffix(".json") + "_run"] = json.loads((out / name).read_text())
    return report


def table(report: dict[str, Any]) -> str:
    """The results as lines of text."""
    lines = [f"time-averaged Nu over t in [{report['window'][0]:g}, {report['window'][1]:g}] "
             f"(batch means over {report['blocks']} blocks)",
             f"{'Nu':8} {'code':10} {'mean':>8} {'error':>7} {'tau_int':>7} {'block':>6} {'blocks':>6}"]
    for name in SERIES:
        for code in ("dedalus", "simulator"):
            s = report["codes"][code][name]
            lines.append(f"{name:8} {code:10} {s['mean']:8.4f} {s['error']:7.4f} {s['tau_int']:7.2f} "
                         f"{s['block_length']:6.2f} {s['blocks']:6d}"
                         + ("" if s["blocks_outlast_tau"] else f" (blocks under {BLOCK_TAUS:g} tau_int)"))
        c = report["comparison"][name]
        lines.append(f"{name:8} {'difference':10} {c['difference']:8.4f} {c['combined_error']:7.4f} "
                     f"z = {c['z']:+.2f}: {'agree' if c['agree'] else 'DISAGREE'} within twice the combined error")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", nargs="?", choices=["compare", "dedalus"], default="compare",
                        help="compare (default): both runs and the statistics; dedalus: Dedalus' run alone, in "
                             "Dedalus' environment")
    parser.add_argument("--t-end", type=float, default=300.0, help="the runs' end time T (free-fall times)")
    parser.add_argument("--window-start", type=float, default=None, help="the averaging window's start (T/2)")
    parser.add_argument("--spacing", type=float, default=0.25, help="the uniform resampling interval")
    parser.add_argument("--blocks", type=int, default=10, help="batch means: the number of blocks")
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "turbulent_nu")
    parser.add_argument("--dedalus-python", default=os.environ.get("SIMULATOR_DEDALUS_PYTHON"))
    parser.add_argument("--analyse-only", action="store_true", help="the statistics of the series already there")
    parser.add_argument("--csv", type=Path, help="dedalus: the series' file")
    parser.add_argument("--sample", type=float, default=0.1, help="dedalus: Nu's sampling interval")
    args = parser.parse_args()
    if args.case == "dedalus":
        run = run_dedalus(args.t_end, args.csv, args.sample)
        args.csv.with_suffix(".json").write_text(json.dumps(run, indent=2) + "\n")
        return
    out = args.out
    if not args.analyse_only:
        if not args.dedalus_python:
            parser.error("--dedalus-python (or SIMULATOR_DEDALUS_PYTHON): the python of Dedalus' environment")
        out.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        theirs = subprocess.Popen([args.dedalus_python, __file__, "dedalus", "--t-end", str(args.t_end),
                                   "--csv", str(out / "dedalus.csv"), "--sample", str(args.sample)],
                                  env={**env, "OMP_NUM_THREADS": "1"})
        ours = subprocess.run([sys.executable, "-m", "simulator", "run", str(CONFIG), "--set",
                               f"time.t_end={args.t_end}", "--out", str(out / "ours"), "--overwrite"])
        if theirs.wait() != 0 or ours.returncode != 0:
            raise SystemExit(f"a run failed: dedalus exit {theirs.returncode}, simulator exit {ours.returncode}")
    report = analyse(out, args.t_end, args.window_start, args.spacing, args.blocks)
    (out / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    print(table(report))


if __name__ == "__main__":
    main()
