"""Config loading, validation and every error message the CLI promises (one line, exit 2)."""

import math
import subprocess
import sys
import textwrap

import pytest
import yaml

from simulator import config as C
from simulator.cli import main
from simulator.errors import ConfigError
from simulator.time.schemes import SEMILINEAR, compatible


def write(tmp_path, text, name="c.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_defaults_fill_every_key():
    cfg = C.load(None)
    assert cfg.grid.shape == (32, 32, 32)
    assert cfg.grid.box == pytest.approx((2 * math.pi,) * 3)
    assert cfg.precision == "float32" and cfg.fft.backend == "slab" and cfg.fft.mesh is None
    # every schema leaf has a doc line
    for key, _type, _default, doc in C.iter_fields():
        assert doc and "\n" not in doc, key


def test_scalars_broadcast_and_expressions(tmp_path):
    p = write(tmp_path, """
        grid: {shape: 16, box: 2*pi}
        fft: {backend: pencil, mesh: [2, 2]}
    """)
    cfg = C.load(p)
    assert cfg.grid.shape == (16, 16, 16)
    assert cfg.grid.box == pytest.approx((2 * math.pi,) * 3)
    assert cfg.fft.mesh == (2, 2)


def test_overrides_are_typed_and_validated(tmp_path):
    p = write(tmp_path, "grid: {shape: [16, 16, 16]}\n")
    cfg = C.load(p, ["grid.shape=[8,16,32]", "precision=float64", "grid.box=[1, 2, 1/4]", "fft.backend=single"])
    assert cfg.grid.shape == (8, 16, 32) and cfg.precision == "float64"
    assert cfg.grid.box == (1.0, 2.0, 0.25)
    with pytest.raises(ConfigError, match=r"^grid\.shape\[0\] = 'abc' has the wrong type"):
        C.load(p, ["grid.shape=[abc,16,16]"])


def test_setting_a_sections_name_switches_its_variant_and_drops_the_old_keys(tmp_path):
    """`--set initial.name=file` on a config whose initial condition has other keys (k_peak, seed) works:
    the section starts afresh from the new name; keys of that section set alongside apply, before or
    after the name; setting the name it already has, or another key, keeps the section."""
    p = write(tmp_path, "initial: {name: random, k_peak: 2.0, seed: 3, amplitude: 0.5}\n")
    for overrides in (["initial.name=file", "initial.path=run"], ["initial.path=run", "initial.name=file"]):
        cfg = C.load(p, overrides)
        assert cfg.initial.name == "file" and cfg.initial.path == "run"
    cfg = C.load(p, ["initial.name=taylor_green"])
    assert cfg.initial.amplitude == 1.0  # the variant's default, not the random field's 0.5
    for overrides in (["initial.name=random"], ["initial.seed=4"]):
        assert C.load(p, overrides).initial.k_peak == 2.0
    with pytest.raises(ConfigError, match=r"^initial\.k_peak = 2\.0 is an unknown key"):  # the file itself
        C.load(write(tmp_path, "initial: {name: file, path: run, k_peak: 2.0}\n"))


def test_integrator_defaults_to_the_equations_own():
    assert C.load(None).time.integrator == "rk4"
    cfg = C.load(None, ["physics.name=schrodinger_poisson", "initial.name=jeans"])
    assert cfg.time.integrator == "kdk"
    assert C.load(None, ["time.integrator=lsrk4"]).time.integrator == "lsrk4"


def test_resolved_config_round_trips(tmp_path):
    cfg = C.load(None, ["grid.shape=[8,8,16]", "fft.backend=jaxdecomp", "fft.mesh=[2,2]"])
    p = write(tmp_path, C.dump(cfg), "resolved.yaml")
    assert C.load(p) == cfg


def test_a_list_whose_default_is_empty_takes_the_empty_list_every_resolved_config_writes(tmp_path):
    """physics.output_redshifts defaults to [] and a resolved config writes it so (`simulator validate`, a run's
    config.yaml, a sweep's configs/pNNN.yaml): [] given is that default. It was refused as empty, so every
    point of a cosmological sweep without output redshifts exited 2 on its own stored config. A list whose
    default is not empty (output.statistics.orders) is still refused empty."""
    cosmic = ["physics.name=fdm_cosmo", "grid.shape=8", "physics.fdm_fraction=0", "physics.cdm_particles=512"]
    cfg = C.load(None, cosmic)
    assert "output_redshifts: []" in C.dump(cfg)
    assert C.load(write(tmp_path, C.dump(cfg), "resolved.yaml")) == cfg
    assert C.load(None, [*cosmic, "physics.output_redshifts=[]"]) == cfg
    with pytest.raises(ConfigError, match=r"^output\.statistics\.orders = \[\] is empty; expected a list of integers"):
        C.load(None, ["output.statistics.orders=[]"])


@pytest.mark.parametrize("key, entries", [("output.statistics.separations", "integers"),
                                          ("output.snapshots.times", "numbers"), ("fft.mesh", "integers")])
def test_an_empty_list_for_a_key_that_takes_null_says_it_is_empty(tmp_path, capfd, key, entries):
    """`[]` for a list that may also be null (its default: every separation, no listed times, the automatic
    mesh) was refused as "has the wrong type; expected a list of integers or null": it is a list of integers.
    It says it is empty, in one line, exit 2, nothing written; a list of another type still has the wrong type."""
    from pathlib import Path

    from support import command

    out, config = tmp_path / "run", str(Path(__file__).parents[1] / "configs" / "taylor_green.yaml")
    code, _, err = command(capfd, "run", config, "--set", f"{key}=[]", "--out", str(out))
    assert (code, err.strip()) == (2, f"error: {key} = [] is empty; expected a list of {entries} or null")
    assert not out.exists()
    code, _, err = command(capfd, "run", config, "--set", f"{key}=[a]", "--out", str(out))
    assert (code, err.strip()) == (2, f"error: {key} = ['a'] has the wrong type; expected a list of {entries} or null")


@pytest.mark.parametrize(
    "text, overrides, pattern",
    [
        # unknown key, with a did-you-mean suggestion
        ("grid: {shpe: [8, 8, 8]}", [], r"^grid\.shpe = \[8, 8, 8\] is an unknown key; did you mean 'grid\.shape'\?"),
        ("gird: {}", [], r"^gird = \{\} is an unknown key; did you mean 'grid'\?"),
        # wrong type
        ("grid: {shape: [8, 8, eight]}", [], r"^grid\.shape\[2\] = 'eight' has the wrong type; expected an integer"),
        ("precision: 64", [], r"^precision = 64 has the wrong type; expected a string"),
        ("grid: [1, 2]", [], r"^grid = \[1, 2\] has the wrong type; expected a mapping"),
        ("grid: {shape: [8, 8]}", [], r"^grid\.shape = \[8, 8\] is a plane; a box for physics\.name = navier_stokes "
                                      r"\(\[Nx, Ny, Nz\]\), or for a plane physics\.name one of: boussinesq2d, "
                                      r"channel2d, convection2d, convection2d_noslip, mhd2d, ns2d, sw1l$"),
        ("grid: {shape: [8, 8, 8, 8]}", [], r"^grid\.shape = \[8, 8, 8, 8\] has 4 entries; expected a list of 3 "
                                            r"integers or a list of 2 integers$"),
        ("grid: {shape: [8, 8, 1]}", [], r"^grid\.shape = \[8, 8, 1\] has an entry of 1; two entries for a plane "
                                         r"\(\[8, 8\]\) or three of at least 2 for a box$"),
        ("{physics: {name: ns2d}, grid: {shape: [8, 8], box: [1, 2, 3]}}", [],
         r"^grid\.box = \[1\.0, 2\.0, 3\.0\] has three lengths; two lengths \[Lx, Ly\] for the plane"),
        ("{physics: {name: ns2d}, fft: {backend: pencil}}", [],
         r"^fft\.backend = 'pencil' does not take a plane; one of single, slab for a plane"),
        # out of range
        ("grid: {shape: [8, 0, 8]}", [], r"^grid\.shape = \[8, 0, 8\] is out of range; every entry must be >= 1"),
        ("grid: {box: [1, -1, 1]}", [], r"^grid\.box = \[1\.0, -1\.0, 1\.0\] is out of range; every entry must be > 0"),
        ("runtime: {cpu_devices: 0}", [], r"^runtime\.cpu_devices = 0 is out of range"),
        # a grid that does not divide over the mesh / an odd Nz
        ("grid: {shape: [8, 12, 8]}\nfft: {mesh: [8]}", [], r"^grid\.shape = \[8, 12, 8\] does not divide over "
         r"the mesh; slab on mesh \[8\] needs Ny = 12 divisible by 8"),
        ("grid: {shape: [16, 16, 16]}\nfft: {backend: pencil, mesh: [3, 2]}", [], r"needs Nx = 16 divisible by 3"),
        ("grid: {shape: [16, 16, 15]}", [], r"^grid\.shape = \[16, 16, 15\] has an odd Nz; Nz must be even"),
        ("fft: {backend: slab, mesh: [2, 2]}", [], r"^fft\.mesh = \[2, 2\] has the wrong rank"),
        # unknown names
        ("fft: {backend: slabb}", [], r"^fft\.backend = 'slabb' is unknown; expected one of: jaxdecomp, pencil, "
         r"single, slab \(did you mean 'slab'\?\)"),
        ("precision: float16", [], r"^precision = 'float16' is unknown; expected one of: float32, float64"),
        # the --set syntax itself
        ("{}", ["grid.shape"], r"^--set = 'grid\.shape' is malformed; expected dotted\.key=value"),
        ("{}", ["precision.bits=3"], r"^precision = \{'bits': 3\} has the wrong type; expected a string"),
        ("grid: {shape: 8}", ["grid.shape.x=3"], r"^grid\.shape = 8 cannot hold keys"),
        ("runtime: {coordinator: 'localhost:1234'}", [], r"^runtime\.coordinator = 'localhost:1234' is incomplete"),
        # names that exist, but not for this equation
        ("physics: {name: schrodinger_poisson}\ninitial: {name: taylor_green}", [],
         r"^initial\.name = 'taylor_green' is not available; for physics\.name = schrodinger_poisson use one of: "
         r"jeans, soliton, random"),
        ("initial: {name: jeans}", [], r"^initial\.name = 'jeans' is not available; for physics\.name = navier_stokes"),
        ("time: {integrator: kdk}", [],
         rf"^time\.integrator = 'kdk' is not available; .* use one of: {', '.join(compatible(SEMILINEAR))}$"),
        # an exponential scheme needs a diagonal L: Boussinesq's waves couple the components of a mode
        ("physics: {name: boussinesq}\ninitial: {name: wave}\ntime: {integrator: etdrk4}", [],
         r"^time\.integrator = 'etdrk4' is not available; for physics\.name = boussinesq use one of: rk2, rk3, rk4, "
         r"lsrk4$"),
        # a key of another equation: unknown here, with the keys that are valid
        ("physics: {name: schrodinger_poisson, forcing: band}\ninitial: {name: jeans}", [],
         r"^physics\.forcing = 'band' is an unknown key; known keys for physics\.name = schrodinger_poisson: "
         r"name, hbar_over_m, G, self_interaction, fdm_fraction, cdm_particles, cdm_window, cdm_capacity, "
         r"cdm_exchange$"),
        ("physics: {name: schrodinger_poisson, viscosity: 0.5}\ninitial: {name: jeans}", [],
         r"^physics\.viscosity = 0\.5 is an unknown key; known keys for physics\.name = schrodinger_poisson"),
        ("physics: {name: schrodinger_poisson}\ninitial: {name: jeans, core_radius: 3}", [],
         r"^initial\.core_radius = 3 is an unknown key; known keys for initial\.name = jeans: name, density, "
         r"amplitude, wavenumber, rate$"),
        ("initial: {name: taylor_green, seed: 3}", [],
         r"^initial\.seed = 3 is an unknown key; known keys for initial\.name = taylor_green: name, amplitude, "
         r"scalars$"),
        ("physics: {name: navier_stokes, hbar_over_m: 0.1}", [],
         r"^physics\.hbar_over_m = 0\.1 is an unknown key; known keys for physics\.name = navier_stokes"),
        # a section whose name is left out: the message says the name it was read as is the default
        ("physics: {viscosity: 0.02, resistivity: 0.02}", [],
         r"^physics\.resistivity = 0\.02 is an unknown key; known keys for physics\.name = navier_stokes \(the "
         r"default: no physics\.name given\): name, viscosity, "),
        ("physics: {name: mhd}\ninitial: {k_peak: 3}", [],
         r"^initial\.k_peak = 3 is an unknown key; known keys for initial\.name = orszag_tang \(the default: no "
         r"initial\.name given\): name, amplitude, magnetic_amplitude, mean_field$"),
        ("time: {dt: -0.1}", [], r"^time\.dt = -0\.1 is out of range; it must be > 0"),
        ("time: {cfl: 0}", [], r"^time\.cfl = 0\.0 is out of range"),
        ("physics: {forcing: lundgren}", [],
         r"^physics\.forcing = 'lundgren' is unknown; expected one of: none, linear, band"),
        ("output: {spectra: maybe}", [], r"^output\.spectra = 'maybe' has the wrong type; expected a mapping"),
        ("output: {snapshot_every: 40, snapshots: {every: 20}}", [], r"^output\.snapshot_every = 40 is also given"),
    ],
)
def test_bad_config_is_one_line_naming_key_value_and_allowed(tmp_path, text, overrides, pattern, capsys):
    p = write(tmp_path, text + "\n")
    with pytest.raises(ConfigError, match=pattern) as info:
        C.load(p, overrides)
    assert "\n" not in str(info.value)
    # the CLI: exit status 2, the same one line on stderr, nothing on stdout
    code = main(["validate", str(p), *sum((["--set", o] for o in overrides), [])])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and str(info.value) in err


def test_missing_empty_and_malformed_files(tmp_path, capsys):
    with pytest.raises(ConfigError, match=r"^config file = '.*nope\.yaml' does not exist"):
        C.load(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match=r"is empty"):
        C.load(write(tmp_path, "# only a comment\n", "empty.yaml"))
    bad = write(tmp_path, "grid:\n  shape: [1, 2\n  box: 3\n", "bad.yaml")
    with pytest.raises(ConfigError, match=r"^config file = '.*bad\.yaml:3' is malformed YAML"):
        C.load(bad)
    assert main(["validate", str(bad)]) == 2
    assert "bad.yaml:3" in capsys.readouterr().err


def test_a_run_s_own_record_reads_as_its_config(tmp_path, capsys):
    """RUN/config.yaml (and a segment's record) holds the resolved config under `config`, beside the versions: given
    as a config, it is that config (it was refused: `config = {...} is an unknown key`), and --set changes it."""
    cfg = C.load(None, ["grid.shape=16", "physics.viscosity=0.003", "time.integrator=etdrk4"])
    record = {"config": C.to_dict(cfg), "versions": {"jax": "0"}, "git_revision": "unknown", "segment_id": "0" * 32,
              "segment": 0, "start_step": 0}
    p = write(tmp_path, yaml.safe_dump(record, sort_keys=False), "config.yaml")
    assert C.load(p) == cfg
    assert C.load(p, ["physics.viscosity=0.002"]).physics.viscosity == 0.002
    assert main(["validate", str(p)]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == record["config"]


def test_validate_prints_the_resolved_config(tmp_path, capsys):
    p = write(tmp_path, "grid: {shape: 16}\n")
    assert main(["validate", str(p)]) == 0
    resolved = yaml.safe_load(capsys.readouterr().out)
    assert resolved["grid"]["shape"] == [16, 16, 16]
    assert resolved["fft"] == {"backend": "slab", "mesh": None, "layout": "auto", "in_turn": "auto"}
    assert set(resolved["runtime"]) == {"cpu_devices", "threads", "coordinator", "num_processes", "process_id",
                                        "max_wall", "chunk_wall", "compilation_cache"}
    # only the keys of its own equation and initial condition
    assert set(resolved["physics"]) == {"name", "viscosity", "hyperviscosity", "hyperviscosity_order", "dealias",
                                        "forcing", "forcing_power", "forcing_band", "scalars"}
    assert resolved["initial"] == {"name": "taylor_green", "amplitude": 1.0,
                                   "scalars": {"name": "zero", "amplitude": 1.0, "k_peak": 4.0, "seed": 0}}


def test_cli_argument_errors_exit_2():
    r = subprocess.run([sys.executable, "-m", "simulator", "validate"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and r.stderr.count("\n") == 1
    r = subprocess.run([sys.executable, "-m", "simulator", "frobnicate"], capture_output=True, text=True)
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_config_docs_cover_the_schema():
    docs = C.config_docs()
    for key, *_ in C.iter_fields():
        assert f"| `{key}` |" in docs


def test_ci_runs_the_readme_test_command():
    from pathlib import Path

    root = Path(__file__).parents[1]
    command = "bash scripts/setup.sh && .venv/bin/python -m pytest"
    assert f"```bash\n{command}\n```" in (root / "README.md").read_text()
    assert command in (root / ".ci" / "run").read_text()


def test_each_equation_selects_its_own_schema():
    """physics.name selects the parameter dataclass, initial.name one of that equation's conditions; a
    missing initial.name is the equation's first initial condition."""
    from simulator.equations import registry

    for name, info in registry().items():
        cfg = C.load(None, [f"physics.name={name}"])
        assert type(cfg.physics) is info.params and type(cfg.initial) is info.initials[0]
        assert cfg.time.integrator == info.default_integrator
        for ic in info.initial_table:
            if ic == "file":  # built into every equation; it needs a file (tests/test_remap.py reads them)
                with pytest.raises(ConfigError, match=r"^initial\.path = '' is required with initial\.name = file"):
                    C.load(None, [f"physics.name={name}", "initial.name=file"])
                continue
            # the wave needs more points across the plates than a plane's default grid has (its refusal: test_channel2d)
            wave = ic == "tollmien_schlichting"
            more = [f"grid.shape=[8, {'' if info.dimensions == 2 else '8, '}64]"] if wave else []
            assert C.load(None, [f"physics.name={name}", f"initial.name={ic}", *more]).initial.name == ic


def test_config_docs_have_a_table_per_equation_and_initial_condition():
    from simulator.equations import registry

    docs = C.config_docs()
    for name, info in registry().items():
        assert f"**`physics.name: {name}`**" in docs
        for key, *_ in C.iter_fields(info.params, "physics."):
            if key != "physics.name":
                assert f"| `{key}` |" in docs
        for ic in info.initial_table:
            assert f"**`initial.name: {ic}`** ({name})" in docs


def test_a_key_declared_free_or_kept_on_a_restart_says_so_in_its_reference_line():
    """docs/how-to/restarts.md sends readers to the config reference for what a restart may do with a key: every
    schema field declared restart="free" or "kept" ends its doc line with it (physics.output_redshifts did not)."""
    import dataclasses

    from simulator.equations import registry

    said = {"free": "may change on a restart", "kept": "a restart keeps it"}
    sections = {**{f"{name}: physics": info.params for name, info in registry().items()}, "grid": C.GridConfig}
    declared = {f"{section}.{f.name}": (f.metadata["restart"], f.metadata["doc"])
                for section, fields in sections.items() for f in dataclasses.fields(fields) if "restart" in f.metadata}
    assert len(declared) >= 4
    for key, (rule, doc) in declared.items():
        assert doc.endswith(said[rule]), (key, rule, doc)


def test_keys_of_the_first_config_format_are_read(tmp_path):
    """output.snapshot_every / snapshot_dt and output.spectra: bool still work (shipped configs and
    users' own use them)."""
    old = C.load(write(tmp_path, "output: {every: 10, snapshot_every: 20, snapshot_dt: 0.5, spectra: false}\n"))
    assert old.output.snapshots.every == 20 and old.output.snapshots.dt == 0.5
    assert old.output.spectra.every == 0 and not old.output.spectra.at_end
    assert C.load(None, ["output.spectra=true"]).output.spectra.every == 10  # with every diagnostics row
    assert old.output.chunk == 10


def test_output_every_is_output_chunk_with_a_note(tmp_path, caplog):
    """output.every was the compiled chunk's length all along: it is read as output.chunk (in a file,
    in --set and in a stored run's config), with one note per old key naming the new one; giving both
    is an error."""
    import logging

    C._note_renamed.cache_clear()  # once per process: earlier tests in this one may have used the key
    with caplog.at_level(logging.WARNING, logger="simulator"):
        assert C.load(write(tmp_path, "output: {every: 7}\n")).output.chunk == 7
        assert C.load(None, ["output.every=3"]).output.chunk == 3
        assert C.load(None, {"output.every": 4}).output.chunk == 4
    notes = [r.getMessage() for r in caplog.records if "is now" in r.getMessage()]
    assert notes == ["output.every is now output.chunk (the old key still works; rename it)"], notes
    assert C.from_dict({"output": {"every": 6}}).output.chunk == 6  # a stored config: read, no note
    with pytest.raises(ConfigError, match=r"^output\.every = 5 is also given as output\.chunk"):
        C.load(write(tmp_path, "output: {every: 5, chunk: 5}\n"))


def test_every_shipped_config_validates():
    from pathlib import Path

    root = Path(__file__).parents[1] / "configs"
    configs = sorted(root.glob("*.yaml"))
    assert len(configs) >= 5
    for path in configs:  # and each read back from its resolved config (a particle-only run's has no wave keys)
        cfg = C.load(path)
        assert C.load(yaml.safe_load(C.dump(cfg))) == cfg, path


@pytest.mark.parametrize(
    "content, pattern",
    [
        (b"time: {dt: 0.1}\ntime: {t_end: 2}\n", r"has a duplicate key; give each key once per mapping \('time'"),
        (b"a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
         b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
         b"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
         r"has too many aliases"),
        (b"name: caf\xe9\n", r"c\.yaml:1' is not valid UTF-8"),
        (b"\x00\x01\x02binary", r"is a binary file"),
        # escapes the Python loader reads as no character (a lone surrogate: a UnicodeEncodeError traceback when
        # the name was written out) or refuses with a ValueError traceback
        (b'name: "a\\ud800"\n', r"c\.yaml' has an escape of no character in 'a\\ud800'"),
        (b'particles: [{"k\\udc00": 1}]\n', r"has an escape of no character in 'k\\udc00'"),
        (b'name: "a\\U00110000"\n', r"c\.yaml:1' is malformed YAML \(chr\(\) arg not in range"),
        # RecursionError tracebacks: in the parser, or (500 deep) where the config is copied
        (b"a: " + b"[" * 20000 + b"]" * 20000 + b"\n", r"c\.yaml' is nested too deeply"),
        (b"a: " + b"{b: " * 500 + b"1" + b"}" * 500 + b"\n", r"c\.yaml' is nested too deeply"),
    ],
)
def test_unusable_files_are_one_line_errors(tmp_path, content, pattern):
    p = tmp_path / "c.yaml"
    p.write_bytes(content)
    with pytest.raises(ConfigError, match=pattern) as info:
        C.load(p)
    assert "\n" not in str(info.value)


def test_yaml_merge_keys_give_their_keys_and_a_key_given_twice_beside_them_is_still_refused(tmp_path):
    """``<<: *defaults`` (YAML's merge key) shares keys between particle species or sections; it was refused as
    malformed YAML ("could not determine a constructor for the tag ...merge") by both loaders, valid YAML."""
    cfg = C.load(write(tmp_path, """\
        particles:
          - &heavy {name: heavy, count: 8, tau_p: 0.5}
          - {<<: *heavy, name: light, tau_p: 0.1}
          - <<: [*heavy]
            name: third
        """))
    assert [(p.name, p.count, p.tau_p) for p in cfg.particles] == [("heavy", 8, 0.5), ("light", 8, 0.1),
                                                                     ("third", 8, 0.5)]
    for text in ("time:\n  <<: {dt: 0.1}\n  t_end: 2\n  t_end: 3\n", "time:\n  <<: {dt: 0.1, dt: 0.2}\n"):
        with pytest.raises(ConfigError, match=r"c\.yaml:[24]' has a duplicate key"):
            C.load(write(tmp_path, text))


@pytest.mark.parametrize("text, shown", [("name: 2026-02-30\n", "'2026-02-30' cannot be read as timestamp"),
                                         ("grid: {shape: !!int abc}\n", "'abc' cannot be read as int"),
                                         ("fft: {in_turn: !!bool maybe}\n", "'maybe' cannot be read as bool")])
def test_a_scalar_no_yaml_constructor_reads_is_one_line_naming_its_line(tmp_path, text, shown):
    """A date that is no date, or a value tagged as a type it is not, was a ValueError/KeyError traceback."""
    with pytest.raises(ConfigError, match=rf"c\.yaml:1' is malformed YAML \({shown} .*quote it") as info:
        C.load(write(tmp_path, text))
    assert "\n" not in str(info.value)


def test_an_integer_too_large_for_a_float_and_a_date_set_on_the_command_line_are_refused_in_one_line():
    """An integer of over 308 digits for a number was an OverflowError traceback; ``--set name=2026-02-30`` a
    ValueError traceback (it is the string it reads as where YAML reads no date)."""
    with pytest.raises(ConfigError, match=r"^time\.dt = inf is out of range; it must be finite$"):
        C.load(None, {"time.dt": 10**400})
    with pytest.raises(ConfigError, match=r"^time\.dt = -inf is out of range; it must be > 0"):
        C.load(None, [f"time.dt=-{10**400}"])
    assert C.load(None, ["name=2026-02-30"]).name == "2026-02-30"


def test_the_static_copy_of_the_parameters_refuses_its_traced_numbers():
    """An equation's ``physics`` is the structural copy (traced numbers are arguments of compiled code):
    reading one from it fails loudly, naming where the value is, instead of giving a silent 0.0; two runs
    that differ only in traced numbers still have equal (one compiled program's) structure."""
    from simulator.equations.boussinesq import BoussinesqParams
    from simulator.equations.scalars import PassiveScalar
    from simulator.schema import TracedValueError, zero_traced

    physics = BoussinesqParams(viscosity=0.01, scalars=(PassiveScalar(diffusivity=0.02),))
    static = zero_traced(physics)
    with pytest.raises(TracedValueError, match=r'viscosity .*params\["viscosity"\]'):
        2 * static.viscosity
    with pytest.raises(TracedValueError, match=r'params\["scalars"\]\[0\]\["diffusivity"\]'):
        float(static.scalars[0].diffusivity)
    with pytest.raises(TracedValueError):
        bool(static.coriolis == 0)
    assert static == zero_traced(BoussinesqParams(viscosity=0.5, scalars=(PassiveScalar(diffusivity=0.3),)))
    assert hash(static) == hash(zero_traced(BoussinesqParams(viscosity=0.5, scalars=(PassiveScalar(),))))
    assert static != zero_traced(BoussinesqParams(forcing="band"))
    assert static.forcing == "none" and len(static.scalars) == 1  # structure stays readable
    # a sweep over nu_p shares one program; its order and the dealiasing are structure
    from simulator.equations.navier_stokes import NavierStokesParams

    plain = zero_traced(NavierStokesParams())
    assert plain == zero_traced(NavierStokesParams(hyperviscosity=1e-6, viscosity=0.0))
    assert plain != zero_traced(NavierStokesParams(hyperviscosity_order=6))
    assert plain != zero_traced(NavierStokesParams(dealias="hou_li"))
    # a structural zero survives a second copy (an equation built from another's physics, as a branch at another
    # resolution builds the stored grid's): the particles alone stay without a wave, f > 0 stays with one
    from simulator.equations.schrodinger_poisson import SchrodingerPoissonParams
    from simulator.schema import is_zero

    for f in (0.0, 0.5):
        once = zero_traced(SchrodingerPoissonParams(fdm_fraction=f, cdm_particles=64))
        assert zero_traced(once) == once and is_zero(zero_traced(once).fdm_fraction) == (f == 0)


def test_a_misspelt_schema_constraint_is_refused():
    """``setting(..., mni=0)`` would check nothing: an unknown constraint is a TypeError naming it."""
    from simulator.schema import param, setting

    with pytest.raises(TypeError, match="unknown constraint.*mni.*allowed: .*min"):
        setting(1, "a number", mni=0)
    with pytest.raises(TypeError, match="greater"):
        param(1.0, "a number", greater=0.0)
    assert setting(1, "a number", min=0, choices=(0, 1)).metadata["min"] == 0


def test_a_traced_number_given_as_an_integer_is_the_run_s_float_and_only_a_seed_is_an_integer():
    """A traced number declared float that Python code gives as an int (``NavierStokesParams(viscosity=1)``,
    ``dataclasses.replace(cfg.physics, viscosity=1)``: no YAML coercion on the way) reaches compiled code as the
    run's float. Since random seeds became unsigned 32-bit arguments, every int did: -nu of a uint32 1 is
    4294967295, a silent wrong answer. A seed stays the uint32 that jax.random.key takes."""
    import jax.numpy as jnp

    from simulator.equations.base import traced_arrays
    from simulator.equations.navier_stokes import NavierStokesParams, RandomVelocity

    params = traced_arrays(NavierStokesParams(viscosity=1).traced(), jnp.float64)
    assert params["viscosity"].dtype == jnp.float64 and float(-params["viscosity"]) == -1.0
    initial = traced_arrays(RandomVelocity(amplitude=2, seed=7).traced(), jnp.float64)
    assert initial["amplitude"].dtype == jnp.float64 and float(-initial["amplitude"]) == -2.0
    assert initial["seed"].dtype == jnp.uint32 and int(initial["seed"]) == 7


def test_every_point_of_every_shipped_sweep_validates(tmp_path):
    """A shipped sweep file names keys and values its base config must take at every point (a planar sweep's
    grid of two entries among them): each point's config loads and resolves, without running anything."""
    from pathlib import Path

    from simulator import sweep as sweep_mod, sweep_file

    sweeps = sorted((Path(__file__).parents[1] / "configs" / "sweeps").glob("*.yaml"))
    assert len(sweeps) >= 5
    for path in sweeps:
        sweep = sweep_file.load(path)
        configs = [sweep_mod.point_config(sweep, point, tmp_path / sweep.name) for point in sweep.points]
        assert len(configs) == len(sweep.points) >= 2, path
        assert all(c.name.startswith(sweep.name) for c in configs), path
