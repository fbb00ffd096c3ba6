"""The README's commands, run exactly as written there (in the project directory, as a new user would).

The test command itself (``bash scripts/setup.sh && .venv/bin/python -m pytest``) is what ``.ci/run``
runs, so it is exercised by CI; the others are run here after checking they appear verbatim.
"""

import csv
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
QUICKSTART = ("bash scripts/setup.sh && .venv/bin/simulator run configs/taylor_green.yaml --cpu-devices 2 "
              "--out outputs/quickstart --overwrite")
PLOT = ".venv/bin/simulator plot outputs/quickstart"
TEST = "bash scripts/setup.sh && .venv/bin/python -m pytest"
SWEEP = [".venv/bin/simulator sweep configs/sweeps/tg_viscosity.yaml",
         ".venv/bin/simulator sweep configs/sweeps/tg_viscosity.yaml --local",
         ".venv/bin/simulator sweep outputs/tg_viscosity --collect"]


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


def shell(command, timeout=600):
    # the README's commands assume the project's .venv; this test may run from any environment
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_readme_starts_with_the_two_commands():
    blocks = README.split("```bash\n")[1:3]
    assert [b.split("\n```")[0] for b in blocks] == [QUICKSTART, TEST]
    assert TEST in (ROOT / ".ci" / "run").read_text()


@pytest.mark.slow
def test_quickstart_and_its_plots_as_written():
    assert QUICKSTART in README and PLOT in README
    run = shell(QUICKSTART)
    assert run.returncode == 0, run.stderr[-3000:]
    out = ROOT / "outputs" / "quickstart"
    assert (out / "status.json").read_text().count('"finished"') == 1
    assert len(list((out / "snapshots").glob("s*.h5"))) == 6
    plot = shell(PLOT)
    assert plot.returncode == 0, plot.stderr[-3000:]
    for name in ("timeseries", "spectra", "slice"):
        assert png_size(out / "plots" / f"{name}.png") == (960, 600), name
    # the README's figures are these plots of this run
    for name in ("spectra", "slice"):
        assert png_size(ROOT / "docs" / "images" / f"taylor_green_{name}.png") == (960, 600)


@pytest.mark.slow
def test_the_scripting_example_as_written():
    """The README's Python example, run as a script from the project directory (it reads the quickstart's
    run, which the test above writes; it is written here too if missing)."""
    if not (ROOT / "outputs" / "quickstart" / "status.json").exists():
        assert shell(QUICKSTART).returncode == 0
    section = README.split("## Scripting the simulator", 1)[1]
    code = section.split("```python\n", 1)[1].split("\n```", 1)[0]
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "'energy':" in done.stdout
    assert (ROOT / "outputs" / "jeans_short" / "status.json").read_text().count('"finished"') == 1


@pytest.mark.slow
def test_the_example_sweep_as_written():
    for command in SWEEP:
        assert command in README, command
        done = shell(command)
        assert done.returncode == 0, f"{command}: {done.stderr[-3000:]}"
    with (ROOT / "outputs" / "tg_viscosity" / "collected.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["status"] for r in rows] == ["finished"] * 3
    energy = [float(r["final_energy"]) for r in rows]
    # viscosity halves from point to point: less of the initial energy 1/8 is dissipated by t = 10
    assert 0 < energy[0] < energy[1] < energy[2] < 0.125
    assert png_size(ROOT / "outputs" / "tg_viscosity" / "plots" / "sweep_peak_dissipation.png") == (960, 600)


# ---- figures and facts the README states, held to the configs and commands that produce them ----------

def _snapshot_times(cfg):
    """How many snapshots a config's run writes: t = 0 and each multiple of its period (or its times)."""
    s = cfg.output.snapshots
    if s.times:
        return len(s.times)
    if s.dt:
        return int(cfg.time.t_end / s.dt + 1e-9) + 1
    return int(round(cfg.time.t_end / cfg.time.dt)) // s.every + 1


def test_every_shipped_config_writes_as_many_snapshots_as_the_readme_says():
    import simulator

    assert "Every shipped config writes 5 or more snapshots" in README
    counts = {f.name: _snapshot_times(simulator.load_config(f)) for f in sorted((ROOT / "configs").glob("*.yaml"))}
    assert min(counts.values()) >= 5, counts
    assert "snapshots at t = 0, 3, …, 15" in README and counts["stratified_turbulence.yaml"] == 6


def test_the_configs_the_readme_lists_have_what_it_says():
    """A config described with a passive scalar has one; one described without, has none."""
    import simulator

    listing = README.split("Other configs, each")[1].split("Any of them")[0]
    for f in sorted((ROOT / "configs").glob("*.yaml")):
        if f"`{f.name}` (" not in listing:
            continue
        said = listing.split(f"`{f.name}` (")[1].split("`")[0]
        scalars = getattr(simulator.load_config(f).physics, "scalars", ())
        assert ("passive scalar" in said) == bool(scalars), (f.name, said)


def test_the_reading_snippets_read_files_a_readme_command_writes():
    """Every ``outputs/NAME/...`` in a python block is the output of a command of the README, and the
    quickstart's snapshot s00000200 exists (t_end / dt = 200 steps, a multiple of its snapshot period)."""
    import re

    import simulator

    python = "".join(block.split("\n```")[0] for block in README.split("```python\n")[1:])
    named = set(re.findall(r'"outputs/([\w-]+)/', python))
    assert named and all(f"--out outputs/{name}" in README for name in named), named
    cfg = simulator.load_config(ROOT / "configs" / "taylor_green.yaml")
    steps = int(round(cfg.time.t_end / cfg.time.dt))
    assert "outputs/quickstart/snapshots/s00000200.h5" in python and steps == 200
    assert steps % cfg.output.snapshots.every == 0


def test_the_fdm_sweep_figures_are_named_for_what_the_diagnostic_measures():
    """max_density is max rho / mean rho: the README calls its values that, with the contrasts beside."""
    from simulator import equations

    assert equations.get("fdm_cosmo").diagnostics["max_density"] == "max rho / mean rho"
    assert "peak density contrast at z = 5 of" not in README
    peaks = [1.15, 1.71, 2.64]
    text = "peak density max ρ/ρ̄ at z = 5 of 1.15, 1.71 and 2.64\n(peak contrasts δ = ρ/ρ̄ − 1 of " + \
        ", ".join(f"{p - 1:.2f}" for p in peaks[:2]) + f" and {peaks[2] - 1:.2f})"
    assert text in README
