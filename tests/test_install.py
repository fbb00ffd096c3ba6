"""The project installed as people install it: ``pip install`` of a copy of the checkout into a fresh
virtual environment on a machine without a C++ compiler (so without the optional FFTW extension), then
the installed ``simulator`` command run from a directory outside the project with a clean environment.

No network: the new environment sees the running environment's packages (JAX and friends) through a
path file, the build runs without isolation against them, and pip never looks at an index. The copy
holds what a clone holds (no build/, no egg-info, no compiled extension of the checkout), so nothing
the checkout has built can stand in for what the install must produce.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
#: what a clone does not have (.gitignore's build outputs) or an install must not pick up
NOT_CLONED = shutil.ignore_patterns(".git", ".venv", "build", "site", "outputs", "*.egg-info", "__pycache__",
                                    ".pytest_cache", ".ruff_cache", "_fftw*.so", "_particles*.so")


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.mark.slow
def test_pip_install_into_a_fresh_venv_without_a_compiler_runs_on_xlas_fft(tmp_path):
    source, venv, elsewhere = tmp_path / "simulator-src", tmp_path / "venv", tmp_path / "elsewhere"
    shutil.copytree(ROOT, source, ignore=NOT_CLONED)
    elsewhere.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # the running environment's packages as plain path entries: its own .pth files (an editable install of
    # the checkout among them) are not processed, and the venv's site-packages comes first
    outer = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "outer-environment.pth").write_text("".join(f"{p}\n" for p in outer))

    # a clean environment: nothing points into the checkout, no FFT path forced, no compiler to be found
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "SIMULATOR_", "XLA_", "JAX_", "PIP_", "FFTW_")) and k != "VIRTUAL_ENV"}
    build_env = {**env, "CC": str(tmp_path / "no-compiler" / "cc"), "CXX": str(tmp_path / "no-compiler" / "c++"),
                 "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--no-cache-dir", str(source)], elsewhere, build_env, timeout=300)

    # the installed package is the venv's, whole: every module and data file of the checkout's package
    where = run([str(python), "-c", "import simulator; print(simulator.__file__)"], elsewhere, env).stdout.strip()
    package = Path(where).parent
    assert package.is_relative_to(venv) and not package.is_relative_to(ROOT), where
    wanted = {p.relative_to(ROOT / "simulator") for p in (ROOT / "simulator").rglob("*")
              if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".so" and "native" not in p.parts}
    installed = {p.relative_to(package) for p in package.rglob("*") if p.is_file()}
    assert wanted <= installed, sorted(map(str, wanted - installed))
    # no compiler: neither optional extension was built (the particles' kernels run on XLA's gather and scatter)
    assert not list(package.rglob("_fftw*.so")) and not list(package.rglob("_particles*.so"))

    simulator = str(venv / "bin" / "simulator")
    # the version's one source, simulator/version.py, is the installed package's metadata and what --version says
    version = re.search(r'^__version__ = "(.+)"$', (ROOT / "simulator" / "version.py").read_text(), re.M)[1]
    metadata = "from importlib.metadata import version; print(version('simulator'))"
    assert run([str(python), "-c", metadata], elsewhere, env).stdout.strip() == version
    assert run([simulator, "--version"], elsewhere, env).stdout.startswith(f"simulator {version} (jax ")

    check = run([simulator, "check", "--cpu-devices", "2", "--set", "grid.shape=16"], elsewhere, env).stdout
    lines = check.splitlines()
    assert lines[0].startswith("FFT self-check on 2 cpu device(s)"), check
    assert lines[1].startswith("local FFT: xla (native extension not built"), check
    rows = [line for line in lines[3:] if line.split()[:2] == ["slab", "2"]]
    assert len(rows) >= 2 and all(line.endswith(" ok") for line in rows), check

    info = run([simulator, "info", "--cpu-devices", "2"], elsewhere, env).stdout
    local = [line for line in info.splitlines() if line.startswith("local FFT:")]
    assert len(local) == 1 and local[0].split(":", 1)[1].strip().startswith("xla ("), info

    # the installed package carries the shipped configs (no checkout at hand): listed, and written out to a file
    # of the user's own, which runs from outside the project and writes where it is told
    listed = run([simulator, "configs"], elsewhere, env).stdout.split("\n")
    assert [line.split()[0] for line in listed if line] == sorted(p.stem for p in (ROOT / "configs").glob("*.yaml"))
    assert (package / "_configs").is_dir()
    text = run([simulator, "configs", "taylor_green"], elsewhere, env).stdout
    assert text == (ROOT / "configs" / "taylor_green.yaml").read_text()
    (elsewhere / "tg.yaml").write_text(text)
    missing = subprocess.run([simulator, "run", "taylor_gren.yaml"], cwd=elsewhere, env=env, capture_output=True,
                             text=True, timeout=120)
    assert missing.returncode == 2 and missing.stderr.rstrip().endswith(
        "(did you mean the shipped one, written out by: simulator configs taylor_green > taylor_green.yaml?)"), missing
    # and the Slurm job templates: listed, printed, and the sweep's submitted from a directory without slurm/
    listed = run([simulator, "slurm"], elsewhere, env).stdout.split("\n")
    assert [line.split()[0] for line in listed if line] == sorted(p.stem for p in (ROOT / "slurm").glob("*.sbatch"))
    assert run([simulator, "slurm", "sweep"], elsewhere, env).stdout == (ROOT / "slurm" / "sweep.sbatch").read_text()
    (elsewhere / "s.yaml").write_text("name: s\nbase: tg.yaml\ngrid:\n  physics.viscosity: [0.01, 0.05]\n")
    dry = run([simulator, "sweep", "s.yaml", "--out", "sw", "--submit", "--dry-run"], elsewhere, env).stdout
    assert f"job script: {package / '_slurm' / 'sweep.sbatch'} (the shipped sweep template: " in dry, dry
    assert dry.splitlines()[-1].endswith(f" {package / '_slurm' / 'sweep.sbatch'} sw"), dry
    run([simulator, "run", "tg.yaml", "--set", "grid.shape=16",
         "--set", "time.t_end=0.02", "--cpu-devices", "2", "--out", "r"], elsewhere, env)
    assert '"finished"' in (elsewhere / "r" / "status.json").read_text()


def test_setup_silences_setuptools_editable_note_and_no_other_build_warning():
    """scripts/setup.sh's pip runs with a warnings filter for setuptools' nine-line note on editable installs
    (a BuildBackendWarning, as pip reports the backend's warnings): that note is not shown, another backend
    warning still is."""
    import re

    setup = (ROOT / "scripts" / "setup.sh").read_text()
    note = re.search(r'^EDITABLE_NOTE="([^"]+)"$', setup, re.MULTILINE)
    assert note and '-W "$EDITABLE_NOTE" -m pip install' in setup
    code = ("import warnings\nfrom pip._vendor.pyproject_hooks import BuildBackendWarning\n"
            "for text in ('Editable installation.\\n!!\\n\\n  ****\\n  Please be careful with folders', "
            "'a backend warning to show'):\n"
            "    warnings.warn_explicit(message=text, category=BuildBackendWarning, filename='editable_wheel.py', "
            "lineno=354)\n")
    shown = subprocess.run([sys.executable, "-W", note[1], "-c", code], capture_output=True, text=True,
                           timeout=60, check=True).stderr
    assert "Invalid -W option" not in shown and "Editable installation" not in shown, shown
    assert "BuildBackendWarning: a backend warning to show" in shown, shown


def test_setup_turns_off_materials_end_of_life_banner_for_the_venvs_mkdocs(tmp_path):
    """scripts/setup.sh writes a .pth line into the venv that sets NO_MKDOCS_2_WARNING (Material's documented
    switch): an mkdocs process of the venv starts with it and loads the theme without the banner, which it
    prints without it (the check can fail)."""
    import re

    setup = (ROOT / "scripts" / "setup.sh").read_text()
    line = re.search(r"^quiet_docs='([^']+)'$", setup, re.MULTILINE)
    assert line and '/simulator-docs-quiet.pth"' in setup and 'echo "$quiet_docs" > "$pth"' in setup
    (tmp_path / "quiet.pth").write_text(line[1] + "\n")
    # the theme as mkdocs loads it (its module checks sys.argv[0] for mkdocs), the switch cleared first (this
    # venv's own .pth may have set it already)
    clear = "import os, sys; os.environ.pop('NO_MKDOCS_2_WARNING', None); sys.argv[0] = 'mkdocs'"
    load = "import material.templates"
    env = {k: v for k, v in os.environ.items() if "MKDOCS_2_WARNING" not in k}
    bare = subprocess.run([sys.executable, "-c", f"{clear}; {load}"], capture_output=True, text=True, env=env,
                          timeout=60)
    quiet = subprocess.run([sys.executable, "-c", f"{clear}; import site; site.addsitedir({str(tmp_path)!r}); {load}"],
                           capture_output=True, text=True, env=env, timeout=60)
    assert "end of life" in bare.stderr, bare.stderr  # a Material without the banner would leave this test moot
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
