"""The persistent compilation cache (simulator/cache.py): a later launch of the same structure loads every
program the first compiled, and gets the same answer; a program compiled under other XLA flags, a damaged,
truncated or foreign entry, an entry under another program's name, an unusable or full directory are never loaded
and never stop a run; a read-only directory is read and left as it is; concurrent
writers leave whole entries; the cache keeps to its bound; a run's snapshots call the program it compiled ahead.

Each launch here has a cache directory of its own (SIMULATOR_COMPILATION_CACHE), not the session's.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulator import cache
from simulator.run import programs

from support import small_filesystem

ROOT = Path(__file__).resolve().parents[1]
TG = str(ROOT / "configs" / "taylor_green.yaml")
#: a quick run of the default job: its chunk and output programs, no snapshots
SMALL = ["--set", "grid.shape=16", "--set", "time.t_end=0.1", "--set", "output.chunk=5",
         "--set", "output.snapshots.every=0", "--cpu-devices", "2"]
PROGRAMS = re.compile(r"programs: (\d+) loaded from the cache, (\d+) compiled")


def launch(tmp: Path, name: str, where: str | Path, *extra: str, env: dict[str, str] | None = None
           ) -> tuple[subprocess.CompletedProcess, tuple[int, int], list[dict[str, str]]]:
    """``simulator run`` of the quick default job into ``tmp/name`` with its programs cached in ``where``:
    the process, (loaded, compiled) from its log's programs line, and its time series."""
    environment = {**os.environ, cache.ENV: str(where), **(env or {})}
    r = subprocess.run([sys.executable, "-m", "simulator", "run", TG, *SMALL, *extra, "--out", str(tmp / name)],
                       capture_output=True, text=True, timeout=600, env=environment)
    assert r.returncode == 0, r.stderr[-3000:]
    found = PROGRAMS.search(r.stderr)
    assert found, r.stderr[-2000:]
    with open(tmp / name / "timeseries.csv") as fh:
        rows = list(csv.DictReader(fh))
    return r, (int(found[1]), int(found[2])), rows


def entries(where: Path) -> set[str]:
    return {p.name for p in where.glob(f"*{cache.SUFFIX}")}


def same_series(a: list[dict[str, str]], b: list[dict[str, str]]) -> bool:
    keep = [k for k in a[0] if k not in ("wall_time", "wall")]
    return [[r[k] for k in keep] for r in a] == [[r[k] for k in keep] for r in b]


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """The first launch into an empty cache: it compiles everything and keeps it."""
    tmp = tmp_path_factory.mktemp("cache")
    where = tmp / "xla"
    r, (loaded, compiled), rows = launch(tmp, "first", where)
    assert loaded == 0 and compiled > 3, r.stderr[-2000:]
    return tmp, where, compiled, rows, entries(where)


def test_the_programs_line_gives_their_compiles_wall_time_and_names_the_sum(first):
    """The programs compile side by side on worker threads: the line said "8 compiled (35.1 s)", their seconds added
    up, in a process of 13.4 s. It gives the wall time from the first compile's start to the last one's end, within
    the time to ready, and the sum named as such."""
    tmp, _, compiled, _, _ = first
    log = (tmp / "first" / "run.log").read_text()
    found = re.search(r"programs: 0 loaded from the cache, (\d+) compiled in ([\d.]+) s \(([\d.]+) s summed over the "
                      r"programs, compiled side by side\); ready ([\d.]+) s after launch", log)
    assert found, log[-2000:]
    wall, summed, ready = map(float, found.groups()[1:])
    assert int(found[1]) == compiled and 0 < wall <= ready and summed > 0, found[0]


def test_a_second_launch_loads_every_program_and_gives_the_same_answer(first):
    """The same config in another process asks for the same programs (the same keys: no entry is added) and
    loads every one of them; its time series equals the first's digit for digit."""
    tmp, where, compiled, rows, kept = first
    assert len(kept) >= compiled
    r, (loaded, again), rows2 = launch(tmp, "second", where)
    assert again == 0 and loaded >= compiled, r.stderr[-2000:]
    assert entries(where) == kept
    assert same_series(rows, rows2)


def test_a_physical_number_is_traced_so_a_sweep_point_loads(first):
    """Another viscosity is another point of the same structure: nothing to compile."""
    tmp, where, compiled, rows, kept = first
    r, (loaded, again), rows2 = launch(tmp, "viscous", where, "--set", "physics.viscosity=0.01")
    assert again == 0 and loaded >= compiled, r.stderr[-2000:]
    assert not same_series(rows, rows2)


def test_a_program_compiled_under_other_xla_flags_is_not_loaded(first):
    tmp, where, compiled, rows, kept = first
    flags = os.environ.get("XLA_FLAGS", "") + " --xla_cpu_enable_fast_math=false"
    r, (loaded, again), rows2 = launch(tmp, "flags", where, env={"XLA_FLAGS": flags})
    assert loaded == 0 and again >= compiled, r.stderr[-2000:]
    assert same_series(rows, rows2)


def test_damaged_truncated_and_foreign_entries_are_ignored_with_a_warning_and_compiled_again(first, tmp_path):
    """Every entry of a copy of the first launch's cache spoiled one of three ways: each is ignored with one
    warning naming it, compiled again and written anew (the launch after loads them all), and the answer is
    the same."""
    tmp, where, compiled, rows, kept = first
    spoiled = tmp_path / "xla"
    spoiled.mkdir()
    for i, name in enumerate(sorted(kept)):
        data = (where / name).read_bytes()
        if i % 3 == 0:
            data = data[: len(data) // 2]  # truncated (a writer killed mid-way, without our rename)
        elif i % 3 == 1:
            data = data[:-100] + bytes(b ^ 0xFF for b in data[-100:])  # damaged on disk
        else:
            data = b"not a compiled program of ours"  # foreign
        (spoiled / name).write_bytes(data)
    r, (loaded, again), rows2 = launch(tmp_path, "spoiled", spoiled)
    assert loaded == 0 and again >= compiled, r.stderr[-2000:]
    warnings = [line for line in r.stderr.splitlines() if "WARNING compilation cache:" in line]
    assert len(warnings) == len(kept) and all("is damaged or not one of ours" in line for line in warnings), \
        r.stderr[-3000:]
    assert same_series(rows, rows2)
    r, (loaded, again), _ = launch(tmp_path, "mended", spoiled)
    assert again == 0 and loaded >= compiled, r.stderr[-2000:]


def test_an_entry_under_another_program_s_name_is_ignored_and_compiled_again(first, tmp_path):
    """The first launch's entries rotated among their names (each whole entry copied onto the next one's name, as a
    sync or a rename would leave them): each passed its checksum, which covered the payload alone, was loaded as
    the program of that name and failed inside JAX with an AssertionError and a traceback. The checksum binds the
    payload to the key it was written for: each is ignored with one warning naming it, compiled again and written
    under its own name (the launch after loads them all), and the answer is the same."""
    tmp, where, compiled, rows, kept = first
    rotated = tmp_path / "xla"
    rotated.mkdir()
    names = sorted(kept)
    for name, other in zip(names, names[1:] + names[:1], strict=True):
        (rotated / other).write_bytes((where / name).read_bytes())
    r, (loaded, again), rows2 = launch(tmp_path, "rotated", rotated)
    assert loaded == 0 and again >= compiled and "Traceback" not in r.stderr, r.stderr[-3000:]
    warnings = [line for line in r.stderr.splitlines() if "WARNING compilation cache:" in line]
    assert len(warnings) == len(kept), r.stderr[-3000:]
    assert all("is another program's entry (copied or renamed onto this name): ignored, compiling again" in line
               for line in warnings), warnings
    assert same_series(rows, rows2)
    r, (loaded, again), _ = launch(tmp_path, "mended", rotated)
    assert again == 0 and loaded >= compiled, r.stderr[-2000:]


@contextlib.contextmanager
def read_only_copy(where: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the cache ``where`` that cannot be written. As root (containers, CI) permissions stop nothing: a
    tmpfs holding the copy, remounted read-only, the way a cluster mounts a shared cache. Otherwise the copy's
    directory without write permission, which does stop its owner."""
    if os.geteuid() != 0:
        copy = Path(shutil.copytree(where, tmp_path / "xla"))
        copy.chmod(0o555)
        try:
            yield copy
        finally:
            copy.chmod(0o755)
        return
    with small_filesystem(tmp_path / "fs", "512m") as fs:
        copy = Path(shutil.copytree(where, fs / "xla"))
        assert subprocess.run(["mount", "-o", "remount,ro", str(fs)]).returncode == 0
        yield copy


def test_a_read_only_cache_of_valid_entries_is_read_and_written_nowhere(first, tmp_path):
    """A cache filled once and mounted read-only for a job array or a container was not read at all ("cannot use
    DIR (Read-only file system): programs are compiled, not cached": 0 loaded, 8 compiled). Every program is
    loaded, one line says the directory cannot be written, and nothing changes in it (no entry, no temporary
    file, no time of last use) nor is a program kept anywhere else."""
    tmp, where, compiled, rows, kept = first
    xdg = tmp_path / "xdg"
    with read_only_copy(where, tmp_path) as copy:
        before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in copy.iterdir()}
        r, (loaded, again), rows2 = launch(tmp_path, "run", copy, env={"XDG_CACHE_HOME": str(xdg)})
        after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in copy.iterdir()}
    assert again == 0 and loaded >= compiled, r.stderr[-3000:]
    said = [line for line in r.stderr.splitlines() if "WARNING compilation cache:" in line]
    assert len(said) == 1 and f"{copy} cannot be written (" in said[0], r.stderr[-3000:]
    assert "its programs are loaded, and those it lacks are compiled and not kept" in said[0]
    assert after == before and kept <= set(before)
    assert list(xdg.rglob(f"*{cache.SUFFIX}")) == []
    assert same_series(rows, rows2)


def test_a_directory_that_cannot_be_made_is_one_warning_and_the_run_goes_on(first, tmp_path):
    tmp, where, compiled, rows, kept = first
    (tmp_path / "a_file").write_text("in the way")
    r, (loaded, again), rows2 = launch(tmp_path, "run", tmp_path / "a_file" / "xla")
    said = [line for line in r.stderr.splitlines() if "WARNING compilation cache:" in line]
    assert len(said) == 1 and "a_file" in said[0], r.stderr[-2000:]
    assert loaded == 0 and again >= compiled
    assert same_series(rows, rows2)


@pytest.mark.parametrize("how", ["read-only", "full"])
def test_a_read_only_or_full_cache_is_one_warning_and_the_run_goes_on(first, tmp_path, how):
    """A tmpfs remounted read-only after the directory was made, or too small for one entry: one warning
    (not one per program), the run finishes with the same answer."""
    tmp, where, compiled, rows, kept = first
    size = "8k" if how == "full" else "1m"
    with small_filesystem(tmp_path / "fs", size) as fs:
        (fs / "xla").mkdir()
        if how == "read-only":
            assert subprocess.run(["mount", "-o", "remount,ro", str(fs)]).returncode == 0
        r, (loaded, again), rows2 = launch(tmp_path, "run", fs / "xla")
    said = [line for line in r.stderr.splitlines() if "WARNING compilation cache:" in line]
    assert len(said) == 1, r.stderr[-2000:]
    assert loaded == 0 and again >= compiled
    assert same_series(rows, rows2)


def test_off_compiles_everything_and_keeps_nothing(first, tmp_path):
    tmp, where, compiled, rows, kept = first
    r, (loaded, again), rows2 = launch(tmp_path, "run", tmp_path / "unused", "--set", "runtime.compilation_cache=off")
    assert loaded == 0 and again >= compiled
    assert not (tmp_path / "unused").exists()
    assert "compilation cache: off (runtime.compilation_cache = off)" in r.stderr


# ---- the directory itself, without JAX --------------------------------------------------------------------


def _writer(path: str, key: str, fill: int, rounds: int) -> None:
    store = cache.ProgramCache(Path(path), 1 << 30, "tag")
    for _ in range(rounds):
        store.put(key, bytes([fill]) * (200_000 + fill * 1000))


def test_two_processes_writing_the_same_entry_leave_one_whole_entry(tmp_path):
    """Two processes write the same key over and over while this one reads it: every read is one writer's
    whole payload (or nothing yet), never a mixture, and what stays is whole."""
    store = cache.ProgramCache(tmp_path, 1 << 30, "tag")
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_writer, args=(str(tmp_path), "jit_chunk-abc", fill, 60)) for fill in (1, 2)]
    for w in writers:
        w.start()
    seen = set()
    while any(w.is_alive() for w in writers):
        value = store.get("jit_chunk-abc")
        if value is not None:
            assert value in (b"\x01" * 201_000, b"\x02" * 202_000)
            seen.add(value[0])
    for w in writers:
        w.join()
        assert w.exitcode == 0
    assert store.get("jit_chunk-abc") in (b"\x01" * 201_000, b"\x02" * 202_000)
    assert seen and list(tmp_path.glob("*.tmp")) == [] and len(entries(tmp_path)) == 1


def test_the_cache_keeps_to_its_bound_dropping_the_least_recently_used(tmp_path):
    store = cache.ProgramCache(tmp_path, 350_000, "tag")
    for i in range(3):
        store.put(f"jit_p{i}-k", bytes(100_000))
        os.utime(store.file(f"jit_p{i}-k"), (1000 + i, 1000 + i))
    assert store.get("jit_p0-k") is not None  # used now: the most recent
    store.put("jit_p3-k", bytes(100_000))  # 4 x 100 kB > 350 kB: the least recently used (p1) goes
    assert [store.get(f"jit_p{i}-k") is not None for i in range(4)] == [True, False, True, True]


def test_a_process_lists_the_cache_once_per_64_writes_and_prunes_as_soon_as_its_writes_may_pass_the_bound(
        tmp_path, monkeypatch):
    """A stat of every entry after every write made a launch's compiles quadratic in the entries (thousands in the
    suite's cache): 130 small writes list the directory 3 times (the first write, then every 64), and a write that
    may take the cache past its bound lists it at once and drops the least recently used."""
    store = cache.ProgramCache(tmp_path, 1 << 30, "tag")
    listings = []
    real = cache.ProgramCache.prune
    monkeypatch.setattr(cache.ProgramCache, "prune", lambda self: (listings.append(1), real(self))[1])
    for i in range(130):
        store.put(f"jit_p{i}-k", bytes(10))
    assert len(listings) == 3 and len(entries(tmp_path)) == 130
    bounded = cache.ProgramCache(tmp_path, 130 * 200 + 150_000, "tag")  # another process, the same directory
    bounded.put("jit_big-k", bytes(100_000))  # its first write lists the directory
    listings.clear()
    bounded.put("jit_bigger-k", bytes(100_000))  # may pass the bound: listed at once, the oldest dropped
    assert len(listings) == 1 and bounded.get("jit_p0-k") is None and bounded.get("jit_bigger-k") is not None


def test_the_key_holds_the_build_and_the_files_say_which_program():
    """An entry's name is the program's name and a digest of JAX's key with this build's tag (another build,
    another FFTW, another CPU: another file)."""
    one, other = cache.ProgramCache(Path("/x"), 1, "tag-a"), cache.ProgramCache(Path("/x"), 1, "tag-b")
    key = "jit_chunk-" + hashlib.sha256(b"k").hexdigest()
    assert one.file(key).name.startswith("jit_chunk-") and one.file(key) != other.file(key)
    assert len(cache.build_tag()) == 16 and cache.build_tag("fftw=3.3.10") != cache.build_tag("fftw=3.3.11")


def test_the_location_and_the_bound_come_from_the_config_then_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "env"))
    assert cache.location("auto") == tmp_path / "env"
    assert cache.location(str(tmp_path / "cfg")) == tmp_path / "cfg"
    assert cache.location("off") is None
    monkeypatch.setenv(cache.ENV, "off")
    assert cache.location("auto") is None
    monkeypatch.delenv(cache.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.location("auto") == tmp_path / "xdg" / "simulator" / "xla"
    monkeypatch.setenv(cache.ENV_SIZE, "500M")
    assert cache.size_bound() == 500 * 1024**2
    monkeypatch.setenv(cache.ENV_SIZE, "lots")
    with pytest.raises(ValueError, match=cache.ENV_SIZE):
        cache.size_bound()


def test_every_custom_partitioning_callback_is_in_the_fft_package():
    """The build tag holds simulator/fft's source because the code a custom_partitioning callback runs is in
    no program's text: a callback anywhere else would be code the cache cannot see change."""
    outside = [str(p.relative_to(ROOT)) for p in (ROOT / "simulator").rglob("*.py")
               if "fft" not in p.relative_to(ROOT / "simulator").parts
               and re.search(r"^\s*(from jax\.experimental\.custom_partitioning import|@custom_partitioning)",
                             p.read_text(), re.M)]
    assert outside == []


def test_a_slab_program_names_its_local_fft_in_its_text(devices):
    """Two slab backends on the same mesh that differ only in their local FFT give programs of different text
    (the cache keeps them apart), each naming its stages after its local FFT."""
    import jax
    import jax.numpy as jnp

    from simulator.fft import BACKENDS
    from simulator.fft.local import LocalFFT
    from simulator.runtime import build_mesh

    mesh = build_mesh(BACKENDS["slab"], None, devices[:2])
    texts = []
    for local in (LocalFFT("xla", "asked for"), LocalFFT("fftw", "asked for", 2, "measure")):
        fft = BACKENDS["slab"]((8, 8, 8), mesh)
        fft.local = local
        x = jax.ShapeDtypeStruct((8, 8, 8), jnp.float64, sharding=fft.real_sharding(0))
        texts.append(jax.jit(fft.rfft).lower(x).as_text())
        assert f"rfft_z_{local.tag}" in texts[-1] and f"fft_xy_{local.tag}" in texts[-1]
    assert texts[0] != texts[1]


def test_a_runs_snapshot_calls_the_program_compiled_ahead(tmp_path, devices):
    """A run's snapshot is computed a component per call (Simulation.snapshot_parts) of the program
    Simulation.lower("fields") describes, which the run compiles ahead (simulator/run/programs.py): writing one,
    vectors and a stack of scalars, compiles and loads nothing more."""
    from simulator.api import load_config
    from simulator.output.snapshots import write_snapshot
    from simulator.planning.plan import abstract_state, run_programs
    from simulator.run.programs import Ahead
    from simulator.run.simulation import Simulation

    cfg = load_config(None, {"grid.shape": 8, "physics.scalars": [{}, {}], "output.snapshots.every": 10})
    sim = Simulation(cfg, devices[:2])
    Ahead(sim, run_programs(cfg), abstract_state(sim)).wait()
    state = sim.initial_state()
    programs.counts(reset=True)
    write_snapshot(tmp_path / "s00000000", sim.output("fields", state, 0.0, cfg.time.dt), {"step": 0}, cfg.grid.box,
                   0.0, stacked=["scalar"])
    assert programs.counts().total == 0, programs.counts()


# ---- physical numbers are arguments of the programs, never constants in their text ------------------------------

#: each shipped config made small enough to lower in seconds (one species' lattice 8^3: a cube)
SHRINK = {"grid.shape": 8}
SHRINK_BY_CONFIG = {"cold_dark_matter": {"physics.cdm_particles": 512},
                    "fdm_mixed": {"physics.cdm_particles": 512},
                    "forced_turbulence_particles": {"particles[0].count": 64, "particles[1].count": 512},
                    "forced_2d": {"physics.forcing_wavenumber": 2},
                    # the wave is refused on fewer points across the plates than resolve it: the shipped grid's
                    "tollmien_schlichting": {"grid.shape": [8, 64]}}


def _changed(section: str, traced: dict, keep: set[str]) -> dict[str, object]:
    """Overrides changing every traced number of ``traced`` (a section's traced values, under the dotted key
    ``section``) but those in ``keep``: floats scaled, tuples shifted, integers (random seeds) the next one; a 0 left
    as it is (some turn a term on that needs a setting of its own)."""
    out: dict[str, object] = {}
    for key, value in traced.items():
        dotted = f"{section}.{key}"
        if dotted in keep:
            continue
        if isinstance(value, list):
            for i, entry in enumerate(value):
                out.update(_changed(f"{dotted}[{i}]", entry, keep))
        elif isinstance(value, dict):
            out.update(_changed(dotted, value, keep))
        elif isinstance(value, tuple):
            out[dotted] = [1.1 * v + 0.01 for v in value]
        elif isinstance(value, int):
            out[dotted] = value + 1
        elif value:
            out[dotted] = 1.1 * value
    return out


def _other_numbers(cfg: Any) -> dict[str, object]:
    """Overrides changing every traced number of ``cfg``'s physics and initial condition (its seeds among them)
    and every inertial particle species' tau_p and gravity: another point of a sweep of the same structure. Kept:
    the structural zeros (0 and 1 of physics.fdm_fraction are other programs by design), the keys the run leaves
    out (the wave's without a wave) and the scalars' initial condition of a run without scalars."""
    from simulator.schema import absent_keys, structural_zeros

    keep = {f"physics.{k}" for k in (*structural_zeros(cfg.physics), *absent_keys(cfg.physics))}
    keep |= set() if cfg.physics.traced().get("scalars") else {"initial.scalars"}
    out = {**_changed("physics", cfg.physics.traced(), keep), **_changed("initial", cfg.initial.traced(), keep)}
    out.update({k: seed + 1 for k, seed in _seeds(cfg.initial, "initial").items() if k.rpartition(".")[0] not in keep})
    for i, s in enumerate(cfg.particles):
        if s.inertial:
            out[f"particles[{i}].tau_p"] = 0.9 * s.tau_p
            out[f"particles[{i}].gravity"] = [0.0, 0.0, -1.0]
    return out


def _seeds(section: Any, prefix: str) -> dict[str, int]:
    """The random seeds of ``section`` and of the sections it nests, by dotted key."""
    import dataclasses

    out = {}
    for f in dataclasses.fields(section):
        value = getattr(section, f.name)
        if f.name == "seed":
            out[f"{prefix}.seed"] = value
        elif dataclasses.is_dataclass(value):
            out.update(_seeds(value, f"{prefix}.{f.name}"))
    return out


def _program_texts(cfg: Any, devices: Any) -> dict[str, str]:
    """The text of every program a run of ``cfg`` calls (:func:`simulator.planning.plan.run_programs`) and of its
    initial condition's builder, lowered for its abstract state: what the compilation cache keys an entry by."""
    import jax

    from simulator.planning.plan import abstract_state, run_programs
    from simulator.run.simulation import Simulation

    sim = Simulation(cfg, devices[:1])
    state = abstract_state(sim)
    scalar = jax.ShapeDtypeStruct((), sim.dtype, sharding=sim.scalar_sharding)
    lowered = {name: sim.lower(name, state, scalar, scalar) for name in run_programs(cfg)}
    lowered.update(sim.equation.initial_lowered(cfg.initial, sim.params))
    return {name: low.as_text() for name, low in lowered.items()}


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "configs").glob("*.yaml")))
def test_every_physical_number_of_a_shipped_config_is_traced(name, devices):
    """Each shipped config, and the same config with every traced number changed (a viscosity, a cosmological
    parameter, an initial amplitude and seed, a particle species' Stokes time and gravity), give programs of the
    same text: a second launch with other numbers loads them all from the cache. A number closed over as a Python
    constant would be in the text, and every other value would compile again."""
    from simulator.api import load_config

    path = ROOT / "configs" / f"{name}.yaml"
    small = {**SHRINK, **SHRINK_BY_CONFIG.get(name, {})}
    cfg = load_config(path, small)
    other = load_config(path, {**small, **_other_numbers(cfg)})
    assert other != cfg
    before, after = _program_texts(cfg, devices), _program_texts(other, devices)
    assert [n for n in before if before[n] != after[n]] == []


def cache_writers(tmp_path, command, *args):
    """``simulator COMMAND ARGS`` in a process of its own with a fresh cache, each program's write to the cache
    recorded with the thread that made it: (the command's exit code, the writers' thread names, its stderr)."""
    script = (
        "import sys, threading\n"
        "from jax._src import compilation_cache\n"
        "from simulator.cli import main\n"
        "seen, real = [], compilation_cache.put_executable_and_time\n"
        "def spy(*args, **kwargs):\n"
        "    seen.append(threading.current_thread().name)\n"
        "    return real(*args, **kwargs)\n"
        "compilation_cache.put_executable_and_time = spy\n"
        "code = main(sys.argv[1:])\n"
        "print('WRITERS', code, *seen)\n")
    r = subprocess.run([sys.executable, "-c", script, command, *args], capture_output=True, text=True, timeout=300,
                       env={**os.environ, cache.ENV: str(tmp_path / "xla")})
    line = [x for x in r.stdout.splitlines() if x.startswith("WRITERS")]
    assert r.returncode == 0 and line, r.stderr[-3000:]
    code, *writers = line[0].split()[1:]
    return code, writers, r.stderr


def test_a_run_s_programs_are_written_to_the_cache_by_its_main_thread(tmp_path):
    """A run compiles its programs on worker threads while its main thread builds the initial state
    (simulator/run/programs.py), and XLA's serialisation of a program for the cache once crashed a process (a
    segfault in ``executable.serialize()`` on a worker thread, beside a device put of the main thread): every
    program is now serialised by the main thread, once all are compiled; it was the worker that compiled it."""
    code, writers, err = cache_writers(tmp_path, "run", TG, *SMALL, "--out", str(tmp_path / "run"))
    loaded, compiled = map(int, PROGRAMS.search(err).groups())
    assert code == "0" and loaded == 0 and compiled >= 5 and len(writers) >= compiled, (writers, err[-2000:])
    assert set(writers) == {"MainThread"}, writers


def test_the_planner_s_programs_are_written_to_the_cache_by_its_main_thread(tmp_path):
    """The planner compiles a run's programs at once on worker threads too (simulator/planning/plan.py's
    compiled_programs); as a run's (the test above), they are serialised for the cache by the main thread once
    all are compiled, never beside it on a worker (a worker wrote each it compiled)."""
    code, writers, err = cache_writers(tmp_path, "plan", TG, *SMALL)
    assert code == "0" and len(writers) >= 3 and len(entries(tmp_path / "xla")) >= 3, (writers, err[-2000:])
    assert set(writers) == {"MainThread"}, writers
