"""``Studio``: the studio API client a notebook gets from ``cl.connect()``, with the widgets.

The transport itself (:class:`~coze_lab.notebook.http.StudioClient`) knows no widget; this
class adds the two that show a run and a chat, so the widgets and the client do not import
each other.

>>> studio = cl.connect()          # doctest: +SKIP
>>> studio.run(run_id)             # doctest: +SKIP  (a RunWidget)
>>> studio.chat(bot_id)            # doctest: +SKIP  (a ChatWidget)
"""

from __future__ import annotations

from typing import Any

from coze_lab.notebook.http import SseEvent, StudioClient, StudioError, parse_sse, studio_error


class Studio(StudioClient):
    """The studio API of one server, as one user, with its widgets (see ``StudioClient``)."""

    def run(self, run_id: str | int) -> Any:
        """A live widget for a run on the server (re-display it after a restart or reload).

        >>> studio.run("7382...")   # doctest: +SKIP
        """
        from coze_lab.notebook.widgets import RunWidget

        return RunWidget(str(run_id), studio=self)

    def chat(self, bot_id: str, conversation_id: str | None = None) -> Any:
        """A chat widget for a bot (streaming, cancel, clear context, history).

        >>> studio.chat(bot_id)      # doctest: +SKIP
        """
        from coze_lab.notebook.widgets import ChatWidget

        return ChatWidget(bot_id, studio=self, conversation_id=conversation_id)


__all__ = ["SseEvent", "Studio", "StudioClient", "StudioError", "parse_sse", "studio_error"]
