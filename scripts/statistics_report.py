"""Summarise the flow statistics of a run directory (no JAX): the derivative skewness and flatness averaged
over the later half of the run, and the second-order structure functions against those of the run's
energy spectrum under isotropy (S_2 = 4 int E(k) (1 - sin kr/kr) dk for the trace <|du|^2>, and the
longitudinal form), at a few separations.

    python scripts/statistics_report.py outputs/forced_turbulence [--from T]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import simulator
from simulator.plots.statistics import axis_mean, isotropic_s2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--from", dest="start", type=float, default=None,
                        help="average the rows from this time on (default: the later half)")
    args = parser.parse_args()
    run = simulator.load_run(args.run_dir)
    st, sp = run.statistics, run.spectra
    t = st["time"]
    start = t[t.size // 2] if args.start is None else args.start
    rows = t >= start - 1e-9
    print(f"{args.run_dir}: grid {run.config['grid']['shape']}, {int(rows.sum())} statistics rows, "
          f"t = {t[rows][0]:g}..{t[-1]:g}")
    for name in ("skewness", "flatness"):
        pooled = st[name][rows]
        each = [float(np.mean(st[f"{name}_{d}"][rows])) for d in ("dudx", "dvdy", "dwdz")]
        print(f"  {name}: pooled {np.mean(pooled):.3f} +- {np.std(pooled):.3f} (rows' spread); "
              f"per direction {', '.join(f'{v:.3f}' for v in each)}")
    series = run.timeseries
    inside = (series["time"] >= start - 1e-9)
    if "dissipation" in series:
        print(f"  dissipation <2 nu Z> = {np.mean(series['dissipation'][inside]):.4g}")
    if "kmax_eta" in series:
        print(f"  k_max eta = {np.mean(series['kmax_eta'][inside]):.3g}")
    # the same rows of both files (both written at output.*.dt): the spectrum at the statistics' times
    srows = np.isin(np.round(sp["time"], 9), np.round(t[rows], 9))
    energy = np.mean(sp["energy"][srows], axis=0)
    index = np.flatnonzero(rows)
    picked = slice(index[0], index[-1] + 1)
    r, longitudinal = axis_mean(st, "longitudinal", picked)
    _, transverse = axis_mean(st, "transverse", picked)
    p2 = list(st["orders"]).index(2)
    trace = longitudinal[p2] + 2 * transverse[p2]
    iso_trace, iso_long = isotropic_s2(sp["k"], energy, r, width=sp["k"][1] - sp["k"][0])
    print(f"  energy spectrum rows used: {int(srows.sum())}; sum E(k) = {energy.sum():.4g}")
    print("     r     S2_trace  iso(E)   ratio    S2_L     iso_L(E)  ratio")
    for i in sorted({0, 1, 3, len(r) // 4, len(r) // 2, len(r) - 1}):
        print(f"  {r[i]:6.3f}  {trace[i]:8.4g} {iso_trace[i]:8.4g} {trace[i] / iso_trace[i]:6.3f}   "
              f"{longitudinal[p2][i]:8.4g} {iso_long[i]:8.4g} {longitudinal[p2][i] / iso_long[i]:6.3f}")


if __name__ == "__main__":
    main()
