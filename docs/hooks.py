"""MkDocs hooks: the demo notebooks as pages, and ``coze-lab --help`` texts in the CLI page.

- The notebooks live in ``notebooks/`` (where ``make lab`` opens JupyterLab). Each becomes a
  page ``notebooks/<name>.md`` made here from the notebook itself (markdown cells as they
  are, code cells as Python blocks, text outputs if any), so there is one copy of each and
  nothing is executed at build time; the ``.ipynb`` is published next to it for download.
  (A plugin such as mkdocs-jupyter would bring jupytext, which enables itself in every
  JupyterLab of the environment.)
- A line ``<!-- coze-lab-help: pat create -->`` in a page becomes the help text of
  ``coze-lab pat create``, taken from the real argument parser, so the CLI reference cannot
  drift from the command.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import nbformat
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
HELP_MARKER = re.compile(r"^<!-- coze-lab-help:\s*(?P<command>[\w -]*?)\s*-->$", re.MULTILINE)


def on_files(files: Files, config) -> Files:
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        page = notebook_markdown(notebook)
        files.append(File.generated(config, f"notebooks/{notebook.stem}.md", content=page))
        files.append(
            File(
                f"notebooks/{notebook.name}",
                src_dir=str(ROOT),  # the repository: the path is notebooks/<name> on both sides
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files


def notebook_markdown(path: Path) -> str:
    """A page for a notebook: its cells in order, a link to download it."""
    notebook = nbformat.read(path, as_version=4)
    language = notebook.metadata.get("kernelspec", {}).get("language", "python")
    parts: list[str] = []
    for cell in notebook.cells:
        source = cell.source.strip("\n")
        if not source:
            continue
        if cell.cell_type == "markdown":
            parts.append(source)
        elif cell.cell_type == "code":
            parts.append(f"```{language}\n{source}\n```")
            parts += _text_outputs(cell.get("outputs", []))
    parts.insert(
        1 if parts and parts[0].startswith("# ") else 0,
        f"[Download `{path.name}`]({path.name}) · run it in JupyterLab with `make lab`",
    )
    return "\n\n".join(parts) + "\n"


def _text_outputs(outputs: list) -> list[str]:
    texts = []
    for output in outputs:
        text = output.get("text") or output.get("data", {}).get("text/plain")
        if text:
            texts.append("```text\n" + "".join(text).rstrip("\n") + "\n```")
    return texts


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
