"""The Coze Lab sidebar in a real JupyterLab, driven by headless Chromium.

Starts ``jupyter lab`` on a free loopback port with a random token, an isolated
Jupyter config/data/runtime dir (the venv's ``etc/jupyter`` and ``share/jupyter``
still apply, so the installed lab extension and the auto-enabled server extension are
used), ``COZE_LAB_DATA_DIR`` in a temp dir (a throw-away SQLite database) and a random
``--CozeLab.local_user`` (the studio user of a plain single-user server), which the
panel must show.

Needs Chromium at ``/usr/bin/chromium`` (``apt-get install -y chromium``), the Python
``playwright`` package and the built lab extension. Any of them missing is a failure,
not a skip. A screenshot goes to ``tests/artifacts/sidebar.png``.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Route, expect, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = os.environ.get("COZE_LAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
START_TIMEOUT = 90.0
UI_TIMEOUT_MS = 60_000


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Lab:
    proc: subprocess.Popen[bytes]
    url: str  # base URL, ends with "/"
    token: str
    local_user: str  # --CozeLab.local_user: the studio user of a plain single-user server
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log().splitlines()[-lines:])


def wait_until_ready(lab: Lab) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    last_error = ""
    while time.monotonic() < deadline:
        if lab.proc.poll() is not None:
            pytest.fail(f"jupyter lab exited with {lab.proc.returncode}:\n{lab.log_tail()}")
        try:
            response = httpx.get(
                lab.url + "api/status",
                headers={"Authorization": f"token {lab.token}"},
                timeout=5,
            )
            if response.status_code == 200:
                return
            last_error = f"HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            last_error = repr(exc)
        time.sleep(0.25)
    pytest.fail(f"jupyter lab did not answer in {START_TIMEOUT}s ({last_error}):\n{lab.log_tail()}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("lab")
    root_dir = tmp / "root"
    root_dir.mkdir()
    token = secrets.token_hex(24)
    local_user = "lab-user-" + secrets.token_hex(4)
    port = free_port()
    env = {
        **os.environ,
        # User-level dirs isolated; sys.prefix (the venv) dirs are still searched.
        "JUPYTER_CONFIG_DIR": str(tmp / "jupyter-config"),
        "JUPYTER_DATA_DIR": str(tmp / "jupyter-data"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "jupyter-runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "lab-workspaces"),
        "COZE_LAB_DATA_DIR": str(tmp / "data"),
    }
    env.pop("COZE_LAB_DATABASE_URL", None)  # always the temp SQLite database
    # No "get notified about Jupyter news?" toast over the screenshot.
    notification = tmp / "lab-settings" / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    log_path = tmp / "jupyter.log"
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.allow_root=True",  # CI containers run as root
        f"--IdentityProvider.token={token}",
        f"--CozeLab.local_user={local_user}",
        f"--ServerApp.root_dir={root_dir}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp)
    server = Lab(
        proc=proc,
        url=f"http://127.0.0.1:{port}/",
        token=token,
        local_user=local_user,
        log_path=log_path,
    )
    try:
        wait_until_ready(server)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture
def browser() -> Iterator[Browser]:
    # Function scope on purpose: sync Playwright keeps its event loop running while it
    # is open, and pytest-jupyter's autouse per-test loop fixture would try to close it.
    assert Path(CHROMIUM).exists(), (
        f"Chromium not found at {CHROMIUM}: apt-get install -y chromium (or set COZE_LAB_CHROMIUM)"
    )
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser: Browser, lab: Lab) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    coze_errors = [e for e in errors if "coze" in e.lower()]
    assert not coze_errors, f"JavaScript errors from coze-lab: {coze_errors}"


def open_lab(page: Page, lab: Lab) -> None:
    # A fresh workspace per page: no layout restored from an earlier test.
    workspace = "t" + secrets.token_hex(6)
    page.goto(f"{lab.url}lab/workspaces/{workspace}?token={lab.token}", wait_until="load")
    config = json.loads(page.locator("#jupyter-config-data").text_content() or "{}")
    names = [ext.get("name") for ext in config.get("federated_extensions", [])]
    assert "coze-lab" in names, (
        f"the coze-lab lab extension is not installed (federated extensions: {names}); "
        "pip install the project, or for a dev install run "
        "`cd labextension && ../.venv/bin/jlpm build` and "
        "`.venv/bin/jupyter-builder develop --overwrite .`"
    )
    tab = page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="coze-lab-sidebar"]')
    expect(tab, "the Coze Lab tab in the left sidebar").to_be_visible(timeout=UI_TIMEOUT_MS)
    sidebar = page.get_by_test_id("coze-lab-sidebar")
    # The layout restorer may still be opening the default panel: click until it sticks
    # (clicking the tab of an open sidebar would collapse it, so only click when hidden).
    deadline = time.monotonic() + 30
    while not sidebar.is_visible():
        assert time.monotonic() < deadline, "the Coze Lab sidebar did not open"
        tab.click()
        try:
            sidebar.wait_for(state="visible", timeout=2_000)
        except PlaywrightTimeoutError:
            continue
    expect(sidebar).to_be_visible()


def browser_health(page: Page, lab: Lab) -> dict[str, Any]:
    """``GET coze_lab/api/health`` in the browser's session (its login cookie)."""
    response = page.context.request.get(f"{lab.url}coze_lab/api/health")
    assert response.ok, f"GET coze_lab/api/health: HTTP {response.status}"
    body: dict[str, Any] = response.json()
    assert body["code"] == 0, body
    return body["data"]


def test_sidebar_shows_health(page: Page, lab: Lab) -> None:
    from coze_lab import __version__

    # The studio API answers (server extension enabled), before involving the browser.
    health = httpx.get(
        lab.url + "coze_lab/api/health",
        headers={"Authorization": f"token {lab.token}"},
        timeout=10,
    )
    assert health.status_code == 200, (
        f"GET coze_lab/api/health: HTTP {health.status_code} {health.text[:300]}\n{lab.log_tail()}"
    )
    assert health.json()["code"] == 0, health.text
    # a knowledge base with a processed document and a failed one, for its section
    studio = httpx.Client(
        base_url=lab.url + "coze_lab/api/",
        headers={"Authorization": f"token {lab.token}"},
        timeout=10,
    )
    dataset = studio.post("datasets", json={"name": "Handbook"}).json()["data"]
    bases = [
        {"name": name, "source_info": {"file_base64": data, "file_type": kind}}
        for name, data, kind in (("faq.md", "SGVsbG8=", "md"), ("scan.pdf", "eA==", "pdf"))
    ]
    studio.post(f"datasets/{dataset['dataset_id']}/documents", json={"document_bases": bases})
    for _ in range(200):
        docs = studio.get(f"datasets/{dataset['dataset_id']}/documents").json()["data"]
        if all(d["status_name"] != "processing" for d in docs["documents"]):
            break
        time.sleep(0.05)
    studio.close()

    open_lab(page, lab)
    status = page.locator('[data-testid="coze-lab-sidebar"] .jp-CozeLab-status')
    expect(status).to_have_attribute("data-state", "ok", timeout=UI_TIMEOUT_MS)

    # A plain single-user server: every Jupyter identity (anonymous, per session) is
    # the configured local user, the same for the browser and for token-only requests.
    assert health.json()["data"]["user"]["name"] == lab.local_user
    assert browser_health(page, lab)["user"]["name"] == lab.local_user
    expect(page.get_by_test_id("coze-lab-version")).to_have_text(__version__)
    expect(page.get_by_test_id("coze-lab-user-name")).to_have_text(lab.local_user)
    expect(page.get_by_test_id("coze-lab-db-dialect")).to_have_text("sqlite")
    expect(page.get_by_test_id("coze-lab-db-ok")).to_have_text("ok")
    expect(page.get_by_test_id("coze-lab-db")).to_contain_text("sqlite")
    expect(page.get_by_test_id("coze-lab-sandbox")).to_contain_text("workers")
    expect(page.get_by_test_id("coze-lab-error")).to_be_hidden()
    handbook = page.get_by_test_id("coze-lab-dataset")
    expect(handbook).to_contain_text("Handbook")
    expect(handbook).to_contain_text("2 documents")
    expect(handbook.get_by_test_id("coze-lab-document-status")).to_have_text(["done", "failed"])

    # Refresh asks the server again.
    with page.expect_response(lambda r: "/coze_lab/api/health" in r.url) as answer:
        page.get_by_test_id("coze-lab-refresh").click()
    assert answer.value.ok
    expect(status).to_have_attribute("data-state", "ok")
    expect(page.get_by_test_id("coze-lab-user-name")).to_have_text(lab.local_user)

    # Room to work: the sidebar opens wider than JupyterLab's default (~270 px), and its
    # Status section shows every row, the sandbox's too, without scrolling.
    sidebar = page.get_by_test_id("coze-lab-sidebar").bounding_box()
    assert sidebar and sidebar["width"] >= 355, sidebar
    section = status.bounding_box()
    for row in ("coze-lab-version", "coze-lab-user", "coze-lab-db", "coze-lab-sandbox"):
        box = page.get_by_test_id(row).bounding_box()
        assert box and section, row
        assert box["y"] + box["height"] <= section["y"] + section["height"] + 1, (row, box, section)
    assert status.evaluate("node => node.scrollHeight <= node.clientHeight + 1")
    # the tab shows Coze Lab's own mark
    tab = page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="coze-lab-sidebar"]')
    expect(tab.locator('svg[data-icon="coze-lab:coze"]')).to_have_count(1)

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "sidebar.png"))


def test_the_launcher_tile_opens_a_welcome_notebook(page: Page, lab: Lab) -> None:
    root = lab.log_path.parent / "root"
    welcome = root / "coze_lab_welcome.ipynb"
    assert not welcome.exists()  # this lab's root has no notebooks: the tile writes one
    page.goto(f"{lab.url}lab/workspaces/launcher?token={lab.token}", wait_until="load")
    tile = page.locator('.jp-LauncherCard[title="Open the Coze Lab welcome notebook"]')
    expect(tile).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(tile.locator(".jp-LauncherCard-label")).to_have_text("Coze Lab")
    expect(tile.locator('svg[data-icon="coze-lab:logo"]')).to_have_count(1)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "launcher.png"))
    tile.click()
    tab = page.locator(".jp-mod-current .lm-TabBar-tabLabel", has_text="coze_lab_welcome.ipynb")
    expect(tab.first).to_be_visible(timeout=UI_TIMEOUT_MS)
    heading = page.locator(".jp-Notebook .jp-MarkdownOutput h1", has_text="Welcome to Coze Lab")
    expect(heading).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(page.get_by_test_id("coze-lab-sidebar")).to_be_visible()
    assert welcome.exists()
    cells = json.loads(welcome.read_text())["cells"]
    assert any("cl.connect()" in "".join(c["source"]) for c in cells)
    page.screenshot(path=str(ARTIFACTS / "launcher_welcome.png"))


def test_sidebar_shows_api_error(page: Page, lab: Lab) -> None:
    """A non-zero Coze code is shown in the error box, with its msg."""

    def fail(route: Route) -> None:
        route.fulfill(
            status=200,
            content_type="application/json",
            body=json.dumps({"code": 4100, "msg": "database is on fire", "data": None}),
        )

    page.route("**/coze_lab/api/health*", fail)
    open_lab(page, lab)
    error = page.get_by_test_id("coze-lab-error")
    expect(error).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(error).to_contain_text("database is on fire")
    expect(error).to_contain_text("4100")
    expect(page.get_by_test_id("coze-lab-version")).to_have_text("—")

    # Back to the real server: Refresh clears the error.
    page.unroute("**/coze_lab/api/health*")
    page.get_by_test_id("coze-lab-refresh").click()
    expect(error).to_be_hidden(timeout=UI_TIMEOUT_MS)
    expect(page.get_by_test_id("coze-lab-db-dialect")).to_have_text("sqlite")
