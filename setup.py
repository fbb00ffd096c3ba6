"""Build of the optional native extensions: ``simulator.fft._fftw``, FFTW called by XLA as an FFI custom call, and
``simulator.fft._particles``, the particles' kernels (the windows' gather and scatter, simulator/fft/window.py;
the hand-over's rows, simulator/fft/owned.py), likewise.

The build also copies the run configs of ``configs/`` and the Slurm job templates of ``slurm/`` into the package
as ``simulator/_configs`` and ``simulator/_slurm``, so that an installed package carries them (``simulator
configs``, ``simulator slurm``; simulator/shipped.py); an editable install reads the source tree's in place. Everything
else about the package is declared in pyproject.toml. The extension is optional: when FFTW's headers or libraries
(Debian: ``libfftw3-dev``), a C++ compiler or jaxlib's XLA FFI headers are missing, the build is skipped or its failure
only warned about, the package installs, and the local FFTs run on XLA's own FFT instead (``simulator info`` says which
path runs and why; simulator/fft/local.py), the windows on XLA's gather and scatter (the particles' extension needs no
library).

``SIMULATOR_BUILD_NATIVE=0`` skips the extensions on purpose; ``FFTW_DIR=<prefix>`` uses an FFTW
installed under ``<prefix>/include`` and ``<prefix>/lib``. The XLA FFI headers come from the jaxlib
the build sees: scripts/setup.sh builds without isolation, against the jaxlib the package runs
with; a plain ``pip install .`` gets one through ``[build-system] requires``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py


def jaxlib_include() -> str | None:
    """jaxlib's header directory (the one ``jax.ffi.include_dir()`` returns), found without importing it."""
    spec = importlib.util.find_spec("jaxlib")
    for location in (spec.submodule_search_locations or []) if spec else []:
        include = Path(location) / "include"
        if (include / "xla" / "ffi" / "api" / "ffi.h").is_file():
            return str(include)
    return None


def x86_64_target() -> bool:
    """Whether the extensions are built for x86-64 alone: the platform the build targets (not the machine it runs
    on: a cross build, or a macOS universal2 or arm64 build on an Intel host, must not get x86 flags)."""
    target = sysconfig.get_platform().lower()
    arches = os.environ.get("ARCHFLAGS", "")
    return target.endswith(("x86_64", "amd64")) and "arm64" not in arches


def native_extensions() -> list[Extension]:
    if os.environ.get("SIMULATOR_BUILD_NATIVE", "1") == "0":
        print("setup.py: SIMULATOR_BUILD_NATIVE=0: not building the native FFT and windows")
        return []
    include = jaxlib_include()
    if include is None:
        print("setup.py: jaxlib's XLA FFI headers not found: not building the native FFT and windows")
        return []
    include_dirs, library_dirs = [include], []
    prefix = os.environ.get("FFTW_DIR")
    if prefix:
        include_dirs.append(os.path.join(prefix, "include"))
        library_dirs.append(os.path.join(prefix, "lib"))
    return [
        Extension(
            "simulator.fft._fftw",
            sources=["simulator/fft/native/fftw_ffi.cc"],
            include_dirs=include_dirs,
            library_dirs=library_dirs,
            runtime_library_dirs=library_dirs,
            libraries=["fftw3_threads", "fftw3", "fftw3f_threads", "fftw3f", "pthread", "m"],
            extra_compile_args=["-std=c++17", "-O2", "-fvisibility=hidden"],
            language="c++",
            optional=True,  # a failed build warns, and the package falls back to XLA's FFT
        ),
        Extension(
            "simulator.fft._particles",
            sources=["simulator/fft/native/particles_ffi.cc", "simulator/fft/native/handover_ffi.cc"],
            include_dirs=[include],
            libraries=["pthread"],
            # -O3: the interpolation's contraction 22% faster than at -O2 (64^3 CIC, float32, one thread);
            # -fno-trapping-math (no code here reads the floating-point exception flags) lets the stencils' loops
            # vectorise, and on x86-64 -mavx gives them the vector floor (jaxlib itself needs AVX: it refuses to
            # load without): docs/PERFORMANCE.md
            extra_compile_args=["-std=c++17", "-O3", "-fvisibility=hidden", "-fno-trapping-math",
                                *(["-mavx"] if x86_64_target() else [])],
            language="c++",
            optional=True,  # a failed build warns, and the particles' kernels fall back to XLA
        ),
    ]


#: what the build copies into the package: source folder, file pattern, the package's folder (simulator/shipped.py)
SHIPPED = (("configs", "*.yaml", "_configs"), ("slurm", "*.sbatch", "_slurm"))


class BuildPy(build_py):
    """The package's modules, plus ``configs/*.yaml`` copied to ``simulator/_configs`` and ``slurm/*.sbatch`` to
    ``simulator/_slurm`` (not for an editable install, which reads the source tree's folders)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for source, pattern, packaged in SHIPPED:
            target = Path(self.build_lib) / "simulator" / packaged
            target.mkdir(parents=True, exist_ok=True)
            for path in sorted((Path(__file__).resolve().parent / source).glob(pattern)):
                shutil.copyfile(path, target / path.name)


setup(ext_modules=native_extensions(), cmdclass={"build_py": BuildPy})
