"""scripts/bench_layouts.py at a toy size: its rows are written, its pruned transform is checked equal to
FFTW's 3D plan before it is timed (where pyFFTW is installed; otherwise the script says it is not measured),
and its compact step is timed with a vector's inverse transforms stacked and one by one (FFTW's path)."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from simulator.fft import local

SCRIPT = Path(__file__).parents[1] / "scripts" / "bench_layouts.py"


def test_the_layout_benchmark_writes_a_row_per_kernel(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--sizes", "12", "--repeats", "2", "--inner", "2",
                           "--threads", "1", "--out", str(tmp_path)], check=False, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads((tmp_path / "layouts.json").read_text())["rows"]
    concat = [r for r in rows if r["part"] == "concat"]
    assert len(concat) == 2 * 3 and all(r["ms"] > 0 for r in concat)
    assert {r["vs_baseline"] for r in concat if r["kernel"] == "product a * b"} == {1.0}
    inverse = [r for r in rows if r["part"] == "inverse"]
    if local.native()[0] is None:
        assert not inverse and "inverse part not measured" in done.stdout
    else:
        assert [r["kernel"].split(", ")[-1] for r in inverse] == ["one by one", "stacked"] * 2
        assert all(r["ms"] > 0 and r["cpu_ms"] > 0 for r in inverse)
        assert {r["vs_baseline"] for r in inverse if r["kernel"].endswith("one by one")} == {1.0}
    pruned = [r for r in rows if r["part"] == "pruned"]
    if importlib.util.find_spec("pyfftw") is None:
        assert not pruned and "pruned part not measured: pyfftw is not installed" in done.stdout
    else:
        assert len(pruned) == 2 * 2 and all(r["relative_difference"] < 1e-5 for r in pruned)
