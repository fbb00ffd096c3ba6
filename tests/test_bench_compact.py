"""scripts/bench_compact.py at a toy size: a row per layout, the full layout the baseline of the ratios, and the
compact layout's figures below the full one's (about 7 s of CPU: two plans of 8^3 on a slab of 2)."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[1] / "scripts" / "bench_compact.py"


def test_the_compact_benchmark_writes_both_layouts_and_their_ratios(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--parts", "memory", "--sizes", "8", "--schemes",
                           "lsrk4:float32", "--meshes", "slab:2", "--config", "defaults", "--out", str(tmp_path)],
                          check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["layout"]: r for r in json.loads((tmp_path / "compact.json").read_text())["rows"]}
    assert set(rows) == {"full", "compact"}
    full, compact = rows["full"], rows["compact"]
    assert full["chunk_B_ratio"] == full["a2a_bytes_ratio"] == 1.0
    assert compact["spectrum"] == "compact 5x5x4" and full["spectrum"] == "half spectrum"
    assert compact["chunk_B_per_cell"] < full["chunk_B_per_cell"] and compact["a2a_bytes_ratio"] < 1
    assert compact["chunk_B_ratio"] == compact["chunk_B_per_cell"] / full["chunk_B_per_cell"]
