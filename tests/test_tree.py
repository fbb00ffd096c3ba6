"""The repository as a reader clones it: no logs, outputs or caches tracked, and no file that speaks of how
the work was organised (its sittings, who did what) instead of the project's versions and dates."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]

#: what a run, a shell or Python leaves behind, never the project's: logs, run outputs, caches, compiled files
STRAY = re.compile(r"(^|/)(__pycache__|\.pytest_cache|\.ruff_cache|\.ipynb_checkpoints|site|build|dist)/"
                   r"|\.(log|pyc|pyo|so|o|egg-info)$|(^|/)nohup\.out$|(^|/)\.DS_Store$")
#: the data files a test or a script reads, in the folders documented for them (anything else of these kinds
#: tracked is a run's output left behind)
DATA = {".h5": ("tests/data/",), ".xdmf": ("tests/data/",), ".nc": ("tests/data/",), ".npz": ("tests/data/",),
        ".npy": ("tests/data/",), ".csv": ("tests/data/", "scripts/data/"), ".json": ("tests/data/",)}


def tracked() -> list[str]:
    """The files git tracks (``git ls-files``); skipped, saying why, outside a git checkout (an sdist)."""
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"not a git checkout ({done.stderr.strip()[:80]}): nothing tracked to check")
    return [f for f in done.stdout.split("\0") if f]


def stray(files: list[str]) -> list[str]:
    """The logs, outputs, caches and data out of place among ``files`` (paths relative to the checkout)."""
    found = [f for f in files if STRAY.search(f)]
    found += [f for f in files if f.startswith("outputs/") and f != "outputs/.gitignore"]
    found += [f for f in files if Path(f).suffix in DATA and not f.startswith(DATA[Path(f).suffix])]
    return sorted(set(found))


def test_the_tracked_tree_holds_no_logs_outputs_or_caches():
    """A shell error's ``ns.log`` was committed at the repository's root: the tracked tree holds no log, no
    run output (``outputs/`` keeps only its .gitignore), no cache or compiled file, and no HDF5, netCDF, NumPy,
    CSV or JSON file outside the documented data folders (tests/data/, scripts/data/)."""
    files = tracked()
    assert "README.md" in files and "outputs/.gitignore" in files, files[:10]
    assert not stray(files), stray(files)


def test_the_stray_file_check_finds_what_it_is_for():
    """The check itself: each kind of leftover is found, the project's own files and data are not."""
    leftovers = ["ns.log", "outputs/quickstart/run.log", "simulator/__pycache__/api.cpython-311.pyc",
                 "simulator/fft/_fftw.cpython-311-x86_64-linux-gnu.so", "spectra.h5", "docs/images/run.csv",
                 "site/index.html", ".pytest_cache/v/cache/lastfailed", "outputs/tg/timeseries.csv"]
    own = ["README.md", "outputs/.gitignore", "tests/data/legacy_v1/ns_run/spectra.h5",
           "scripts/data/tg_re1600_ref.csv", "docs/images/taylor_green_slice.png", "simulator/fft/native/fft.cc"]
    assert stray(leftovers + own) == sorted(leftovers)


#: how the work's organisation leaks into a file: its sittings by number (an ordinal or a number beside the word
#: session or sitting, the GPU's name between them or not), the helpers who did it, or a sitting as the current one.
#: A pytest or Slurm session is a different thing (``scope="session"``, ``pytest_sessionstart``, ``--session``) and is
#: not matched.
ORDINAL = (r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth"
           r"|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|thirtieth|fortieth"
           r"|(?:twenty|thirty|forty)-\w+|\d+(?:st|nd|rd|th))")
SITTINGS = re.compile(rf"\b{ORDINAL}\s+(?:(?:H100|H200|GPU|CPU|work)\s+)?(?:session|sitting)s?\b"
                      r"|\b(?:session|sitting)s?\s+\d+\b|\b(?:this|that|each|every|one|two|eight|earlier|later|"
                      r"previous|next|last)\s+(?:(?:H100|H200|GPU)\s+)?sittings?\b"
                      r"|\b(?:this|that|earlier|later|previous|next|last)\s+(?:(?:H100|H200|GPU)\s+)?session\b"
                      r"|\bsessions?\s+of\s+(?:the\s+)?work\b|\bhelpers?\s+(?:session|branch)\b"
                      r"|\bin\s+(?:eight|two|three|four|five|six|seven|nine|ten|\d+)\s+sessions\b", re.I)
#: files that are not the project's words: the tests' recorded data, images, the ruleset itself
TEXT = (".py", ".md", ".yaml", ".yml", ".toml", ".cfg", ".txt", ".sh", ".sbatch", ".ipynb", ".in", ".cc", ".h",
        ".js", ".css", "run")


def test_no_file_speaks_of_the_work_s_sittings():
    """The changelog had a heading per sitting of the work, numbered, and the performance page counted its
    measurements in sittings: the project speaks of its versions and dates. No tracked text file names a
    sitting by its number or as the current one (this file names them only in its patterns)."""
    found = []
    for rel in tracked():
        if not rel.endswith(TEXT) or rel == "tests/test_tree.py" or not (ROOT / rel).is_file():
            continue
        for number, line in enumerate((ROOT / rel).read_text(errors="replace").splitlines(), 1):
            if SITTINGS.search(line):
                found.append(f"{rel}:{number}: {SITTINGS.search(line)[0]}")
    assert not found, "\n".join(found[:40]) + f"\n({len(found)} in all)"


#: the word the pattern looks for, kept apart from the ordinals below so that no line of this file is an example
WORD = "session"


@pytest.mark.parametrize("line, matches", [
    (f"## Thirty-sixth {WORD}", True), (f"(2026-11-25, fourteenth {WORD})", True), (f"a second H100 {WORD}", True),
    (f"the 12th {WORD} found", True), (f"the README: this {WORD}'s CI", True), (f"in eight {WORD}s", True),
    ("@pytest.fixture(scope=\"session\")", False), ("def pytest_sessionstart(session):", False),
    ("an Slurm session of 2 nodes", False), ("the second step", False), (f"{WORD}s of the work", True)])
def test_the_sittings_pattern_finds_what_it_is_for(line, matches):
    assert bool(SITTINGS.search(line)) is matches, line


def test_the_changelog_is_kept_by_release():
    """CHANGELOG.md had a heading per sitting of the work, 1,130 lines, while the package stayed 0.1.0: it is kept by
    release as Keep a Changelog writes it, unreleased changes first, then each version with its date, newest first,
    each under Added, Changed, Deprecated, Removed, Fixed or Security."""
    text = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## (.+)$", text, re.M)
    assert releases and all(re.fullmatch(r"\[?Unreleased\]?|\[\d+\.\d+\.\d+\] - \d{4}-\d\d-\d\d", r) for r in releases)
    dated = [r for r in releases if r.startswith("[") and r != "[Unreleased]"]
    assert dated and dated == sorted(dated, key=lambda r: tuple(map(int, r[1:].split("]")[0].split("."))), reverse=True)
    assert set(re.findall(r"^### (.+)$", text, re.M)) <= {"Added", "Changed", "Deprecated", "Removed", "Fixed",
                                                          "Security"}
    assert not re.search(r"^#### ", text, re.M)


def test_the_tree_passes_the_linter():
    """pyproject.toml sets the line length (120) and the lint rules (pycodestyle, pyflakes, import order,
    bugbear); ``ruff check`` of the whole tree finds nothing (184 lines ran past 120 characters)."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]
    assert settings["line-length"] == 120 and {"E", "W", "F", "I", "B"} <= set(settings["lint"]["select"])
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True)
    if "No module named ruff" in done.stderr:
        pytest.skip("ruff is not installed (the docs extra of pyproject.toml installs it)")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
