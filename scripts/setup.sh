#!/usr/bin/env bash
# Set up the project on a machine with only Python >= 3.11: a virtual environment in .venv with the
# package (editable), its test extra and its docs extra (the site's generator, which the tests build).
# Does nothing when .venv is already up to date with pyproject.toml, setup.py and the native FFT's
# source, so it is cheap to put in front of every command.
#
# The CPU fast path (FFTW behind an XLA custom call, simulator/fft/local.py) needs FFTW's headers and
# a C++ compiler: as root on a Debian-like machine this installs libfftw3-dev when fftw3.h is missing;
# otherwise it says so in one line and the package falls back to XLA's FFT. Chromium likewise (below).
set -euo pipefail
# the warnings filter (python -W) of setuptools' note on editable installs (pip reports it as a BuildBackendWarning,
# a UserWarning; its module cannot be named in -W, which is read before site-packages is on the path)
EDITABLE_NOTE="ignore:Editable installation.:UserWarning"
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "error: $PY is missing or older than Python 3.11; set PYTHON=/path/to/python3.11+" >&2
    exit 2
fi
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $("$PY" --version)"
    "$PY" -m venv .venv
fi

fftw_header() {  # can the C++ compiler include fftw3.h?
    echo '#include <fftw3.h>' | ${CXX:-c++} ${FFTW_DIR:+-I"$FFTW_DIR/include"} -E -x c++ - >/dev/null 2>&1
}
if ! command -v "${CXX:-c++}" >/dev/null 2>&1; then
    echo "setup: no C++ compiler (${CXX:-c++}): the local FFTs will use XLA's FFT, not FFTW"
elif ! fftw_header; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing FFTW (apt-get install libfftw3-dev) for the native CPU FFT"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq libfftw3-dev >/dev/null 2>&1 \
            || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq libfftw3-dev >/dev/null 2>&1; } \
            || echo "setup: apt-get install libfftw3-dev failed: the local FFTs will use XLA's FFT, not FFTW"
    else
        echo "setup: fftw3.h not found and not installable here (needs root and apt-get; or set FFTW_DIR):" \
             "the local FFTs will use XLA's FFT, not FFTW"
    fi
fi

# The documentation's tests look at the built site in headless Chromium (tests/chromium.py): as root on a
# Debian-like machine this installs Debian's chromium when no Chromium is on PATH (about 300 MB, half a
# minute); otherwise those tests skip and say why. Never asks for sudo.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-headless-shell >/dev/null 2>&1 \
        && ! command -v google-chrome >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing Chromium (apt-get install chromium) for the documentation's screenshots"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq chromium >/dev/null 2>&1 \
            || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } \
            || echo "setup: apt-get install chromium failed: the site's screenshot tests will skip"
    else
        echo "setup: no Chromium on PATH and not installable here (needs root and apt-get):" \
             "the site's screenshot tests will skip"
    fi
fi

# `simulator animate` writes an MP4 through ffmpeg when it is on PATH, else an animated GIF (Pillow): as root on
# a Debian-like machine this installs ffmpeg when it is missing; otherwise it says so in one line. No test needs it.
if ! command -v ffmpeg >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing ffmpeg (apt-get install ffmpeg) for simulator animate's MP4 movies"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq --no-install-recommends ffmpeg >/dev/null 2>&1 \
            || { apt-get update -qq >/dev/null 2>&1 \
                 && apt-get install -y -qq --no-install-recommends ffmpeg >/dev/null 2>&1; } \
            || echo "setup: apt-get install ffmpeg failed: simulator animate will write GIFs, not MP4s"
    else
        echo "setup: no ffmpeg on PATH and not installable here (needs root and apt-get):" \
             "simulator animate will write GIFs, not MP4s"
    fi
fi

# a change to the build (pyproject.toml, setup.py, the native source) or to FFTW's presence reinstalls
have_fftw=$(fftw_header && echo fftw || echo nofftw)
stamp=".venv/.installed-$(cat pyproject.toml setup.py simulator/fft/native/* | sha256sum | cut -c1-16)-$have_fftw"
if [ ! -f "$stamp" ]; then
    echo "setup: installing the simulator and its dependencies into .venv (about 1 GB: about 2 minutes on a quiet" \
         "2-core machine with a fast network, 6 on a loaded one)"
    .venv/bin/python -m pip install --quiet --upgrade pip
    # The native FFT compiles against jaxlib's XLA FFI headers: install the build requirements (jaxlib
    # among them) first, then build without isolation, against the jaxlib the package will run with.
    build_requires=$(.venv/bin/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')
    mapfile -t build_requires <<< "$build_requires"
    .venv/bin/python -m pip install --quiet "${build_requires[@]}"
    # setuptools' note on every editable install ("Editable installation. ... folders in your working directory
    # with the same name as your package ...", nine lines that pip shows as a BuildBackendWarning) says nothing
    # to act on here: that one warning is silenced, every other one of the build shows
    .venv/bin/python -W "$EDITABLE_NOTE" -m pip install --quiet --no-build-isolation -e '.[test,docs]'
    rm -f .venv/.installed-*
    touch "$stamp"
    .venv/bin/python -c 'from simulator.fft.local import native; m, why = native()
print("setup: local FFT: " + (f"fftw ({m.version()})" if m else f"xla ({why})"))'
fi

# The package is installed editable, so pip compiled none of its modules, and a shell with
# PYTHONDONTWRITEBYTECODE set never writes them: every process (each `simulator run`, each of the suite's
# hundreds) would compile the whole package from source again (a quarter of a second on 2 cores).
# compileall writes only what is missing or stale.
.venv/bin/python -m compileall -q -j 0 simulator

# Material for MkDocs prints a banner on its end of life at the head of every `mkdocs build` and `serve`; it
# documents NO_MKDOCS_2_WARNING=1 as the way to turn it off. The venv's interpreter sets it for its processes
# (a .pth line runs at start-up), so `.venv/bin/mkdocs build` leads with the build's own lines.
quiet_docs='import os; os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")'
pth="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/simulator-docs-quiet.pth"
[ "$(cat "$pth" 2>/dev/null)" = "$quiet_docs" ] || echo "$quiet_docs" > "$pth"
