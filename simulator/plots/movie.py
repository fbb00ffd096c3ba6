"""A movie of one field of a run (``simulator animate RUN_DIR``, :func:`animate`; no JAX): the slice of every
complete snapshot, drawn as ``slice.png`` is (:func:`simulator.plots.slices.frame_builders`: the same panels,
with the colour limits of the whole series), one frame per snapshot.

An MP4 (H.264, yuv420p, which every player reads) when ``ffmpeg`` is on PATH, the frames piped to it raw, none
written as files; otherwise an animated GIF through Pillow, which matplotlib already needs, so a fresh machine
makes a movie without installing anything. The movie is written beside its final name and renamed once
complete, so an interrupted one never stands as a finished file.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from simulator import equations
from simulator.equations.stored import parameters_of
from simulator.errors import ConfigError
from simulator.output.hdf5 import OutputWriteError, describe_os_error
from simulator.output.runconfig import CONFIG_FILE, load_run_config
from simulator.plots.figures import default_style, note
from simulator.plots.run import slice_choice
from simulator.plots.slices import frame_builders

#: the movie formats, the first the one made when ffmpeg is on PATH
FORMATS = ("mp4", "gif")
#: frames per second unless asked
DEFAULT_FPS = 10.0


def movie_format(asked: str | None, out: Path | None) -> str:
    """The format of the movie: ``asked`` (``--format``), else the suffix of ``out`` (``--out``), else MP4 where
    ffmpeg is on PATH and GIF otherwise. ConfigError for an unknown format, a suffix that is not the format's,
    or an MP4 without ffmpeg."""
    suffix = out.suffix.lstrip(".").lower() if out is not None else ""
    if asked is not None and asked not in FORMATS:
        raise ConfigError("--format", asked, f"choose {' or '.join(FORMATS)}", "is not a movie format")
    if out is not None and suffix not in FORMATS:
        raise ConfigError("--out", str(out), "end the name in .mp4 or .gif", "is not a movie file")
    if asked is not None and out is not None and suffix != asked:
        raise ConfigError("--out", str(out), f"end the name in .{asked}, or leave --format out",
                          f"is not a {asked} file")
    chosen = asked or suffix or (FORMATS[0] if shutil.which("ffmpeg") else "gif")
    if chosen == "mp4" and not shutil.which("ffmpeg"):
        raise ConfigError("--format" if asked else "--out", asked or str(out),
                          "gif, or install ffmpeg (scripts/setup.sh does, as root)", "needs ffmpeg on PATH")
    return chosen


def rgb(fig: Figure) -> np.ndarray:
    """The pixels of ``fig`` as drawn on an Agg canvas at its own dpi: uint8 array (height, width, 3)."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


def _images(frames: list[Callable[[], Figure]]) -> Iterator[np.ndarray]:
    """Each frame drawn in turn, so that one frame's pixels are held at a time (the GIF writer keeps its own)."""
    for build in frames:
        yield rgb(build())


def _write_gif(frames: list[Callable[[], Figure]], path: Path, fps: float) -> None:
    from PIL import Image

    images = (Image.fromarray(pixels) for pixels in _images(frames))
    first = next(images)
    # duration in ms per frame; loop=0: played over and over, as a movie in a page is
    first.save(path, format="GIF", save_all=True, append_images=images, duration=round(1000 / fps), loop=0)


def _write_mp4(frames: list[Callable[[], Figure]], path: Path, fps: float) -> None:
    images = _images(frames)
    first = next(images)
    height, width = first.shape[:2]
    command = ["ffmpeg", "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{width}x{height}",
               "-framerate", f"{fps:g}", "-i", "-", "-an", "-vcodec", "libx264", "-pix_fmt", "yuv420p",
               # yuv420p needs even sizes: a figure of odd pixels loses its last row or column
               "-vf", "crop=trunc(iw/2)*2:trunc(ih/2)*2", "-f", "mp4", str(path)]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdin is not None
        try:
            for pixels in (first, *images):
                proc.stdin.write(pixels.tobytes())
        except BrokenPipeError:  # ffmpeg stopped: its own words below
            pass
        finally:
            proc.stdin.close()
        error = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
    if proc.returncode:
        raise OutputWriteError(f"ffmpeg could not write {path}: {error.splitlines()[-1] if error else 'no reason'}")


@default_style
def animate(run_dir: Path, *, field: str | None = None, axis: str = "z", fps: float = DEFAULT_FPS,
            movie: str | None = None, out: Path | None = None, tell: Callable[[str], None] = note) -> Path:
    """Write the movie of ``field`` (default: the equation's slice field, as ``simulator plot``) on the mid-plane
    normal to ``axis`` of every complete snapshot of ``run_dir``, at ``fps`` frames per second, and return its
    path: ``out``, else ``RUN_DIR/plots/slice.<format>`` (``slice_<field>.<format>`` for a field asked for by
    name, as the slice figures are named). ``movie``: ``"mp4"`` or ``"gif"`` (default: :func:`movie_format`).

    Every check comes before anything is written: ConfigError for a missing run, an unknown field or axis, a
    frame rate that is not positive or a format that cannot be made; MissingOutputError without a complete
    snapshot; OutputWriteError naming the file when it cannot be written."""
    config = load_run_config(run_dir, sweeps=False)
    info = equations.get(config["physics"]["name"])
    parameters_of(info, config, str(run_dir / CONFIG_FILE))  # its physics labels every frame: before any is drawn
    field, index, stem = slice_choice(run_dir, info, field, axis)
    if not fps > 0 or fps == float("inf"):
        raise ConfigError("--fps", fps, "give a positive number of frames per second", "is not a frame rate")
    movie = movie_format(movie, out)
    path = out if out is not None else run_dir / "plots" / f"{stem}.{movie}"
    frames = frame_builders(run_dir, config, info, field, index, tell)
    partial_path = path.with_name(f".{path.name}.part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        (_write_mp4 if movie == "mp4" else _write_gif)(frames, partial_path, fps)
        partial_path.replace(path)
    except OSError as err:
        raise OutputWriteError(f"writing {err.filename or path} failed: {describe_os_error(err)}") from err
    finally:
        with contextlib.suppress(OSError):  # no part was written where its folder could not be made
            partial_path.unlink(missing_ok=True)
    return path
