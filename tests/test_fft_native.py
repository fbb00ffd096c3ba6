"""The local FFT paths (simulator.fft.local): the FFTW custom call against numpy.fft on any axes, sizes,
batch axes and precision; concurrent calls from 8 virtual devices; gradients; one program for CPU and
GPU; a whole Navier-Stokes step equal on both paths; and how the path is chosen and reported.

The backends' own checks on both paths (every backend, device count, r2c/c2c) are in test_fft.py."""

import os
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.equations.navier_stokes import RandomVelocity
from simulator.equations.navier_stokes.equation import NavierStokes
from simulator.errors import ConfigError, RuntimeSetupError
from simulator.fft import BACKENDS, local
from simulator.fft.check import distribute, host_field, max_relative_error
from simulator.runtime import build_mesh
from simulator.threads import available_cores
from simulator.time.schemes import SCHEMES

FFTW = pytest.mark.parametrize("local_fft", ["fftw"], indirect=True)
BOTH = pytest.mark.parametrize("local_fft", ["xla", "fftw"], indirect=True)


def err(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


# (shape, axes): batch axes before, between and after the transformed ones; even, odd and
# non-power-of-2 sizes, the halved (last listed) axis odd or even
CASES = [
    ((3, 12, 18, 20), (-3, -2, -1)),
    ((3, 9, 10, 15), (-3, -2, -1)),
    ((3, 12, 18, 20), (-1,)),
    ((3, 12, 18, 20), (-2,)),
    ((3, 12, 18, 20), (-3,)),
    ((3, 12, 18, 20), (-3, -2)),
    ((12, 7, 20), (0, 2)),
    ((5, 1, 18), (-1,)),
]


@BOTH
@pytest.mark.parametrize("shape, axes", CASES, ids=lambda v: str(v).replace(" ", ""))
def test_float64_local_transforms_match_numpy(local_fft, shape, axes):
    fft = local.resolve(local_fft, threads=2, grain=1)  # grain 1: two threads, on these small shapes too
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    z = x + 1j * rng.standard_normal(shape)
    n = shape[axes[-1]]
    k = np.fft.rfftn(x, axes=axes)
    assert err(jax.jit(lambda a: fft.rfftn(a, axes))(x), k) < 1e-12
    want = np.fft.irfftn(k, s=[shape[a] for a in axes], axes=axes)
    assert err(jax.jit(lambda a: fft.irfftn(a, axes, n))(k), want) < 1e-12
    assert err(jax.jit(lambda a: fft.fftn(a, axes))(z), np.fft.fftn(z, axes=axes)) < 1e-12
    assert err(jax.jit(lambda a: fft.ifftn(a, axes))(z), np.fft.ifftn(z, axes=axes)) < 1e-12
    # irfftn pads or truncates the half axis like NumPy's s=
    for m in (n + 2, n - 1):
        ref = np.fft.irfftn(k, s=[shape[a] for a in axes[:-1]] + [m], axes=axes)
        assert err(jax.jit(lambda a, m=m: fft.irfftn(a, axes, m))(k), ref) < 1e-12


@FFTW
@pytest.mark.parametrize("shape, axes", CASES[:3] + CASES[5:6], ids=lambda v: str(v).replace(" ", ""))
def test_float32_local_transforms_match_numpy(local_fft, shape, axes):
    # float32 FFT round-off grows like eps * log2(N) (eps = 6e-8, N <= 4320 here): 1e-5 relative to
    # the largest coefficient is a margin of ~10 over that, and any real bug is an O(1) error
    fft = local.resolve(local_fft, threads=2, grain=1)  # grain 1: two threads, on these small shapes too
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(np.float32)
    z = (x + 1j * rng.standard_normal(shape)).astype(np.complex64)
    k = np.fft.rfftn(x.astype(np.float64), axes=axes)  # references in float64
    got = {
        "rfftn": (jax.jit(lambda a: fft.rfftn(a, axes))(x), k),
        "irfftn": (jax.jit(lambda a: fft.irfftn(a, axes, shape[axes[-1]]))(k.astype(np.complex64)),
                   np.fft.irfftn(k, s=[shape[a] for a in axes], axes=axes)),
        "fftn": (jax.jit(lambda a: fft.fftn(a, axes))(z), np.fft.fftn(z.astype(np.complex128), axes=axes)),
        "ifftn": (jax.jit(lambda a: fft.ifftn(a, axes))(z), np.fft.ifftn(z.astype(np.complex128), axes=axes)),
    }
    for name, (y, ref) in got.items():
        assert y.dtype in (jnp.float32, jnp.complex64), name
        assert 1e-9 < err(y, ref) < 1e-5, name  # the lower bound: it really ran in float32


@FFTW
def test_the_custom_call_is_what_runs_and_needs_no_copies(local_fft):
    """One fused transform on CPU: the custom call on XLA's buffers, no conditional left from the
    platform choice, and the c2r operand (which FFTW destroys) aliased to a scratch result."""
    fft = local.resolve(local_fft, threads=1)
    x = jnp.zeros((3, 8, 12, 16))
    program = jax.jit(lambda a: fft.irfftn(fft.rfftn(a, (-3, -2, -1)) * 2.0, (-3, -2, -1), 16))
    text = program.lower(x).compile().as_text()
    assert text.count('custom_call_target="simulator_fftw"') == 1
    assert text.count('custom_call_target="simulator_fftw_c2r"') == 1
    assert "output_to_operand_aliasing={{1}: (0, {})}" in text
    assert "conditional" not in text and " fft(" not in text and "transpose(" not in text


def dct1_reference(x):
    """scipy's unnormalised DCT-I of the last axis in float64: numpy's real FFT of the even extension (a dense sum
    would carry round-off of its own near 1e-14)."""
    x = np.asarray(x, np.float64)
    return np.real(np.fft.rfft(np.concatenate([x, x[..., -2:0:-1]], -1), axis=-1)[..., :x.shape[-1]])


@FFTW
@pytest.mark.parametrize("n", [2, 17, 96, 384, 385])
def test_fftws_dct1_is_the_chebyshev_transforms_to_round_off(local_fft, n):
    """FFTW's REDFT00 (LocalFFT.dct1, batched over leading axes) is the DCT-I the Chebyshev transform is, at even and
    odd N, FFT-friendly N - 1 or not (384: 2 x 383), to 1e-14 relative in float64 and 1e-6 in float32; its
    transpose (reverse mode) passes the dot-product test; and forward_z runs it exactly where walls.direct_dct1
    says it is the faster, on the same values as the even extension's real FFT."""
    from simulator.fft import walls

    fft = local.resolve(local_fft, threads=1)
    rng = np.random.default_rng(n)
    x = rng.standard_normal((3, 4, n))
    want = dct1_reference(x)
    assert err(jax.jit(fft.dct1)(x), want) < 1e-14
    got32 = jax.jit(fft.dct1)(x.astype(np.float32))
    assert got32.dtype == jnp.float32 and 1e-9 < err(got32, want) < 1e-6  # the lower bound: it ran in float32
    ct = rng.standard_normal(x.shape)
    _, pull = jax.vjp(fft.dct1, jnp.asarray(x))
    assert np.sum(np.asarray(pull(jnp.asarray(ct))[0]) * x) == pytest.approx(np.sum(ct * want), rel=1e-12)
    text = jax.jit(lambda a: walls.forward_z(fft, "chebyshev", a)).lower(x).as_text()
    assert ("simulator_fftw" in text) and (("kind = 4" in text) == walls.direct_dct1(n)), text
    extension = walls.chebyshev_forward(lambda a: walls.dct1(lambda b: fft.rfftn(b, (-1,)), a), jnp.asarray(x))
    assert err(walls.forward_z(fft, "chebyshev", jnp.asarray(x)), extension) < 1e-14


@FFTW
def test_fftw_lowers_for_cpu_only_and_a_gpu_backend_never_uses_it(local_fft):
    """A backend on GPUs resolves to XLA's FFT (cuFFT), so its programs lower for a GPU without FFTW; one
    resolved for CPU calls FFTW directly (no platform choice traced with it: XLA's branch, in pieces past
    2^31 points, made planning large grids 5 times slower) and does not lower for a GPU."""
    x = jax.ShapeDtypeStruct((3, 8, 8, 16), jnp.float64)
    ours = [jax.export.DisabledSafetyCheck.custom_call(t) for t in ("simulator_fftw", "simulator_fftw_c2r")]

    def program(fft):
        return jax.jit(lambda a: fft.irfftn(fft.rfftn(a, (-3, -2, -1)), (-3, -2, -1), 16))

    gpu = jax.export.export(program(local.resolve(platform="gpu")), platforms=["cuda"])(x).mlir_module()
    assert "simulator_fftw" not in gpu and "stablehlo.fft" in gpu
    cpu = jax.export.export(program(local.resolve(local_fft, threads=1)), platforms=["cpu"],
                            disabled_checks=ours)(x).mlir_module()
    assert "simulator_fftw" in cpu and "stablehlo.fft" not in cpu


@pytest.mark.parametrize("local_fft", ["fftw"], indirect=True)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name, mesh", [("slab", None), ("pencil", (2, 4))])
def test_eight_devices_transforming_at_once(devices, local_fft, threads, name, mesh, monkeypatch):
    """All 8 virtual devices run (and, for a shape new to the process, plan) their custom calls
    concurrently from XLA's threads; every shard must come out right."""
    monkeypatch.setenv(local.ENV_GRAIN, "1")  # every transform on all its threads, small as these are
    shape = (16, 24, 48) if threads == 1 else (24, 16, 32)  # shapes no other test plans
    cls = BACKENDS[name]
    fft = cls(shape, build_mesh(cls, mesh, devices), local_fft=local_fft, fft_threads=threads)
    assert fft.local.name == "fftw" and fft.local.threads == threads and fft.local.grain == 1
    x = host_field((3, *shape), True, seed=5)
    xs = distribute(x, fft.real_sharding(1), jnp.float64)
    pair = jax.jit(lambda a: (fft.rfft(a), fft.irfft(fft.rfft(a))))
    for _ in range(3):
        k, back = pair(xs)
        assert max_relative_error(k, fft.reference_spectrum(x, True)) < 1e-12
        assert max_relative_error(back, x) < 1e-12


@FFTW
def test_plans_are_cached_per_shape(local_fft):
    fft = local.resolve(local_fft, threads=1)
    f = jax.jit(lambda a: fft.rfftn(a, (-2, -1)))
    module, _ = local.native()
    f(jnp.ones((2, 10, 14)))
    made = module.plan_count()
    f(jnp.ones((2, 10, 14)))
    jax.jit(lambda a: fft.rfftn(a, (-2, -1)) + 1)(jnp.ones((2, 10, 14)))  # same transform, new program
    assert module.plan_count() == made
    f(jnp.ones((2, 10, 22)))
    assert module.plan_count() == made + 1


THREADS_OF_A_TRANSFORM = """
import os, numpy as np, jax
jax.config.update("jax_enable_x64", True)
from simulator.fft.local import resolve
fft = resolve("fftw", threads=2, grain=1)
x = np.random.default_rng(0).standard_normal((2, 32, 30, 36))
program = jax.jit(lambda a: fft.rfftn(a, (-3, -2, -1))).lower(x).compile()
jax.block_until_ready(jax.jit(lambda a: a + 1)(x))  # XLA's threads are up
before = set(os.listdir("/proc/self/task"))
k = np.asarray(program(x))  # plans on two threads (timing candidates), then runs
new = set(os.listdir("/proc/self/task")) - before
print(len(new), float(np.max(np.abs(k - np.fft.rfftn(x, axes=(-3, -2, -1))))))
"""


@FFTW
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc to count threads")
def test_fftw_runs_its_threads_jobs_on_xlas_threads(local_fft, tmp_path):
    """A two-thread FFTW plan hands its jobs to XLA's intra-op threads (the handler's thread pool) instead
    of starting threads of its own that would compete with XLA's for the cores: the process has no more
    threads after planning and running it (FFTW's own loop leaves a worker behind), and the result is
    right. A fresh process, so that no earlier transform started FFTW's workers."""
    env = {"PATH": "/usr/bin:/bin", "SIMULATOR_FFTW_WISDOM": "off", "JAX_PLATFORMS": "cpu"}
    r = subprocess.run([sys.executable, "-c", THREADS_OF_A_TRANSFORM], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    started, error = r.stdout.split()
    assert int(started) == 0
    assert float(error) < 1e-9


ANOTHER_LIBRARYS_PLAN = """
import ctypes, numpy as np, jax
jax.config.update("jax_enable_x64", True)
from simulator.fft.local import resolve
fft = resolve("fftw", threads=2, grain=1)
jax.block_until_ready(jax.jit(lambda a: fft.rfftn(a, (-2, -1)))(np.ones((4, 6))))  # our loop is FFTW's now
try:
    lib = ctypes.CDLL("libfftw3_threads.so.3")  # the library the extension links (Debian's soname)
except OSError as err:
    print("SKIP", err)
    raise SystemExit(0)
lib.fftw_plan_dft_2d.restype = ctypes.c_void_p
lib.fftw_plan_dft_2d.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                 ctypes.c_uint]
lib.fftw_execute.argtypes = lib.fftw_destroy_plan.argtypes = [ctypes.c_void_p]
assert lib.fftw_init_threads()
lib.fftw_plan_with_nthreads(4)
x = np.random.default_rng(0).standard_normal((256, 256)) + 0j
y = np.empty_like(x)
plan = lib.fftw_plan_dft_2d(256, 256, x.ctypes.data, y.ctypes.data, -1, 1 << 6)  # FFTW_FORWARD, FFTW_ESTIMATE
lib.fftw_execute(plan)
lib.fftw_destroy_plan(plan)
print(float(np.max(np.abs(y - np.fft.fft2(x)))))
"""


@FFTW
def test_another_librarys_threaded_fftw_plan_still_runs_right(local_fft):
    """Which loop runs FFTW's jobs is one setting for the whole process: a plan that another library makes
    through the same FFTW, outside our handler, gets threads of its own and the right answer."""
    r = subprocess.run([sys.executable, "-c", ANOTHER_LIBRARYS_PLAN], env={"PATH": "/usr/bin:/bin",
                       "SIMULATOR_FFTW_WISDOM": "off", "JAX_PLATFORMS": "cpu"}, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    if r.stdout.startswith("SKIP"):
        pytest.skip(f"FFTW's threads library not loadable by its Debian name: {r.stdout.strip()}")
    assert float(r.stdout) < 1e-9


SAVE_TRANSFORM = """
import sys, numpy as np, jax
jax.config.update("jax_enable_x64", True)
from simulator.fft.local import resolve
fft = resolve("fftw", threads=1, planner="measure")
x = np.random.default_rng(0).standard_normal((3, 24, 20, 36))
np.save(sys.argv[1], np.asarray(jax.jit(lambda a: fft.irfftn(fft.rfftn(a, (-3, -2, -1)) * 1.5, (-3, -2, -1), 36))(x)))
"""


@FFTW
def test_processes_share_measured_plans_so_they_round_alike(local_fft, tmp_path):
    """FFTW_MEASURE chooses plans by timing; the wisdom file makes a second process use the first one's
    plans, so both give the same bits (what a bitwise-equal restart needs)."""
    env = {"PATH": "/usr/bin:/bin", "SIMULATOR_FFTW_WISDOM": str(tmp_path / "wisdom"), "JAX_PLATFORMS": "cpu"}
    for name in ("a.npy", "b.npy"):
        r = subprocess.run([sys.executable, "-c", SAVE_TRANSFORM, str(tmp_path / name)], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "fftw_wisdom" in (tmp_path / "wisdom.f64").read_text()
    a, b = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    np.testing.assert_array_equal(a, b)


@FFTW
def test_gradients_through_fftw_equal_xla(local_fft):
    fftw, xla = local.resolve(local_fft, threads=1), local.resolve("xla")
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.standard_normal((2, 6, 8, 10)))
    w = jnp.asarray(rng.standard_normal((2, 6, 8, 6)) + 1j * rng.standard_normal((2, 6, 8, 6)))

    def loss(fft, a):
        k = fft.rfftn(a, (-3, -2, -1))
        c = fft.fftn(a * 1j + a**2, (-2, -1))
        return (jnp.sum(jnp.abs(k * w) ** 2) + jnp.sum(fft.irfftn(k * w, (-3, -2, -1), 10) ** 3)
                + jnp.sum(jnp.abs(fft.ifftn(c, (-3,))) ** 2))

    g_fftw = jax.grad(lambda a: loss(fftw, a))(x)
    g_xla = jax.grad(lambda a: loss(xla, a))(x)
    assert err(g_fftw, g_xla) < 1e-12
    assert float(jnp.max(jnp.abs(g_xla))) > 1.0


@FFTW
def test_vmap_adds_batch_axes(local_fft):
    fft = local.resolve(local_fft, threads=1)
    x = np.random.default_rng(4).standard_normal((4, 3, 6, 8))
    y = jax.vmap(lambda a: fft.rfftn(a, (-2, -1)))(x)
    assert err(y, np.fft.rfftn(x, axes=(-2, -1))) < 1e-12


@pytest.mark.parametrize("local_fft", ["fftw"], indirect=True)
@pytest.mark.parametrize("backend, n", [("single", 1), pytest.param("pencil", 4, marks=pytest.mark.slow)])
def test_navier_stokes_step_on_fftw_equals_xla(devices, local_fft, backend, n):
    """Two RK4 steps of Navier-Stokes (12 three-component transforms each) on both paths, float64."""
    cls = BACKENDS[backend]
    states = []
    for path in ("xla", local_fft):
        fft = cls((16, 16, 32), build_mesh(cls, None, devices[:n]), local_fft=path)
        eq = NavierStokes(fft, (2 * np.pi,) * 3, jnp.float64)
        params = {"viscosity": jnp.asarray(0.01)}
        u0 = eq.initial(RandomVelocity(seed=7), params)
        step = jax.jit(lambda u, eq=eq: SCHEMES["rk4"].load()(eq)(u, 0.0, jnp.asarray(0.01), params))
        states.append(np.asarray(step(step(u0))))
    assert err(states[1], states[0]) < 1e-12
    assert err(states[1], np.asarray(u0)) > 1e-4  # the state did change


# ---- choosing and reporting the path --------------------------------------------------------------


def test_importing_registers_nothing():
    """The extension is loaded and its targets registered on first use, not when modules are imported."""
    code = ("import sys, simulator.fft, simulator.fft.local, simulator.fft.slab, simulator.fft.pencil; "
            "print('simulator.fft._fftw' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr


def test_the_environment_chooses_the_path(monkeypatch):
    monkeypatch.setenv("SIMULATOR_FFT", "xla")
    assert local.resolve().name == "xla" and local.resolve().describe() == "xla (SIMULATOR_FFT=xla)"
    monkeypatch.setenv("SIMULATOR_FFT", "fast")
    with pytest.raises(ConfigError, match=r"^SIMULATOR_FFT = 'fast' is not allowed; expected one of auto, fftw, xla$"):
        local.resolve()
    monkeypatch.setenv("SIMULATOR_FFT", "auto")
    monkeypatch.setenv("SIMULATOR_FFT_THREADS", "two")
    if local.native()[0] is not None:
        with pytest.raises(ConfigError, match=r"^SIMULATOR_FFT_THREADS = 'two' is not allowed"):
            local.resolve()
    monkeypatch.setenv("SIMULATOR_FFT_THREADS", "3")
    monkeypatch.setenv("SIMULATOR_FFTW_PLANNER", "guess")
    with pytest.raises(ConfigError, match=r"^SIMULATOR_FFTW_PLANNER = 'guess' is not allowed"):
        local.resolve()


def test_without_the_extension_auto_falls_back_and_fftw_is_an_error(monkeypatch):
    monkeypatch.setattr(local, "native", lambda: (None, "native extension not built: fftw3.h not found"))
    monkeypatch.delenv("SIMULATOR_FFT", raising=False)
    fft = local.resolve()
    assert fft.describe() == "xla (native extension not built: fftw3.h not found)"
    monkeypatch.setenv("SIMULATOR_FFT", "fftw")
    with pytest.raises(RuntimeSetupError, match=r"^SIMULATOR_FFT=fftw but the FFTW path is unavailable: "
                                                r"native extension not built: fftw3.h not found$"):
        local.resolve()


def test_without_the_extension_the_reason_says_how_to_build_it_after_a_pip_install(monkeypatch):
    """`simulator info` told a pip user to "pip install again" to build the native FFT and kernels, which does
    nothing for the version installed ("Requirement already satisfied"): both reasons now name the forced
    reinstall that builds them."""
    from simulator.fft import kernels

    monkeypatch.setattr(local.importlib.util, "find_spec", lambda name, *a: None)
    monkeypatch.setattr(local, "_fftw_header_found", lambda: True)
    rebuild = "pip install --force-reinstall --no-deps of the package again"
    assert rebuild in local.native.__wrapped__()[1] and rebuild in kernels.native.__wrapped__()[1]
    monkeypatch.setattr(local, "_fftw_header_found", lambda: False)
    assert local.native.__wrapped__()[1].endswith(f"apt-get install libfftw3-dev, then bash scripts/setup.sh in a "
                                                  f"checkout, or {rebuild})")


@FFTW
def test_threads_default_to_the_cores_per_device(local_fft, monkeypatch):
    monkeypatch.delenv("SIMULATOR_FFT_THREADS", raising=False)
    cores = available_cores()
    assert local.resolve("fftw", devices=1).threads == cores
    assert local.resolve("fftw", devices=8).threads == max(1, cores // 8)
    monkeypatch.setenv("SIMULATOR_FFT_THREADS", "3")
    assert local.resolve("fftw", devices=8).threads == 3
    assert local.resolve("fftw", devices=1).describe().startswith("fftw (FFTW 3.")


@BOTH
def test_info_says_which_fft_runs(local_fft):
    env = {"PATH": "/usr/bin:/bin", "SIMULATOR_FFT": local_fft, "SIMULATOR_FFT_THREADS": "2"}
    r = subprocess.run([sys.executable, "-m", "simulator", "info", "--cpu-devices", "1", "--set", "fft.backend=single"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("local FFT:"))
    expected = "fftw (FFTW 3." if local_fft == "fftw" else "xla (SIMULATOR_FFT=xla)"
    assert line.split(":", 1)[1].strip().startswith(expected), line
    if local_fft == "fftw":
        assert "2 threads" in line


def test_on_a_gpu_the_fftw_extension_is_never_loaded(monkeypatch):
    """The GPU path runs XLA's FFT (cuFFT) and must not even look for the FFTW extension: a build made on a
    login node, or a libfftw3 missing on GPU nodes, can then never break a GPU run."""
    def refuse():
        raise AssertionError("the FFTW extension was looked for on a GPU")

    monkeypatch.setattr(local, "native", refuse)
    for requested in (None, "auto", "xla"):
        chosen = local.resolve(requested, platform="gpu")
        assert chosen.name == "xla" and "CPU-only" in chosen.reason
    with pytest.raises(RuntimeSetupError, match="CPU-only"):
        local.resolve("fftw", platform="gpu")
    monkeypatch.setenv(local.ENV_PATH, "fftw")
    with pytest.raises(RuntimeSetupError, match="SIMULATOR_FFT=fftw on gpu"):
        local.resolve(platform="gpu")


@FFTW
def test_small_transforms_run_on_one_thread_and_large_ones_on_all(local_fft, monkeypatch):
    """One FFTW thread per THREAD_GRAIN points, never more than asked for: the compiled custom call
    carries the thread count, 1 for a 32^3 field and 2 for a 64^3 one (2^18 points) at the default
    grain; SIMULATOR_FFT_THREAD_GRAIN moves the line, and a bad value is a one-line error."""
    fft = local.resolve(local_fft, threads=2)
    assert (fft.grain, fft.threads_for(2 * local.THREAD_GRAIN - 1), fft.threads_for(2 * local.THREAD_GRAIN)) == (
        local.THREAD_GRAIN, 1, 2)
    assert fft.threads_for(10**9) == 2 and local.resolve(local_fft, threads=1).threads_for(10**9) == 1

    def nthreads(fft, n):
        text = jax.jit(lambda a: fft.rfftn(a, (-3, -2, -1))).lower(jnp.zeros((n, n, n))).as_text()
        return sorted(set(re.findall(r"nthreads = (\d+)", text)))

    assert nthreads(fft, 32) == ["1"] and nthreads(fft, 64) == ["2"]
    monkeypatch.setenv(local.ENV_GRAIN, "1024")
    assert nthreads(local.resolve(local_fft, threads=2), 32) == ["2"]
    monkeypatch.setenv(local.ENV_GRAIN, "0")
    with pytest.raises(ConfigError, match="SIMULATOR_FFT_THREAD_GRAIN"):
        local.resolve(local_fft, threads=2)
