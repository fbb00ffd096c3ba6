#!/usr/bin/env bash
# A headless ParaView for the test suite (tests/test_paraview.py) and for checking snapshots by hand:
# Debian's paraview and python3-paraview (ParaView 5.11: pvpython and pvbatch, which run without a
# display). Installs them when pvpython is missing; needs root and apt then. Prints pvpython's path.
#
#   bash scripts/paraview_local.sh        # install if needed (about 45 s, 440 MB), print pvpython's path
#
# --no-install-recommends keeps out the documentation and the MPI launcher; python3-paraview (only a
# recommendation of paraview) is what pvpython imports paraview.simple from.
set -euo pipefail

die() { echo "paraview_local: $*" >&2; exit 1; }

if ! command -v pvpython >/dev/null; then
    [ "$(id -u)" = 0 ] || die "ParaView (pvpython) is not installed and installing it needs root"
    command -v apt-get >/dev/null || die "ParaView (pvpython) is not installed and there is no apt-get to install it"
    echo "paraview_local: installing paraview python3-paraview (apt)" >&2
    export DEBIAN_FRONTEND=noninteractive
    flock /run/simulator-apt.lock apt-get -o DPkg::Lock::Timeout=900 update -qq >/dev/null
    flock /run/simulator-apt.lock apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends paraview python3-paraview >/dev/null 2>&1 \
        || die "apt-get install of paraview python3-paraview failed"
    command -v pvpython >/dev/null || die "paraview is installed but pvpython is not on PATH"
fi
command -v pvpython
