"""The documentation site: it builds with warnings as errors, and what points into it exists.

``mkdocs build --strict`` fails on a broken link or anchor between pages, a page missing
from the nav and a nav entry without a page. The other tests check what mkdocs cannot see:
that messages of the package name pages that exist, and that the reference pages list every
route, setting and command the code has.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

DOCS = ROOT / "docs"
#: a docs page named in the package: ``docs/guides/models.md`` (optionally with an anchor)
DOC_REFERENCE = re.compile(r"\bdocs/(?P<page>[\w./-]+?\.md)(?:#(?P<anchor>[\w-]+))?")
SOURCE_SUFFIXES = {".py", ".js", ".ts", ".html", ".css", ".json", ".md"}


def package_sources() -> list[Path]:
    """The package's own files (not the built lab extension) and the sidebar's sources."""
    built = ROOT / "coze_lab" / "labextension"
    files = [*(ROOT / "coze_lab").rglob("*"), *(ROOT / "labextension" / "src").rglob("*")]
    return sorted(
        p for p in files if p.suffix in SOURCE_SUFFIXES and built not in p.parents and p.is_file()
    )


def heading_ids(page: Path) -> set[str]:
    """The anchors of a page's headings, as mkdocs' toc extension makes them."""
    from markdown.extensions.toc import slugify

    ids = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        match = re.match(r"#+\s+(.*?)\s*(?:\{\s*#(?P<id>[\w-]+)\s*\})?$", line)
        if match:
            ids.add(match.group("id") or slugify(re.sub(r"[`*]", "", match.group(1)), "-"))
    return ids


def test_site_builds_strictly_with_the_notebooks_as_pages(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks, "no demo notebooks found"
    for name in notebooks:
        page = (site / "notebooks" / name / "index.html").read_text(encoding="utf-8")
        assert '<div class="highlight">' in page and "coze_lab" in page, name  # code blocks
        assert (site / "notebooks" / f"{name}.ipynb").is_file()  # to download
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "usage: coze-lab pat create" in cli  # help texts generated from the parser
    assert "coze-lab-help" not in cli


def test_every_docs_page_named_in_the_package_exists() -> None:
    found: list[tuple[Path, str, str | None]] = []
    for path in package_sources():
        for match in DOC_REFERENCE.finditer(path.read_text(encoding="utf-8", errors="replace")):
            found.append((path, match.group("page"), match.group("anchor")))
    # the model errors name their page; if none is found the pattern is broken, not the docs
    assert any(page == "guides/models.md" for _, page, _ in found), found
    for path, page, anchor in found:
        where = f"{path.relative_to(ROOT)} names docs/{page}"
        assert (DOCS / page).is_file(), f"{where}, which does not exist"
        if anchor:
            assert anchor in heading_ids(DOCS / page), f"{where}#{anchor}: no such heading"


def test_model_errors_point_to_the_models_page_and_the_demo_model() -> None:
    from coze_lab.core.models.errors import CONFIGURE_HINT, MODELS_DOC, NO_MODEL_CONFIGURED

    assert (ROOT / MODELS_DOC).is_file()
    assert MODELS_DOC in CONFIGURE_HINT and MODELS_DOC in NO_MODEL_CONFIGURED
    assert "demo model" in NO_MODEL_CONFIGURED and "make lab" in NO_MODEL_CONFIGURED


def route_pattern(route: str) -> re.Pattern[str]:
    """``/v1/bots/{id}`` → a pattern matching the documented ``/v1/bots/{bot_id}``."""
    parts = re.split(r"\{[^}]+\}", route)
    return re.compile(r"\{\w+\}".join(re.escape(p) for p in parts) + r"(?![\w/{])")


def test_the_http_reference_lists_every_route() -> None:
    from coze_lab.web.routes import ROUTES

    text = (DOCS / "reference" / "http-api.md").read_text(encoding="utf-8")
    paths = [route.path for route in ROUTES if "/sdk/" not in route.path]
    assert len(paths) > 50
    missing = [path for path in paths if not route_pattern(path).search(text)]
    assert not missing, f"routes missing from docs/reference/http-api.md: {missing}"


def sdk_endpoint_rows() -> dict[str, str]:
    """The table "Coze endpoints of the official SDKs": path (params as ``{}``) → Here."""
    text = (DOCS / "reference" / "http-api.md").read_text(encoding="utf-8")
    section = text.split("## Coze endpoints of the official SDKs", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"\| `(?P<path>/[^`]+)` \|[^|]*\|[^|]*\|[^|]*\| (?P<here>[^|]+) \|$", line)
        if match:
            rows[re.sub(r"\{[^}]+\}", "{}", match.group("path"))] = match.group("here")
    return rows


def cozepy_endpoints() -> set[str]:
    """Every HTTP path the installed cozepy calls (params as ``{}``)."""
    import cozepy

    root = Path(cozepy.__file__).parent
    found = set()
    for source in root.rglob("*.py"):
        for match in re.finditer(r'f"\{self\._base_url\}(/[^"?]*)"', source.read_text()):
            found.add(re.sub(r"\{[^}]+\}", "{}", match.group(1)))
    for source in (root / "websockets").rglob("*.py"):
        found.update("/" + m for m in re.findall(r'path="(v1/[a-z_/]+)"', source.read_text()))
    return found


def test_the_sdk_endpoint_table_covers_cozepy_and_matches_the_routes() -> None:
    from coze_lab.web.routes import ROUTES

    rows = sdk_endpoint_rows()
    assert len(rows) > 60
    unlisted = sorted(cozepy_endpoints() - set(rows))
    assert not unlisted, f"cozepy endpoints missing from the SDK table: {unlisted}"
    served = {re.sub(r"\{[^}]+\}", "{}", route.path) for route in ROUTES}
    wrong = sorted(
        path for path, here in rows.items() if here.startswith("served") != (path in served)
    )
    assert not wrong, f"the SDK table's served / not served is wrong for {wrong}"


def test_the_configuration_reference_lists_every_setting() -> None:
    from coze_lab.config import CozeLab

    text = (DOCS / "reference" / "configuration.md").read_text(encoding="utf-8")
    settings = sorted(CozeLab.class_traits(config=True))
    assert "database_url" in settings
    missing = [name for name in settings if f"| `{name}` |" not in text]
    assert not missing, f"settings missing from docs/reference/configuration.md: {missing}"


def test_the_cli_reference_covers_every_command() -> None:
    from coze_lab.cli import build_parser

    text = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"<!-- coze-lab-help:\s*([\w -]*?)\s*-->", text))
    commands = _commands(build_parser())
    assert "pat create" in commands
    leaves = [c for c in commands if not any(o.startswith(c + " ") for o in commands)]
    # a command is covered by its own help block or by its group's (which lists it)
    missing = [c for c in leaves if not any(" ".join(c.split()[:n]) in documented for n in (1, 2))]
    assert not missing, f"commands without help in docs/reference/cli.md: {missing}"


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> list[str]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append(f"{prefix}{name}")
                found += _commands(sub, f"{prefix}{name} ")
    return found


@pytest.mark.parametrize("command", ["make lab", "make test"])
def test_the_readme_is_short_and_starts_with_the_two_commands(command: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 80, "the README is one or two screens; the rest is docs/"
    assert command in readme
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / target).exists(), f"README links to a missing {target}"
    # the first screen shows the picture (made by `make screenshots`)
    first_screen = "\n".join(readme.splitlines()[:15])
    assert "![" in first_screen and "](docs/images/coze-lab.png)" in first_screen
    assert (ROOT / "docs" / "images" / "coze-lab.png").stat().st_size > 10_000
