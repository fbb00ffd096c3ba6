"""``simulator plot``, ``animate`` and ``export``: a run's figures, its movie, and its files in one netCDF file or
its snapshots merged."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from simulator.cli.common import output_path
from simulator.errors import ConfigError, counted
from simulator.run.signals import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from simulator import plots
    from simulator.output.hdf5 import OutputWriteError

    try:
        written = plots.plot(Path(args.run_dir), times=args.times, field=args.field, axis=args.axis,
                             frames=args.frames, pdf=args.pdf, diagnostic=args.diagnostic, against=args.against,
                             window=args.window, redshifts=args.redshifts)
    except OutputWriteError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAILED
    for path in written:
        print(path)
    for line in written.numbers:  # with --window: what each time-averaged figure states, after the files
        print(line)
    if written.skipped:  # each named above; the figures of the intact files are written
        print(f"some figures were skipped: {args.run_dir} has damaged files (exit status 1)", file=sys.stderr)
    return EXIT_OK if written and not written.skipped else EXIT_FAILED


def add_plot(sub: Any) -> None:
    p = sub.add_parser("plot", help="figures of a run (time series, spectra, slices) or of a collected sweep")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory, or a sweep directory (one holding sweep.yaml)")
    p.add_argument("--pdf", action="store_true", help="also write each figure as PDF (not the frames)")
    p.add_argument("--frames", action="store_true",
                   help="also write plots/frames/slice_NNNN.png, one per snapshot with common colour limits (a movie)")
    p.add_argument("--times", type=float, nargs="+", default=None, metavar="T",
                   help="spectra at the rows nearest these run times, within the run's rows (default: the rows of "
                   "output.spectra.times, else 5 from first to last); a cosmological run's time is ln(a/a_start), "
                   "so 0 is z_start: give --redshifts there")
    p.add_argument("--redshifts", type=float, nargs="+", default=None, metavar="Z",
                   help="cosmological runs: spectra at the rows nearest these redshifts, within the run's rows "
                   "(e.g. --redshifts 0 for today)")
    p.add_argument("--window", "--average", dest="window", type=float, nargs="+", default=None, metavar="T",
                   help="T0 [T1]: time window of the time-averaged figures, the compensated spectrum's mean, the "
                   "structure functions, the PDFs and the profiles' means, ends included, within the run's times (T1 "
                   "left out: the run's end; default: the second half of the run; --average is its older name); "
                   "with it, the time series draw the running means from T0 of the equation's averaged columns "
                   "(Nusselt numbers, Re_tau), and one line per time-averaged figure after the files states the "
                   "means with their standard errors (batch means of 10 blocks)")
    p.add_argument("--field", default=None, metavar="NAME",
                   help="snapshot field the slice shows (default: the equation's plot.slice_field: vorticity, "
                   "density, current, buoyancy, ...; `scalar` shows the first passive scalars, one panel each)")
    p.add_argument("--axis", choices=("x", "y", "z"), default="z", help="normal of the slice plane (default: z)")
    p.add_argument("--diagnostic", default=None, metavar="NAME",
                   help="sweep: the collected column, final_X, peak_X or X (= final_X) (default: peak_dissipation, "
                   "peak_ohmic_dissipation (MHD) or peak_max_density, else the first final_ column)")
    p.add_argument("--against", default=None, metavar="KEY",
                   help="sweep: the swept key on the x axis (default: the first)")
    p.set_defaults(func=cmd_plot)


def cmd_animate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from simulator.output.hdf5 import OutputWriteError
    from simulator.plots.figures import MissingOutputError
    from simulator.plots.movie import animate

    out = output_path("--out", args.out) if args.out else None
    try:
        path = animate(Path(args.run_dir), field=args.field, axis=args.axis, movie=args.format,
                       out=out, **({} if args.fps is None else {"fps": args.fps}))
    except MissingOutputError as err:
        raise ConfigError("RUN_DIR", args.run_dir, "animate a run that wrote snapshots",
                          f"has no movie: {err}") from None
    except OutputWriteError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAILED
    print(path)
    return EXIT_OK


def add_animate(sub: Any) -> None:
    p = sub.add_parser("animate", help="a movie of one field of a run: the slice of every snapshot, drawn as "
                       "plots/slice.png is (MP4 with ffmpeg on PATH, else an animated GIF)")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory")
    p.add_argument("--field", default=None, metavar="NAME",
                   help="snapshot field the movie shows (default: the equation's slice field, as simulator plot)")
    p.add_argument("--axis", default="z", metavar="{x,y,z}", help="normal of the slice plane (default: z)")
    p.add_argument("--fps", type=float, default=None, metavar="N",
                   help="frames per second (default: 10); one frame per snapshot")
    p.add_argument("--format", default=None, metavar="{mp4,gif}",
                   help="mp4 (needs ffmpeg on PATH) or gif (default: mp4 where ffmpeg is on PATH, else gif)")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="the movie file, ending in .mp4 or .gif (default: RUN_DIR/plots/slice.FORMAT, "
                   "slice_FIELD.FORMAT for --field)")
    p.set_defaults(func=cmd_animate)


def cmd_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from simulator.output.hdf5 import OutputWriteError
    from simulator.planning.cost import human_bytes, parse_bytes
    from simulator.results import export

    try:
        max_size = parse_bytes(args.max_size)
    except (ValueError, OverflowError):
        raise ConfigError("--max-size", args.max_size, "give a size such as 8GiB or 500MB", "is not a size") from None
    if args.fields and args.merge and not args.netcdf:
        raise ConfigError("--fields", " ".join(args.fields), "add --netcdf FILE: --merge copies every field",
                          "applies to the netCDF file only")
    run_dir = Path(args.run_dir)
    path = output_path("--netcdf", args.netcdf) if args.netcdf else None
    netcdf: export.NetcdfPlan | None = None
    merge: export.MergePlan | None = None
    stop = _StopOnSignal()
    try:
        with stop:
            # every refusal comes before anything is written: both plans first
            netcdf = (export.plan_netcdf(run_dir, path, fields=args.fields,
                                         max_size=max_size, overwrite=args.overwrite)
                      if args.netcdf or not args.merge else None)
            merge = export.plan_merge(run_dir, overwrite=args.overwrite) if args.merge else None
            written = export.write_merge(merge) if merge else []
            if netcdf:
                written.append(export.write_netcdf(netcdf))
    except BaseException as err:
        if stop.signal:  # whatever the signal unwound through, the writers removed their temporary files
            target = netcdf.path if netcdf else run_dir / "snapshots" / export.MERGED if merge else run_dir
            print(f"error: {stop.signal} stopped the export before {target} was complete; no partial file is left "
                  "and an earlier export there is kept: run the command again", file=sys.stderr)
            return EXIT_INTERRUPTED
        if isinstance(err, OutputWriteError):
            print(f"error: {err}", file=sys.stderr)
            return EXIT_FAILED
        if isinstance(err, ConfigError) and err.key == "--max-size":  # as given (10KB), with what it counts (10 KiB)
            raise ConfigError(err.key, args.max_size, err.allowed,
                              f"({human_bytes(max_size)}) {err.problem}") from None
        raise
    for path in written:
        print(path)
    for line in written.numbers:  # with --window: what each time-averaged figure states, after the files
        print(line)
    if netcdf:
        print(f"{netcdf.path}: {counted(len(netcdf.run.output('snapshots')) if netcdf.fields else 0, 'snapshot')} of "
              f"{', '.join(netcdf.fields) or 'no field'}{'; ' + ', '.join(netcdf.groups) if netcdf.groups else ''}; "
              f"{human_bytes(netcdf.size)}", file=sys.stderr)
        if netcdf.left_out:
            print(f"{netcdf.path} leaves out: {'; '.join(netcdf.left_out)}", file=sys.stderr)
    return EXIT_OK


def add_export(sub: Any) -> None:
    p = sub.add_parser("export", help="a run's snapshots, spectra, time series, statistics, tasks and particles in "
                       "one netCDF file; or its snapshots' shards merged into self-contained HDF5 files")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory")
    p.add_argument("--netcdf", default=None, metavar="FILE",
                   help="the netCDF file (default: RUN_DIR/export/run.nc; written unless only --merge is given)")
    p.add_argument("--fields", nargs="+", default=None, metavar="NAME",
                   help="the snapshot fields of the netCDF file (default: every field of every snapshot)")
    p.add_argument("--merge", action="store_true",
                   help="write RUN_DIR/snapshots/merged/sNNNNNNNN.h5 (+ .xdmf, series.xdmf): each snapshot in one "
                   "file, the shards copied in (the shards and the index stay)")
    p.add_argument("--max-size", default="8GiB", metavar="SIZE",
                   help="refuse a netCDF file larger than this (default: 8GiB; KB, MB and GB count in 1024s, as KiB, "
                   "MiB and GiB); statistics, tasks and particles that do not fit are left out, named in one line")
    p.add_argument("--overwrite", action="store_true", help="replace an existing export")
    p.set_defaults(func=cmd_export)


class _Stopped(BaseException):
    """Raised by :class:`_StopOnSignal`: unwinds a write (not an Exception, so no ``except Exception`` stops it)."""


class _StopOnSignal:
    """SIGTERM, SIGUSR1 or SIGINT during a command that writes files (``export``) end it at once, by raising
    :class:`_Stopped` where it is, so that its writers remove their temporary files on the way out; later
    signals are ignored until then, so the clean-up is not cut short. ``signal``: the name of the first.

    Python cannot raise out of every place a signal may land: where the handler runs inside a weakref callback
    or a ``__del__``, Python prints "Exception ignored in ..." and goes on (the export ran to its end, exit 0).
    Such a stop is caught by ``sys.unraisablehook`` and raised again at the next Python call the process makes
    (a trace function, as ``pdb`` stops a program), once out of the callback."""

    def __init__(self) -> None:
        self.signal: str | None = None
        self._previous: dict[int, Any] = {}
        self._hook: Any = None
        self._tracer: Any = None

    def _stop(self, signum: int, _frame: Any) -> None:
        import signal

        if self.signal is None:
            self.signal = signal.Signals(signum).name
            raise _Stopped(self.signal)

    def _unraisable(self, unraisable: Any) -> None:
        import sys

        if not isinstance(unraisable.exc_value, _Stopped):
            self._hook(unraisable)
            return
        self._tracer = sys.gettrace()
        sys.settrace(self._again)  # the last Python this hook runs: its next call would be the hook's own

    def _again(self, *_event: Any) -> None:
        import sys

        sys.settrace(self._tracer)
        raise _Stopped(self.signal)

    def __enter__(self) -> _StopOnSignal:
        import signal
        import sys

        from simulator.run.signals import STOP_SIGNALS

        self._hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        self._previous = {sig: signal.signal(sig, self._stop) for sig in STOP_SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        import signal
        import sys

        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        sys.unraisablehook = self._hook
        if sys.gettrace() == self._again:  # a stop caught after the last call of the command
            sys.settrace(self._tracer)
