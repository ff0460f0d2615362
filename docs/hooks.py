"""MkDocs hooks: the demo notebooks as pages, and ``coze-lab --help`` texts in the CLI page.

- The notebooks live in ``notebooks/`` (where ``make lab`` opens JupyterLab); they are added
  to the site as ``notebooks/*.ipynb`` before mkdocs-jupyter turns them into pages, so there
  is one copy of each. They are rendered as they are, never executed at build time.
- A line ``<!-- coze-lab-help: pat create -->`` in a page becomes the help text of
  ``coze-lab pat create``, taken from the real argument parser, so the CLI reference cannot
  drift from the command.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
HELP_MARKER = re.compile(r"^<!-- coze-lab-help:\s*(?P<command>[\w -]*?)\s*-->$", re.MULTILINE)


@event_priority(100)  # before mkdocs-jupyter's on_files, which converts .ipynb files
def on_files(files: Files, config) -> Files:
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        # src_dir is the repository, so the file's path is notebooks/<name> on both sides
        files.append(
            File(
                f"notebooks/{notebook.name}",
                src_dir=str(ROOT),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "coze-lab-help" not in markdown:
        return markdown
    return HELP_MARKER.sub(lambda m: _help_block(m.group("command")), markdown)


def _help_block(command: str) -> str:
    from coze_lab.cli import build_parser

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: the same width everywhere
    parser = build_parser()
    for word in command.split():
        parser = _subcommand(parser, word)
    text = parser.format_help().rstrip()
    return f"```text\n{text}\n```"


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            return action.choices[name]
    raise ValueError(f"coze-lab has no sub-command {name!r} (in a coze-lab-help marker)")
