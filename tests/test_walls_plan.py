"""``simulator plan`` of a run between plates: memory per cell and the largest grid one 80 GB GPU holds, for each
convection equation's shipped config (the free-slip plane and box, the no-slip plane)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.fft.bases import fft_friendly

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.mark.parametrize("config, aspect", [("convection_2d", (4, 1)), ("convection_3d", (2, 2, 1)),
                                            ("convection_2d_noslip", (4, 1))])
def test_plan_of_a_walled_run_gives_its_bytes_per_cell_and_what_an_80_gb_gpu_holds(config, aspect):
    """Planned for one 80 GB GPU (compiled by the GPU compiler where JAX's CUDA plug-in is installed, else for this
    CPU): it fits, the plan names the plates' series, its peak memory in bytes per cell, and the largest grid of the
    config's aspect that the device holds, past the config's own grid; between no-slip plates one point more across,
    so that the Chebyshev transform's 2 (N - 1) is FFT-friendly, and a line saying whether the config's count across
    transforms fast and which count near it does."""
    # a process of its own: the suite's JAX already holds 8 CPU devices, and a plan for one device sets its own
    done = subprocess.run([sys.executable, "-m", "simulator", "plan", str(CONFIGS / f"{config}.yaml"),
                           "--platform", "gpu", "--memory", "80GB", "--devices", "1"], capture_output=True, text=True,
                          timeout=300, check=False)
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
