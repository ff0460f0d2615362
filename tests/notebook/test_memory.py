"""``cl.memory`` and ``cl.Bot(memory=True)`` in-process, with the scripted model server."""

from __future__ import annotations

import json

import pytest

import coze_lab as cl
from coze_lab.notebook import connect
from coze_lab.notebook.http import StudioError
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.testing import ModelServer


# the notebook API over HTTP: the databases are covered by tests/web/test_memory_api.py
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_bot_with_memory_and_cl_memory(
    agent_host: InProcessHost, model_env: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connect, "_current", agent_host.studio)
    detected = {"changes": [{"op": "add", "kind": "fact", "text": "Prefers metric units"}]}
    model_env.script(["Noted.", json.dumps(detected)])
    bot = cl.Bot("keeper", prompt="Be brief.", memory=True, host=agent_host)
    bot.chat("Remember that I prefer metric units.").wait()
    assert cl.memory.wait(timeout=30)["jobs"]["done"] == 1
    assert cl.memory.user() == "# About me\n\n- Prefers metric units\n"
    cl.memory.set_skill("csv-export", "Use ; as the separator.")
    assert cl.memory.skills() == {"csv-export": "Use ; as the separator."}
    bot.clear()
    model_env.script(["Sure.", json.dumps({"changes": []})])
    bot.chat("Export the table.").wait()
    system = model_env.requests[2]["messages"][0]["content"]
    assert "- Prefers metric units" in system and "Use ; as the separator." in system
    cl.memory.forget("csv-export")
    cl.memory.forget()
    assert cl.memory.show()["skills"] == [] and cl.memory.user() == ""
    with pytest.raises(StudioError, match="skill name"):
        cl.memory.set_skill("Not OK", "x")
    assert cl.memory.wait(timeout=30)["jobs"]["done"] == 2  # nothing left running
