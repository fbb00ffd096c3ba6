"""A catalogue of malformed input: each is refused with exit 2 and one line naming the problem, and
no file of an existing run changes."""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simulator.errors import show_value

from support import command

ROOT = Path(__file__).parents[1]
TG = str(ROOT / "configs" / "taylor_green.yaml")
JEANS = str(ROOT / "configs" / "jeans.yaml")
FORCED = str(ROOT / "configs" / "forced_turbulence.yaml")
ABC = str(ROOT / "configs" / "abc.yaml")
MHD = str(ROOT / "configs" / "orszag_tang.yaml")
WAVE = str(ROOT / "configs" / "stratified_turbulence.yaml")
PARTICLES = str(ROOT / "configs" / "forced_turbulence_particles.yaml")  # two species
COSMO = str(ROOT / "configs" / "fdm_cosmo.yaml")
CDM = str(ROOT / "configs" / "cold_dark_matter.yaml")  # the particles alone
MIXED = str(ROOT / "configs" / "fdm_mixed.yaml")  # a wave (m22 = 0.15) and particles
#: a YAML "billion laughs": nine levels of nine aliases, 9**9 strings once expanded
BOMB = "a: &a [" + ",".join(["lol"] * 9) + "]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
SMALL = ["--set", "grid.shape=16", "--set", "time.t_end=0.05", "--set", "output.chunk=5"]


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
    (d / "dots.yaml").write_text(yaml.safe_dump({**sweep, "name": ".."}))
    owned = [{"name": "tracers", "count": 64, "distribution": "owned", "interpolation": "lagrange4"}]
    (d / "owned_ensemble.yaml").write_text(yaml.safe_dump({"name": "owned", "base": TG, "ensemble": True,
                                                           "set": {"particles": owned},
                                                           "grid": {"physics.viscosity": [0.01, 0.02]}}))
    (d / "latin1.yaml").write_bytes(b"name: caf\xe9\n")
    (d / "binary.yaml").write_bytes(bytes(range(256)))
    (d / "twice.yaml").write_text("time:\n  dt: 0.01\nname: x\ntime:\n  t_end: 1.0\n")
    (d / "bomb.yaml").write_text(BOMB)
    from_run = {**yaml.safe_load(Path(TG).read_text()),
                "initial": {"name": "file", "path": "run/checkpoints/c00000005.json"}}
    (d / "from_run.yaml").write_text(yaml.safe_dump(from_run))
    # copies of the run: its config.yaml binary; its checkpoints deleted; its only checkpoint damaged
    for name in ("binary_config", "no_checkpoints", "damaged", "misspelt_config"):
        shutil.copytree(d / "run", d / name)
    (d / "binary_config" / "config.yaml").write_bytes(bytes(range(256)) * 4)
    stored = d / "misspelt_config" / "config.yaml"  # edited by hand: the run's viscosity would read as the default
    stored.write_text(stored.read_text().replace("  viscosity:", "  viscosty:", 1))
    shutil.rmtree(d / "no_checkpoints" / "checkpoints")
    marker = d / "damaged" / "checkpoints" / "c00000005.json"
    marker.write_text(marker.read_text()[:50])
    return d


def digest(run_dir):
    return {p.relative_to(run_dir): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


CASES = {
    # config files
    "missing file": (["run", "nope.yaml"], "config file = 'nope.yaml' does not exist"),
    "a shipped config by its name": (["run", "taylor_green"], "config file = 'taylor_green' does not exist; give the "
                                     "path of an existing YAML file (did you mean "
                                     f"'{ROOT}/configs/taylor_green.yaml'?)"),
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
    # values shown as the YAML that gives them, not as Python (it said `grid.shape = None`, `[True, None]`)
    "null for a grid": (["run", TG, "--set", "grid.shape=null"], "grid.shape = null is missing; expected a "
                        "list of 3 integers or a list of 2 integers"),
    "true for a time step": (["run", TG, "--set", "time.dt=true"], "time.dt = true has the wrong type"),
    "a list of YAML words for a mapping": (["run", TG, "--set", "output.snapshots=[true, null, no]"],
                                           "output.snapshots = [true, null, false] has the wrong type"),
    # impossible sizes and layouts
    "odd Nz": (["run", TG, "--set", "grid.shape=[16,16,15]"], "has an odd Nz"),
    "does not divide": (["run", TG, "--cpu-devices", "8", "--set", "grid.shape=12"], "does not divide over the mesh"),
    # a plane (two sizes) for a box's equation: the key, what its equation takes and the planar ones
    "a plane for a box's equation": (["run", TG, "--set", "grid.shape=[16,16]"], "grid.shape = [16, 16] is a plane; a "
                                     "box for physics.name = navier_stokes ([Nx, Ny, Nz]), or for a plane physics.name "
                                     "one of: boussinesq2d, channel2d, convection2d, convection2d_noslip, mhd2d, "
                                     "ns2d, sw1l"),
    # the devices a mesh needs, said in words that fit one device too (it said "only 1 are available")
    "mesh of more devices than there are": (["run", TG, "--cpu-devices", "1", "--set", "fft.mesh=[2]"],
                                            "fft.mesh = [2] needs 2 devices but only 1 is available; give a mesh of "
                                            "at most 1 device, or run on more (--cpu-devices 2 on CPUs)"),
    "mesh of wrong rank": (["run", TG, "--set", "fft.mesh=[2,2]"], "fft.mesh = [2, 2] has the wrong rank"),
    "jaxdecomp slab along x": (["run", TG, "--cpu-devices", "4", "--set", "fft.backend=jaxdecomp", "--set",
                                "fft.mesh=[4,1]"],
                               "fft.mesh = [4, 1] is not available for jaxdecomp; jaxdecomp's slab is [1, 4]"),
    # particles kept per device
    "owned slots for only the mean count": (["run", TG, *SMALL, "--cpu-devices", "2", "--set", "particles=[{name: t, "
                                             "count: 512, distribution: owned, interpolation: lagrange4, "
                                             "capacity: 1}]"],
                                            "particles[0].capacity = 1.0 is too small for 2 devices; 256 slots per "
                                            "device for 512 particles"),
    "slots of a replicated species": (["run", TG, *SMALL, "--set", "particles=[{name: t, count: 64, capacity: 4}]"],
                                      "particles[0].capacity = 4.0 would be ignored by a replicated species"),
    # the flag named as given, in the words every command uses for it (sweep's too): once "runtime.cpu_devices = 0"
    "zero devices": (["run", TG, "--cpu-devices", "0"], "error: --cpu-devices = 0 is out of range; give 1 to 4096"),
    "zero devices to validate": (["validate", TG, "--cpu-devices", "0"],
                                 "error: --cpu-devices = 0 is out of range; give 1 to 4096"),
    "zero threads to plan": (["plan", TG, "--threads", "0"], "error: --threads = 0 is out of range; give 1 to 4096"),
    "off-chunk snapshots": (["run", TG, "--set", "output.snapshots.every=7"], "does not fall on a chunk boundary"),
    "grid too large for memory": (["run", TG, "--set", "grid.shape=4096", "--out", "huge"],
                                  "grid.shape = [4096, 4096, 4096] does not fit in memory"),
    "shallow grid too large for memory": (["run", TG, "--set", "grid.shape=[4096,4096,1024]", "--out", "huge"],
                                          "the largest grid of its aspect that fits is ["),
    "overwrite with a grid too large for memory": (["run", TG, "--set", "grid.shape=4096", "--out", "run",
                                                    "--overwrite"], "largest cubic grid that fits is ["),
    # unknown names and combinations
    "unknown backend": (["run", TG, "--set", "fft.backend=fftw"], "fft.backend = 'fftw' is unknown"),
    "unknown physics": (["run", TG, "--set", "physics.name=maxwell"], "physics.name = 'maxwell' is unknown"),
    "unknown initial condition": (["run", TG, "--set", "initial.name=whirlpool"],
                                  "initial.name = 'whirlpool' is unknown"),
    "initial of another equation": (["run", TG, "--set", "initial.name=soliton"], "'soliton' is not available"),
    "integrator of another equation": (["run", TG, "--set", "time.integrator=kdk"], "'kdk' is not available"),
    "the walls' multistep integrator without walls": (["run", TG, "--set", "time.integrator=sbdf2"],
                                                      "time.integrator = 'sbdf2' is not available; for physics.name = "
                                                      "navier_stokes use one of: rk2, rk3, rk4, lsrk4, etdrk4"),
    "key of another equation": (["run", JEANS, "--set", "physics.forcing=band"],
                                "physics.forcing = 'band' is an unknown key; known keys for physics.name = "
                                "schrodinger_poisson: name, hbar_over_m, G, self_interaction"),
    "initial key of another initial condition": (["run", TG, "--set", "initial.seed=3"],
                                                 "initial.seed = 3 is an unknown key; known keys for initial.name = "
                                                 "taylor_green: name, amplitude"),
    "unknown precision": (["run", TG, "--set", "precision=float16"], "precision = 'float16' is unknown"),
    "a name in capitals": (["run", TG, "--set", "time.integrator=RK4"], "time.integrator = 'RK4' is unknown; expected "
                           "one of: rk2, rk3, rk4, lsrk4, etdrk4, rk111, rk222, rk443, sbdf2, kdk (did you mean "
                           "'rk4'?)"),
    "a key in capitals": (["run", TG, "--set", "Time.dt=0.1"], "Time = {'dt': 0.1} is an unknown key; did you mean "
                          "'time'?"),
    # lists of sections: an entry is added only whole; a key of one past the end is an off-by-one, not a species
    "a species one past the end": (["run", PARTICLES, "--set", "particles[2].tau_p=0.1"],
                                   "particles[2].tau_p = 0.1 names no entry; particles has 2 entries, particles[0] to "
                                   "particles[1]: set a key of one of them, or add entry 2 whole, as a mapping of its "
                                   "keys: --set 'particles[2]={key: value, ...}'"),
    "a species far past the end": (["run", PARTICLES, "--set", "particles[5].tau_p=0.1"],
                                   "particles[5].tau_p = 0.1 names no entry; particles has 2 entries"),
    "a whole species far past the end": (["run", PARTICLES, "--set", "particles[5]={name: heavy}"],
                                         "particles[5] = {'name': 'heavy'} names no entry; particles has 2 entries"),
    "a species indexed with a dot": (["run", PARTICLES, "--set", "particles.0.tau_p=0.1"],
                                     "particles.0.tau_p = 0.1 names no entry; particles is a list: index its entries, "
                                     "as in particles[0].tau_p"),
    # pure cold dark matter (physics.fdm_fraction = 0): f in [0, 1], with particles, without the wave's keys
    "fdm_fraction negative": (["run", COSMO, "--set", "physics.fdm_fraction=-0.1"],
                              "physics.fdm_fraction = -0.1 is out of range; it must be >= 0.0"),
    "fdm_fraction NaN": (["run", COSMO, "--set", "physics.fdm_fraction=.nan"],
                         "physics.fdm_fraction = nan is out of range; it must be finite"),
    "fdm_fraction above 1": (["run", COSMO, "--set", "physics.fdm_fraction=1.5"],
                             "physics.fdm_fraction = 1.5 is out of range; it must be <= 1.0"),
    "no wave and no particles": (["run", CDM, "--set", "physics.cdm_particles=0"],
                                 "physics.fdm_fraction = 0.0 has no particles; set physics.cdm_particles"),
    "a wave too thin for float32": (["run", COSMO, "--set", "precision=float32", "--set", "physics.fdm_fraction=1e-37",
                                     "--set", "physics.cdm_particles=262144"],
                                    "physics.fdm_fraction = 1e-37 is too small for float32; 0 (the particles alone) or "
                                    "at least 3.3e-31 in float32"),
    # a key of the wave given, even at its default (it was accepted there: compared with the default)
    "a key of the wave without it": (["run", CDM, "--set", "grid.shape=16", "--set", "physics.cdm_particles=4096",
                                      "--set", "physics.m22=1.0"],
                                     "physics.m22 = 1.0 is a setting of the wave; leave it out: physics.fdm_fraction "
                                     "= 0 runs the cold particles alone, without a wave"),
    # a mixed config made particle-only with --set: what to do, by flags too (--unset the wave's keys)
    "a mixed config set to no wave": (["run", MIXED, "--set", "physics.fdm_fraction=0"],
                                      "physics.m22 = 0.15 is a setting of the wave; leave it out: physics.fdm_fraction "
                                      "= 0 runs the cold particles alone, without a wave; drop the wave's keys (m22, "
                                      "self_interaction, f_a, fdm_transfer) from the config, as "
                                      "configs/cold_dark_matter.yaml does, or on the command line (--unset "
                                      "physics.m22, and so for each of them given), or give an fdm_fraction > 0"),
    # --unset: a key the config does not hold (a misspelling would remove nothing), and a key the run then lacks
    "--unset a key not there": (["run", MIXED, "--unset", "physics.m2"],
                                "--unset = 'physics.m2' names no key the config holds; did you mean 'physics.m22'? "
                                "physics holds: name, h, omega_m"),
    "--unset a needed key": (["run", MIXED, "--set", "physics.fdm_fraction=0", "--unset", "physics.m22",
                              "--unset", "physics.cdm_particles"],
                             "physics.fdm_fraction = 0.0 has no particles; set physics.cdm_particles"),
    # command line
    "config not UTF-8": (["run", "latin1.yaml"], "config file = 'latin1.yaml:1' is not valid UTF-8"),
    "binary config": (["run", "binary.yaml"], "config file = 'binary.yaml' is a binary file"),
    "a key given twice": (["run", "twice.yaml"], "twice.yaml:4' has a duplicate key; give each key once per "
                                                 "mapping ('time' appears twice)"),
    "YAML alias bomb": (["run", "bomb.yaml"], "has too many aliases"),
    "a name that is a path": (["run", TG, *SMALL, "--set", "name=../../escaped"],
                              "name = '../../escaped' is not a name"),
    "seed too large for YAML's integers": (["run", FORCED, "--set", "initial.seed=10^23"],
                                           "initial.seed = '10^23' has the wrong type"),
    "seed of 10**23": (["run", FORCED, "--set", "initial.seed=100000000000000000000000"],
                       "initial.seed = 100000000000000000000000 is out of range; it must be <= 4294967295"),
    "seed aliasing another modulo 2**32": (["run", FORCED, "--set", "initial.seed=4294967297"],
                                           "initial.seed = 4294967297 is out of range"),
    # mode numbers the grid cannot represent (|m| < N/2 on each axis they lie along)
    "dynamo mode of 10**30": (["run", MHD, *SMALL, "--set", "initial={name: abc_dynamo}", "--set",
                               "initial.wavenumber=" + "1" + "0" * 30], "initial.wavenumber = 1" + "0" * 30 +
                              " is not resolved by the grid; every mode number must be below N/2 = 8 along x"),
    "ABC flow mode at Nyquist": (["run", ABC, *SMALL, "--set", "initial.wavenumber=8"],
                                 "initial.wavenumber = 8 is not resolved by the grid"),
    "Jeans wave beyond the grid": (["run", JEANS, *SMALL, "--set", "initial.wavenumber=9"],
                                   "initial.wavenumber = 9 is not resolved by the grid"),
    "gravity wave mode beyond the grid": (["run", WAVE, *SMALL, "--set", "initial={name: wave}", "--set",
                                           "initial.modes=[1,0,-100]"], "initial.modes = [1, 0, -100] is not resolved "
                                          "by the grid; every mode number must be below N/2 = 8 along z"),
    # command line
    "malformed --set": (["run", TG, "--set", "grid.shape"], "--set = 'grid.shape' is malformed"),
    "--set with a space for =": (["run", TG, "--set", "grid.shape", "32"], "--set = 'grid.shape 32' is malformed; "
                                 "expected dotted.key=value, as in --set grid.shape=32"),
    "--set with a colon for =": (["run", TG, "--set", "grid.shape:32"], "--set = 'grid.shape:32' is malformed; "
                                 "expected dotted.key=value, as in --set grid.shape=32"),
    "--set of a key alone": (["validate", TG, "--set", "time.dt"], "--set = 'time.dt' is malformed; expected "
                             "dotted.key=value, as in --set time.dt=VALUE"),
    "unknown option": (["run", TG, "--fast"], "unrecognized arguments: --fast"),
    # a first command without its config said only that the argument is required
    "no config": (["run"], ("error: simulator run: the following arguments are required: config; give a YAML config "
                            "file's path (simulator configs lists the shipped ones, and simulator configs "
                            "taylor_green > tg.yaml writes one)")),
    # --restart's PATH is optional, so it took the config, and argparse said "required: config"
    "config after --restart": (["run", "--restart", TG, "--out", "run"],
                               f"argument --restart: {TG!r} is a config file, not a checkpoint; give the config "
                               "first, simulator run CONFIG --restart [PATH]"),
    "unknown command": (["simulate", TG], "invalid choice: 'simulate'"),
    "launch without a command": (["launch", "-n", "2"], "is missing a command"),
    "launch no processes": (["launch", "-n", "0", "info"], "-n = 0 is out of range"),
    # named as given, not as the runtime.cpu_devices it becomes (nor, with GPUs, a slice of them: -2 all but two)
    "plan for no devices": (["plan", TG, "--devices", "0"], "--devices = 0 is out of range; give 1 to 4096"),
    "plan for a negative device count": (["plan", TG, "--devices", "-2"], "--devices = -2 is out of range"),
    "output is a file": (["run", TG, *SMALL, "--out", "a_file"], "--out = 'a_file' is a file"),
    "output name too long": (["run", TG, *SMALL, "--out", "x" * 300], "has a name of 300 bytes"),
    # existing runs and restarts
    "existing run": (["run", TG, *SMALL, "--out", "run"], "--out = 'run' already holds a run"),
    "restart from a missing path": (["run", TG, *SMALL, "--out", "run", "--restart", "nope/c1.json"],
                                    "--restart = 'nope/c1.json' does not exist"),
    # --restart without PATH continues --out: a mistyped --out is named as such (it said --restart = 'nothere')
    "restart of an --out that does not exist": (["run", TG, *SMALL, "--out", "nothere", "--restart"],
                                                "--out = 'nothere' does not exist; give the run's directory, "
                                                "--restart PATH, or no --restart for a new run"),
    "restart and overwrite": (["run", TG, *SMALL, "--out", "run", "--restart", "--overwrite"],
                              "cannot be combined with --restart"),
    "restart on another grid": (["run", TG, *SMALL, "--set", "grid.shape=32", "--out", "run", "--restart"],
                                ("--restart = 'run/checkpoints/c00000005.json' holds grid [16, 16, 16]; to continue "
                                 "it, restart on that grid (its own config does: simulator run run/config.yaml --out "
                                 "run --restart); a run on grid [32, 32, 32] is a new run: branch it with --restart "
                                 "run/checkpoints/c00000005.json --out NEW_DIR")),
    # it said --restart, of a --resume, and named the checkpoint as c00000005.h5 and then as c00000005.json
    "resume on another grid": (["run", TG, *SMALL, "--set", "grid.shape=32", "--out", "run", "--resume"],
                               "--resume = 'run' holds grid [16, 16, 16]; to continue it, resume on that grid (its "
                               "own config does: simulator run run/config.yaml --out run --resume); a run on grid "
                               "[32, 32, 32] is a new run: branch it with --restart run/checkpoints/c00000005.json "
                               "--out NEW_DIR"),
    "restart with other physics": (["run", TG, *SMALL, "--set", "physics.viscosity=0.1", "--out", "run",
                                    "--restart"], "(changed: physics.viscosity)"),
    "restart in another box": (["run", TG, *SMALL, "--set", "grid.box=3", "--out", "run", "--restart"],
                               "was written with other physics or grid; pass --allow-physics-change to continue with "
                               "the new values (changed: grid.box)"),
    "restart at another grid in another box": (["run", TG, *SMALL, "--set", "grid.shape=32", "--set", "grid.box=3",
                                                "--restart", "run/checkpoints/c00000005.json", "--out", "finer"],
                                               "holds a state in the box"),
    "restart as another equation": (["run", JEANS, *SMALL, "--out", "run", "--restart"], "holds a navier_stokes state"),
    "restart a run that never checkpointed": (["run", TG, *SMALL, "--out", ".", "--restart"], "has nothing to resume"),
    "resume with other physics": (["run", TG, *SMALL, "--set", "physics.viscosity=0.1", "--out", "run", "--resume"],
                                  "--resume = 'run' holds a run with other physics or grid "
                                  "(changed: physics.viscosity); to continue that run with the new values, run once "
                                  "with --restart --allow-physics-change (then --resume)"),
    "resume and restart": (["run", TG, *SMALL, "--out", "run", "--resume", "--restart"], "cannot be combined"),
    # without --restart it was ignored: a new run from t = 0 in a new directory, or a --resume that refuses the change
    "allow a physics change without a restart": (["run", TG, *SMALL, "--out", "new", "--allow-physics-change"],
                                                 "--allow-physics-change = true needs --restart; add --restart [PATH]"),
    "allow a physics change on a resume": (["run", TG, *SMALL, "--set", "physics.viscosity=0.1", "--out", "run",
                                            "--resume", "--allow-physics-change"],
                                           "--allow-physics-change = true needs --restart"),
    "resume into a directory of other files": (["run", TG, *SMALL, "--out", ".", "--resume"],
                                               "holds files but no checkpoint of a run with this physics"),
    "extend a finished run whose checkpoints are gone": (["run", TG, *SMALL, "--set", "time.t_end=0.1", "--out",
                                                          "no_checkpoints", "--resume"],
                                                         "holds a run finished at t = 0.05 < time.t_end = 0.1"),
    "resume where no checkpoint is intact": (["run", TG, *SMALL, "--out", "damaged", "--resume"],
                                             "holds 1 checkpoint(s), none of them intact"),
    "restart where no checkpoint is intact": (["run", TG, *SMALL, "--out", "damaged", "--restart"],
                                              "has nothing to resume; no intact checkpoint under damaged "
                                              "(c00000005.json: Expecting"),
    "extend by infinity": (["run", TG, *SMALL, "--out", "run", "--restart", "--add-to-t-end", "inf"],
                           "--add-to-t-end = inf is not allowed; give a positive, finite time"),
    "extend by NaN": (["run", TG, *SMALL, "--out", "run", "--restart", "--add-to-t-end", "nan"],
                      "--add-to-t-end = nan is not allowed"),
    "overwrite the run the initial condition is read from": (["run", "from_run.yaml", *SMALL, "--out", "run",
                                                              "--overwrite"],
                                                             "initial.path = 'run/checkpoints/c00000005.json' lies "
                                                             "inside run, which replacing the run there would delete"),
    "branch into a directory holding a run": (["run", TG, *SMALL, "--restart", "run/checkpoints/c00000005.json",
                                               "--out", "no_checkpoints"],
                                              "--out = 'no_checkpoints' already holds a run"),
    # sweeps and plots
    "sweep with a bad point": (["sweep", "bad_point.yaml"],
                               "sweep point 1 (physics.viscosity=-1.0): physics.viscosity = -1.0 is out of range"),
    "sweep file with an unknown key": (["sweep", "bad_sweep_key.yaml"], "sweep key 'grdi'"),
    "sweep key misspelt": (["sweep", "bad_sweep_key.yaml"], "sweep key 'grdi' = {} is unknown; allowed keys are "
                           "name, base, set, grid, zip, points, max_parallel, sbatch, ensemble, batch (did you mean "
                           "'grid'?)"),
    # a run's config, a prepared directory and the sweep file, each where another belongs: said so (the first was
    # "sweep key 'precision' is unknown", the last "sweep directory = 'bad_point.yaml' has no sweep.yaml")
    "sweep of a run's config": (["sweep", TG], f"sweep file = {TG!r} is a run's config, not a sweep file; a sweep file "
                                "names its run config as `base: PATH`"),
    # the reverse mistake: it said "base = ... is an unknown key" of the sweep file a run was given
    "run of a sweep file": (["run", "bad_point.yaml", "--out", "new"], "config file = 'bad_point.yaml' is a sweep "
                            "file, not a run's config; to run its points: simulator sweep bad_point.yaml"),
    "validate of a sweep file": (["validate", "bad_point.yaml"], "config file = 'bad_point.yaml' is a sweep file"),
    # plan takes a sweep file (every point planned): its bad point is named as simulator sweep names it
    "plan of a sweep with a bad point": (["plan", "bad_point.yaml"],
                                         "sweep point 1 (physics.viscosity=-1.0): physics.viscosity = -1.0 is out of "
                                         "range"),
    "missing sweep file": (["sweep", "nope.yaml"], "sweep file = 'nope.yaml' does not exist; give the path of an "
                           "existing YAML file"),
    "sweep of a directory": (["sweep", "run"], "sweep file = 'run' is a directory; give the sweep's YAML file, or add "
                             "--collect, --point I or --group G"),
    "sweep point of the sweep file": (["sweep", "bad_point.yaml", "--point", "0"], "sweep directory = 'bad_point.yaml' "
                                      "is a file; give the directory that `simulator sweep FILE` prepared"),
    "sweep collect of the sweep file": (["sweep", "bad_point.yaml", "--collect"], "sweep directory = 'bad_point.yaml' "
                                        "is a file"),
    "sweep zip of unequal lists": (["sweep", "bad_zip.yaml"], "has lists of different lengths"),
    "sweep point of a non-sweep": (["sweep", "run", "--point", "0"], "has no sweep.yaml"),
    "sweep point without an index": (["sweep", "run", "--point"], "--point = null is not set"),
    "sweep --unset of a point's key": (["sweep", "bad_point.yaml", "--local", "--unset", "physics.viscosity"],
                                       "--unset = 'physics.viscosity' is not passed on to a sweep's points; give a "
                                       "runtime.* key"),
    "sweep --unset of no runtime key": (["sweep", "bad_point.yaml", "--local", "--unset", "runtime.thread"],
                                        "--unset = 'runtime.thread' is an unknown key; did you mean "
                                        "'runtime.threads'?"),
    "sweep --unset with --submit": (["sweep", "bad_point.yaml", "--submit", "--unset", "runtime.threads"],
                                    "--unset = 'runtime.threads' is not passed on by --submit"),
    "sweep with zero jobs": (["sweep", "bad_point.yaml", "--local", "-j", "0"], "--jobs = 0"),
    "sweep named ..": (["sweep", "dots.yaml"], "name = '..' is not a name"),
    "launch of 'simulator info'": (["launch", "-n", "2", "simulator", "info"], "launch = 'simulator info' names the "
                                   "program twice; give the command without 'simulator': simulator launch -n 2 info"),
    # a whole sweep is one process's work: under launch each process would prepare and run it all
    "whole sweep under launch": (["launch", "-n", "2", "--cpu-devices", "1", "sweep", "bad_point.yaml", "--local"],
                                 "simulator launch -n = 2 cannot run a whole sweep; run the sweep in one process "
                                 "(`simulator sweep FILE --local --cpu-devices D` gives each point D devices)"),
    # the runtime's flags named as given, before any point's config is blamed for them (it said "sweep point 0")
    "sweep with zero devices": (["sweep", "bad_point.yaml", "--local", "--cpu-devices", "0"],
                                "--cpu-devices = 0 is out of range; give 1 to 4096"),
    "sweep point with zero threads": (["sweep", "run", "--point", "0", "--threads", "0"],
                                      "--threads = 0 is out of range; give 1 to 4096"),
    # a point's run takes the runtime's keys from the command line, not the values the manifest records
    "sweep point with --set of a physical key": (["sweep", "run", "--point", "0", "--set", "physics.viscosity=0.1"],
                                                 "--set = 'physics.viscosity=0.1' is not passed on to a sweep's "
                                                 "points; give a runtime.* key (e.g. runtime.cpu_devices=null)"),
    "sweep with --set of a runtime key out of range": (["sweep", "bad_point.yaml", "--local", "--set",
                                                        "runtime.threads=0"],
                                                       "--set runtime.threads = 0 is out of range; it must be >= 1"),
    "sweep submitted with --set": (["sweep", "bad_point.yaml", "--submit", "--set", "runtime.cpu_devices=null"],
                                   "--set = 'runtime.cpu_devices=null' is not passed on by --submit"),
    "sweep submitted with --cpu-devices": (["sweep", "bad_point.yaml", "--submit", "--cpu-devices", "2"],
                                           "--cpu-devices = 2 is not passed on by --submit; give it with --local, "
                                           "--point or --group, or set runtime.cpu_devices in the sweep file's set"),
    # refused when the sweep is prepared, not later in each group's log (or in a submitted array job)
    "ensemble sweep of owned particles": (["sweep", "owned_ensemble.yaml", "--local"],
                                          "particles[0].distribution = 'owned' is not available in an ensemble"),
    "plot a missing directory": (["plot", "nope"], "RUN_DIR = 'nope' does not exist"),
    "plot a run whose config.yaml is binary": (["plot", "binary_config"], "RUN_DIR = 'binary_config'"),
    "plot a run whose config.yaml misspells a key": (["plot", "misspelt_config"], "physics.viscosty = 0.000625 is "
                                                     "not a setting of navier_stokes in misspelt_config/config.yaml; "
                                                     "did you mean 'physics.viscosity'?"),
}


def own_process(args: list[str]) -> bool:
    """Whether a case needs a process of its own: it sets up devices (``--cpu-devices``, which this process,
    holding the suite's 8, has done already) or starts several processes (``launch``)."""
    return "--cpu-devices" in args or args[0] == "launch"


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_exits_2_with_one_line_and_changes_nothing(workdir, case, monkeypatch, capfd):
    args, expected = CASES[case]
    before = digest(workdir / "run")
    if own_process(args):
        r = subprocess.run([sys.executable, "-m", "simulator", *args], cwd=workdir, capture_output=True, text=True,
                           timeout=120)
    else:  # the command's own function in this process (support.command): no start-up of Python and JAX again
        monkeypatch.chdir(workdir)
        r = subprocess.CompletedProcess(["simulator", *args], *command(capfd, *args))
    assert r.returncode == 2, (case, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (case, r.stderr[-2000:])
    assert expected in lines[0], (case, lines[0])
    assert r.stdout == ""
    assert digest(workdir / "run") == before, case
    assert not (workdir / "huge").exists() and not (workdir / "new").exists()


def test_a_gpu_plan_without_memory_where_no_gpu_is_seen_names_what_it_needs(workdir, monkeypatch, capfd):
    """`simulator plan --platform gpu` without --memory where no GPU is visible: one line naming the option given
    and the one missing (it said `--memory = None is required`)."""
    monkeypatch.chdir(workdir)
    code, out, err = command(capfd, "plan", TG, "--platform", "gpu")
    r = subprocess.CompletedProcess(["simulator", "plan"], code, out, err)
    if r.returncode == 0:
        pytest.skip("a GPU is visible here: the plan reads its memory, no --memory is needed")
    assert r.returncode == 2 and r.stdout == "", r.stderr[-2000:]
    assert r.stderr == ("error: --platform = 'gpu' needs --memory where no GPU is visible; give the memory per GPU, "
                        "e.g. --memory 80GB\n")


@pytest.mark.parametrize("args", [["bad_point.yaml", "--local"], ["bad_point.yaml"], ["run", "--collect"]])
def test_a_whole_sweep_in_every_task_of_an_srun_step_is_refused_in_one_line(workdir, args):
    """`srun simulator sweep ...` in a job of two tasks: each task would prepare and run (or collect) the whole
    sweep; one line says so, as under `simulator launch`. A point or group is each task's share: not refused."""
    env = {**os.environ, "SLURM_STEP_NODELIST": "n1", "SLURM_NTASKS": "2", "SLURM_PROCID": "0"}
    r = subprocess.run([sys.executable, "-m", "simulator", "sweep", *args], cwd=workdir, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == "", r.stderr[-2000:]
    assert r.stderr == ("error: SLURM_NTASKS = 2 cannot run a whole sweep (an srun step's tasks); run the sweep in one "
                        "task (`simulator sweep FILE --local` in the job script, without srun), or one point on these "
                        "tasks: `srun simulator sweep DIR --point I` (an ensemble group: --group G)\n")
    assert not (workdir / "outputs" / "s").exists()  # the sweep's directory: nothing prepared
    r = subprocess.run([sys.executable, "-m", "simulator", "sweep", "run", "--point", "0"], cwd=workdir, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "has no sweep.yaml" in r.stderr, r.stderr[-2000:]


def test_an_unreadable_config_is_one_line(workdir, tmp_path):
    """A config this user may not read. Root reads any file, so as root the command runs without the
    capabilities that let it (setpriv drops them); without setpriv the case cannot be made for root."""
    config = tmp_path / "secret.yaml"
    config.write_text("name: secret\n")
    config.chmod(0)
    prefix = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root, which reads any file, and setpriv (util-linux) is missing")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    r = subprocess.run([*prefix, sys.executable, "-m", "simulator", "run", str(config)], cwd=workdir,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.strip() == f"error: config file = {show_value(str(config))} cannot be read (Permission denied); " \
                               "make it readable (check its permissions)"


@pytest.mark.parametrize("size, problem", [("lots", "positive"), ("0", "positive"), ("-1", "positive"),
                                           ("nan", "positive"), ("inf", "finite"), ("1e400", "finite"),
                                           ("infG", "finite")])
def test_a_bad_compilation_cache_bound_is_one_line_saying_what_is_wrong(workdir, size, problem):
    """SIMULATOR_COMPILATION_CACHE_SIZE that is not a size: one line naming the variable, its value, what is wrong
    and what is allowed, before anything is written (it said 'give a positive size ...; a positive size ...'). An
    infinite one (`inf`, `1e400`, `infG`) was an OverflowError traceback from every command starting the runtime."""
    env = {**os.environ, "SIMULATOR_COMPILATION_CACHE_SIZE": size}
    r = subprocess.run([sys.executable, "-m", "simulator", "run", TG, *SMALL, "--out", "sized"], cwd=workdir, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.strip() == f"error: SIMULATOR_COMPILATION_CACHE_SIZE = '{size}' is not a {problem} size; give " \
                               "bytes, or a number with a K, M or G suffix, such as 500M or 2G"
    assert not (workdir / "sized").exists()


def test_export_and_load_run_offer_only_what_they_take(workdir, tmp_path, monkeypatch, capfd):
    """`simulator export` and `load_run` read one run: given a sweep's directory they say so and name a point's run,
    and given any other directory they do not offer a sweep's (the line said "or a sweep directory holding
    sweep.yaml", which both then refused with that very line)."""
    from simulator import load_run
    from simulator.errors import ConfigError

    sweep = tmp_path / "sweep"
    shutil.copytree(workdir / "run", sweep / "p000")
    (sweep / "sweep.yaml").write_text("name: s\n")
    expected = {sweep: f"RUN_DIR = '{sweep}' is a sweep directory, not a run's; give one of its points' run "
                       f"directories, such as {sweep / 'p000'} (simulator.load_sweep reads them all)",
                tmp_path: f"RUN_DIR = '{tmp_path}' is not a run directory (it has no config.yaml); give a directory "
                          "written by `simulator run`"}
    monkeypatch.chdir(workdir)
    for path, line in expected.items():
        code, _, stderr = command(capfd, "export", str(path))
        assert code == 2 and stderr == f"error: {line}\n", stderr[-2000:]
        with pytest.raises(ConfigError) as err:
            load_run(path)
        assert str(err.value) == line
    assert sorted(sweep.iterdir()) == [sweep / "p000", sweep / "sweep.yaml"]  # nothing exported into it
