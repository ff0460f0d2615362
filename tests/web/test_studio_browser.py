"""The studio front ends in a real JupyterLab driven by headless Chromium.

The sidebar answers a pending question and streams a chat; the run widget shows a run
started from a notebook cell and resumes it from its inline form; the Web SDK page and
its embed script chat with a published bot using a token bound to the Web SDK connector.
The sidebar also starts a run from a typed form, shows the run's live trace, retries
the failed run from its failed node and continues, starts and clears chat conversations, and re-attaches to a running chat (picked
in the session list, and after a page reload) whose Activity timeline it shows; the chat
widget shows its timeline too. Screenshots go to ``tests/artifacts/``. Set-up and requirements as in
``test_sidebar_browser.py`` (Chromium at ``/usr/bin/chromium``, the built lab extension).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import nbformat
import pytest
from playwright.sync_api import Locator, Page, Route, expect

import coze_lab as cl
from coze_lab.notebook.studio import Studio
from coze_lab.testing import ErrorReply, ModelServer, ScriptedToolCall, TextReply, ToolCallsReply
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


def studio(lab: Lab) -> Studio:
    """The studio API as the lab's user (the Jupyter token, like ``cl.connect()``)."""
    return Studio(lab.url, lab.token)


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
    # never published: a draft; published from the sidebar: says where and which version
    expect(bot.get_by_test_id("coze-lab-bot-state")).to_have_text("draft")
    bot.get_by_role("button", name="Edit").click()
    page.get_by_test_id("coze-lab-bot-publish").click()
    expect(page.get_by_test_id("coze-lab-bot-status")).to_contain_text("Published")
    expect(bot.get_by_test_id("coze-lab-bot-state")).to_have_text(
        "published v1 · API, Web SDK", timeout=UI_TIMEOUT_MS
    )
    shot(page, "sidebar_bot_published.png")
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


def test_a_bots_variables_are_seen_and_set_in_the_sidebar(page: Page, lab: Lab) -> None:
    """Your values of a bot's variables (Playground), editable where the end user may set
    them; what the sidebar saves is what the studio API (and so the chat) reads."""
    api = studio(lab)
    bot = api.create_bot(
        name="Sidebar memo",
        prompt_info={"prompt": "They live in {{city}}."},
        variables=[
            {"keyword": "city", "default_value": "Paris", "description": "home town"},
            {"keyword": "plan", "default_value": "free", "user_can_set": False},
        ],
    )
    open_lab(page, lab)
    section(page, "Bots & chat")
    row = page.get_by_test_id("coze-lab-bot").filter(has_text="Sidebar memo")
    expect(row).to_be_visible(timeout=UI_TIMEOUT_MS)
    row.get_by_test_id("coze-lab-bot-variables").click()
    city = page.locator('[data-testid="coze-lab-variable-value"][data-keyword="city"]')
    plan = page.locator('[data-testid="coze-lab-variable-value"][data-keyword="plan"]')
    expect(city).to_have_value("Paris", timeout=UI_TIMEOUT_MS)
    expect(plan).to_have_value("free")
    expect(plan).to_be_disabled()  # user_can_set is false: shown, not editable
    expect(page.get_by_test_id("coze-lab-variables")).to_contain_text("home town")
    city.fill("Oslo")
    page.get_by_test_id("coze-lab-variables-save").click()
    expect(page.get_by_test_id("coze-lab-variables-status")).to_have_text("Saved city")
    variables = api.request("GET", f"bots/{bot['bot_id']}/variables")["variables"]
    assert [(v["keyword"], v["value"]) for v in variables] == [("city", "Oslo"), ("plan", "free")]
    shot(page, "sidebar_variables.png")
    # saving the bot from the sidebar's editor keeps what its text box does not show
    row.get_by_role("button", name="Edit").click()
    page.get_by_test_id("coze-lab-bot-save").click()
    expect(page.get_by_test_id("coze-lab-bot-status")).to_contain_text("Saved")
    kept = api.bot(bot["bot_id"])["variables"]
    assert [(v["keyword"], v["description"], v["user_can_set"]) for v in kept] == [
        ("city", "home town", True),
        ("plan", "", False),
    ]


def open_notebook(page: Page, lab: Lab, name: str, cells: list[str]) -> None:
    """Write a notebook into the lab's root, open it and run all its cells."""
    notebook = nbformat.v4.new_notebook(
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        }
    )
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(notebook, lab.log_path.parent / "root" / name)
    # a fresh workspace: only this notebook is open (no widgets of an earlier test's tab)
    workspace = "nb" + secrets.token_hex(6)
    page.goto(
        f"{lab.url}lab/workspaces/{workspace}/tree/{name}?token={lab.token}", wait_until="load"
    )
    expect(page.locator(".jp-Notebook")).to_be_visible(timeout=UI_TIMEOUT_MS)
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
        " && window.jupyterapp.shell.currentWidget.sessionContext"
        " && window.jupyterapp.shell.currentWidget.sessionContext.session"
        " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel",
        timeout=UI_TIMEOUT_MS,
    )
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")


def inside(inner: Locator, outer: Locator) -> bool:
    """Whether ``inner``'s box lies within ``outer``'s (text that does not spill out)."""
    a, b = inner.bounding_box(), outer.bounding_box()
    assert a and b
    return (
        a["x"] >= b["x"] - 0.5
        and a["y"] >= b["y"] - 0.5
        and a["x"] + a["width"] <= b["x"] + b["width"] + 0.5
        and a["y"] + a["height"] <= b["y"] + b["height"] + 0.5
    )


def test_the_run_widget_in_a_notebook(page: Page, lab: Lab) -> None:
    open_notebook(
        page,
        lab,
        "widget.ipynb",
        [
            "import coze_lab as cl\n"
            "studio = cl.connect()  # no configuration: this kernel's own Jupyter server\n"
            "wf = cl.Workflow('widget_question')\n"
            "wf.inputs(topic=str)\n"
            "wf.message('note', content='Reviewing {{start.topic}}')\n"
            "wf.question('approve', question='Ship {{start.topic}}?', choices=['yes', 'no'])\n"
            "wf.end(approved='{{approve.answer}}')\n"
            "run = wf.run(topic='the widget')\n"
            "run",
            "broken = cl.Workflow('widget_failing')\n"
            "broken.inputs(x=int)\n"
            "@broken.code\n"
            "def divide(x: int) -> dict:\n"
            "    return {'y': 1 / x}\n"
            "broken.end(y='{{divide.y}}')\n"
            "broken.run(x=0)",
            "stopped = cl.Workflow('widget_canceled')\n"
            "stopped.inputs(topic=str)\n"
            "stopped.question('approve', question='Ship {{start.topic}}?', choices=['yes'])\n"
            "stopped.end(approved='{{approve.answer}}')\n"
            "stopped.run(topic='nothing')",
        ],
    )
    answered, failed, canceled = (page.locator(".coze-run").nth(i) for i in range(3))

    # 1. a question answered inline; the outputs are shown once; no Cancel (nor "null") after
    expect(answered).to_have_attribute("data-status", "interrupted", timeout=UI_TIMEOUT_MS)
    expect(answered.get_by_test_id("coze-run-message")).to_contain_text("Reviewing the widget")
    expect(answered.locator('[data-node="approve"]')).to_have_attribute(
        "data-status", "interrupted"
    )
    expect(answered.get_by_test_id("coze-run-cancel")).to_be_visible()
    shot(page, "widget_question.png")
    answered.locator('button[data-choice="no"]').click()
    expect(answered).to_have_attribute("data-status", "succeeded", timeout=UI_TIMEOUT_MS)
    expect(answered.get_by_test_id("coze-run-outputs")).to_contain_text('"approved": "no"')
    expect(answered.locator('[data-node="end"]')).to_have_attribute("data-status", "succeeded")
    expect(answered.get_by_test_id("coze-run-message")).to_have_count(1)  # not the outputs
    header = answered.locator(".coze-run-header")
    expect(header.get_by_test_id("coze-run-cancel")).to_have_count(0)
    assert "null" not in header.inner_text()
    # latencies are short numbers that stay inside their node boxes
    for node in ("start", "note", "end"):
        box = answered.locator(f'[data-node="{node}"]')
        latency = box.get_by_test_id("coze-run-latency")
        expect(latency).to_have_text(re.compile(r"^(<1|\d+(\.\d)?) m?s$"))
        assert inside(latency, box.locator("rect").first), latency.text_content()
        assert inside(box.locator(".coze-run-sub"), box.locator("rect").first)
    answered.scroll_into_view_if_needed()
    shot(page, "widget_done.png")

    # 2. a failing code node: named once, the traceback below, the node after it "not run"
    expect(failed).to_have_attribute("data-status", "failed", timeout=UI_TIMEOUT_MS)
    error = failed.get_by_test_id("coze-run-error")
    expect(error.locator(".coze-error-headline")).to_have_text("Node divide failed")
    expect(error.locator(".coze-error-detail")).to_contain_text("ZeroDivisionError")
    assert "failed" not in error.locator(".coze-error-detail").inner_text()
    expect(failed.locator('[data-node="divide"]')).to_have_attribute("data-status", "failed")
    expect(failed.locator('[data-node="end"]')).to_have_attribute("data-status", "not_run")
    expect(failed.locator('[data-node="end"] .coze-run-sub')).to_have_text("end · not run")
    failed.scroll_into_view_if_needed()
    shot(page, "widget_failed.png")
    # "Retry from divide": a new run in the same widget, reusing the start node's record
    expect(failed.get_by_test_id("coze-run-retry")).to_have_text("Retry from divide")
    first_run = failed.locator(".coze-run-header .coze-run-id").first.inner_text()
    failed.get_by_test_id("coze-run-retry").click()
    expect(failed.locator(".coze-run-header")).to_contain_text(
        "retry of " + first_run, timeout=UI_TIMEOUT_MS
    )
    expect(failed).to_have_attribute("data-status", "failed", timeout=UI_TIMEOUT_MS)  # 1 / 0
    expect(failed.locator('[data-node="start"]')).to_have_attribute("data-status", "succeeded")

    # 3. Cancel: the stopped node says so, the one after it never ran
    expect(canceled).to_have_attribute("data-status", "interrupted", timeout=UI_TIMEOUT_MS)
    canceled.get_by_test_id("coze-run-cancel").click()
    expect(canceled).to_have_attribute("data-status", "canceled", timeout=UI_TIMEOUT_MS)
    expect(canceled.locator('[data-node="approve"]')).to_have_attribute("data-status", "canceled")
    expect(canceled.locator('[data-node="end"]')).to_have_attribute("data-status", "not_run")
    expect(canceled.get_by_test_id("coze-run-question")).to_have_count(0)
    assert "null" not in canceled.locator(".coze-run-header").inner_text()
    canceled.scroll_into_view_if_needed()
    shot(page, "widget_canceled.png")


#: where ``make screenshots`` wants the pictures of the docs and the README (else only
#: tests/artifacts/)
PICTURES = os.environ.get("COZE_LAB_SCREENSHOTS_DIR")


@pytest.fixture
def fresh_model(model: ModelServer) -> Iterator[ModelServer]:
    """The module's model server with no scripted replies left before or after the test."""
    model.reset()
    yield model
    model.reset()


def test_the_chat_widget_answers_a_tool_question_inline(
    page: Page, lab: Lab, fresh_model: ModelServer
) -> None:
    """Also the picture of the README: the sidebar, a finished run and a chat."""
    model = fresh_model
    model.script(
        [
            ToolCallsReply([ScriptedToolCall("launch_review", {"topic": "the new model"})]),
            TextReply("I asked the **launch review** workflow; it needs your go-ahead."),
            TextReply("Done: *the new model* is approved and ships today."),
        ]
    )
    open_notebook(
        page,
        lab,
        "coze_lab_tour.ipynb",
        [
            "import coze_lab as cl\n"
            "studio = cl.connect()\n"
            "wf = cl.Workflow('launch_review')\n"
            "wf.inputs(topic=str)\n"
            "@wf.code\n"
            "def brief(topic: str) -> dict:  # in the sandbox\n"
            "    return {'title': topic.title()}\n"
            "wf.question('approve', question='Ship {{brief.title}}?', choices=['yes', 'no'])\n"
            "wf.end(title='{{brief.title}}', approved='{{approve.answer}}')\n"
            "run = wf.run(topic='the new model')\n"
            "run",
            "bot = studio.create_bot(\n"
            "    name='Launch assistant',\n"
            "    prompt_info={'prompt': 'You ship models after a review.'},\n"
            "    workflow_id_list={'ids': [{'id': studio.save_workflow(wf)['id']}]},\n"
            ")\n"
            "chat = studio.chat(bot['bot_id'])\n"
            "chat.send('Can we ship the new model?')\n"
            "chat",
        ],
    )
    run, chat = page.locator(".coze-run"), page.locator(".coze-chat")
    expect(run).to_have_attribute("data-status", "interrupted", timeout=UI_TIMEOUT_MS)
    run.locator('button[data-choice="yes"]').click()
    expect(run).to_have_attribute("data-status", "succeeded", timeout=UI_TIMEOUT_MS)

    question = chat.get_by_test_id("coze-chat-question")
    expect(question).to_contain_text("Ship The New Model?", timeout=UI_TIMEOUT_MS)
    expect(chat.get_by_test_id("coze-chat-assistant").last).to_contain_text("go-ahead")
    question.scroll_into_view_if_needed()
    shot(page, "chat_question.png")
    question.locator('button[data-choice="yes"]').click()
    # the run resumes; the widget tells the bot, which answers: the chat goes on
    expect(question).to_have_count(0, timeout=UI_TIMEOUT_MS)
    expect(chat.get_by_test_id("coze-chat-user").last).to_contain_text(
        'I answered "Ship The New Model?" with "yes"', timeout=UI_TIMEOUT_MS
    )
    expect(chat.get_by_test_id("coze-chat-assistant").last).to_contain_text(
        "ships today", timeout=UI_TIMEOUT_MS
    )
    expect(chat).to_have_attribute("data-status", "completed")
    assert model.requests[-1]["messages"][-1]["content"].startswith('I answered "Ship')
    # the widget's Activity: the conversation's timeline, its state done
    activity = chat.get_by_test_id("coze-chat-activity")
    activity.locator(":scope > summary").click()
    expect(activity.get_by_test_id("coze-chat-state")).to_have_attribute(
        "data-state", "done", timeout=UI_TIMEOUT_MS
    )
    expect(activity.locator('[data-kind="tool_call"]')).to_contain_text("launch_review")
    expect(activity.locator('[data-kind="node"]').first).to_contain_text("brief (code)")
    activity.locator(":scope > summary").click()  # folded again for the picture

    # the picture: the sidebar with the runs, the run widget and the chat
    page.evaluate("window.jupyterapp.commands.execute('coze-lab:open')")
    section(page, "Workflows & runs")
    expect(page.get_by_test_id("coze-lab-run").first).to_be_visible(timeout=UI_TIMEOUT_MS)
    page.evaluate("window.jupyterapp.commands.execute('notebook:hide-all-cell-code')")
    page.locator(".jp-Notebook").evaluate("node => { node.scrollTop = 0; }")
    shot(page, "chat_answered.png")
    if PICTURES:
        Path(PICTURES).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(PICTURES) / "coze-lab.png"))


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


def test_the_web_sdk_page_reattaches_to_a_running_chat_after_a_reload(
    page: Page, lab: Lab, model: ModelServer
) -> None:
    """A reload mid-answer: the question and the answer come back and the answer goes on
    to its end (GET v3/chat/events replays the persisted events, then follows live)."""
    bot_id, token = publish_bot_with_web_token(lab, "Patient helper")
    words = " ".join(f"word{i}" for i in range(80))
    model.chunk_delay = 0.05  # a 4 s answer
    model.script([TextReply(words)])
    try:
        page.goto(f"{lab.url}coze_lab/sdk/chat?bot_id={bot_id}#token={token}")
        page.get_by_test_id("sdk-input").fill("Tell me everything")
        page.get_by_test_id("sdk-send").click()
        expect(page.get_by_test_id("sdk-assistant").last).to_contain_text(
            "word3 ", timeout=UI_TIMEOUT_MS
        )
        page.reload()
        expect(page.get_by_test_id("sdk-user").last).to_have_text("Tell me everything")
        expect(page.get_by_test_id("sdk-assistant").last).to_have_text(words, timeout=UI_TIMEOUT_MS)
        expect(page.get_by_test_id("sdk-error")).to_be_hidden()
        assert len(model.requests) and model.requests[-1]["messages"][-1]["content"] == (
            "Tell me everything"
        )
        # once the stream has ended, a reload re-attaches to nothing
        expect(page.get_by_test_id("sdk-send")).to_be_enabled(timeout=UI_TIMEOUT_MS)
        page.reload()
        expect(page.get_by_test_id("sdk-title")).to_be_visible()
        expect(page.get_by_test_id("sdk-assistant")).to_have_count(0)
    finally:
        model.chunk_delay = 0.0


def test_the_web_sdk_page_refuses_a_token_without_the_binding(page: Page, lab: Lab) -> None:
    bot_id, _ = publish_bot_with_web_token(lab, "Guarded")
    api_token = studio(lab).create_token("api only", scopes=["files"])["token"]
    page.goto(f"{lab.url}coze_lab/sdk/chat?bot_id={bot_id}#token={api_token}")
    page.get_by_test_id("sdk-input").fill("Hi")
    page.get_by_test_id("sdk-send").click()
    expect(page.get_by_test_id("sdk-error")).to_contain_text("4101", timeout=UI_TIMEOUT_MS)
    # an unknown token (4100, answered as Coze answers a stream request) asks for another
    page.goto(f"{lab.url}coze_lab/sdk/chat?bot_id={bot_id}&again=1#token=pat_unknown")
    expect(page.locator("#token-form")).to_be_hidden()
    page.get_by_test_id("sdk-input").fill("Hi")
    page.get_by_test_id("sdk-send").click()
    expect(page.get_by_test_id("sdk-error")).to_contain_text("4100", timeout=UI_TIMEOUT_MS)
    expect(page.locator("#token-form")).to_be_visible()


def test_a_run_form_starts_a_run_and_its_trace_follows_it(
    page: Page, lab: Lab, model: ModelServer
) -> None:
    api = studio(lab)
    wf = cl.Workflow("form_and_trace")
    wf.inputs(topic=str, count=int, ratio=(float, 0.5), flag=bool, tags=list, meta=(dict, {}))
    wf.text("greet", template="{{start.topic}} x{{start.count}}")
    wf.question("approve", question="Judge {{start.topic}}?", choices=["yes", "no"])
    wf.llm("judge", prompt="Judge {{start.topic}}")
    wf.end(verdict="{{judge.output}}")
    saved = api.save_workflow(wf)
    open_lab(page, lab)
    section(page, "Workflows & runs")
    workflow = page.get_by_test_id("coze-lab-workflow").filter(has_text="form_and_trace")
    workflow.get_by_test_id("coze-lab-workflow-run").click()
    form = page.get_by_test_id("coze-lab-run-form")
    expect(form.get_by_test_id("coze-lab-run-field")).to_have_count(6, timeout=UI_TIMEOUT_MS)

    def field(name: str) -> Locator:
        return form.locator(f'label[data-field="{name}"]')

    def message(name: str) -> Locator:
        return field(name).get_by_test_id("coze-lab-run-field-error")

    expect(field("ratio").locator("input")).to_have_value("0.5")  # the default, typed
    expect(field("meta").locator("textarea")).to_have_value("{}")
    # Inline validation: nothing is sent while a field is wrong.
    form.get_by_test_id("coze-lab-run-start").click()
    for name in ("topic", "count", "tags"):
        expect(message(name)).to_have_text("required")
    expect(message("ratio")).to_be_hidden()
    # long text gets a box that grows with it, not a one-line input
    topic = field("topic").locator("textarea")
    one_line = topic.bounding_box()
    topic.fill("rockets " * 40)
    grown = topic.bounding_box()
    assert one_line and grown and grown["height"] > one_line["height"] + 10, (one_line, grown)
    shot(page, "sidebar_run_form_long_text.png")
    topic.fill("rockets")
    field("count").locator("input").fill("2.5")
    field("tags").locator("textarea").fill('{"a": 1}')
    field("meta").locator("textarea").fill("{oops")
    form.get_by_test_id("coze-lab-run-start").click()
    expect(message("topic")).to_be_hidden()
    expect(message("count")).to_have_text("must be a whole number")
    expect(message("tags")).to_contain_text("must be a JSON array")
    expect(message("meta")).to_contain_text("invalid JSON")
    shot(page, "sidebar_run_form.png")
    assert not api.runs(saved["id"]), "an invalid form started a run"
    field("count").locator("input").fill("3")
    field("flag").locator("input").check()
    field("tags").locator("textarea").fill('["x", "y"]')
    field("meta").locator("textarea").fill('{"k": [1, 2]}')
    form.get_by_test_id("coze-lab-run-start").click()
    expect(form).to_be_hidden(timeout=UI_TIMEOUT_MS)

    # The new run's trace opens at once and follows the run while it is live.
    trace = page.get_by_test_id("coze-lab-trace")
    expect(trace).to_have_attribute("data-status", "interrupted", timeout=UI_TIMEOUT_MS)
    run_id = trace.get_attribute("data-run-id")
    info = api.run_info(run_id)
    assert info["workflow_id"] == saved["id"]
    assert {k: info["inputs"][k] for k in ("topic", "count", "flag", "tags", "meta")} == {
        "topic": "rockets",
        "count": 3,
        "flag": True,
        "tags": ["x", "y"],
        "meta": {"k": [1, 2]},
    }
    greet = trace.locator('[data-testid="coze-lab-trace-node"][data-node-id="greet"]')
    expect(greet).to_have_attribute("data-status", "succeeded")
    # In the order they ran (the start node first).
    expect(trace.get_by_test_id("coze-lab-trace-node").first).to_have_attribute(
        "data-node-id", "start"
    )
    expect(greet.get_by_test_id("coze-lab-trace-timing")).to_contain_text("attempt")
    greet.locator('details[data-part="outputs"] summary').click()
    expect(greet.locator('details[data-part="outputs"] pre')).to_contain_text("rockets x3")
    expect(
        trace.locator('[data-testid="coze-lab-trace-node"][data-node-id="approve"]')
    ).to_have_attribute("data-status", "interrupted")
    expect(trace.locator(".jp-CozeLab-subhead")).to_be_in_viewport()  # scrolled to it
    # The open sections share the height (runs get the most) and each scrolls on its own.
    sizes = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('.jp-CozeLab-panel')]
            .map(n => [n.id, [n.clientHeight, n.scrollHeight, getComputedStyle(n).overflowY]]))"""
    )
    runs_height, runs_content, overflow = sizes.pop("coze-lab-runs")
    assert overflow == "auto" and runs_content > runs_height, sizes
    # the sections used less often start folded (until opened), so the others keep room
    folded = {"coze-lab-plugins", "coze-lab-knowledge", "coze-lab-memory", "coze-lab-tokens"}
    assert all(sizes[name][0] == 0 for name in folded), sizes
    opened = [sizes[name][0] for name in sizes if name not in folded]
    assert opened and all(0 < height < runs_height for height in opened), (runs_height, sizes)
    shot(page, "sidebar_trace_live.png")

    # Answer in the sidebar: the model refuses, the run fails at `judge`, the trace follows.
    model.script([ErrorReply(400, "context too long")])
    page.get_by_test_id("coze-lab-interrupt").filter(has_text="Judge rockets?").locator(
        'button[data-choice="yes"]'
    ).click()
    expect(trace).to_have_attribute("data-status", "failed", timeout=UI_TIMEOUT_MS)
    judge = trace.locator('[data-testid="coze-lab-trace-node"][data-node-id="judge"]')
    expect(judge).to_have_class(re.compile(r"jp-mod-failed"))
    expect(judge.get_by_test_id("coze-lab-trace-error")).to_contain_text("context too long")
    expect(greet).not_to_have_class(re.compile(r"jp-mod-failed"))
    # What was expanded stays expanded across refreshes.
    expect(greet.locator('details[data-part="outputs"]')).to_have_attribute("open", "")
    assert model.pending == 0
    # The traced run is the selected one in the list.
    run = page.locator(f'[data-testid="coze-lab-run"][data-run-id="{run_id}"]')
    expect(run).to_have_class(re.compile(r"jp-mod-selected"))
    expect(trace.get_by_test_id("coze-lab-trace-retry")).to_have_count(1)  # on `judge` only
    shot(page, "sidebar_trace_failed.png")

    # Retry from the failed node: a new run whose earlier nodes keep their outputs.
    calls = len(model.requests)
    model.script(["a fair verdict"])
    judge.get_by_test_id("coze-lab-trace-retry").click()
    expect(trace).to_have_attribute("data-status", "succeeded", timeout=UI_TIMEOUT_MS)
    retried_id = trace.get_attribute("data-run-id")
    assert retried_id != run_id
    expect(trace.get_by_test_id("coze-lab-trace-run")).to_contain_text(f"retry of run {run_id}")
    expect(trace.get_by_test_id("coze-lab-trace-retry")).to_have_count(0)
    retried = api.run_info(retried_id)
    assert retried["retry_of"] == run_id and retried["outputs"] == {"verdict": "a fair verdict"}
    assert len(model.requests) == calls + 1  # only `judge` called the model again
    expect(
        page.locator(f'[data-testid="coze-lab-run"][data-run-id="{retried_id}"]')
    ).to_have_class(re.compile(r"jp-mod-selected"))


def test_chat_conversations_are_picked_continued_and_cleared(
    page: Page, lab: Lab, model: ModelServer
) -> None:
    api = studio(lab)
    bot = api.create_bot(
        name="Conversation keeper",
        prompt_info={"prompt": "You remember."},
        model_info_config={"model_id": "default"},
    )
    open_lab(page, lab)
    section(page, "Bots & chat")
    row = page.get_by_test_id("coze-lab-bot").filter(has_text="Conversation keeper")
    row.get_by_test_id("coze-lab-bot-chat").click()
    picker = page.get_by_test_id("coze-lab-chat-conversations")
    log = page.get_by_test_id("coze-lab-chat-log")

    def say(text: str, reply: str) -> None:
        model.script([TextReply(reply)])
        page.get_by_test_id("coze-lab-chat-input").fill(text)
        page.get_by_test_id("coze-lab-chat-send").click()
        expect(log.get_by_test_id("coze-lab-chat-answer").last).to_have_text(
            reply, timeout=UI_TIMEOUT_MS
        )
        expect(page.get_by_test_id("coze-lab-chat-send")).to_be_enabled()

    say("My name is Ada.", "Hello Ada.")
    expect(picker.locator("option")).to_have_count(2, timeout=UI_TIMEOUT_MS)
    first = picker.input_value()
    assert first, "the new conversation is selected in the picker"
    page.get_by_test_id("coze-lab-chat-new").click()
    expect(log.get_by_test_id("coze-lab-chat-answer")).to_have_count(0)
    say("Another topic.", "Sure.")
    expect(picker.locator("option")).to_have_count(3, timeout=UI_TIMEOUT_MS)
    assert picker.input_value() not in ("", first)
    assert "My name is Ada." not in json.dumps(model.requests[-1]["messages"])

    # Pick the first conversation: its history loads oldest first, page by page.
    pages: list[str] = []

    def first_page_only(route: Route) -> None:
        # The server's page, cut after the first message with has_more, as if longer.
        pages.append(route.request.url)
        response = route.fetch()
        body = response.json()
        if "after_id" not in route.request.url and len(body["data"]["messages"]) > 1:
            body["data"]["messages"] = body["data"]["messages"][:1]
            body["data"]["last_id"] = body["data"]["messages"][0]["id"]
            body["data"]["has_more"] = True
        route.fulfill(response=response, json=body)

    page.route("**/coze_lab/api/conversations/*/messages*", first_page_only)
    picker.select_option(first)
    expect(log).to_have_attribute("data-loaded", first, timeout=UI_TIMEOUT_MS)
    page.unroute("**/coze_lab/api/conversations/*/messages*")
    assert len(pages) == 2 and "after_id=" in pages[1], pages
    expect(log.get_by_test_id("coze-lab-chat-question")).to_have_text(["My name is Ada."])
    expect(log.get_by_test_id("coze-lab-chat-answer")).to_have_text(["Hello Ada."])

    # Continue it: the model sees the earlier turn.
    say("What is my name?", "Ada.")
    assert "My name is Ada." in json.dumps(model.requests[-1]["messages"])
    conversations = api.conversations(bot["bot_id"])
    assert len(conversations) == 2

    # Clear the context: a new section, the model no longer sees the earlier turns.
    page.get_by_test_id("coze-lab-chat-clear").click()
    expect(log.locator(".jp-CozeLab-divider")).to_have_count(1)
    say("Who am I?", "I do not know.")
    assert "My name is Ada." not in json.dumps(model.requests[-1]["messages"])
    # Reloading the conversation shows the whole history with the section break.
    picker.select_option("")
    expect(log.get_by_test_id("coze-lab-chat-answer")).to_have_count(0)
    picker.select_option(first)
    expect(log).to_have_attribute("data-loaded", first, timeout=UI_TIMEOUT_MS)
    expect(log.get_by_test_id("coze-lab-chat-answer")).to_have_text(
        ["Hello Ada.", "Ada.", "I do not know."]
    )
    expect(log.locator(".jp-CozeLab-divider")).to_have_count(1)
    shot(page, "sidebar_conversations.png")


def test_memory_is_seen_edited_and_deleted_in_the_sidebar(page: Page, lab: Lab) -> None:
    api = studio(lab)
    api.put_memory("user.md", "# About me\n\n- Name is Ada\n")
    open_lab(page, lab)
    section(page, "Memory")
    user_md = page.get_by_test_id("coze-lab-memory-user")
    expect(user_md).to_have_value("# About me\n\n- Name is Ada\n", timeout=UI_TIMEOUT_MS)
    user_md.fill("# About me\n\n- Name is Ada\n- Likes tea\n")
    page.get_by_test_id("coze-lab-memory-save").click()
    expect(page.get_by_test_id("coze-lab-memory-error")).to_be_hidden()
    deadline = time.monotonic() + 30
    while "Likes tea" not in api.memory()["user"]["content"]:
        assert time.monotonic() < deadline, "the sidebar's edit did not reach the server"
        time.sleep(0.1)
    # the same Markdown in the Jupyter root, where the file browser shows it
    (mirrored,) = (lab.log_path.parent / "root" / "coze_memory").glob("*/*/user.md")
    assert "- Likes tea" in mirrored.read_text()
    page.get_by_test_id("coze-lab-memory-skill-name").fill("csv-export")
    page.get_by_test_id("coze-lab-memory-skill-text").fill("Use ; as the separator.")
    page.get_by_test_id("coze-lab-memory-skill-save").click()
    skill = page.get_by_test_id("coze-lab-memory-skill").filter(has_text="csv-export")
    expect(skill).to_contain_text("Use ; as the separator.", timeout=UI_TIMEOUT_MS)
    shot(page, "sidebar_memory.png")
    skill.get_by_test_id("coze-lab-memory-skill-delete").click()
    expect(skill).to_be_hidden(timeout=UI_TIMEOUT_MS)
    assert api.memory()["skills"] == []
    # a bad skill name: the panel shows the server's 400
    page.get_by_test_id("coze-lab-memory-skill-name").fill("Not OK")
    page.get_by_test_id("coze-lab-memory-skill-save").click()
    expect(page.get_by_test_id("coze-lab-memory-error")).to_contain_text(
        "skill name", timeout=UI_TIMEOUT_MS
    )


def test_a_csv_chat_reattaches_after_a_reload_and_its_timeline_shows_everything(
    page: Page, lab: Lab, fresh_model: ModelServer
) -> None:
    """A chat with an uploaded CSV: the bot's workflow tool runs a code node that reads
    input/sales.csv and writes output/summary.md under the Jupyter root. The sidebar picks
    the running conversation and re-attaches; a reload mid-answer re-attaches again and the
    answer finishes; the Activity timeline shows the upload, the tool call, the node, the
    file written and the answer."""
    from tests.web.test_file_tools import summarise

    model = fresh_model
    api = studio(lab)
    saved = api.save_workflow(summarise, publish=True)
    bot = api.create_bot(
        name="Sales analyst",
        prompt_info={"prompt": "You summarise sales files."},
        model_info_config={"model_id": "default"},
        workflow_id_list={"ids": [{"id": saved["id"]}]},
    )
    made = api.create_token("upload", expires_in_days=1)
    uploaded = httpx.post(
        lab.url + "coze_lab/v1/files/upload",
        headers={"Authorization": f"Bearer {made['token']}"},
        files={"file": ("sales.csv", b"region,amount\nnorth,120\nsouth,80\n", "text/csv")},
        timeout=30,
    ).json()
    assert uploaded["code"] == 0, uploaded
    words = "Total sales: 200. " + " ".join(f"word{i}" for i in range(100))
    model.script(
        [
            ToolCallsReply([ScriptedToolCall("summarise", {"title": "Sales"}, id="s1")]),
            TextReply(words),
        ]
    )
    model.chunk_delay = 0.3  # a slow answer: the page reloads in its middle
    try:
        question = json.dumps(
            [
                {"type": "text", "text": "Summarise my sales."},
                {"type": "file", "file_id": uploaded["data"]["id"]},
            ]
        )
        chat = api.request(
            "POST",
            f"bots/{bot['bot_id']}/chat",
            {
                "stream": False,
                "additional_messages": [
                    {"role": "user", "content": question, "content_type": "object_string"}
                ],
            },
        )
        conversation = chat["conversation_id"]
        open_lab(page, lab)
        section(page, "Bots & chat")
        row = page.get_by_test_id("coze-lab-bot").filter(has_text="Sales analyst")
        row.get_by_test_id("coze-lab-bot-chat").click()
        picker = page.get_by_test_id("coze-lab-chat-conversations")
        option = picker.locator(f'option[value="{conversation}"]')
        expect(option).to_have_attribute("data-state", "running", timeout=UI_TIMEOUT_MS)
        expect(option).to_contain_text("[running]")
        picker.select_option(conversation)  # the running chat: re-attached
        log = page.get_by_test_id("coze-lab-chat-log")
        answer = log.get_by_test_id("coze-lab-chat-answer").last
        expect(answer).to_contain_text("word3 ", timeout=UI_TIMEOUT_MS)
        page.reload()  # mid-answer: the sidebar comes back to the chat and follows it
        open_lab_again(page)
        section(page, "Bots & chat")
        log = page.get_by_test_id("coze-lab-chat-log")
        expect(log).to_have_attribute("data-attached", "running", timeout=UI_TIMEOUT_MS)
        expect(log.get_by_test_id("coze-lab-chat-answer").last).to_contain_text("word3 ")
        model.chunk_delay = 0.0  # re-attached: the rest comes at once
        expect(log).to_have_attribute("data-attached", "finished", timeout=UI_TIMEOUT_MS)
        expect(log.get_by_test_id("coze-lab-chat-answer").last).to_have_text(words)
        expect(page.get_by_test_id("coze-lab-session-state")).to_have_attribute(
            "data-state", "done", timeout=UI_TIMEOUT_MS
        )
    finally:
        model.chunk_delay = 0.0
    assert model.requests[-1]["messages"][-1]["tool_call_id"] == "s1"
    assert json.loads(model.requests[-1]["messages"][-1]["content"])["total"] == 200

    # the file is under the Jupyter root and in the file history
    space = api.me()["workspace_id"]
    written = lab_root(lab) / "coze_workspaces" / space / conversation / "output"
    assert (written / "summary.md").read_text() == "# Sales\ntotal: 200\n"
    history = api.request("GET", f"conversations/{conversation}/file_history")["items"]
    assert [(e["action"], e["path"]) for e in history] == [
        ("upload", "input/sales.csv"),
        ("write", "output/summary.md"),
    ]

    # the timeline: upload, question, tool call, node, file, tool result, answer
    page.get_by_test_id("coze-lab-activity-toggle").click()
    timeline = page.get_by_test_id("coze-lab-timeline")
    expect(timeline).to_be_visible(timeout=UI_TIMEOUT_MS)
    items = timeline.get_by_test_id("coze-lab-timeline-item")
    kinds = items.evaluate_all("els => els.map(e => e.dataset.kind)")
    assert [k for k in kinds if k != "run"] == [
        "chat",
        "message",
        "file",
        "tool_call",
        "node",
        "file",
        "tool_result",
        "answer",
    ], kinds
    expect(timeline.locator('[data-kind="file"][data-path="output/summary.md"]')).to_be_visible()
    expect(timeline.get_by_test_id("coze-lab-timeline-state")).to_have_text("done")
    shot(page, "sidebar_timeline.png")
    # the same timeline in a tab of the main area, where it has room
    page.get_by_test_id("coze-lab-activity-open").click()
    tab = page.get_by_test_id("coze-lab-activity-tab")
    expect(tab.get_by_test_id("coze-lab-timeline-item")).to_have_count(
        len(kinds), timeout=UI_TIMEOUT_MS
    )
    for kind in ("tool_call", "node"):  # their inputs and outputs unfold
        item = tab.locator(f'[data-kind="{kind}"]')
        item.locator("summary").click()
    expect(tab.locator('[data-kind="node"] pre')).to_contain_text('"total": 200')
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    expect(tab.locator('[data-kind="message"]')).to_contain_text("[file: sales.csv]")
    picture = tab.get_by_test_id("coze-lab-activity-page")
    picture.screenshot(path=str(ARTIFACTS / "timeline.png"))
    if PICTURES:
        Path(PICTURES).mkdir(parents=True, exist_ok=True)
        picture.screenshot(path=str(Path(PICTURES) / "timeline.png"))


def open_lab_again(page: Page) -> None:
    """After a reload: the lab is back and the Coze Lab sidebar open."""
    sidebar = page.get_by_test_id("coze-lab-sidebar")
    tab = page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="coze-lab-sidebar"]')
    expect(tab).to_be_visible(timeout=UI_TIMEOUT_MS)
    deadline = time.monotonic() + 30
    while not sidebar.is_visible():
        assert time.monotonic() < deadline, "the Coze Lab sidebar did not open"
        tab.click()
        page.wait_for_timeout(500)


def lab_root(lab: Lab) -> Path:
    """The Jupyter root of the module's lab (``--ServerApp.root_dir``)."""
    return lab.log_path.parent / "root"
