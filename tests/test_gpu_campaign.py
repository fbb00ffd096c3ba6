"""The GPU campaign (scripts/gpu_campaign.sh) in its dry mode: every stage runs on virtual CPU devices at
toy sizes and lands in the report, so the script cannot rot between the GPUs that run it for real."""

import json
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[1]
STAGES = ["environment", "fft-check", "equations", "gradients", "bench-fft", "bench-step", "largest-grid",
          "taylor-green"]


@pytest.mark.slow
def test_the_dry_campaign_runs_every_stage_and_writes_its_report(tmp_path):
    out = tmp_path / "gpu"
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_campaign.sh"), "--dry-run", "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    report = json.loads((out / "report.json").read_text())
    stages = {s["name"]: s for s in report["stages"]}
    assert list(stages) == STAGES and report["dry_run"] is True
    failed = {name: s.get("summary") for name, s in stages.items() if s["status"] != "ok"}
    assert done.returncode == 0 and not failed, (failed, done.stdout[-3000:], done.stderr[-3000:])
    # the equality check that carries the CPU suite's verification over to the device: 1 vs 2 devices here
    assert all(r["relative_difference"] <= 1e-9 for r in stages["equations"]["rows"])
    assert stages["largest-grid"]["ran_at"] <= stages["largest-grid"]["predicted_largest"]
    assert abs(stages["largest-grid"]["energy"] / 0.125 - 1) < 1e-3  # the run at that grid is right, too
    assert (out / "bench-step" / "navier_stokes" / "step.json").is_file()
    assert "| taylor-green | ok |" in (out / "report.md").read_text()


def test_the_equations_stage_runs_only_the_configs_asked_for_and_names_an_unknown_one(tmp_path):
    """``--configs`` splits the equations stage between campaigns that share one lease."""
    def campaign(out: Path, *configs: str) -> dict:
        subprocess.run(["bash", str(ROOT / "scripts" / "gpu_campaign.sh"), "--dry-run", "--stages", "equations",
                        "--configs", *configs, "--out", str(out)], capture_output=True, text=True, timeout=600)
        return json.loads((out / "report.json").read_text())["stages"][0]

    stage = campaign(tmp_path / "one", "jeans")
    assert stage["status"] == "ok" and [r["config"] for r in stage["rows"]] == ["jeans"]
    bad = campaign(tmp_path / "bad", "jeans", "nope")
    assert bad["status"] == "failed" and "nope not shipped" in bad["summary"] and "allowed: abc," in bad["summary"]


def test_the_equations_stage_adds_what_set_says_to_every_run(tmp_path):
    """``--set`` carries particles into a shipped config's runs: a plane's tracers and drops on the device against the
    CPU (their positions are in the checkpoints compared)."""
    species = "particles=[{name: t, count: 16, interpolation: lagrange4}, {name: d, count: 16, tau_p: 0.1}]"
    subprocess.run(["bash", str(ROOT / "scripts" / "gpu_campaign.sh"), "--dry-run", "--stages", "equations",
                    "--configs", "forced_2d", "--set", species, "--out", str(tmp_path)],
                   capture_output=True, text=True, timeout=600)
    stage = json.loads((tmp_path / "report.json").read_text())["stages"][0]
    assert stage["status"] == "ok", stage
    for where in ("cpu", "device"):
        stored = yaml.safe_load((tmp_path / "equations" / f"forced_2d-{where}" / "config.yaml").read_text())
        assert [s["name"] for s in stored["config"]["particles"]] == ["t", "d"], where


def test_a_stage_is_summed_up_by_its_result_not_by_jax_s_notes_or_the_runtime_s_log():
    """A stage's summary in the report is the line that says how it ended. JAX ends a traceback with a note
    that it removed its frames, and a report that showed only that note (as one H100 lease's did) named no
    cause. XLA's GPU allocator logs its statistics at a process's exit when other processes hold the GPU's
    memory, and a gradient stage that recovered its viscosity was once summed up by one of those lines."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_campaign", ROOT / "scripts" / "gpu_campaign.py")
    campaign = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(campaign)
    text = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
            "ModuleNotFoundError: No module named 'jaxdecomp'\n"
            "--------------------\n"
            "For simplicity, JAX has removed its internal frames from the traceback of the following exception. "
            "Set JAX_TRACEBACK_FILTERING=off to include these.\n")
    assert campaign.last_line(text) == "ModuleNotFoundError: No module named 'jaxdecomp'"
    assert campaign.last_line("") == "no output"
    recovered = ("iteration 10: nu = 0.01, misfit = 3.061e-29\n"
                 "recovered nu = 0.01 (true 0.01, relative error 1.8e-13) in 10 iterations\n"
                 "E1127 02:13:44.600055    1564 gpu_cudamallocasync_allocator.cc:366] gpu_async_0 cuMemAllocAsync "
                 "failed to allocate 80766617815 bytes\n"
                 "InUse:                              0B\n"
                 "E1127 02:13:44.600130    1564 gpu_cudamallocasync_allocator.cc:109] "
                 "CU_MEMPOOL_ATTR_USED_MEM_HIGH: 0\n")
    assert campaign.last_line(recovered[:recovered.index("InUse")]).startswith("recovered nu = 0.01")
    assert campaign.recovered(recovered).startswith("recovered nu = 0.01 (true 0.01, relative error 1.8e-13)")
