"""Channel flows between no-slip plates: the laminar profiles and their statistics, the start-up of Couette flow,
the Tollmien-Schlichting initial condition and the refusals of a channel's settings (float64)."""

import math

import jax
import numpy as np
import pytest
from scipy.special import erfc

from simulator.errors import ConfigError
from simulator.plots.channel import KAPPA, B, wall_units_figure
from simulator.walls import channel, chebyshev
from simulator.walls.channel_stats import channel_spectra, channel_statistics

jax.config.update("jax_enable_x64", True)

RE = 1e4
NU = 1 / RE


def _laminar(profile: np.ndarray, nx: int = 4, samples: int = 2) -> np.ndarray:
    """Samples (T, 2, Nx, Ny) of a parallel flow (profile, 0)."""
    field = np.zeros((samples, 2, nx, profile.size))
    field[:, 0] = profile
    return field


def test_laminar_poiseuille_statistics_are_exact():
    y = chebyshev.points(33, (-1.0, 1.0))
    g = channel.poiseuille_gradient(NU)
    stats = channel_statistics(_laminar(channel.poiseuille(y)), NU, (2 * math.pi,), pressure_gradient=g)
    assert stats.bulk_velocity == pytest.approx(2 / 3, rel=1e-14)
    assert stats.tau_bottom == pytest.approx(2 * NU, rel=1e-12) and stats.tau_top == pytest.approx(2 * NU, rel=1e-12)
    assert stats.re_tau == pytest.approx(math.sqrt(2 * RE), rel=1e-12)
    assert stats.viscous_length == pytest.approx(NU / math.sqrt(2 * NU), rel=1e-12)
    np.testing.assert_allclose(stats.total_shear_stress, -g * y, atol=1e-15)
    # the mean flow's dissipation over the channel is the pressure gradient's work G U_b
    mean_dissipation = chebyshev.weights(33, 2.0) @ stats.mean_dissipation / 2
    assert mean_dissipation == pytest.approx(stats.pressure_work, rel=1e-12)
    assert not stats.shear.any() and not stats.production.any() and stats.dissipation.max() < 1e-30
    np.testing.assert_allclose(stats.u_plus * stats.u_tau, channel.poiseuille(y), atol=1e-15)


def test_laminar_couette_drags_each_plate_along_the_other():
    y = chebyshev.points(9, (-1.0, 1.0))
    stats = channel_statistics(_laminar(channel.couette(y, 2.0)), NU, (1.0,))
    assert stats.bulk_velocity == pytest.approx(0.0, abs=1e-15)
    assert stats.tau_bottom == pytest.approx(2 * NU, rel=1e-12) and stats.tau_top == pytest.approx(-2 * NU, rel=1e-12)
    np.testing.assert_allclose(stats.total_shear_stress, 2 * NU, rtol=1e-12)


@pytest.mark.parametrize("box", [False, True])
def test_reynolds_stresses_and_dissipation_of_a_known_fluctuation(box):
    """u' = A cos(a x) g(y), v' = A cos(a x) q(y) (w' = A sin(a x) g(y) on a box, constant along z): the
    stresses and the dissipation are exact polynomials."""
    ny, nx, nz, a, amp, lx = 17, 8, 4, 2.0, 0.3, math.pi
    y = chebyshev.points(ny, (-1.0, 1.0))
    x = np.arange(nx) * lx / nx
    g, dg = 1 - y**2, -2 * y
    q, dq = (1 - y**2) ** 2, -4 * y * (1 - y**2)
    c, s = np.cos(a * x)[:, None], np.sin(a * x)[:, None]
    u = channel.poiseuille(y) + amp * c * g
    v = amp * c * q
    if box:
        w = amp * s * g
        field = np.stack([np.repeat(f[:, None, :], nz, 1) for f in (u, w, v)])[None]
        lengths = (lx, 1.0)
    else:
        field, lengths = np.stack([u, v])[None], (lx,)
    stats = channel_statistics(field, NU, lengths)
    u2 = stats.u_tau**2
    np.testing.assert_allclose(stats.shear * u2, amp**2 * g * q / 2, atol=1e-15)
    np.testing.assert_allclose(stats.streamwise * u2, amp**2 * g**2 / 2, atol=1e-15)
    np.testing.assert_allclose(stats.wall_normal * u2, amp**2 * q**2 / 2, atol=1e-15)
    np.testing.assert_allclose(stats.production, -amp**2 * g * q / 2 * (-2 * y), atol=1e-15)
    expected = a**2 * g**2 + dg**2 + a**2 * q**2 + dq**2
    if box:
        np.testing.assert_allclose(stats.spanwise * u2, amp**2 * g**2 / 2, atol=1e-15)
        expected = expected + a**2 * g**2 + dg**2
    else:
        assert stats.spanwise is None
    np.testing.assert_allclose(stats.dissipation, NU * amp**2 / 2 * expected, atol=1e-17)


def test_one_dimensional_spectra_sum_to_the_reynolds_stresses():
    """A random box field: along x and along z each spectrum sums over k to the stresses; a single cosine along x
    sits in its one wavenumber."""
    rng = np.random.default_rng(3)
    field = rng.standard_normal((2, 3, 6, 4, 9))
    lengths = (2.0, 3.0)
    stats = channel_statistics(field, NU, lengths)
    u2 = stats.u_tau**2
    stresses = np.stack([stats.streamwise, stats.spanwise, stats.wall_normal]) * u2
    for k, spectrum in channel_spectra(field, lengths):
        assert spectrum.shape == (3, k.size, 9)
        np.testing.assert_allclose(spectrum.sum(1), stresses, rtol=1e-13)
    x = np.arange(8) * 2 * math.pi / 8
    wave = np.zeros((1, 2, 8, 5))
    wave[0, 0] = 0.5 * np.cos(3 * x)[:, None]
    (k, spectrum), = channel_spectra(wave, (2 * math.pi,))
    np.testing.assert_allclose(k, np.arange(5))
    np.testing.assert_allclose(spectrum[0, 3], 0.125, rtol=1e-14)
    assert np.delete(spectrum[0], 3, axis=0).max() < 1e-30


def _images(y: np.ndarray, t: float, nu: float, h: float) -> np.ndarray:
    """The start-up of Couette flow by the method of images (a sum of erfc, fast at small times): independent
    of the sine series."""
    gap, root = 2 * h, 2 * math.sqrt(nu * t)
    total = np.zeros_like(y)
    for distance, speed in ((y + h, -1.0), (h - y, 1.0)):
        for m in range(30):
            total += speed * (erfc((2 * m * gap + distance) / root) - erfc((2 * (m + 1) * gap - distance) / root))
    return total


@pytest.mark.parametrize("t", [0.02, 0.3, 2.0])
def test_couette_startup_series_against_the_images(t):
    y = chebyshev.points(41, (-1.0, 1.0))
    np.testing.assert_allclose(channel.couette_startup(y, t, 0.5), _images(y, t, 0.5, 1.0), atol=1e-13)


def test_tollmien_schlichting_initial_condition():
    """The wave speed is Orszag's (1971); the velocity vanishes at the plates, is divergence-free and peaks at the
    amplitude asked."""
    nx, ny, lx, amp = 8, 121, 2 * math.pi, 1e-3
    x, y = np.arange(nx) * lx / nx, chebyshev.points(ny, (-1.0, 1.0))
    c, u, v = channel.tollmien_schlichting(x, y, 1e4, 1.0, amp)
    assert abs(c - (0.23752649 + 0.00373967j)) < 5e-9
    # u' is phi's derivative, whose round-off at the plates the Chebyshev derivative multiplies by about N^2
    assert np.abs(u[:, [0, -1]]).max() < 1e-8 * amp and np.abs(v[:, [0, -1]]).max() < 1e-12 * amp
    dudx = np.fft.ifft(1j * np.fft.fftfreq(nx, 1 / nx)[:, None] * np.fft.fft(u, axis=0), axis=0).real
    dvdy = np.asarray(chebyshev.backward(chebyshev.derivative(chebyshev.forward(v))))
    assert np.abs(dudx + dvdy).max() < 1e-10 * amp
    # the streamwise mode's modulus peaks at the amplitude (the grid is the eigen-solve's: the peak is a point)
    assert (2 / nx * np.abs(np.fft.fft(u, axis=0)[1])).max() == pytest.approx(amp, rel=1e-12)


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"drive": "shear"}, "physics.drive"),
    ({"reynolds": 0.0}, "physics.reynolds"),
    ({"reynolds": -5.0}, "physics.reynolds"),
    ({"drive": "flux", "flux": 0.0}, "physics.flux"),
    ({"velocity_walls": ("free-slip", "no-slip")}, "grid.walls.velocity"),
    ({"alpha": 1.5}, "initial.alpha"),
    ({"alpha": 10.0}, "initial.alpha"),
])
def test_bad_channel_settings_are_refused_naming_the_key(kwargs, key):
    settings = {"drive": "pressure", "reynolds": 1e4, "velocity_walls": ("no-slip", "no-slip"),
                "alpha": 1.0, "length": 2 * math.pi, "nx": 16} | kwargs
    with pytest.raises(ConfigError) as error:
        channel.check_channel(**settings)
    assert str(error.value).startswith(key + " = ") and "\n" not in str(error.value)


def test_good_channel_settings_pass():
    channel.check_channel("flux", 5772.2, ("no-slip", "no-slip"), flux=2 / 3, alpha=2.0, length=math.pi, nx=16)


def test_the_wall_units_figure_draws_the_profile_and_the_law_of_the_wall():
    y = chebyshev.points(17, (-1.0, 1.0))
    stats = channel_statistics(_laminar(channel.poiseuille(y)), NU, (1.0,))
    fig = wall_units_figure(stats, "poiseuille")
    mean = fig.axes[0]
    lower = mean.lines[0]
    np.testing.assert_allclose(lower.get_xdata(), stats.y_plus[1:9])
    np.testing.assert_allclose(lower.get_ydata(), stats.u_plus[1:9])
    log = [line for line in mean.lines if line.get_label().startswith("$U^+ = \\ln")][0]
    np.testing.assert_allclose(log.get_ydata(), np.log(log.get_xdata()) / KAPPA + B)


@pytest.mark.parametrize("couette", [False, True])
def test_the_reynolds_shear_stress_is_drawn_in_each_plates_frame(couette):
    """<u'v'> odd across the channel, as a turbulent Poiseuille flow's (negative below the centre line, positive
    above), is drawn as -<u'v'>+ >= 0 against both plates; in Couette flow, where <u'v'> is negative across the whole
    channel (here even), it is drawn as it is against both plates."""
    y = chebyshev.points(17, (-1.0, 1.0))
    x = np.arange(8) * math.pi / 8
    g = (1 - y**2) if couette else y * (1 - y**2)
    u = (channel.couette(y, 1.0) if couette else channel.poiseuille(y)) + 0.1 * np.cos(2 * x)[:, None] * g
    v = (-0.1 if couette else 0.1) * np.cos(2 * x)[:, None] * (1 - y**2) ** 2  # momentum down the mean gradient
    stats = channel_statistics(np.stack([u, v])[None], NU, (math.pi,))
    lines = [line for line in wall_units_figure(stats, "shear").axes[1].lines if line.get_color() == "C3"]
    assert len(lines) == 2
    for line, half in zip(lines, (y < 0, y > 0), strict=True):
        want = -stats.shear[half & (stats.y_plus > 0)] * (1 if couette or y[half][0] < 0 else -1)
        np.testing.assert_allclose(line.get_ydata(), want, atol=1e-15)
        assert (line.get_ydata() >= 0).all() and line.get_ydata().max() > 0
