"""The studio front ends in a real JupyterLab driven by headless Chromium.

The sidebar answers a pending question and streams a chat; the run widget shows a run
started from a notebook cell and resumes it from its inline form; the Web SDK page and
its embed script chat with a published bot using a token bound to the Web SDK connector.
Screenshots go to ``tests/artifacts/``. Set-up and requirements as in
``test_sidebar_browser.py`` (Chromium at ``/usr/bin/chromium``, the built lab extension).
"""

from __future__ import annotations

import functools
import http.server
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import nbformat
import pytest
from playwright.sync_api import Page, expect

import coze_lab as cl
from coze_lab.testing import ModelServer, TextReply
from tests.conftest import SANDBOX_CACHE
from tests.web.test_sidebar_browser import (  # noqa: F401  (fixtures)
    ARTIFACTS,
    UI_TIMEOUT_MS,
    Lab,
    browser,
    free_port,
    open_lab,
    wait_until_ready,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def model() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, model: ModelServer) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("studio-lab")
    root_dir = tmp / "root"
    root_dir.mkdir()
    token = secrets.token_hex(24)
    local_user = "lab-user-" + secrets.token_hex(4)
    port = free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp / "jupyter-config"),
        "JUPYTER_DATA_DIR": str(tmp / "jupyter-data"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "jupyter-runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "lab-workspaces"),
        "COZE_LAB_DATA_DIR": str(tmp / "data"),
        "COZE_LAB_SANDBOX_CACHE_DIR": str(SANDBOX_CACHE),
        "COZE_LAB_SANDBOX_POOL_SIZE": "1",
        "OPENAI_BASE_URL": model.url,
        "OPENAI_API_KEY": "test-key",
        "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
    }
    env.pop("COZE_LAB_DATABASE_URL", None)
    for name in ("COZE_LAB_URL", "COZE_LAB_TOKEN"):
        env.pop(name, None)
    settings = tmp / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    log_path = tmp / "jupyter.log"
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.allow_root=True",
        f"--IdentityProvider.token={token}",
        f"--CozeLab.local_user={local_user}",
        f"--ServerApp.root_dir={root_dir}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.expose_app_in_browser=True",
    ]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp)
    server = Lab(proc, f"http://127.0.0.1:{port}/", token, local_user, log_path)
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
def page(browser, lab: Lab) -> Iterator[Page]:  # noqa: F811
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    assert not [e for e in errors if "coze" in e.lower()], errors


def studio(lab: Lab) -> cl.client.Studio:
    """The studio API as the lab's user (the Jupyter token, like ``cl.connect()``)."""
    return cl.client.Studio(lab.url, lab.token)


def question_workflow(name: str) -> cl.Workflow:
    wf = cl.Workflow(name)
    wf.inputs(topic=str)
    wf.question("approve", question="Ship {{start.topic}}?", choices=["yes", "no"])
    wf.end(approved="{{approve.answer}}")
    return wf


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))


def section(page: Page, title: str) -> None:
    """Open an accordion section of the sidebar (if it is collapsed)."""
    header = page.locator(
        '[data-testid="coze-lab-sidebar"] .jp-AccordionPanel-title', has_text=title
    )
    expect(header).to_be_visible(timeout=UI_TIMEOUT_MS)
    if header.get_attribute("aria-expanded") != "true":
        header.click()


def test_a_pending_question_is_answered_from_the_sidebar(page: Page, lab: Lab) -> None:
    api = studio(lab)
    saved = api.save_workflow(question_workflow("sidebar_question"))
    run_id = api.start_run(saved["id"], {"topic": "the launch"})
    deadline = time.monotonic() + 30
    while not api.pending(run_id):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    open_lab(page, lab)
    section(page, "Workflows & runs")
    question = page.locator('[data-testid="coze-lab-interrupt"]').filter(
        has_text="Ship the launch?"
    )
    expect(question).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(page.get_by_test_id("coze-lab-workflows")).to_contain_text("sidebar_question")
    shot(page, "sidebar_question.png")
    question.locator('button[data-choice="yes"]').click()
    expect(question).to_be_hidden(timeout=UI_TIMEOUT_MS)
    run = page.locator(f'[data-testid="coze-lab-run"][data-run-id="{run_id}"]')
    expect(run).to_have_attribute("data-status", "succeeded", timeout=UI_TIMEOUT_MS)
    assert api.run_info(run_id)["outputs"] == {"approved": "yes"}
    shot(page, "sidebar_run_done.png")


def test_a_chat_streams_into_the_sidebar(page: Page, lab: Lab, model: ModelServer) -> None:
    api = studio(lab)
    api.create_bot(
        name="Sidebar helper",
        prompt_info={"prompt": "You are terse."},
        model_info_config={"model_id": "default"},
    )
    open_lab(page, lab)
    section(page, "Bots & chat")
    bot = page.get_by_test_id("coze-lab-bot").filter(has_text="Sidebar helper")
    expect(bot).to_be_visible(timeout=UI_TIMEOUT_MS)
    bot.get_by_test_id("coze-lab-bot-chat").click()
    words = "The **capital** of France is Paris, a city on the Seine."
    model.script([TextReply(words, delay=0.2)])
    page.get_by_test_id("coze-lab-chat-input").fill("Capital of France?")
    page.get_by_test_id("coze-lab-chat-send").click()
    answer = page.get_by_test_id("coze-lab-chat-answer").last
    expect(answer).to_contain_text("Paris, a city on the Seine.", timeout=UI_TIMEOUT_MS)
    expect(answer.locator("strong")).to_have_text("capital")  # markdown rendered
    # The stream came through fetch(): the chat endpoint answered with text/event-stream.
    assert model.requests[-1]["messages"][-1]["content"] == "Capital of France?"
    shot(page, "sidebar_chat.png")


def test_the_run_widget_in_a_notebook(page: Page, lab: Lab) -> None:
    notebook = nbformat.v4.new_notebook(
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        }
    )
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "import coze_lab as cl\n"
            "studio = cl.connect()  # no configuration: this kernel's own Jupyter server\n"
            "wf = cl.Workflow('widget_question')\n"
            "wf.inputs(topic=str)\n"
            "wf.message('note', content='Reviewing {{start.topic}}')\n"
            "wf.question('approve', question='Ship {{start.topic}}?', choices=['yes', 'no'])\n"
            "wf.end(approved='{{approve.answer}}')\n"
            "run = wf.run(topic='the widget')\n"
            "run"
        )
    ]
    path = lab.log_path.parent / "root" / "widget.ipynb"
    nbformat.write(notebook, path)
    page.goto(f"{lab.url}lab/tree/widget.ipynb?token={lab.token}", wait_until="load")
    expect(page.locator(".jp-Notebook")).to_be_visible(timeout=UI_TIMEOUT_MS)
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
        " && window.jupyterapp.shell.currentWidget.sessionContext"
        " && window.jupyterapp.shell.currentWidget.sessionContext.session"
        " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel",
        timeout=UI_TIMEOUT_MS,
    )
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    widget = page.locator(".coze-run")
    expect(widget).to_have_attribute("data-status", "interrupted", timeout=UI_TIMEOUT_MS)
    expect(widget.get_by_test_id("coze-run-message")).to_contain_text("Reviewing the widget")
    expect(widget.locator('[data-node="approve"]')).to_have_attribute("data-status", "interrupted")
    shot(page, "widget_question.png")
    widget.locator('button[data-choice="no"]').click()
    expect(widget).to_have_attribute("data-status", "succeeded", timeout=UI_TIMEOUT_MS)
    expect(widget.get_by_test_id("coze-run-outputs")).to_contain_text('"approved": "no"')
    expect(widget.locator('[data-node="end"]')).to_have_attribute("data-status", "succeeded")
    shot(page, "widget_done.png")


def publish_bot_with_web_token(lab: Lab, name: str) -> tuple[str, str]:
    api = studio(lab)
    bot = api.create_bot(
        name=name,
        prompt_info={"prompt": "You help visitors."},
        model_info_config={"model_id": "default"},
    )
    api.publish_bot(bot["bot_id"], ["999"])
    made = api.create_token("web embed", scopes=["chat"], connector_id="999", expires_in_days=1)
    return bot["bot_id"], made["token"]


def test_the_web_sdk_page_chats_with_a_published_bot(
    page: Page, lab: Lab, model: ModelServer
) -> None:
    bot_id, token = publish_bot_with_web_token(lab, "Web helper")
    model.script([TextReply("Hello visitor, how can I help?", delay=0.1)])
    page.goto(f"{lab.url}coze_lab/sdk/chat?bot_id={bot_id}&title=Web%20helper#token={token}")
    expect(page.get_by_test_id("sdk-title")).to_have_text("Web helper")
    assert "#token" not in page.url  # the secret leaves the address bar at once
    page.get_by_test_id("sdk-input").fill("Hi there")
    page.get_by_test_id("sdk-send").click()
    expect(page.get_by_test_id("sdk-assistant").last).to_have_text(
        "Hello visitor, how can I help?", timeout=UI_TIMEOUT_MS
    )
    expect(page.get_by_test_id("sdk-error")).to_be_hidden()
    shot(page, "web_sdk_page.png")
    # The conversation is the Web SDK connector's, not the API's.
    listing = httpx.get(
        f"{lab.url}coze_lab/v1/conversations",
        params={"bot_id": bot_id, "connector_id": "999"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert listing.status_code in (200, 403), listing.text

    # The one-line embed on some other page opens the same chat in a frame.
    model.script([TextReply("Embedded hello.")])
    snippet = (
        f'<script src="{lab.url}coze_lab/sdk/embed.js" data-bot-id="{bot_id}" '
        f'data-token="{token}" data-title="Ask us"></script>'
    )
    shop = lab.log_path.parent / "shop"
    shop.mkdir(exist_ok=True)
    (shop / "index.html").write_text(f"<html><body><h1>A shop</h1>{snippet}</body></html>")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(shop))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as other_site:
        threading.Thread(target=other_site.serve_forever, daemon=True).start()
        try:
            page.goto(f"http://localhost:{other_site.server_address[1]}/index.html")
            chat_in_the_frame(page)
        finally:
            other_site.shutdown()
    shot(page, "web_sdk_embed.png")


def chat_in_the_frame(page: Page) -> None:
    page.get_by_test_id("coze-lab-embed-button").click()
    frame = page.frame_locator('[data-testid="coze-lab-embed-frame"]')
    frame.get_by_test_id("sdk-input").fill("Hello from the shop")
    frame.get_by_test_id("sdk-send").click()
    try:
        expect(frame.get_by_test_id("sdk-assistant").last).to_have_text(
            "Embedded hello.", timeout=UI_TIMEOUT_MS
        )
    finally:
        shot(page, "web_sdk_embed.png")


def test_the_web_sdk_page_refuses_a_token_without_the_binding(page: Page, lab: Lab) -> None:
    bot_id, _ = publish_bot_with_web_token(lab, "Guarded")
    api_token = studio(lab).create_token("api only", scopes=["files"])["token"]
    page.goto(f"{lab.url}coze_lab/sdk/chat?bot_id={bot_id}#token={api_token}")
    page.get_by_test_id("sdk-input").fill("Hi")
    page.get_by_test_id("sdk-send").click()
    expect(page.get_by_test_id("sdk-error")).to_contain_text("4101", timeout=UI_TIMEOUT_MS)
