"""Long-term personal memory on real databases, real files and the local model server:
merging, the file mirror, the queue's claims and leases, retries and the rules fallback."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

import pytest

from coze_lab.core.errors import InvalidParameter, NotFound
from coze_lab.core.memory.consolidation import MemoryWorker, apply
from coze_lab.core.memory.detection import Change
from coze_lab.core.memory.documents import merge_fact, merge_skill
from coze_lab.core.memory.personal import QueuedMessage
from coze_lab.core.models import ModelRegistry
from coze_lab.core.models.completer import RegistryCompleter
from coze_lab.services import Runtime
from coze_lab.testing import ErrorReply, ModelServer
from tests.support import FakeClock

#: tests of files and access rules, not of the database: SQLite only (the CI budget); the
#: queue's tests run on every configured database
ON_SQLITE = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def test_facts_merge_without_duplicates_and_keep_the_users_text() -> None:
    doc = "# About me\n\nSome notes I wrote.\n\n- Name is Ada\n"
    doc = merge_fact(doc, "add", "name is ada.")
    assert doc.count("Ada") == 1
    doc = merge_fact(doc, "add", "Prefers metric units")
    doc = merge_fact(doc, "update", "Prefers imperial units", old="prefers metric units")
    assert "metric" not in doc and "- Prefers imperial units" in doc
    assert "Some notes I wrote." in doc
    assert "Ada" not in merge_fact(doc, "delete", "Name is Ada")
    skill = merge_skill(None, "csv", "add", "Use ; as separator.")
    assert merge_skill(skill, "csv", "add", "use ; as separator") == skill
    assert merge_skill(skill, "csv", "delete", "") is None
    changed = apply({}, [Change("add", "skill", "Plot with seaborn.", name="plots")])
    assert changed == {"skills/plots.md": "# plots\n\nPlot with seaborn.\n"}


@ON_SQLITE
def test_files_mirror_the_database_and_edits_come_back(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    memory = runtime.memory
    assert memory.mirror is not None
    memory.write(alice.id, "user.md", "# About me\n\n- Name is Ada\n")
    folder = memory.mirror.folder(alice.id, alice.workspace_id)
    assert (folder / "user.md").read_text() == "# About me\n\n- Name is Ada\n"
    # the user edits the file in JupyterLab, adds a skill file: both are picked up
    (folder / "user.md").write_text("# About me\n\n- Name is Ada Lovelace\n")
    (folder / "skills" / "units.md").write_text("Always use SI units.\n")
    view = memory.view(alice.id)
    assert "Ada Lovelace" in view.user and view.skills == {"units": "Always use SI units.\n"}
    # an edit into anything (binary, huge) is still served as text, capped
    (folder / "user.md").write_bytes(b"\xff\xfe\x00binary" + b"x" * 100_000)
    text = memory.view(alice.id).user
    assert len(text) == memory.max_chars and text.startswith("\ufffd\ufffd\ufffdbinary")
    # a file deleted by the user deletes the skill; a file deleted in the database goes
    (folder / "skills" / "units.md").unlink()
    assert memory.view(alice.id).skills == {}
    memory.write(alice.id, "skills/plots.md", "Use seaborn.")
    memory.delete(alice.id, "skills/plots.md")
    assert not (folder / "skills" / "plots.md").exists()
    # a symlink planted as a skill is never followed
    secret = folder.parent / "secret.txt"
    secret.write_text("do not read")
    os.symlink(secret, folder / "skills" / "leak.md")
    assert "leak" not in memory.view(alice.id).skills
    os.link(secret, folder / "skills" / "hard.md")  # nor a hard link to a file elsewhere
    assert "hard" not in memory.view(alice.id).skills


@ON_SQLITE
def test_memory_never_crosses_users_or_spaces(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    bob = runtime.identity.ensure_user("bob")
    runtime.memory.write(alice.id, "user.md", "- Name is Ada\n")
    assert runtime.memory.view(bob.id).user == ""
    with pytest.raises(NotFound):
        runtime.memory.view(bob.id, alice.workspace_id)
    with pytest.raises(NotFound):
        runtime.memory.delete(bob.id, "user.md")
    with pytest.raises(InvalidParameter):
        runtime.memory.write(alice.id, "skills/../../etc.md", "x")
    with pytest.raises(InvalidParameter):
        runtime.memory.write(alice.id, "user.md", "x" * (runtime.memory.max_chars + 1))
    assert runtime.memory.view(alice.id).user == "- Name is Ada\n"


def test_a_claim_is_exclusive_until_its_lease_ends_and_a_change_applies_once(
    runtime: Runtime, clock: FakeClock
) -> None:
    alice = runtime.identity.ensure_user("alice")
    jobs = runtime.memory_jobs
    message = QueuedMessage(101, "My name is Ada")
    assert runtime.memory.enqueue(alice.id, alice.workspace_id, [message], model_id="m") == 1
    assert runtime.memory.enqueue(alice.id, alice.workspace_id, [message], model_id="m") == 0
    first = jobs.claim("a")
    assert first is not None and first.attempts == 1
    assert jobs.claim("b") is None  # leased
    clock.advance(timedelta(seconds=jobs.settings.lease_s + 1))  # "a" died, it seems
    second = jobs.claim("b")
    assert second is not None and second.attempts == 2
    changes = [Change("add", "fact", "Name is Ada")]
    assert jobs.finish(second, changes) is True
    assert jobs.finish(first, changes) is False  # "a" woke up: its claim is gone
    assert jobs.claim("c") is None and jobs.status(101) == "done"
    view = runtime.memory.view(alice.id)
    assert view.user.count("Name is Ada") == 1
    assert [(c["text"], c["message_id"]) for c in view.changes] == [("Name is Ada", 101)]


def test_the_worker_retries_with_backoff_then_falls_back_to_rules(
    runtime: Runtime, clock: FakeClock
) -> None:
    alice = runtime.identity.ensure_user("alice")
    jobs = runtime.memory_jobs
    text = "My name is Ada; remember that I prefer metric units."
    runtime.memory.enqueue(alice.id, alice.workspace_id, [QueuedMessage(7, text)], model_id="m")
    with ModelServer() as server:
        spec = server.spec(id="m")
        server.script([ErrorReply(503, "down")] * jobs.settings.max_attempts)

        async def go() -> None:
            completer = RegistryCompleter(ModelRegistry([spec]))
            worker = MemoryWorker(jobs, completer)
            for attempt in range(1, jobs.settings.max_attempts + 1):
                assert await worker.run_once() is True
                if attempt < jobs.settings.max_attempts:
                    assert jobs.status(7) == "queued"
                    assert await worker.run_once() is False  # backing off
                    clock.advance(timedelta(seconds=jobs.settings.max_backoff_s))
            # an answer that is not the JSON asked for (the demo model's): the rules at once
            runtime.memory.enqueue(
                alice.id, alice.workspace_id, [QueuedMessage(8, "Call me Al")], model_id="m"
            )
            assert await worker.run_once() is True and jobs.status(8) == "done"
            await completer.aclose()

        asyncio.run(go())
        assert len(server.requests) == jobs.settings.max_attempts + 1
        assert server.requests[0]["response_format"] == {"type": "json_object"}
    assert jobs.status(7) == "done"
    view = runtime.memory.view(alice.id)
    assert "- Name is Ada\n- Prefers metric units\n- Wants to be called Al" in view.user
    assert {c["source"] for c in view.changes} == {"rules"}
