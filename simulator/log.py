"""Rank-aware logging: process 0 reports events and progress, every process reports warnings."""

from __future__ import annotations

import logging
import sys

LOGGER_NAME = "simulator"


class _RankFilter(logging.Filter):
    def __init__(self, rank: int):
        super().__init__()
        self.rank = rank

    def filter(self, record: logging.LogRecord) -> bool:
        record.rank = self.rank
        return self.rank == 0 or record.levelno >= logging.WARNING


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
