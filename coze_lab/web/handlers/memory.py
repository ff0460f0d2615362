"""Studio API for long-term personal memory: see, edit and delete ``user.md`` and skills."""

from __future__ import annotations

from coze_lab.core.memory.documents import USER_PATH, skill_path
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler


class MemoryArea(CozeHandler):
    """The caller's own memory (``?space_id=``, default personal): never anyone else's."""

    AUTH_RESOURCE = "coze_lab.memory"


class MemoryHandler(MemoryArea):
    """GET: user.md, the skills, the last changes and the queue."""

    def get(self) -> None:
        user = self.studio_user()
        self.reply(serialize.memory(self.runtime.memory.view(user.id, self.space_query())))


class MemoryUserHandler(MemoryArea):
    """PUT ``{content}``: replace user.md. DELETE: forget it."""

    def put(self) -> None:
        user = self.studio_user()
        content = self.json_body().get("content")
        view = self.runtime.memory.write(user.id, USER_PATH, content, self.space_query())
        self.reply(serialize.memory(view))

    def delete(self) -> None:
        user = self.studio_user()
        self.runtime.memory.delete(user.id, USER_PATH, self.space_query())
        self.reply(None)


class MemorySkillHandler(MemoryArea):
    """PUT ``{content}``: create or replace a skill. DELETE: forget it."""

    def put(self, name: str) -> None:
        user = self.studio_user()
        content = self.json_body().get("content")
        view = self.runtime.memory.write(user.id, skill_path(name), content, self.space_query())
        self.reply(serialize.memory(view))

    def delete(self, name: str) -> None:
        user = self.studio_user()
        self.runtime.memory.delete(user.id, skill_path(name), self.space_query())
        self.reply(None)
