"""Which handler serves which path, for the Jupyter extension and for ``coze-lab serve``."""

from __future__ import annotations

from typing import Any

from tornado import web

from coze_lab.web.base import CozeHandler, NotFoundHandler
from coze_lab.web.handlers.admin import UsageHandler
from coze_lab.web.handlers.bots import (
    BotCreateHandler,
    BotItemHandler,
    BotOnlineInfoHandler,
    BotPublishHandler,
    BotsHandler,
    BotUnpublishHandler,
    BotUpdateHandler,
    PublishedBotsListHandler,
    StudioBotChatHandler,
    StudioBotConversationsHandler,
    StudioBotHandler,
    StudioBotPublishHandler,
    StudioBotsHandler,
    StudioChatCancelHandler,
    StudioConversationClearHandler,
    StudioConversationMessagesHandler,
)
from coze_lab.web.handlers.chat import (
    ChatCancelHandler,
    ChatHandler,
    ChatMessagesHandler,
    ChatRetrieveHandler,
    ChatSubmitToolOutputsHandler,
)
from coze_lab.web.handlers.conversations import (
    ConversationClearHandler,
    ConversationCreateHandler,
    ConversationHandler,
    ConversationRetrieveHandler,
    ConversationsHandler,
    MessageCreateHandler,
    MessageDeleteHandler,
    MessageListHandler,
    MessageModifyHandler,
    MessageRetrieveHandler,
)
from coze_lab.web.handlers.files import FileRetrieveHandler, FileUploadHandler
from coze_lab.web.handlers.meta import LivenessHandler, OpenApiDocHandler, ServiceRootHandler
from coze_lab.web.handlers.plugins import (
    OAuthCallbackHandler,
    PluginAuthorizeHandler,
    PluginCallsHandler,
    PluginCredentialsHandler,
    PluginItemHandler,
    PluginPublishHandler,
    PluginsHandler,
    PluginToolDebugHandler,
)
from coze_lab.web.handlers.sdk import SdkAssetHandler
from coze_lab.web.handlers.studio import HealthHandler, MeHandler, TokenHandler, TokensHandler
from coze_lab.web.handlers.studio_workflows import (
    InterruptResumeHandler,
    InterruptsHandler,
    RunCancelHandler,
    RunEventsHandler,
    RunHandler,
    RunsHandler,
    WorkflowDraftRunHandler,
    WorkflowItemHandler,
    WorkflowPublishHandler,
    WorkflowsHandler,
)
from coze_lab.web.handlers.tables import (
    TableFieldsHandler,
    TableHandler,
    TablePublishHandler,
    TableRowsHandler,
    TablesHandler,
)
from coze_lab.web.handlers.users import UserMeHandler
from coze_lab.web.handlers.workflows import (
    ExecuteNodeHandler,
    RunHistoryHandler,
    WorkflowRunHandler,
    WorkflowStreamResumeHandler,
    WorkflowStreamRunHandler,
)
from coze_lab.web.handlers.workspaces import WorkspacesHandler

Route = tuple[str, type[web.RequestHandler]]

#: Coze-compatible OpenAPI, personal access tokens only
OPENAPI: list[tuple[str, type[CozeHandler]]] = [
    (r"/v1/files/upload", FileUploadHandler),
    (r"/v1/files/retrieve", FileRetrieveHandler),
    (r"/v1/workspaces", WorkspacesHandler),
    (r"/v1/users/me", UserMeHandler),
    (r"/v1/workflow/run", WorkflowRunHandler),
    (r"/v1/workflow/stream_run", WorkflowStreamRunHandler),
    (r"/v1/workflow/stream_resume", WorkflowStreamResumeHandler),
    (r"/v1/workflows/([^/]+)/run_histories/([^/]+)", RunHistoryHandler),
    (r"/v1/workflows/([^/]+)/run_histories/([^/]+)/execute_nodes/([^/]+)", ExecuteNodeHandler),
    (r"/v1/bot/create", BotCreateHandler),
    (r"/v1/bot/update", BotUpdateHandler),
    (r"/v1/bot/publish", BotPublishHandler),
    (r"/v1/bot/get_online_info", BotOnlineInfoHandler),
    (r"/v1/bots", BotsHandler),
    (r"/v1/bots/([^/]+)", BotItemHandler),
    (r"/v1/bots/([^/]+)/unpublish", BotUnpublishHandler),
    (r"/v1/space/published_bots_list", PublishedBotsListHandler),
    (r"/v1/conversation/create", ConversationCreateHandler),
    (r"/v1/conversation/retrieve", ConversationRetrieveHandler),
    (r"/v1/conversations", ConversationsHandler),
    (r"/v1/conversations/([^/]+)", ConversationHandler),
    (r"/v1/conversations/([^/]+)/clear", ConversationClearHandler),
    (r"/v1/conversation/message/create", MessageCreateHandler),
    (r"/v1/conversation/message/list", MessageListHandler),
    (r"/v1/conversation/message/retrieve", MessageRetrieveHandler),
    (r"/v1/conversation/message/modify", MessageModifyHandler),
    (r"/v1/conversation/message/delete", MessageDeleteHandler),
    (r"/v3/chat", ChatHandler),
    (r"/v3/chat/retrieve", ChatRetrieveHandler),
    (r"/v3/chat/message/list", ChatMessagesHandler),
    (r"/v3/chat/cancel", ChatCancelHandler),
    (r"/v3/chat/submit_tool_outputs", ChatSubmitToolOutputsHandler),
]
#: coze_lab's own API for the lab front end
STUDIO: list[tuple[str, type[CozeHandler]]] = [
    (r"/coze_lab/api/health", HealthHandler),
    (r"/coze_lab/api/me", MeHandler),
    (r"/coze_lab/api/admin/usage", UsageHandler),
    (r"/coze_lab/api/tokens", TokensHandler),
    (r"/coze_lab/api/tokens/([^/]+)", TokenHandler),
    (r"/coze_lab/api/workflows", WorkflowsHandler),
    (r"/coze_lab/api/workflows/([^/]+)", WorkflowItemHandler),
    (r"/coze_lab/api/workflows/([^/]+)/publish", WorkflowPublishHandler),
    (r"/coze_lab/api/workflows/([^/]+)/runs", WorkflowDraftRunHandler),
    (r"/coze_lab/api/runs", RunsHandler),
    (r"/coze_lab/api/runs/([^/]+)", RunHandler),
    (r"/coze_lab/api/runs/([^/]+)/cancel", RunCancelHandler),
    (r"/coze_lab/api/runs/([^/]+)/events", RunEventsHandler),
    (r"/coze_lab/api/interrupts", InterruptsHandler),
    (r"/coze_lab/api/interrupts/([^/]+)/resume", InterruptResumeHandler),
    (r"/coze_lab/api/bots", StudioBotsHandler),
    (r"/coze_lab/api/bots/([^/]+)", StudioBotHandler),
    (r"/coze_lab/api/bots/([^/]+)/publish", StudioBotPublishHandler),
    (r"/coze_lab/api/bots/([^/]+)/chat", StudioBotChatHandler),
    (r"/coze_lab/api/bots/([^/]+)/conversations", StudioBotConversationsHandler),
    (r"/coze_lab/api/conversations/([^/]+)/messages", StudioConversationMessagesHandler),
    (r"/coze_lab/api/conversations/([^/]+)/clear", StudioConversationClearHandler),
    (r"/coze_lab/api/chats/([^/]+)/cancel", StudioChatCancelHandler),
    (r"/coze_lab/api/tables", TablesHandler),
    (r"/coze_lab/api/tables/([^/]+)", TableHandler),
    (r"/coze_lab/api/tables/([^/]+)/fields", TableFieldsHandler),
    (r"/coze_lab/api/tables/([^/]+)/publish", TablePublishHandler),
    (r"/coze_lab/api/tables/([^/]+)/rows", TableRowsHandler),
    (r"/coze_lab/api/plugins", PluginsHandler),
    (r"/coze_lab/api/plugins/([^/]+)", PluginItemHandler),
    (r"/coze_lab/api/plugins/([^/]+)/publish", PluginPublishHandler),
    (r"/coze_lab/api/plugins/([^/]+)/credentials", PluginCredentialsHandler),
    (r"/coze_lab/api/plugins/([^/]+)/oauth/authorize", PluginAuthorizeHandler),
    (r"/coze_lab/api/plugins/([^/]+)/calls", PluginCallsHandler),
    (r"/coze_lab/api/plugins/([^/]+)/tools/([^/]+)/debug", PluginToolDebugHandler),
]
PUBLIC: list[tuple[str, type[CozeHandler]]] = [
    (r"/coze_lab/openapi.json", OpenApiDocHandler),
    (r"/coze_lab/api/plugins/oauth/callback", OAuthCallbackHandler),
    (r"/coze_lab/sdk/([^/]+)", SdkAssetHandler),
]
_HTTP_METHODS = ("get", "post", "put", "patch", "delete")


def bind(handler: type[CozeHandler], base: type[CozeHandler], *, public: bool = False) -> type:
    """``handler``'s endpoints on top of a deployment's ``base`` class."""
    namespace: dict[str, Any] = {"__module__": handler.__module__}
    if public:
        from jupyter_server.auth.decorator import allow_unauthenticated

        for name in _HTTP_METHODS:
            method = getattr(handler, name, None)
            if method is not None and name in _own_methods(handler):
                namespace[name] = allow_unauthenticated(method)
    return type(handler.__name__, (handler, base), namespace)


def _own_methods(handler: type) -> set[str]:
    names: set[str] = set()
    for klass in handler.__mro__:
        if klass in (CozeHandler, web.RequestHandler, object):
            break
        names.update(n for n in _HTTP_METHODS if n in klass.__dict__)
    return names


def jupyter_routes() -> list[Route]:
    """Routes inside jupyter_server (relative to its base_url): everything under coze_lab/."""
    from coze_lab.web.jupyter import JupyterOpenApiBase, JupyterStudioBase

    routes: list[Route] = [
        (r"/coze_lab" + path, bind(h, JupyterOpenApiBase, public=True)) for path, h in OPENAPI
    ]
    routes += [(path, bind(h, JupyterStudioBase)) for path, h in STUDIO]
    routes += [(path, bind(h, JupyterOpenApiBase, public=True)) for path, h in PUBLIC]
    routes.append((r"/coze_lab/.*", bind(NotFoundHandler, JupyterOpenApiBase, public=True)))
    return routes


def standalone_routes() -> list[Route]:
    """Routes of ``coze-lab serve``: the OpenAPI at the root and under /coze_lab too."""
    from coze_lab.web.standalone import StandaloneBase

    routes: list[Route] = []
    for path, handler in OPENAPI:
        bound = bind(handler, StandaloneBase)
        routes += [(path, bound), (r"/coze_lab" + path, bound)]
    routes += [(path, bind(h, StandaloneBase)) for path, h in STUDIO + PUBLIC]
    routes += [
        (r"/openapi.json", bind(OpenApiDocHandler, StandaloneBase)),
        (r"/healthz", bind(LivenessHandler, StandaloneBase)),
        (r"/", bind(ServiceRootHandler, StandaloneBase)),
    ]
    return routes


def standalone_not_found() -> type:
    from coze_lab.web.standalone import StandaloneBase

    return bind(NotFoundHandler, StandaloneBase)
