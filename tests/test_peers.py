"""The peer codes of the benchmarks (scripts/peer_jaxpm.py, scripts/peer_fluidsim.py through simulator/benchmark.py's
ServedPeer): each is run in its documented default configuration and names itself, version and mode, beside every
figure. JaxPM is not a dependency: a stand-in package with JaxPM's signatures (written to a temporary directory)
records how the peer script builds JaxPM's ODE and start. Nothing is timed."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from simulator.benchmark import ServedPeer

ROOT = Path(__file__).parents[1]
SCRIPT = ROOT / "scripts" / "peer_jaxpm.py"

#: JaxPM 0.1.6's signatures (jaxpm/pm.py, jaxpm/distributed.py), with bodies that record their calls: an ODE that
#: moves nothing, LPT displacements of 0.25 cells and momenta of 0.5; jax_cosmo and diffrax as little as the script
#: uses (diffeqsolve takes one Euler step, enough to show the state goes through the ODE)
STAND_INS = {
    "jaxpm/__init__.py": "",
    "jaxpm/pm.py": '''
        import jax.numpy as jnp

        CALLS = []


        def make_diffrax_ode(mesh_shape, paint_absolute_pos={default}, halo_size=0, sharding=None):
            CALLS.append(("make_diffrax_ode", mesh_shape, paint_absolute_pos, halo_size, sharding))

            def nbody_ode(a, state, args):
                return jnp.zeros_like(state)

            return nbody_ode


        def linear_field(mesh_shape, box_size, pk, seed, sharding=None):
            return jnp.zeros(mesh_shape)


        def lpt(cosmo, initial_conditions, particles=None, a=0.1, halo_size=0, sharding=None, order=1):
            CALLS.append(("lpt", particles is not None))
            dx = jnp.full((*initial_conditions.shape, 3), 0.25)
            return dx, 2 * dx, dx
    ''',
    "jaxpm/distributed.py": '''
        import jax.numpy as jnp


        def uniform_particles(mesh_shape, sharding=None):
            return jnp.stack(jnp.meshgrid(*[jnp.arange(s) for s in mesh_shape], indexing="ij"), axis=-1)
    ''',
    "jaxpm-0.1.6.dist-info/METADATA": "Metadata-Version: 2.1\nName: jaxpm\nVersion: 0.1.6\n",
    "jax_cosmo/__init__.py": '''
        from . import power


        class Planck15:
            Omega_m = 0.3
    ''',
    "jax_cosmo/power.py": '''
        def linear_matter_power(cosmo, k):
            return k
    ''',
    "diffrax/__init__.py": '''
        from types import SimpleNamespace


        class ODETerm:
            def __init__(self, vector_field):
                self.vector_field = vector_field


        class LeapfrogMidpoint:
            pass


        class ConstantStepSize:
            pass


        def SaveAt(t1):
            return t1


        def diffeqsolve(term, solver, t0, t1, dt0, y0, args, saveat, stepsize_controller):
            return SimpleNamespace(ys=(y0 + dt0 * term.vector_field(t0, y0, args))[None])
    ''',
}


def stand_in_jaxpm(where: Path, default: bool) -> Path:
    """The stand-in packages under ``where``, ``make_diffrax_ode``'s painting default ``default``."""
    for name, text in STAND_INS.items():
        path = where / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip().replace("{default}", str(default)))
    return where


@pytest.mark.parametrize("default", [True, False])
def test_the_jaxpm_peer_builds_jaxpms_ode_in_its_default_painting_mode(tmp_path, monkeypatch, default):
    """JaxPM's ``make_diffrax_ode(mesh_shape)`` is called with no painting argument, so its own default holds
    (``paint_absolute_pos=True`` in JaxPM 0.1.6, the fast path; the benchmark used to force False, displacement
    painting, twice as slow a step on a CPU); the start follows that mode: absolute positions (the lattice plus
    the LPT displacement, LPT given the particles) under True, displacements under False; the mode is named."""
    monkeypatch.syspath_prepend(str(stand_in_jaxpm(tmp_path, default)))
    for name in [m for m in sys.modules if m.split(".")[0] in ("jaxpm", "jax_cosmo", "diffrax")]:
        monkeypatch.delitem(sys.modules, name)
    spec = importlib.util.spec_from_file_location("peer_jaxpm", SCRIPT)
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)

    state, chunk, absolute = peer.setup(4, 2, 0.01)
    from jaxpm.pm import CALLS

    assert absolute is default
    assert CALLS[0] == ("make_diffrax_ode", [4, 4, 4], default, 0, None)  # JaxPM's own default, untouched
    assert ("lpt", default) in CALLS  # given the particles exactly when it paints positions
    lattice = np.stack(np.meshgrid(*[np.arange(4)] * 3, indexing="ij"), axis=-1)
    want = lattice + 0.25 if default else np.full((4, 4, 4, 3), 0.25)
    assert np.array_equal(np.asarray(state[0]), want)
    assert np.array_equal(np.asarray(state[1]), np.full((4, 4, 4, 3), 0.5))
    assert np.array_equal(np.asarray(chunk(state, 0.1)), np.asarray(state))  # the ODE the stand-in built
    assert f"paint_absolute_pos={default} (JaxPM's default" in peer.mode(absolute)


def write_peer(path: Path, first_line: str) -> Path:
    """A peer script that prints ``first_line`` and then answers each request with 0.001 s wall, 0.002 s CPU,
    until its input ends or none comes for 20 s (so that a benchmark that never closes it cannot hang the test)."""
    path.write_text(textwrap.dedent(f'''
        import select
        import sys
        print({first_line!r}, flush=True)
        while select.select([sys.stdin], [], [], 20)[0] and sys.stdin.readline():
            print("0.001 0.002", flush=True)
    '''))
    return path


def test_a_served_peer_names_itself_and_one_that_does_not_is_refused(tmp_path):
    """``ready NAME``: the name (version and configuration) is kept for every figure; a bare ``ready`` (the peer
    unnamed) stops the benchmark before anything is timed."""
    peer = ServedPeer(sys.executable, write_peer(tmp_path / "named.py", "ready fake 2.0, mode=fast (its default)"))
    try:
        peer.request(8, "8")
        assert peer.name == "fake 2.0, mode=fast (its default)" and peer.cpu == {8: [0.002]}
    finally:
        peer.close()
    with pytest.raises(RuntimeError, match="did not start"):
        ServedPeer(sys.executable, write_peer(tmp_path / "unnamed.py", "ready"))


@pytest.mark.slow
def test_the_particle_mesh_benchmark_names_jaxpms_version_and_mode_in_every_row(tmp_path):
    """scripts/bench_pm.py --peer-python at a toy size, the peer script run on the stand-in JaxPM: the header
    and every row, printed and in pm_jaxpm_float64.json, name JaxPM's version and painting mode (its default);
    the medians' and the minima's ratios are both recorded."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(stand_in_jaxpm(tmp_path / "peer", True)), str(ROOT)])}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_pm.py"), "--sizes", "--peer-python",
                           sys.executable, "--cold-sizes", "8", "--repeats", "1", "--steps", "1", "--precision",
                           "float64", "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=600,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    name = "jaxpm 0.1.6, paint_absolute_pos=True (JaxPM's default: positions), float64, 1 cpu device(s)"
    assert f"# peer: {name}" in done.stdout
    [row] = json.loads((tmp_path / "out" / "pm_jaxpm_float64.json").read_text())["rows"]
    assert row["jaxpm"] == name and row["N"] == 8
    assert row["vs_jaxpm"] == pytest.approx(row["ours_ms"] / row["jaxpm_ms"])
    assert row["vs_jaxpm_min"] == pytest.approx(row["ours_min_ms"] / row["jaxpm_min_ms"])
    assert [line for line in done.stdout.splitlines() if line.lstrip().startswith("8 ")][0].endswith(name)
