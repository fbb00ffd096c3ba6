"""Rank-aware logging: process 0 reports events and progress, every process reports warnings, but for those every
process meets alike and logs with ``extra=ONCE`` (a stop: one line per job, not one per rank), which process 0 alone
reports."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

LOGGER_NAME = "simulator"
#: a record's ``extra``: reported by process 0 alone, whatever its level
ONCE = {"once": True}


class _RankFilter(logging.Filter):
    def __init__(self, rank: int):
        super().__init__()
        self.rank = rank

    def filter(self, record: logging.LogRecord) -> bool:
        record.rank = self.rank
        return self.rank == 0 or (record.levelno >= logging.WARNING and not getattr(record, "once", False))


def setup_logging(rank: int = 0, level: int = logging.INFO) -> logging.Logger:
    """Configure the package logger for this process (idempotent); returns it."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.handlers.clear()
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_RankFilter(rank))
    handler.setFormatter(logging.Formatter("%(asctime)s [rank %(rank)s] %(levelname)s %(message)s", "%H:%M:%S"))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger


def get_logger() -> logging.Logger:
    return logging.getLogger(LOGGER_NAME)


class RunLog(logging.FileHandler):
    """``run.log``: every line a run segment logs, time-stamped. If it cannot be written (a full disk) it
    falls silent instead of printing a traceback per record: the failure that matters is reported by the
    writer that meets it."""

    def __init__(self, path: Path):
        super().__init__(path, delay=True)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))

    def alone(self, logger: logging.Logger, message: str, error: BaseException | None = None) -> None:
        """``message`` as an ERROR line of this file alone (the console reports it otherwise), with the
        traceback of ``error`` if given."""
        trace = None if error is None else (type(error), error, error.__traceback__)
        self.handle(logger.makeRecord(logger.name, logging.ERROR, __file__, 0, "%s", (message,), trace))

    def handleError(self, record: logging.LogRecord) -> None:
        self.setLevel(logging.CRITICAL + 1)

    def close(self) -> None:
        # the buffered tail of a log that met a full disk fails again at the flush: already reported
        try:
            super().close()
        except OSError:
            self.setLevel(logging.CRITICAL + 1)
