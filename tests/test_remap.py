"""States read from a file written on any grid (``initial.name: file``, restarts at another resolution):
the mode map's Nyquist rules, the interpolated fields on every layout against NumPy, and the Jeans mode
restarted at twice the resolution against the run made there from the start (float64)."""

import numpy as np
import pytest

from simulator.config import to_dict
from simulator.output import checkpoints
from simulator.output.resample import mode_map
from simulator.output.snapshots import write_snapshot

from support import advance, case_id, relative_error, shared, simulation

SOURCE = (16, 16, 16)
#: layouts the file is read into: one device, and 4 devices as a slab, a 2x2 pencil and jaxdecomp (full spectra)
CASES = [("single", 1, None), ("slab", 4, None), ("pencil", 4, (2, 2)), ("jaxdecomp", 4, (2, 2))]


def remap_1d(values: np.ndarray, n1: int) -> np.ndarray:
    idx, w = mode_map(values.size, n1)
    return (values[idx] * w).sum(axis=1)


@pytest.mark.parametrize(("n0", "n1"), [(8, 16), (8, 12), (8, 9), (9, 16), (16, 8), (12, 8), (16, 9), (8, 8)])
def test_mode_map_interpolates_and_padding_then_truncating_is_exact(n0, n1):
    rng = np.random.default_rng(n0 * 100 + n1)
    f0 = rng.normal(size=n0)  # a real field with Nyquist content
    f1 = np.fft.ifft(remap_1d(np.fft.fft(f0), n1))
    assert np.max(np.abs(f1.imag)) < 1e-14  # real stays real: the Nyquist mode is split or summed symmetrically
    x1 = np.arange(n1) / n1
    m0 = np.fft.fftfreq(n0, 1 / n0)
    c = np.fft.fft(f0) / n0
    if n1 >= n0:  # the symmetric trigonometric interpolant of f0 (the Nyquist cosine, not a complex exponential)
        nyq = n0 % 2 == 0
        series = sum(c[j] * np.exp(2j * np.pi * m * x1) for j, m in enumerate(m0) if not (nyq and m == -n0 // 2))
        if nyq:
            series = series + c[n0 // 2] * np.cos(np.pi * n0 * x1)
    else:  # the coarse samples of f0 low-passed to |m| <= n1/2
        keep = [j for j, m in enumerate(m0) if abs(m) <= n1 / 2]
        series = sum(c[j] * np.exp(2j * np.pi * m0[j] * x1) for j in keep)
    np.testing.assert_allclose(f1.real, series.real, atol=1e-13)
    if n1 >= n0:  # padding then truncating gives the stored spectrum back
        np.testing.assert_allclose(remap_1d(remap_1d(np.fft.fft(f0), n1), n0), np.fft.fft(f0), atol=1e-13)


def interpolated(f0: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """NumPy reference: ``f0`` (complex or real, last three axes spatial) on grid ``shape``."""
    spectrum = np.fft.fftn(f0, axes=(-3, -2, -1))
    for axis, n1 in zip((-3, -2, -1), shape, strict=True):
        idx, w = mode_map(spectrum.shape[axis], n1)
        wshape = [1] * spectrum.ndim
        wshape[axis] = n1
        spectrum = sum(np.take(spectrum, idx[:, i], axis=axis) * w[:, i].reshape(wshape) for i in range(2))
    return np.fft.ifftn(spectrum, axes=(-3, -2, -1))


@pytest.fixture(scope="module")
def sources(tmp_path_factory, devices):
    """A random wave function (Nyquist content on every axis) and a random velocity on 16^3, written by 2
    devices as a checkpoint and as a snapshot each; their NumPy fields."""
    d = tmp_path_factory.mktemp("sources")
    rng = np.random.default_rng(1)
    out = {}
    for name, overrides in (("sp", {"physics__name": "schrodinger_poisson", "initial__name": "jeans",
                                    "grid__box": 1.0}),
                            ("ns", {"initial__name": "random", "initial__seed": 4})):
        sim = simulation(devices, ("slab", 2, None), grid__shape=list(SOURCE), **overrides)
        if name == "sp":
            psi = rng.normal(size=SOURCE) + 1j * rng.normal(size=SOURCE) + 2.0
            state, field = sim.state_from_fields(psi=psi), psi
        else:
            state = sim.initial_state()
            field = sim.to_numpy(sim.fields(state, "velocity")["velocity"])
        config = to_dict(sim.cfg)
        marker = checkpoints.write(d / name, state, step=7, time=0.5, dt=0.01, epoch=(0, 0.0), writer="test",
                                   spaces=sim.equation.leaf_spaces(state), perm=sim.fft.perm, full_spectrum=False,
                                   meta={"config": config, "backend": "slab"}, keep=2)
        fields = sim.fields(state)
        names = [n for n, f in sim.equation.field_info.items() if f.snapshot]
        snap = write_snapshot(d / name / "snapshots" / "s00000007", {n: fields[n] for n in names},
                              {"step": 7, "config": config}, sim.cfg.grid.box, 0.5)
        out[name] = (marker, snap, field)
    return d, out


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES[:3], ids=case_id)
def test_a_state_from_a_checkpoint_or_snapshot_on_any_grid_and_layout(sources, case):
    """Same grid: the stored state; a finer and a coarser grid: its spectral interpolation (Nyquist modes
    split or summed), to 1e-12, from a checkpoint (real-space leaves) and from a snapshot (|psi|, arg psi)."""
    scratch, files = sources
    marker, snap, psi = files["sp"]
    for shape in (SOURCE, (32, 32, 24), (8, 8, 8)):
        sim = shared(case, physics__name="schrodinger_poisson", initial__name="jeans", grid__box=1.0,
                     grid__shape=list(shape))
        sim.scratch = scratch
        expected = interpolated(psi, shape)
        for path in (marker, snap):
            got = sim.to_numpy(sim.state_from_file(path).psi)
            assert relative_error(got, expected) < 1e-12, (shape, path.name)


@pytest.mark.slow
@pytest.mark.parametrize("case", [CASES[1], CASES[3]], ids=case_id)
def test_a_velocity_from_a_spectral_checkpoint_or_snapshot_on_a_finer_grid(sources, case):
    """The Navier-Stokes state lives in k-space (half spectrum; jaxdecomp's full one): read on a finer
    grid it is the zero-padded random field, dealiased and solenoidal as before."""
    scratch, files = sources
    marker, snap, u = files["ns"]
    sim = shared(case, grid__shape=[32, 32, 32], initial__name="random")
    sim.scratch = scratch
    expected = interpolated(u, (32, 32, 32)).real
    for path in (marker, snap):
        state = sim.state_from_file(path)
        got = sim.to_numpy(sim.fields(state, "velocity")["velocity"])
        assert relative_error(got, expected) < 1e-12, path.name
        assert float(sim.report(state)["max_div"]) < 1e-12
    assert not list(scratch.glob(".remap*"))  # the temporary spectra are gone


@pytest.mark.slow
def test_jeans_mode_restarted_at_twice_the_resolution_equals_the_fine_run(tmp_path):
    """A Jeans-unstable wave (eps = 1e-3: its harmonics are eps^n, so 16^3 resolves it to round-off)
    run to t = 0.2 on 16^3, checkpointed, read at 32^3 on a 2x2 pencil and run on to t = 0.4 equals the
    32^3 run from t = 0 to 1e-12."""
    overrides = {"physics__name": "schrodinger_poisson", "initial__name": "jeans", "initial__amplitude": 1e-3,
                 "grid__box": 1.0}
    coarse = shared(("slab", 2, None), grid__shape=16, **overrides)
    fine = shared(("pencil", 4, (2, 2)), grid__shape=32, **overrides)
    fine.scratch = tmp_path
    state = advance(coarse, coarse.initial_state(), 0.01, 20)
    marker = checkpoints.write(tmp_path / "coarse", state, step=20, time=0.2, dt=0.01, epoch=(0, 0.0), writer="test",
                               spaces=coarse.equation.leaf_spaces(state), perm=coarse.fft.perm, full_spectrum=False,
                               meta={"config": to_dict(coarse.cfg), "backend": "slab"}, keep=2)
    restarted = advance(fine, fine.state_from_file(marker), 0.01, 20)
    reference = advance(fine, fine.initial_state(), 0.01, 40)
    assert relative_error(fine.to_numpy(restarted.psi), fine.to_numpy(reference.psi)) < 1e-12
    delta = np.abs(fine.to_numpy(reference.psi)) ** 2 - 1
    assert np.max(np.abs(delta)) > 2e-3  # it grew: eps cosh(gamma t) = 2.2 eps (gamma = 3.5)


@pytest.mark.slow
def test_a_grid_that_does_not_divide_over_the_devices_is_read_on_fewer(tmp_path, devices):
    """A 12^3 checkpoint read by a slab over 8 devices (12 does not divide by 8): it is restored and
    transformed on a slab over 6 of them, then interpolated onto this run's 16^3."""
    source = simulation(devices, ("single", 1, None), grid__shape=12, initial__name="random", initial__seed=2)
    state = source.initial_state()
    u = source.to_numpy(source.fields(state, "velocity")["velocity"])
    marker = checkpoints.write(tmp_path / "c12", state, step=1, time=0.1, dt=0.01, epoch=(0, 0.0), writer="test",
                               spaces=source.equation.leaf_spaces(state), perm=source.fft.perm, full_spectrum=False,
                               meta={"config": to_dict(source.cfg), "backend": "single"}, keep=2)
    sim = shared(("slab", 8, None), grid__shape=[16, 16, 16], initial__name="random")
    sim.scratch = tmp_path
    got = sim.to_numpy(sim.fields(sim.state_from_file(marker), "velocity")["velocity"])
    assert relative_error(got, interpolated(u, (16, 16, 16)).real) < 1e-12


def _by_identity(sim, state) -> tuple[np.ndarray, np.ndarray]:
    """A state's cold particles' positions and momenta in identity order (its occupied slots sorted)."""
    live = sim.to_numpy(state.live) > 0
    order = np.argsort(sim.to_numpy(state.ident)[live])
    return tuple(sim.to_numpy(getattr(state, name))[live][order] for name in ("position", "momentum"))


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.3, 0.0], ids=["mixed", "particles-only"])
def test_cold_particles_keep_their_values_on_another_grid(tmp_path, devices, fraction):
    """A state with cold particles (with the wave, and without it), checkpointed by a slab of 2 on 16^3 and read
    on 32^3 by a 2x2 pencil: every particle is carried over by identity, exactly (particle arrays do not depend on
    the grid), and the wave is its spectral interpolation. Before, the particles were looked for among the grid
    fields: a KeyError, or a particle-only checkpoint called damaged."""
    overrides = {"physics__name": "fdm_cosmo", "initial__name": "gaussian", "grid__box": 1.0,
                 "physics__fdm_fraction": fraction, "physics__cdm_particles": 512}
    coarse = simulation(devices, ("slab", 2, None), grid__shape=16, **overrides)
    state = coarse.initial_state()
    marker = checkpoints.write(tmp_path / "coarse", state, step=3, time=0.1, dt=0.01, epoch=(0, 0.0), writer="test",
                               spaces=coarse.equation.leaf_spaces(state), perm=coarse.fft.perm, full_spectrum=False,
                               meta={"config": to_dict(coarse.cfg), "backend": "slab"}, keep=2)
    fine = simulation(devices, ("pencil", 4, (2, 2)), grid__shape=32, **overrides)
    fine.scratch = tmp_path
    read = fine.state_from_file(marker)
    for got, stored in zip(_by_identity(fine, read), _by_identity(coarse, state), strict=True):
        assert got.shape == (512, 3)
        np.testing.assert_array_equal(got, stored)
    if fraction:
        expected = interpolated(coarse.to_numpy(state.psi), (32, 32, 32))
        assert relative_error(fine.to_numpy(read.psi), expected) < 1e-12
    assert not list(tmp_path.glob(".remap*"))


@pytest.mark.parametrize("fraction", [0.3, 0.0], ids=["mixed", "particles-only"])
def test_a_snapshot_is_refused_as_the_state_of_cold_particles_naming_a_checkpoint(tmp_path, devices, fraction):
    """A field snapshot of a run with cold particles (with the wave, and without it) holds their density, not their
    positions and momenta: ``state_from_file`` of it is refused in one line naming the snapshot, what it lacks and a
    checkpoint or run directory to give instead. Before, a mixed run's snapshot failed with a KeyError
    ('cdm_position') from inside the traced state builder, and a particle-only one was said to lack abs_psi and
    phase, the fields of a wave the run does not have."""
    from simulator.errors import ConfigError

    sim = simulation(devices, grid__shape=8, physics__name="fdm_cosmo", initial__name="gaussian", grid__box=1.0,
                     physics__fdm_fraction=fraction, physics__cdm_particles=64)
    sim.scratch = tmp_path
    state = sim.initial_state()
    fields = sim.fields(state)
    names = [n for n, f in sim.equation.field_info.items() if f.snapshot]
    snap = write_snapshot(tmp_path / "snapshots" / "s00000000", {n: fields[n] for n in names},
                          {"step": 0, "config": to_dict(sim.cfg)}, sim.cfg.grid.box, 0.0)
    with pytest.raises(ConfigError, match=r"initial\.path = .*s00000000\.h5' is a snapshot of cold particles; give a "
                                          r"checkpoint .* or a run directory: .* no cdm_position, cdm_momentum") as err:
        sim.state_from_file(snap)
    assert "\n" not in str(err.value) and "abs_psi" not in str(err.value)
