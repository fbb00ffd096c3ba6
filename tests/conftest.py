"""Test session setup: 8 virtual CPU devices and float64, set before JAX starts its backends.

Every test runs on CPU. Tests that need fewer devices take the first N of the 8.
"""

import gc
import os
import shutil
import tempfile

import jax
import pytest

N_DEVICES = 8
#: each program's machine code generated as one LLVM module, not split into parts for a pool of compiler threads
#: (see pytest_configure)
ONE_MODULE = "--xla_cpu_parallel_codegen_split_count=1"
#: the suite's XLA code generation (see pytest_configure): LLVM's optimisation level 0, XLA's CPU fusions
#: emitted by its LLVM IR emitters rather than its MLIR fusion emitters, one module per program;
#: SIMULATOR_TEST_XLA_OPTIMIZE=1 keeps XLA's defaults instead
FAST_CODEGEN = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false", ONE_MODULE)
#: the code generation of the processes a test starts that step long enough for optimised code to pay for itself
#: (:func:`optimized_codegen`): LLVM's optimisation level 1, XLA's CPU fusions still by its LLVM IR emitters, one
#: module per program
STEPPING_CODEGEN = ("--xla_backend_optimization_level=1", "--xla_cpu_use_fusion_emitters=false", ONE_MODULE)
OPTIMIZE = "SIMULATOR_TEST_XLA_OPTIMIZE"


def optimized_codegen(env: dict[str, str]) -> dict[str, str]:
    """``env`` with :data:`STEPPING_CODEGEN` in place of the suite's fast-compiling flags (:data:`FAST_CODEGEN`),
    for the processes a test starts that step long enough for optimised code to pay for itself: a documented
    sweep's three 32^3 Taylor-Green runs of 1000 steps take 38 s at the suite's flags and 10 s at XLA's defaults.
    Level 1 runs them about as fast as XLA's defaults (level 2 and the MLIR fusion emitters), whose compile
    costs several times as much: the 9 programs of configs/abc.yaml compile in 93 CPU seconds at the defaults,
    10 at level 1 and 6 at the suite's level 0, and its 100 steps take 1.6, 1.1 and 7.4 s. Under
    SIMULATOR_TEST_XLA_OPTIMIZE=1 (the suite at XLA's defaults) ``env`` is left as it is."""
    if os.environ.get(OPTIMIZE) == "1":
        return dict(env)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if f not in FAST_CODEGEN and f not in STEPPING_CODEGEN]
    return {**env, "XLA_FLAGS": " ".join([*flags, *STEPPING_CODEGEN])}


def default_codegen(env: dict[str, str]) -> dict[str, str]:
    """``env`` with XLA's own code generation (one module per program) in place of the suite's and
    :data:`STEPPING_CODEGEN`, for a test's process whose stepping outweighs even level 1's compile savings: the
    mixed dark matter tutorial's 757 steps of a 64^3 wave and 262144 particles take 24.1 s at level 1 and 16.0 s
    at XLA's defaults, its whole run 27.0 s against 20.5 s from an empty compilation cache."""
    flags = [f for f in env.get("XLA_FLAGS", "").split() if f not in FAST_CODEGEN and f not in STEPPING_CODEGEN]
    return {**env, "XLA_FLAGS": " ".join([*flags, ONE_MODULE])}


def pytest_configure(config):
    # The package never changes JAX settings at import; the test session does it once, up front,
    # exactly as the runtime does for a run (simulator.runtime.configure_devices).
    from simulator.runtime import configure_devices

    # Tracing and lowering make and drop millions of small objects, and at Python's default thresholds the cyclic
    # collector runs thousands of times a test file, its full collections over every program and simulation the
    # worker holds: on one worker, tests/test_channel2d.py spent 5.6 of its 97 CPU seconds collecting (2792 runs)
    # and tests/test_noslip.py 4.0 of 99.5 (2464). At (50000, 20, 20) they collect 27 and 20 times, for 1.3 and
    # 0.7 s, and peak 250 and 134 MiB higher (1.2 and 2.6 GiB). A worker's own setting: the processes the tests
    # start keep Python's defaults, as a user's run does.
    gc.set_threshold(50_000, 20, 20)

    # The suite's programs are small and run for milliseconds, but each takes a second or more to compile, and
    # most of that is LLVM optimising machine code: at LLVM's level 0 (XLA's HLO passes, fusion and buffer
    # assignment unchanged) the suite's CPU time falls by about a third. What the tests check is the program
    # XLA is given, not how well LLVM schedules it; results differ from the default level at most by
    # round-off, which no test's tolerance is near. Likewise XLA's CPU fusion emitters (MLIR) take longer to
    # build a fusion's code than its older LLVM IR emitters: with the older ones the Boussinesq gradient
    # program of tests/grad_objective.py compiles in 4.5 s instead of 6.7, and the suite in 18 minutes instead
    # of 21. They size some fusions' buffers differently, so the planner's footprint compiles take the emitters a
    # user's run takes (XLA's own, but the older ones for a chunk across no-slip plates, which chooses them itself:
    # simulator.planning.plan.footprint_options): every memory figure a test checks is the one a user's run gets.
    # And XLA splits each program's LLVM module into parts to generate their
    # machine code on several threads: on CI's 2 cores, each busy with a worker, that buys no time and the parts cost
    # CPU of their own: as one module (ONE_MODULE: the same HLO, buffers and functions, only not divided) the CPU
    # time of tests/test_mhd.py falls from 35 s to 28 (five runs of each, alternated).
    # Set here, before JAX starts its backends, and inherited by the workers and every process the tests
    # start; SIMULATOR_TEST_XLA_OPTIMIZE=1 runs the suite with XLA's defaults.
    flags = os.environ.get("XLA_FLAGS", "").split()
    if os.environ.get(OPTIMIZE) != "1":
        os.environ["XLA_FLAGS"] = " ".join([*flags, *(f for f in FAST_CODEGEN if f not in flags)])
    configure_devices(N_DEVICES, "float64")
    # Started now, so that a test that sets up a float32 run in this process (the CLI's main, called in
    # process) cannot switch float64 off for the tests after it: once JAX has started, float32 leaves it on
    jax.devices()
    # FFTW's measured plans are shared through a wisdom file (simulator/fft/local.py): the session and
    # the runs it starts share one of their own instead of the user's cache. Likewise XLA's compiled
    # programs (simulator/cache.py): the session, its workers and the hundreds of `simulator run` processes
    # the tests start compile the same small programs again and again; a cache of this test session's own, made
    # empty by the controlling process (pytest-xdist's workers inherit it), lets them load instead.
    # Nothing in it outlives the session, so no test ever runs a program compiled by other code.
    if "SIMULATOR_FFTW_WISDOM" not in os.environ:
        config._fftw_wisdom_dir = tempfile.mkdtemp(prefix="simulator-test-wisdom-")
        os.environ["SIMULATOR_FFTW_WISDOM"] = os.path.join(config._fftw_wisdom_dir, "wisdom")
    if "SIMULATOR_COMPILATION_CACHE" not in os.environ:
        config._xla_cache_dir = tempfile.mkdtemp(prefix="simulator-test-xla-")
        os.environ["SIMULATOR_COMPILATION_CACHE"] = config._xla_cache_dir
    from simulator.runtime import enable_cache

    enable_cache()


def pytest_unconfigure(config):
    for name in ("_fftw_wisdom_dir", "_xla_cache_dir"):
        if getattr(config, name, None):
            shutil.rmtree(getattr(config, name), ignore_errors=True)


@pytest.fixture(scope="session")
def devices():
    assert len(jax.devices()) == N_DEVICES
    return jax.devices()


@pytest.fixture
def uncached_programs():
    """Trace and compile every program of the test afresh, reusing none from this process's caches or the
    session's compilation cache: for a test that changes at run time (a monkeypatch) code inside the slab
    backend's custom_partitioning callbacks, which the compilation cache knows only by its source
    (simulator/cache.py) and JAX's trace caches not at all."""
    from simulator.runtime import enable_cache

    enable_cache("off")
    jax.clear_caches()
    yield
    jax.clear_caches()
    enable_cache()


@pytest.fixture
def local_fft(request):
    """The local FFT path a test runs on (parametrize it indirectly with "xla" or "fftw").

    Where the native FFTW extension is unavailable, "fftw" tests skip and say why;
    SIMULATOR_REQUIRE_FFTW=1 (set by .ci/run: CI installs FFTW) turns that skip into a failure.
    """
    path = request.param
    if path == "fftw":
        from simulator.fft.local import native

        from support import unavailable

        module, why = native()
        if module is None:
            unavailable("FFTW-path tests", "SIMULATOR_REQUIRE_FFTW", f"the FFTW path is unavailable: {why}")
    return path


#: the test files by their summed test time, longest first (measured: a full run's durations on 2 cores,
#: 2026-12-01, the tutorials' estimated from that day's slowest-tests list; files under 15 s left out), handed out
#: in this order: with one file per worker (pytest-xdist's loadfile, with ``--no-loadscope-reorder`` in
#: pyproject.toml: its default reorder by the count of tests put test_windows.py and the tutorials, few tests of
#: minutes, last) and each worker taking the next file when it is free, longest-first keeps the two workers' last
#: files ending together; files not listed follow, alphabetically
LONG_FIRST = ("test_gradients.py", "test_plan.py", "test_fdm_cdm.py", "test_ensemble.py", "test_tutorials.py",
              "test_noslip.py", "test_restart.py", "test_channel2d.py", "test_docs.py", "test_slurm.py",
              "test_convection_noslip.py", "test_cache.py", "test_export.py", "test_particles.py", "test_plots.py",
              "test_particles_owned.py", "test_study_figures.py", "test_gpu_campaign.py", "test_windows.py",
              "test_walls.py", "test_convection_noslip_box.py", "test_legendre.py", "test_statistics.py",
              "test_compact.py", "test_run.py", "test_wall_scalars.py", "test_boussinesq.py", "test_faults.py",
              "test_fft.py", "test_notebooks.py", "test_walls_plan.py", "test_resolution.py", "test_mixed_plates.py",
              "test_mhd.py", "test_plane.py", "test_channel_box.py", "test_navier_stokes.py", "test_signals.py",
              "test_paraview.py", "test_convection.py", "test_commands.py", "test_multiprocess.py",
              "test_chunk_wall.py", "test_particles_io.py", "test_pencil_walls.py", "test_restart_tools.py",
              "test_walls_odd.py", "test_fft_native.py", "test_bad_input.py", "test_fdm_cosmo.py", "test_sweep.py",
              "test_runtime.py", "test_schrodinger_poisson.py", "test_wave_resolution.py", "test_scalars.py",
              "test_fft_grad.py", "test_sw1l.py", "test_plane_particles.py", "test_time_schemes.py",
              "test_sp_cdm.py", "test_remap.py", "test_statistics_plane.py", "test_cli_habits.py",
              "test_assembly.py", "test_phase_shift.py", "test_output_plugins.py", "test_planar_base.py",
              "test_lagrangian.py", "test_start_up_kills.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FIRST)))  # stable: files stay whole
