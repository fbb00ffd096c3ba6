"""A catalogue of malformed input: each is refused with exit 2 and one line naming the problem, and
no file of an existing run changes."""

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[1]
TG = str(ROOT / "configs" / "taylor_green.yaml")
JEANS = str(ROOT / "configs" / "jeans.yaml")
SMALL = ["--set", "grid.shape=16", "--set", "time.t_end=0.05", "--set", "output.every=5"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A directory holding an existing, finished run (``run/``) and some bad files."""
    d = tmp_path_factory.mktemp("bad_input")
    r = subprocess.run([sys.executable, "-m", "simulator", "run", TG, *SMALL, "--out", "run"], cwd=d,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (d / "empty.yaml").write_text("# nothing\n")
    (d / "syntax.yaml").write_text("grid:\n  shape: [16, 16\n  box: 1\n")
    (d / "list.yaml").write_text("- 1\n- 2\n")
    (d / "a_file").write_text("x")
    sweep = {"name": "s", "base": TG, "grid": {"physics.viscosity": [0.01, -1.0]}}
    (d / "bad_point.yaml").write_text(yaml.safe_dump(sweep))
    (d / "bad_sweep_key.yaml").write_text(yaml.safe_dump({**sweep, "grdi": {}}))
    (d / "bad_zip.yaml").write_text(yaml.safe_dump({"name": "s", "base": TG, "zip": {"initial.seed": [1, 2],
                                                                                     "initial.amplitude": [1.0]}}))
    return d


def digest(run_dir):
    return {p.relative_to(run_dir): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


CASES = {
    # config files
    "missing file": (["run", "nope.yaml"], "config file = 'nope.yaml' does not exist"),
    "empty file": (["run", "empty.yaml"], "is empty"),
    "YAML syntax error": (["run", "syntax.yaml"], "syntax.yaml:3' is malformed YAML"),
    "top level not a mapping": (["run", "list.yaml"], "the top level must be a mapping"),
    # keys, types, ranges
    "unknown key": (["run", TG, "--set", "grid.shap=16"], "grid.shap = 16 is an unknown key; did you mean"),
    "unknown section": (["run", TG, "--set", "solver.dt=1"], "solver = {'dt': 1} is an unknown key"),
    "wrong type": (["run", TG, "--set", "grid.shape=[a,b,c]"], "grid.shape[0] = 'a' has the wrong type"),
    "negative dt": (["run", TG, "--set", "time.dt=-0.1"], "time.dt = -0.1 is out of range"),
    "zero t_end": (["run", TG, "--set", "time.t_end=0"], "time.t_end = 0.0 is out of range"),
    "negative viscosity": (["run", TG, "--set", "physics.viscosity=-1"], "physics.viscosity = -1.0 is out of range"),
    "zero keep": (["run", TG, "--set", "checkpoint.keep=0"], "checkpoint.keep = 0 is out of range"),
    "negative cfl": (["run", TG, "--set", "time.cfl=-1"], "time.cfl = -1.0 is out of range"),
    "boolean expected": (["run", TG, "--set", "output.spectra=3"], "output.spectra = 3 has the wrong type"),
    # impossible sizes and layouts
    "odd Nz": (["run", TG, "--set", "grid.shape=[16,16,15]"], "has an odd Nz"),
    "does not divide": (["run", TG, "--cpu-devices", "8", "--set", "grid.shape=12"], "does not divide over the mesh"),
    "grid of two sizes": (["run", TG, "--set", "grid.shape=[16,16]"], "grid.shape = [16, 16] has 2 entries"),
    "mesh of wrong rank": (["run", TG, "--set", "fft.mesh=[2,2]"], "fft.mesh = [2, 2] has the wrong rank"),
    "zero devices": (["run", TG, "--cpu-devices", "0"], "runtime.cpu_devices = 0 is out of range"),
    "off-chunk snapshots": (["run", TG, "--set", "output.snapshot_every=7"], "does not fall on a chunk boundary"),
    # unknown names and combinations
    "unknown backend": (["run", TG, "--set", "fft.backend=fftw"], "fft.backend = 'fftw' is unknown"),
    "unknown physics": (["run", TG, "--set", "physics.name=mhd"], "physics.name = 'mhd' is unknown"),
    "unknown initial condition": (["run", TG, "--set", "initial.name=vortex"], "initial.name = 'vortex' is unknown"),
    "initial of another equation": (["run", TG, "--set", "initial.name=soliton"], "'soliton' is not available"),
    "integrator of another equation": (["run", TG, "--set", "time.integrator=kdk"], "'kdk' is not available"),
    "key of another equation": (["run", JEANS, "--set", "physics.forcing=band"],
                                "physics.forcing = 'band' is an unknown key; known keys for physics.name = "
                                "schrodinger_poisson: name, hbar_over_m, G, self_interaction"),
    "initial key of another initial condition": (["run", TG, "--set", "initial.seed=3"],
                                                 "initial.seed = 3 is an unknown key; known keys for initial.name = "
                                                 "taylor_green: name, amplitude"),
    "unknown precision": (["run", TG, "--set", "precision=float16"], "precision = 'float16' is unknown"),
    # command line
    "malformed --set": (["run", TG, "--set", "grid.shape"], "--set = 'grid.shape' is malformed"),
    "unknown option": (["run", TG, "--fast"], "unrecognized arguments: --fast"),
    "unknown command": (["simulate", TG], "invalid choice: 'simulate'"),
    "launch without a command": (["launch", "-n", "2"], "is missing a command"),
    "output is a file": (["run", TG, *SMALL, "--out", "a_file"], "--out = 'a_file' is a file"),
    # existing runs and restarts
    "existing run": (["run", TG, *SMALL, "--out", "run"], "--out = 'run' already holds a run"),
    "restart from a missing path": (["run", TG, *SMALL, "--out", "run", "--restart", "nope/c1.json"],
                                    "--restart = 'nope/c1.json' does not exist"),
    "restart and overwrite": (["run", TG, *SMALL, "--out", "run", "--restart", "--overwrite"],
                              "cannot be combined with --restart"),
    "restart on another grid": (["run", TG, *SMALL, "--set", "grid.shape=32", "--out", "run", "--restart"],
                                "holds grid [16, 16, 16]"),
    "restart with other physics": (["run", TG, *SMALL, "--set", "physics.viscosity=0.1", "--out", "run",
                                    "--restart"], "(changed: physics.viscosity)"),
    "restart as another equation": (["run", JEANS, *SMALL, "--out", "run", "--restart"], "holds a navier_stokes state"),
    "restart a run that never checkpointed": (["run", TG, *SMALL, "--out", ".", "--restart"], "has nothing to resume"),
    "resume with other physics": (["run", TG, *SMALL, "--set", "physics.viscosity=0.1", "--out", "run", "--resume"],
                                  "(changed: physics.viscosity)"),
    "resume and restart": (["run", TG, *SMALL, "--out", "run", "--resume", "--restart"], "cannot be combined"),
    "resume into a directory of other files": (["run", TG, *SMALL, "--out", ".", "--resume"],
                                               "holds files but no checkpoint of a run with this physics"),
    # sweeps and plots
    "sweep with a bad point": (["sweep", "bad_point.yaml"],
                               "sweep point 1 (physics.viscosity=-1.0): physics.viscosity = -1.0 is out of range"),
    "sweep file with an unknown key": (["sweep", "bad_sweep_key.yaml"], "sweep key 'grdi'"),
    "sweep zip of unequal lists": (["sweep", "bad_zip.yaml"], "has lists of different lengths"),
    "sweep point of a non-sweep": (["sweep", "run", "--point", "0"], "has no sweep.yaml"),
    "sweep point without an index": (["sweep", "run", "--point"], "--point = None is not set"),
    "sweep with zero jobs": (["sweep", "bad_point.yaml", "--local", "-j", "0"], "--jobs = 0"),
    "plot a missing directory": (["plot", "nope"], "RUN_DIR = 'nope' does not exist"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_exits_2_with_one_line_and_changes_nothing(workdir, case):
    args, expected = CASES[case]
    before = digest(workdir / "run")
    r = subprocess.run([sys.executable, "-m", "simulator", *args], cwd=workdir, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2, (case, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (case, r.stderr[-2000:])
    assert expected in lines[0], (case, lines[0])
    assert r.stdout == ""
    assert digest(workdir / "run") == before, case
