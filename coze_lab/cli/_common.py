"""Helpers shared by the sub-commands."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from coze_lab.config import CozeLab
from coze_lab.services import Runtime


def load_config(args: argparse.Namespace) -> CozeLab:
    """``CozeLab`` settings from the command line, falling back to env and defaults."""
    overrides = {}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = args.data_dir
    if getattr(args, "database_url", None):
        overrides["database_url"] = args.database_url
    return CozeLab(**overrides)


@contextmanager
def runtime_for(args: argparse.Namespace) -> Iterator[Runtime]:
    """The configured runtime, migrated, for one command; its connections closed after."""
    runtime = Runtime(load_config(args))
    runtime.start()
    try:
        yield runtime
    finally:
        runtime.db.dispose()
