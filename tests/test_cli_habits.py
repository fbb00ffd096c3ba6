"""What a user arriving from another code, or from another command, meets on the command line: a shipped config
turned into its variants by flags alone (``--unset`` removes a key), a misspelt flag answered with the nearest ones,
another code's name for a key answered with this project's, a missing path refused before JAX starts."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support import command

ROOT = Path(__file__).parents[1]
MIXED = str(ROOT / "configs" / "fdm_mixed.yaml")  # a wave (m22 = 0.15) and particles
#: the mixed config made small: 16^3, 16^3 particles, z = 127 to 63
SMALL_COSMO = ["--set", "grid.shape=16", "--set", "physics.cdm_particles=4096", "--set", "physics.z_end=63",
               "--set", "physics.output_redshifts=[127,63]", "--set", "precision=float32"]


def test_the_mixed_config_runs_its_particles_alone_by_flags(tmp_path):
    """configs/fdm_mixed.yaml to cold dark matter alone without editing the file: fdm_fraction 0 and the wave's one
    key it gives removed (``--unset``); the run holds particles, no wave, and its resolved config no m22."""
    r = subprocess.run([sys.executable, "-m", "simulator", "run", MIXED, "--set", "physics.fdm_fraction=0",
                        "--unset", "physics.m22", *SMALL_COSMO, "--cpu-devices", "1", "--out", "cdm"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    physics = yaml.safe_load((tmp_path / "cdm" / "config.yaml").read_text())["config"]["physics"]
    assert physics["fdm_fraction"] == 0 and "m22" not in physics and physics["cdm_particles"] == 4096
    assert sorted(p.name for p in (tmp_path / "cdm" / "particles").glob("s*.h5"))  # the particles' snapshots


def test_unset_then_set_applies_in_order_and_validate_shows_the_default(capfd):
    """``--unset`` and ``--set`` apply in the order given: a key removed takes its default, set again its value."""
    code, out, err = command(capfd, "validate", MIXED, "--unset", "time.cfl")
    assert code == 0, err
    assert yaml.safe_load(out)["time"]["cfl"] is None  # the default (no CFL limit), not the file's 1.0
    code, out, err = command(capfd, "validate", MIXED, "--unset", "time.cfl", "--set", "time.cfl=0.5")
    assert code == 0 and yaml.safe_load(out)["time"]["cfl"] == 0.5, err
    code, out, err = command(capfd, "validate", MIXED, "--set", "time.cfl=0.5", "--unset", "time.cfl")
    assert code == 0 and yaml.safe_load(out)["time"]["cfl"] is None, err
    code, out, err = command(capfd, "validate", MIXED, "--unset", "initial.name")  # a variant's name: the default's
    assert code == 0 and yaml.safe_load(out)["initial"]["name"] == "gaussian", err


@pytest.mark.parametrize("args, said", [
    (["run", MIXED, "--output", "o"], "simulator run: unrecognized arguments: --output o; did you mean --out? "
                                      "(simulator run --help lists its options)"),
    (["run", MIXED, "--cpu_devices", "2"], "did you mean --cpu-devices?"),  # a config key's spelling
    (["validate", MIXED, "--sett", "grid.shape=16"], "simulator validate: unrecognized arguments: --sett "
                                                     "grid.shape=16; did you mean --set?"),
    (["plot", "run", "--feild", "vorticity"], "simulator plot: unrecognized arguments: --feild vorticity; did you mean "
                                              "--field?"),
    (["sweep", "s.yaml", "--colect"], "simulator sweep: unrecognized arguments: --colect; did you mean --collect?"),
    (["export", "run", "--max_size", "1GiB"], "did you mean --max-size?"),
    # another tool's flag: ours for it (its nearest spelling, --unset, was another meaning), or where none is taken
    (["plan", MIXED, "--gpus", "4"], "simulator plan: unrecognized arguments: --gpus 4; did you mean --devices? "),
    (["run", MIXED, "--gpus=4"], "--gpus=4; a command takes every GPU it sees: choose them with CUDA_VISIBLE_DEVICES "
                                 "or the job's allocation (simulator plan --devices N plans for N)"),
    (["plan", MIXED, "--cpu_devices", "2", "--porfile", "h100"],
     "--cpu_devices: did you mean --cpu-devices?; --porfile: did you mean --profile? (simulator plan --help"),
])
def test_a_misspelt_flag_is_answered_with_the_nearest_of_its_command(args, said, capfd):
    code, out, err = command(capfd, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and said in err, err


def test_a_flag_nothing_is_near_gets_the_bare_answer(capfd):
    code, _, err = command(capfd, "run", MIXED, "--zzz")
    assert code == 2 and err == "error: simulator run: unrecognized arguments: --zzz\n"


@pytest.mark.parametrize("args, said", [
    (["validate", str(ROOT / "configs" / "taylor_green.yaml"), "--set", "physics.nu_2=0.01"],
     "physics.nu_2 = 0.01 is an unknown key; nu_2 is FluidSim's name: here it is physics.viscosity; known keys for "
     "physics.name = navier_stokes: name, viscosity,"),
    (["validate", str(ROOT / "configs" / "taylor_green.yaml"), "--set", "physics.nu=0.01"],
     "physics.nu = 0.01 is an unknown key; nu is Dedalus's name: here it is physics.viscosity; known keys"),
    # the close spelling omega_m was offered before, as if Omega_c were a misspelling of it: it is not the same number
    (["run", MIXED, "--set", "physics.Omega_c=0.25"],
     "physics.Omega_c = 0.25 is an unknown key; Omega_c is JaxPM's name: here it is physics.omega_m (all the matter, "
     "Omega_c + Omega_b: the box's dark matter); known keys for physics.name = fdm_cosmo: name, h, omega_m,"),
    (["plan", MIXED, "--set", "physics.m_22=0.15"], "m_22 is Jaxion's name: here it is physics.m22;"),
    # a key of another section: the key it is, where it is
    (["validate", str(ROOT / "configs" / "taylor_green.yaml"), "--set", "physics.stop_sim_time=2"],
     "stop_sim_time is Dedalus's name: here it is time.t_end;"),
])
def test_another_codes_name_is_answered_with_the_key_here(args, said, capfd):
    code, out, err = command(capfd, *args)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert said in err and "did you mean" not in err, err


PLANE = str(ROOT / "configs" / "forced_2d.yaml")  # ns2d at 256^2, forced at forcing_wavenumber 24
HERE = "known keys here: name, precision, grid, fft, physics, initial, time, output"


@pytest.mark.parametrize("args, said", [
    # at the top level, as FluidSim's params.nu_2 and params.nu_8 are
    (["--set", "nu_2=1e-3"], "nu_2 = '1e-3' is an unknown key; nu_2 is FluidSim's name: here it is physics.viscosity; "
                             + HERE),
    (["--set", "nu_8=1e-14"], "nu_8 is FluidSim's name: here it is physics.hyperviscosity (with "
                              "physics.hyperviscosity_order: 4); " + HERE),
    # under FluidSim's own sections, each name of the section given
    (["--set", "oper.nx=128"], "oper = {'nx': 128} is an unknown key; oper.nx is FluidSim's name: here it is "
                               "grid.shape (its first entry: grid.shape = [nx, ny] on a plane); " + HERE),
    (["--set", "oper.ny=128", "--set", "oper.Lx=2*pi"],
     "oper.ny is FluidSim's name: here it is grid.shape (its second entry: grid.shape = [nx, ny] on a plane); oper.Lx "
     "is FluidSim's name: here it is grid.box (its first entry: grid.box = [Lx, Ly] on a plane); " + HERE),
    (["--set", "time_stepping.deltat0=0.01", "--set", "time_stepping.t_end=30"],
     "time_stepping.deltat0 is FluidSim's name: here it is time.dt; time_stepping.t_end is FluidSim's name: here it "
     "is time.t_end; " + HERE),
    (["--set", "forcing.key_forced=rot_fft"], "forcing.key_forced is FluidSim's name: here it is physics.forcing (a "
                                              "forcing forces its equation's own variable: random on a plane kicks "
                                              "the vorticity, as FluidSim's rot_fft)"),
    (["--set", "forcing.nkmax_forcing=25"], "forcing.nkmax_forcing is FluidSim's name: here it is "
                                            "physics.forcing_wavenumber (with physics.forcing_width: the modes with "
                                            "|m - forcing_wavenumber| <= forcing_width/2 are forced"),
    # FluidSim's name in this project's section: the key, not the nearest spelling (physics.forcing)
    (["--set", "physics.nkmax_forcing=12"], "physics.nkmax_forcing = 12 is an unknown key; nkmax_forcing is "
                                            "FluidSim's name: here it is physics.forcing_wavenumber ("),
    (["--set", "output.periods_save.phys_fields=0.5", "--set", "output.periods_save.spatial_means=0.1"],
     "output.periods_save = {'phys_fields': 0.5, 'spatial_means': 0.1} is an unknown key; "
     "output.periods_save.phys_fields is FluidSim's name: here it is output.snapshots.dt; "
     "output.periods_save.spatial_means is FluidSim's name: here it is output.chunk (the time series has a row every "
     "output.chunk steps); known keys here: dir, chunk,"),
    # Dedalus's and JaxPM's alike
    (["--set", "solver.stop_sim_time=30"], "solver.stop_sim_time is Dedalus's name: here it is time.t_end; " + HERE),
    (["--set", "nu=1e-3"], "nu is Dedalus's name: here it is physics.viscosity; " + HERE),
    (["--set", "mesh_shape=[64,64]"], "mesh_shape is JaxPM's name: here it is grid.shape; " + HERE),
    # a plane's grid has two axes
    # FluidSim's nx counts points, Dedalus' Nx modes: each code's key said
    (["--set", "grid.nx=64"], "grid.nx = 64 is an unknown key; nx is FluidSim's name: here it is grid.shape (its "
                              "first entry: grid.shape = [nx, ny] on a plane); nx is Dedalus's name: here it is "
                              "grid.modes (its first entry, in modes as Dedalus counts them, the points then chosen: "
                              "grid.modes = [Nx, Nz] on a plane); known keys here: shape"),
])
def test_another_codes_name_is_answered_wherever_it_is_written(args, said, capfd):
    """A FluidSim user's params paths (issue 94): at the top level and under FluidSim's own sections, as well as in
    this project's; the unknown key said once, each of its names answered."""
    code, out, err = command(capfd, "validate", PLANE, *args)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert said in err and "did you mean" not in err and "three axes" not in err, err


NOSLIP = str(ROOT / "configs" / "convection_2d_noslip.yaml")  # Dedalus' 2D Rayleigh-Benard example


@pytest.mark.parametrize("config, args, said", [
    # the names at the top of Dedalus' example script
    (NOSLIP, ["--set", "Rayleigh=1e6"], "Rayleigh = '1e6' is an unknown key; Rayleigh is Dedalus's name: here it is "
                                        "physics.rayleigh; " + HERE),
    (NOSLIP, ["--set", "Prandtl=1"], "Prandtl = 1 is an unknown key; Prandtl is Dedalus's name: here it is "
                                     "physics.prandtl; " + HERE),
    (NOSLIP, ["--set", "physics.Rayleigh=1e6"], "Rayleigh is Dedalus's name: here it is physics.rayleigh; known keys "
                                                "for physics.name = convection2d_noslip"),
    (NOSLIP, ["--set", "Nz=64"], "Nz = 64 is an unknown key; Nz is Dedalus's name: here it is grid.modes (its last "
                                 "entry, across the plates where grid.walls has them: grid.modes = [Nx, Nz] on a "
                                 "plane); " + HERE),
    (NOSLIP, ["--set", "Lz=1"], "Lz is Dedalus's name: here it is grid.box (its last entry, the distance between the "
                                "plates where grid.walls has them: grid.box = [Lx, Ly] on a plane); " + HERE),
    # the arguments of its CFL that have no key here: what the one controller does instead
    (NOSLIP, ["--set", "time.threshold=0.05"], "threshold is Dedalus's name: here it is time.cfl (every step's dt is "
                                               "the largest time.cfl allows from that step's state, capped by "
                                               "time.dt: no threshold); known keys here: integrator, dt, t_end, cfl"),
    # FluidSim's sw1l c2, the square of the wave speed: the value it stands for
    (str(ROOT / "configs" / "geostrophic_adjustment.yaml"), ["--set", "c2=2.25"],
     "c2 = 2.25 is an unknown key; c2 is FluidSim's name: here it is physics.wave_speed (c = sqrt(g H), where "
     "FluidSim's c2 is c^2 = g H: wave_speed = sqrt(c2) = sqrt(2.25) = 1.5); " + HERE),
])
def test_dedalus_s_and_fluidsim_s_words_for_a_walled_plane_and_shallow_water(config, args, said, capfd):
    """What a Dedalus user writes from its Rayleigh-Benard example, and a FluidSim sw1l user's c2 (issue 102)."""
    code, out, err = command(capfd, "validate", config, *args)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert said in err and "did you mean" not in err, err


@pytest.mark.parametrize("args, said", [
    (["--set", "walls.axis=y"], "walls = {'axis': 'y'} is an unknown key; did you mean 'grid.walls.axis'? " + HERE),
    (["--set", "physics.cfl=0.5"], "physics.cfl = 0.5 is an unknown key; did you mean 'time.cfl'? known keys for "
                                   "physics.name = convection2d_noslip: name, rayleigh,"),
    (["--set", "dt=0.125"], "dt = 0.125 is an unknown key; did you mean 'time.dt' or 'checkpoint.dt'? " + HERE),
])
def test_a_key_of_another_section_is_answered_with_where_it_is(args, said, capfd, tmp_path):
    """A key of this project written outside its section (``walls.axis`` for ``grid.walls.axis``) is answered with
    the dotted key it is, one line, nothing run."""
    code, out, err = command(capfd, "run", NOSLIP, *args, "--out", str(tmp_path / "never"))
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert said in err, err
    assert not (tmp_path / "never").exists()


def test_a_box_s_grid_names_its_three_axes_and_jaxpm_s_name_is_answered_at_the_top_level(capfd):
    code, _, err = command(capfd, "validate", str(ROOT / "configs" / "taylor_green.yaml"), "--set", "oper.nz=64",
                           "--set", "oper.nx=64")
    assert code == 2 and ("oper.nx is FluidSim's name: here it is grid.shape (its first entry: grid.shape = [nx, ny, "
                          "nz] in a box)") in err, err
    code, _, err = command(capfd, "validate", MIXED, "--set", "Omega_c=0.25")
    assert code == 2 and "Omega_c is JaxPM's name: here it is physics.omega_m (all the matter" in err, err


@pytest.mark.parametrize("box, said", [
    # FluidSim's ns2d forcing_rate 0.1 on the band 23.5 <= k <= 24.5 injects 1.73e-4 of energy per unit time
    ("2*pi", "here 0.1 / 24^2 = 0.000174)"),
    ("[4*pi, 2*pi]", "here 0.1 / 12^2 = 0.000694)"),  # k_f = 2 pi 24 / 4 pi: a wavenumber, not a mode number
])
def test_fluidsim_s_forcing_rate_on_a_plane_is_answered_with_the_energy_rate_it_injects(box, said, capfd):
    """FluidSim's ns2d forcing_rate is the vorticity's enstrophy rate (fluidsim/base/forcing/specific.py normalises
    half the forced variable's squared modes; ns2d forces rot_fft), physics.forcing_power an energy rate: the
    answer gives the conversion and the figure for this config, never the one as the other."""
    code, _, err = command(capfd, "validate", PLANE, "--set", f"grid.box={box}", "--set", "forcing.forcing_rate=0.1")
    assert code == 2 and err.count("\n") == 1, err
    assert ("forcing.forcing_rate is FluidSim's name: here it is physics.forcing_power (an energy rate; FluidSim's "
            "forcing_rate on a plane is the enstrophy's, as it forces the vorticity, key_forced rot_fft, unless "
            "forcing.normalized.constant_rate_of is energy: forcing_power = forcing_rate / k_f^2 with k_f = 2 pi "
            "physics.forcing_wavenumber / max(grid.box): ") in err and said in err, err
    # a box's forcing_power is an energy rate as FluidSim's forcing_rate of a velocity component is
    code, _, err = command(capfd, "validate", str(ROOT / "configs" / "forced_turbulence.yaml"), "--set",
                           "physics.forcing_rate=0.1")
    assert code == 2 and ("forcing_rate is FluidSim's name: here it is physics.forcing_power (an energy rate, as "
                          "FluidSim's forcing_rate is where it forces velocity components") in err, err
    assert "k_f" not in err, err


@pytest.mark.parametrize("args, said", [
    (["validate", PLANE, "--set", "grid.shape=[128,", "128]"],
     "error: simulator validate: --set grid.shape=[128, was cut at a space by the shell: quote it, --set "
     "'grid.shape=[128, 128]', or write it without spaces, --set grid.shape=[128,128]\n"),
    # the rest taken for the config's path: the same answer
    (["run", "--set", "grid.shape=[128,", "128]", PLANE], "--set 'grid.shape=[128, 128]', or write it without"),
    # a mapping keeps its spaces ({name:heavy} is one key)
    (["validate", MIXED, "--set", "particles[2]={name:", "heavy,", "count:", "500}"],
     "quote it, --set 'particles[2]={name: heavy, count: 500}'\n"),
])
def test_a_list_the_shell_cut_at_its_space_is_answered_with_the_quoting(args, said, capfd):
    """``--set grid.shape=[128, 128]`` unquoted was argparse's ``unrecognized arguments: 128]``."""
    code, out, err = command(capfd, *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and said in err, err


def test_every_other_codes_name_of_the_table_is_answered_and_in_the_reference():
    """Each row of the table reaches the user: its name, given in the section of the key it is here, is refused
    naming the code and that key on some shipped config that has the key; and the config reference lists it."""
    from simulator.api import load_config
    from simulator.config import config_docs
    from simulator.config.other_codes import OTHER_NAMES, breakable, leaf
    from simulator.errors import ConfigError

    shipped = [ROOT / "configs" / f"{name}.yaml" for name in ("forced_turbulence", "stratified_turbulence",
                                                              "fdm_mixed", "forced_2d",
                                                              "convection_2d_noslip", "geostrophic_adjustment")]
    reference = config_docs()
    for row in OTHER_NAMES:
        section, word = row.key.split(".", 1)[0], leaf(row.name)
        # the name in the section of the key it is here (not where that names a key here: t_end, spectra), and as
        # the code writes it, its own section included (or at the top, as Dedalus' script has Rayleigh)
        written = [f"{section}.{word}"] if word not in row.key.lower().split(".")[1:] else []
        written += [row.name] if "(" not in row.name and ("." in row.name or not written) else []
        assert written, row
        for name in written:
            said = []
            for path in shipped:
                with pytest.raises(ConfigError) as refused:
                    load_config(str(path), {name: 1})
                said.append(str(refused.value))
            assert any(" is " in s and f"{row.code}'s" in s and f"here it is {row.key}" in s for s in said), \
                (name, row, said)
        assert f"| {row.code} | {breakable(row.name)} | `{row.key}` |" in reference, row


#: runs ``simulator ARGS`` in a fresh process and says, after its one line, whether JAX was imported
WITHOUT_JAX = ("import sys\nfrom simulator.cli import main\ntry:\n    code = main(sys.argv[1:])\n"
               "except SystemExit as stop:\n    code = stop.code\nprint('jax imported:', 'jax' in sys.modules)\n"
               "sys.exit(code)\n")


@pytest.mark.parametrize("args, said", [
    (["run", MIXED, "--restart", "--out", "missing"], "--out = 'missing' does not exist"),
    (["run", MIXED, "--restart", "missing/checkpoints/c00000001.json", "--out", "new"],
     "--restart = 'missing/checkpoints/c00000001.json' does not exist"),
    (["run", str(ROOT / "configs" / "taylor_green.yaml"), "--set", "initial.name=file", "--set",
      "initial.path=missing.h5", "--out", "new"],
     "initial.path = 'missing.h5' does not exist"),
    (["plot", "missing"], "RUN_DIR = 'missing' does not exist"),
    (["export", "missing"], "RUN_DIR = 'missing' does not exist"),
    (["plan", "missing.yaml"], "config file = 'missing.yaml' does not exist"),
    (["check", "missing.yaml"], "config file = 'missing.yaml' does not exist"),
    (["info", "missing.yaml"], "config file = 'missing.yaml' does not exist"),
    (["sweep", "missing", "--group", "0"], "sweep directory = 'missing' has no sweep.yaml"),
    (["sweep", "missing", "--point", "0"], "sweep directory = 'missing' has no sweep.yaml"),
    (["sweep", "missing", "--collect"], "sweep directory = 'missing' has no sweep.yaml"),
])
def test_a_wrong_path_is_refused_before_jax_is_imported(args, said, tmp_path):
    """A path that is not there costs no start-up of JAX: the command refuses it first (in one line, exit 2)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", WITHOUT_JAX, *args], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 2 and r.stderr.startswith(f"error: {said}") and r.stderr.count("\n") == 1, r.stderr
    assert r.stdout == "jax imported: False\n", (r.stdout, r.stderr)
    assert list(tmp_path.iterdir()) == []


def test_a_sweeps_points_run_with_a_runtime_key_unset(tmp_path):
    """``simulator sweep FILE --local --unset runtime.threads``: each point's run takes the key's default, not the
    value the sweep file sets (the flag reaches the points' own commands)."""
    sweep = {"name": "unset", "base": str(ROOT / "configs" / "taylor_green.yaml"),
             "set": {"grid.shape": 16, "time.t_end": 0.05, "output.chunk": 5, "runtime.threads": 1},
             "grid": {"physics.viscosity": [0.01, 0.02]}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    r = subprocess.run([sys.executable, "-m", "simulator", "sweep", "sweep.yaml", "--out", "s", "--local",
                        "--unset", "runtime.threads", "--cpu-devices", "1"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    ran = [yaml.safe_load((tmp_path / "s" / point / "config.yaml").read_text())["config"] for point in ("p000", "p001")]
    assert [cfg["runtime"]["threads"] for cfg in ran] == [None, None]
    assert [cfg["physics"]["viscosity"] for cfg in ran] == [0.01, 0.02]


TG = str(ROOT / "configs" / "taylor_green.yaml")
SWEEP = str(ROOT / "configs" / "sweeps" / "tg_viscosity.yaml")


@pytest.mark.parametrize("args", [["run", TG, "--set", "grid.shape=8", "--set", "time.t_end=0.01"], ["sweep", SWEEP]])
def test_an_output_directory_under_a_file_or_under_missing_folders_is_refused_and_nothing_is_made(args, tmp_path):
    """``run --out`` and ``sweep --out`` as ``animate --out`` and ``export --netcdf`` (tests/test_plots.py,
    tests/test_export.py), in one helper: a directory under a regular file is one line, exit 2, before JAX starts
    (it was said once JAX had started, as a directory that "cannot be created (Not a directory)"), and one with more
    than its last folder missing is refused alike (the run or sweep made the whole tree silently, wherever a mistyped
    path began); nothing is made."""
    flag, name = "--out", args[0]  # the directory named after the command
    (tmp_path / "afile").write_text("mine")
    new = ["missing", "missing/deep", f"missing/deep/{name}"]
    for given, said in [(f"missing/deep/{name}", f"would need {len(new)} new folders ({', '.join(new)}); create them "
                         f"first (mkdir -p {new[-1]}), or give a path in an existing folder"),
                        (f"afile/{name}", "lies under afile, which is a file; give a path in a folder")]:
        r = subprocess.run([sys.executable, "-c", WITHOUT_JAX, *args, flag, given], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert r.stderr.startswith(f"error: {flag} = '{given}' {said}") and r.stderr.count("\n") == 1, r.stderr
        assert r.stdout == "jax imported: False\n", (r.stdout, r.stderr)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"] and (tmp_path / "afile").read_text() == "mine"
