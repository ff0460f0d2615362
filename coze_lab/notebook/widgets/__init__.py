"""Notebook widgets (anywidget): a live workflow run and a chat with a bot.

>>> import coze_lab as cl
>>> studio = cl.connect()          # doctest: +SKIP
>>> studio.run(run_id)             # doctest: +SKIP  (a RunWidget: graph, messages, forms)
>>> studio.chat(bot_id)            # doctest: +SKIP  (a ChatWidget)
"""

from coze_lab.notebook.widgets.chat import ChatWidget
from coze_lab.notebook.widgets.run import RunWidget

__all__ = ["ChatWidget", "RunWidget"]
