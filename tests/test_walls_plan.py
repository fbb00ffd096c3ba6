"""``simulator plan`` of a run between plates: memory per cell and the largest grid one 80 GB GPU holds, for each
convection equation's shipped config (the free-slip plane and box, the no-slip plane), its job counted at the
free-fall velocity; the channel's GPU plan as its config's header and the docs give it; a grid far past a device
planned in bounded time and memory."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simulator.fft.bases import fft_friendly
from simulator.planning import gpu_compiler

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"


@pytest.mark.parametrize("config, aspect", [("convection_2d", (4, 1)), ("convection_3d", (2, 2, 1)),
                                            ("convection_2d_noslip", (4, 1))])
def test_plan_of_a_walled_run_gives_its_bytes_per_cell_and_what_an_80_gb_gpu_holds(config, aspect):
    """Planned for one 80 GB GPU (compiled by the GPU compiler where JAX's CUDA plug-in is installed, else for this
    CPU): it fits, the plan names the plates' series, its peak memory in bytes per cell, and the largest grid of the
    config's aspect that the device holds, past the config's own grid; between no-slip plates one point more across,
    so that the Chebyshev transform's 2 (N - 1) is FFT-friendly, and a line saying whether the config's count across
    transforms fast and which count near it does. Its job (time.dt 0.1, past the CFL limit) counts steps of
    dt = cfl dx / U at the free-fall velocity U = 1, not at the initial temperature noise (0.001):
    ceil(t_end / (0.5 dx)), dx the finest spacing of the config's grid."""
    # a process of its own: the suite's JAX already holds 8 CPU devices, and a plan for one device sets its own
    done = subprocess.run([sys.executable, "-m", "simulator", "plan", str(CONFIGS / f"{config}.yaml"),
                           "--platform", "gpu", "--memory", "80GB", "--devices", "1", "--set", "time.dt=0.1"],
                          capture_output=True, text=True, timeout=300, check=False)
    out = done.stdout
    assert done.returncode == 0, done.stderr[-2000:]
    series = "Chebyshev" if config.endswith("noslip") else "sine and cosine"
    assert re.search(rf"spectral layout: walled spectrum .*the plates' {series} series", out), out
    per_cell = float(re.search(r"peak .* = ([\d.]+) bytes per cell over all devices", out)[1])
    assert 100 < per_cell < 5000, out
    held = re.search(r"largest grid of this run's aspect .* fits these 1 device\(s\): \[([\d, ]+)\]", out)
    largest = [int(n) for n in held[1].split(",")]
    unit = largest[0] // aspect[0]
    if series == "Chebyshev":  # one Gauss-Lobatto point more across, so that 2 (N - 1) is FFT-friendly
        assert largest == [unit * aspect[0], unit + 1] and fft_friendly(unit) and unit > 96, out
        # 96 points across: a real FFT of 2 x 95; 97 keep its Chebyshev modes and transform fast
        assert ("across the plates: 96 points, a real FFT of 2 x 95 points (95 = 5 x 19): not FFT-friendly, slower "
                "than a smooth length; 97 points (96 = 2^5 x 3) keep these Chebyshev modes and more, and transform "
                "fast") in out, out
    else:
        assert largest == [unit * a for a in aspect] and unit > (96 if len(aspect) == 2 else 24), out
        assert "across the plates:" not in out, out
    shipped = yaml.safe_load((CONFIGS / f"{config}.yaml").read_text())
    dx = min(length / n for length, n in zip(shipped["grid"]["box"], shipped["grid"]["shape"], strict=True))
    steps = math.ceil(shipped["time"]["t_end"] / (shipped["time"]["cfl"] * dx) * (1 - 1e-9))
    assert f"job: {steps} steps to time.t_end = {shipped['time']['t_end']:g} (an estimate: time.cfl = 0.5 with " \
           f"dx = {dx:.3g} and U = the free-fall velocity sqrt(g alpha Delta T H) = 1" in out, out


def _figure(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    assert found, (pattern, text)
    return found[1]


def test_the_channels_gpu_plan_is_the_one_its_header_and_the_docs_give():
    """`simulator plan configs/channel_retau180.yaml --platform gpu --memory 80GB` prints the figures that the
    config's header, the channel tutorial and the explanation page write: its peak per device, bytes per cell, the
    largest grid of its aspect (one point more across the plates: a fast transform), the predicted step on an H100,
    and the job (the steps at the laminar centre-line speed 3/2 U_b, capped by time.dt; its wall time). They are the
    figures compiled for this CPU standing in: where JAX's CUDA plug-in is installed the GPU compiler's differ, and
    only the job's steps, which no compile sets, are checked."""
    done = subprocess.run([sys.executable, "-m", "simulator", "plan", str(CONFIGS / "channel_retau180.yaml"),
                           "--platform", "gpu", "--memory", "80GB"], capture_output=True, text=True, timeout=400,
                          check=False, cwd=ROOT)
    out = done.stdout
    assert done.returncode == 0, done.stderr[-2000:]
    assert "job: 120000 steps to time.t_end = 600 (an estimate: time.cfl = 0.5 with dx = 0.0156 and U = laminar " \
           "flow's centre-line speed 3/2 physics.flux = 1.5: dt ~ 0.005 (time.dt))" in out, out
    header = (CONFIGS / "channel_retau180.yaml").read_text().split("\nname:")[0].replace("\n# ", " ")
    tutorial = (ROOT / "docs" / "tutorials" / "channels.md").read_text().replace("\n", " ")
    explanation = (ROOT / "docs" / "explanation" / "channels.md").read_text()
    assert "120000 steps" in header and "120000 steps" in tutorial
    if gpu_compiler.plugin() is not None:
        print("JAX's CUDA plug-in is installed: the pages give the figures compiled for a CPU standing in, not its")
        return
    peak = _figure(r"peak ([\d.]+ [MG]iB) = ", out)
    per_cell = _figure(r" = ([\d.]+ bytes per cell) over all devices", out)
    found = re.search(r"largest grid of this run's aspect .* fits these 1 device\(s\): \[(\d+), (\d+), (\d+)\]", out)
    assert found, out
    largest = int(found[1])
    assert (int(found[2]), int(found[3])) == (largest, largest + 1), found[0]  # one point more across: a fast DCT
    step = _figure(r"predicted step \(bandwidth bound\): ([\d.]+ ms) on h100", out)
    wall = _figure(r"  predicted: 120000 steps x [\d.]+ ms = ([\d.]+ (?:s|min|h|d)) wall", out)
    shape = f"{largest}, {largest}, {largest + 1}"
    for page, text, grid in (("header", header, f"[{shape}]"), ("tutorial", tutorial, shape.replace(", ", " \\times ")),
                             ("explanation", explanation, shape.replace(", ", " \\times "))):
        assert f"a peak of {peak}" in text and grid in text, (page, peak, grid)
    for page, text in (("header", header), ("tutorial", tutorial)):
        assert per_cell in text and f"{step} a step on an" in text and wall in text, (page, per_cell, step, wall)


def test_a_plan_far_past_a_device_is_planned_from_a_coarser_grid_in_bounded_memory():
    """A channel plane of 65536 x 65537 points: its plan built a dense 65537^2 matrix for the plates' quadrature
    weights (32 GiB: ArrayMemoryError) and would have traced its transforms in thousands of pieces. Its state alone
    is past the 1 GB given, so it is planned from a coarser grid of its aspect on the same device, memory and
    traffic scaled by cells, and does not fit (exit 3), in a process held to 16 GB of address space."""
    held = (f"import resource, runpy; resource.setrlimit(resource.RLIMIT_AS, ({16 * 2**30}, {16 * 2**30})); "
            "runpy.run_module('simulator', run_name='__main__', alter_sys=True)")
    done = subprocess.run([sys.executable, "-c", held, "plan", str(CONFIGS / "channel_poiseuille.yaml"),
                           "--set", "grid.shape=[65536, 65537]", "--memory", "1GB"], capture_output=True, text=True,
                          timeout=400, check=False, cwd=ROOT)
    out = done.stdout
    assert done.returncode == 3, done.stderr[-2000:]
    coarse = _figure(r"compiled without allocating as grid \[1, (\d+), \d+\] on the same mesh \(this grid's state "
                     r"alone is past a device", out)
    assert 65536 % int(coarse) == 0 and int(coarse) < 65536, out
    assert "DOES NOT FIT" in out and "Traceback" not in done.stderr
    per_cell = float(_figure(r"peak .* = ([\d.]+) bytes per cell over all devices", out))
    value, unit = _figure(r"peak ([\d.]+ [KMGTPE]iB) = ", out).split()
    peak = float(value) * 2 ** (10 * ("KMGTPE".index(unit[0]) + 1))
    assert 100 < per_cell < 5000 and abs(peak / (per_cell * 65536 * 65537) - 1) < 0.01, out  # the grid's, scaled


def test_a_walled_chunk_on_cpus_compiles_with_xlas_older_emitters_and_is_planned_as_it_runs():
    """The chunk of a run between no-slip plates on CPUs takes XLA's older CPU fusion emitters (quicker to compile
    and to step there: simulator.time.integrators.FUSION_EMITTERS), a free-slip or periodic run's XLA's own; the
    planner's footprint compile keeps the chunk's choice, where the suite's XLA_FLAGS choose the older emitters for
    every program and the planner puts XLA's own back for the others, so that the planned chunk holds the bytes the
    run's compiled chunk holds (at 64 x 65 they differ by 4%: the check can fail)."""
    import jax

    from simulator.planning.plan import compiled_programs, footprint_options, program_bytes
    from simulator.run.simulation import Simulation
    from simulator.run.states import abstract_state
    from simulator.time.integrators import FUSION_EMITTERS

    one = jax.devices("cpu")[:1]
    walled = Simulation.from_config(CONFIGS / "convection_2d_noslip.yaml", ["grid.shape=[64, 65]"], devices=one)
    assert walled.chunk_options[FUSION_EMITTERS] is False
    for config in ("convection_2d", "double_shear_layer"):
        other = Simulation.from_config(CONFIGS / f"{config}.yaml", ["grid.shape=[64, 64]"], devices=one)
        assert FUSION_EMITTERS not in other.chunk_options, config
    assert footprint_options(walled.chunk_options)[FUSION_EMITTERS] is False
    assert footprint_options().get(FUSION_EMITTERS, True) is True
    state = abstract_state(walled)
    planned = program_bytes(compiled_programs(walled, state, ["chunk"])["chunk"])
    scalar = jax.ShapeDtypeStruct((), walled.dtype, sharding=walled.scalar_sharding)
    lowered = walled.lower("chunk", state, scalar, scalar)
    ran = program_bytes(lowered.compile())
    others = program_bytes(lowered.compile({FUSION_EMITTERS: True}))
    assert planned == ran, (planned, ran)
    print(f"the no-slip plane's chunk at 64 x 65: {ran} bytes, with XLA's own emitters {others}")
