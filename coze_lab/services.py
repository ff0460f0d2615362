"""The Runtime: every service wired from one ``CozeLab`` config, shared by all front doors."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from coze_lab._version import __version__
from coze_lab.config import CozeLab
from coze_lab.core.activity import Activity
from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.file_history import FileHistory
from coze_lab.core.files import FileStore
from coze_lab.core.identity import IdentityService, UserInfo
from coze_lab.core.limits import Limits
from coze_lab.core.net import OutboundPolicy
from coze_lab.core.plugins.importing import stop_readers
from coze_lab.core.spaces import SpaceService
from coze_lab.core.tokens import TokenService
from coze_lab.store import Database
from coze_lab.store.offload import Offload

if TYPE_CHECKING:
    from coze_lab.core.chat import ChatService
    from coze_lab.core.chat.flow import ChatflowService
    from coze_lab.core.knowledge import Embedder
    from coze_lab.core.mcp.service import McpService
    from coze_lab.core.memory.consolidation import MemoryWorker
    from coze_lab.core.models import ModelClient, ModelRegistry
    from coze_lab.core.models.completer import RegistryCompleter
    from coze_lab.core.plugins import PluginService
    from coze_lab.core.sandbox import Runner
    from coze_lab.core.workflows.engine import Engine
    from coze_lab.core.workflows.run_service import RunService

log = logging.getLogger("coze_lab")


class Runtime:
    """Services for one deployment: the Jupyter extension, ``coze-lab serve`` or a test.

    Example:
        >>> runtime = Runtime(CozeLab(data_dir="/tmp/cl"))    # doctest: +SKIP
        >>> runtime.start()                                    # doctest: +SKIP
        >>> runtime.identity.ensure_user("alice").name         # doctest: +SKIP
        'alice'
    """

    def __init__(
        self, config: CozeLab, *, clock: Clock = utcnow, runner: Runner | None = None
    ) -> None:
        self.config = config
        self.clock = clock
        config.data_path.mkdir(parents=True, exist_ok=True)
        self.db = Database(config.database_url)
        from coze_lab.store.signals import Signals

        #: wake-ups between replicas: PostgreSQL LISTEN/NOTIFY (this process elsewhere)
        self.signals = Signals(self.db)
        self.identity = IdentityService(self.db, clock=clock)
        self.spaces = SpaceService(self.db, clock=clock)
        #: blocking database reads of request handlers, off the event loop (not on SQLite)
        self.offload = Offload(self.db)
        self.tokens = TokenService(self.db, clock=clock, signals=self.signals)
        self.files = FileStore(
            self.db, config.data_path / "files", max_bytes=config.max_upload_bytes, clock=clock
        )
        from coze_lab.core.workflows.service import WorkflowService

        self.limits = Limits(
            name_chars=config.max_name_chars,
            description_chars=config.max_description_chars,
            workflow_nodes=config.max_workflow_nodes,
        )
        self.workflows = WorkflowService(self.db, clock=clock, limits=self.limits)
        from coze_lab.core.bots import BotService
        from coze_lab.core.chat import ChatStore
        from coze_lab.core.conversations import ConversationService

        self.bots = BotService(
            self.db,
            clock=clock,
            check_model=self._check_model,
            plugin_versions=self._plugin_versions,
            limits=self.limits,
        )
        self.conversations = ConversationService(
            self.db, clock=clock, check_file=self.files.retrieve, limits=self.limits
        )
        self.chat_store = ChatStore(self.db, self.conversations, clock=clock, signals=self.signals)
        from coze_lab.core.memory import TableService

        self.tables = TableService(self.db, clock=clock)
        from coze_lab.core.memory.variables import VariableService

        self.variables = VariableService(self.db, self.bots, clock=clock)
        from coze_lab.core.usage import UsageService

        self.usage = UsageService(self.db)
        self.file_history = FileHistory(self.db, clock=clock)
        #: sessions' timelines and run states, from what the other services stored
        self.activity = Activity(self.db)
        from coze_lab.core.knowledge import IngestWorker, KnowledgeService

        #: knowledge documents are ingested by a background job of the serving loop
        self.ingest = IngestWorker(
            self.db,
            embedder=self._embedder,
            clock=clock,
            lease_s=config.knowledge_lease_s,
            poll_s=config.knowledge_poll_s,
        )
        self.knowledge = KnowledgeService(
            self.db,
            clock=clock,
            limits=self.limits,
            embedder=self._embedder,
            on_queued=self.ingest.wake,
            max_document_bytes=config.knowledge_max_document_bytes,
            read_file=lambda owner, file_id: self.files.path_of(owner, file_id).read_bytes(),
        )
        from coze_lab.core.memory.consolidation import JobSettings, MemoryJobs
        from coze_lab.core.memory.mirror import MemoryMirror
        from coze_lab.core.memory.personal import PersonalMemory

        memory_root = config.memory_path
        self.memory = PersonalMemory(
            self.db,
            mirror=None
            if memory_root is None
            else MemoryMirror(memory_root, max_chars=config.memory_max_chars),
            clock=clock,
            max_chars=config.memory_max_chars,
            prompt_chars=config.memory_prompt_chars,
        )
        self.memory_jobs = MemoryJobs(
            self.db,
            self.memory,
            settings=JobSettings(
                lease_s=config.memory_lease_s,
                poll_s=config.memory_poll_s,
                max_attempts=config.memory_max_attempts,
                model_id=config.memory_model,
            ),
            clock=clock,
        )
        self._memory_worker: MemoryWorker | None = None
        # made on first use, in the event loop that uses them (some are per loop)
        self._chats: ChatService | None = None
        self._chatflows: ChatflowService | None = None
        #: the code-node runner; None: the Deno + Pyodide pool
        self._sandbox: Runner | None = runner
        self._engine: Engine | None = None
        self._runs: RunService | None = None
        self._models: ModelRegistry | None = None
        self._model_client: ModelClient | None = None
        self._completer: RegistryCompleter | None = None
        self._plugins: PluginService | None = None
        self._mcp: McpService | None = None
        self._mcp_endpoint: Any = None
        self._secrets: Any = None
        #: where users reach this server (OAuth callbacks): the configured public_url, else
        #: what the front door knows from its own configuration (never a request header)
        self.public_url = config.public_url
        self.default_public_url: Callable[[], str | None] | None = None

    def start(self) -> None:
        """Prepare the database (migrations unless disabled)."""
        if self.config.auto_migrate:
            revision = self.db.upgrade()
            log.info("coze_lab database %s at revision %s", self.db.dialect, revision)

    def start_serving(self, public_url: str | None = None) -> None:
        """The start-up every server shares (the Jupyter extension and ``coze-lab serve``),
        inside its running event loop: runs whose worker died continue here, chats whose
        server died are failed visibly, and ``public_url`` (where users reach this server)
        is set unless configured."""
        self.public_url = self.public_url or public_url
        self.signals.start()
        self.engine.start_recovery_loop()
        self.chats.start_recovery_loop()
        self.ingest.start()
        from coze_lab.core.knowledge.search import vector_backend

        log.info("coze_lab knowledge: %s", vector_backend(self.db))
        if self.db.has_sqlite_vec():
            from coze_lab.core.knowledge import vec_sqlite

            vec_sqlite.sync(self.db)
        self.memory_worker.start()

    def _memory_queued(self) -> None:
        """A chat queued messages for memory: the worker of this loop takes them now (a
        runtime that is not serving, as in a notebook, starts it here)."""
        self.memory_worker.start()
        self.memory_worker.wake()

    @property
    def memory_worker(self) -> MemoryWorker:
        """The worker consolidating queued memory jobs in this runtime's event loop."""
        if self._memory_worker is None:
            from coze_lab.core.memory.consolidation import MemoryWorker

            self._memory_worker = MemoryWorker(self.memory_jobs, self.completer)
        return self._memory_worker

    @property
    def sandbox(self) -> Runner:
        """The code-node runner (a warm Deno + Pyodide pool), created on first use."""
        if self._sandbox is None:
            from coze_lab.core.sandbox import WorkerPool

            self._sandbox = WorkerPool(self.config.sandbox_settings())
        return self._sandbox

    @property
    def models(self) -> ModelRegistry:
        """The model registry (file from config or env, plus the env's default model), read
        once, on first use (a broken file fails the first chat or llm node, naming it)."""
        if self._models is None:
            from coze_lab.core.models import ModelRegistry

            self._models = ModelRegistry.load(self.config.models_file or None)
        return self._models

    @property
    def model_client(self) -> ModelClient:
        """The one model client of this runtime's event loop (chats and llm nodes)."""
        if self._model_client is None:
            from coze_lab.core.models import ModelClient

            self._model_client = ModelClient()
        return self._model_client

    @property
    def completer(self) -> RegistryCompleter:
        """What workflow llm nodes call: the registry and the client behind one call."""
        if self._completer is None:
            from coze_lab.core.models.completer import RegistryCompleter

            self._completer = RegistryCompleter(self.models, client=self.model_client)
        return self._completer

    @property
    def plugins(self) -> PluginService:
        """The plugin service (credentials encrypted with the configured or generated key)."""
        if self._plugins is None:
            from coze_lab.core.plugins import PluginService, PluginSettings
            from coze_lab.core.plugins.importing import ImportLimits

            async def authorized(user_id: int, plugin_id: int) -> None:
                await self.runs.resume_authorized(user_id, plugin_id)

            self._plugins = PluginService(
                self.db,
                secrets=self.secrets,
                policy=OutboundPolicy.from_strings(self.config.outbound_allow),
                clock=self.clock,
                settings=PluginSettings(
                    timeout_s=self.config.plugin_timeout_s,
                    retries=self.config.plugin_retries,
                    max_output_chars=self.config.plugin_max_output_chars,
                    import_limits=ImportLimits(
                        max_document_bytes=self.config.plugin_max_document_bytes,
                        max_operations=self.config.plugin_max_operations,
                        max_schema_nodes=self.config.plugin_max_schema_nodes,
                        timeout_s=self.config.plugin_import_timeout_s,
                        memory_mb=self.config.plugin_import_memory_mb,
                    ),
                ),
                public_url=self.reachable_url,
                on_authorized=authorized,
            )
        return self._plugins

    @property
    def secrets(self) -> Any:
        """The SecretBox of stored credentials (configured key, or the generated key file)."""
        if self._secrets is None:
            from coze_lab.core.secrets import SecretBox

            self._secrets = SecretBox.from_config(
                self.config.secret_key, self.config.data_path / "secret.key"
            )
        return self._secrets

    @property
    def mcp(self) -> McpService:
        """MCP servers of the spaces, as tools (stdio processes made on demand, per loop)."""
        if self._mcp is None:
            from coze_lab.core.mcp.client import McpSettings
            from coze_lab.core.mcp.service import McpService

            config = self.config
            self._mcp = McpService(
                self.db,
                secrets=self.secrets,
                policy=OutboundPolicy.from_strings(config.outbound_allow),
                settings=McpSettings(
                    timeout_s=config.mcp_timeout_s,
                    max_output_chars=config.mcp_max_output_chars,
                    idle_s=config.mcp_idle_s,
                    stdio_commands=tuple(config.mcp_stdio_commands),
                    work_dir=config.data_path / "mcp",
                ),
                clock=self.clock,
            )
        return self._mcp

    @property
    def mcp_endpoint(self) -> Any:
        """coze_lab as an MCP server (``/coze_lab/mcp``): published workflows and bots."""
        if self._mcp_endpoint is None:
            from coze_lab.core.mcp.serving import McpEndpoint

            self._mcp_endpoint = McpEndpoint(
                self.db, workflows=self.workflows, runs=lambda: self.runs, chats=lambda: self.chats
            )
        return self._mcp_endpoint

    @property
    def engine(self) -> Engine:
        """The workflow engine of this runtime's event loop (created on first use)."""
        if self._engine is None:
            from coze_lab.core.workflows.engine import Engine, EngineSettings

            self._engine = Engine(
                self.db,
                code_runner=lambda: self.sandbox,
                completer=self.completer,
                http_policy=OutboundPolicy.from_strings(self.config.outbound_allow),
                plugins=lambda: self.plugins,
                mcp=lambda: self.mcp,
                tables=self.tables,
                variables=self.variables,
                knowledge=self.knowledge,
                clock=self.clock,
                settings=EngineSettings(
                    lease_s=self.config.workflow_lease_s,
                    interrupt_ttl=timedelta(seconds=self.config.interrupt_ttl_s),
                    recover_every_s=max(self.config.workflow_lease_s / 2, 0.2),
                ),
                signals=self.signals,
                find_workspace=self._found_run_workspace,
            )
        return self._engine

    @property
    def runs(self) -> RunService:
        """The one door for workflow runs (start, resume, cancel, events, get, list, pending)."""
        if self._runs is None:
            from coze_lab.core.workflows.run_service import RunService

            self._runs = RunService(
                self.workflows,
                lambda: self.engine,
                run_workspace=self._run_workspace,
                offload=self.offload,
            )
        return self._runs

    @property
    def chats(self) -> ChatService:
        """The chat service of this runtime's event loop (created on first use)."""
        if self._chats is None:
            from coze_lab.core.chat import ChatService
            from coze_lab.core.chat.attachments import Attachments
            from coze_lab.core.workspace import WorkspaceRoot

            self._chats = ChatService(
                bots=self.bots,
                conversations=self.conversations,
                store=self.chat_store,
                registry=lambda: self.models,
                client=self.model_client,
                workflows=self.workflows,
                runs=lambda: self.runs,
                plugins=lambda: self.plugins,
                mcp=lambda: self.mcp,
                clock=self.clock,
                lost_after_s=self.config.chat_lost_after_s,
                attachments=Attachments(
                    lambda owner, file_id: (
                        self.files.retrieve(owner, file_id),
                        self.files.path_of(owner, file_id),
                    ),
                    max_text_chars=self.config.chat_file_text_chars,
                ),
                workspaces=WorkspaceRoot(self.config.workspace_path),
                variables=self.variables,
                file_history=self.file_history,
                tables=self.tables,
                memory=self.memory,
                on_memory_queued=self._memory_queued,
                knowledge=self.knowledge,
            )
        return self._chats

    @property
    def chatflows(self) -> ChatflowService:
        """Chat-flow chats (``/v1/workflows/chat``) of this runtime's event loop."""
        if self._chatflows is None:
            from coze_lab.core.chat.flow import ChatflowService

            self._chatflows = ChatflowService(
                self.workflows,
                lambda: self.runs,
                self.conversations,
                lambda: self.chats,
                clock=self.clock,
            )
        return self._chatflows

    def _run_workspace(
        self, owner_id: int, workflow_id: int | None, file_ids: Sequence[int]
    ) -> Callable[[int], Any]:
        """What makes a run's own workspace (``<space>/run-<id>/``, the workflow's space or
        the owner's personal one) once its id is known, with the uploaded files
        ``file_ids`` in ``input/`` (checked here, before the run exists); what its code
        nodes write enters the file history."""
        space_id = None
        if workflow_id is not None:
            space_id = self.workflows.get(owner_id, workflow_id).space_id or None
        if space_id is None:
            space_id = self.identity.get_user(owner_id).workspace_id
        uploads = [
            (self.files.retrieve(owner_id, f).file_name, self.files.path_of(owner_id, f))
            for f in file_ids
        ]

        def make(run_id: int) -> Any:
            return self._open_run_workspace(owner_id, space_id, run_id, uploads)

        return make

    def _found_run_workspace(self, owner_id: int, run_id: int) -> Any:
        """The workspace a run asked for when it started (its folder exists), else None."""
        found = [
            p
            for p in self.config.workspace_path.glob(f"*/run-{run_id}")
            if p.parent.name.isdigit() and p.is_dir() and not p.is_symlink()
        ]
        if len(found) != 1:
            return None
        return self._open_run_workspace(owner_id, int(found[0].parent.name), run_id, [])

    def _open_run_workspace(
        self, owner_id: int, space_id: int, run_id: int, uploads: list[tuple[str, Any]]
    ) -> Any:
        from coze_lab.core.errors import CozeLabError
        from coze_lab.core.workflows.engine import RunWorkspace
        from coze_lab.core.workspace import WorkspaceRoot

        workspace = WorkspaceRoot(self.config.workspace_path).run(space_id, run_id)
        history = self.file_history
        for name, source in uploads:
            target = workspace.add_input(name, source)
            history.record(
                space_id=space_id,
                session_id=run_id,
                path=f"input/{name}",
                action="upload",
                size=target.stat().st_size,
                actor_id=owner_id,
                run_id=run_id,
            )

        def record(paths: list[str], node_run_id: int, node_id: str) -> None:
            for path in paths:
                try:
                    size = workspace.resolve(path, must_exist=True).stat().st_size
                except CozeLabError:
                    continue
                history.record(
                    space_id=space_id,
                    session_id=run_id,
                    path=path,
                    action="write",
                    size=size,
                    actor_id=owner_id,
                    run_id=node_run_id,
                    node_id=node_id,
                )

        return RunWorkspace(workspace.root, record)

    def _embedder(self) -> Embedder | None:
        """The knowledge embedder: ``embedding_model`` of the registry, else its default
        model; None when the registry has no model (recall is then full text only)."""
        from coze_lab.core.knowledge import RegistryEmbedder

        registry = self.models
        if not self.config.embedding_model and registry.default_id is None:
            return None
        return RegistryEmbedder(lambda: self.models, self.model_client, self.config.embedding_model)

    def reachable_url(self) -> str | None:
        """The URL users reach this server at, ending with its base URL."""
        if self.public_url:
            return self.public_url
        return self.default_public_url() if self.default_public_url is not None else None

    def _check_model(self, model_id: str) -> None:
        """A bot names ``default`` (whatever model that is when it chats) or a model of the
        registry; any other id is a 400 naming it."""
        if model_id in ("", "default") or model_id in self.models:
            return
        from coze_lab.core.errors import InvalidParameter

        known = ", ".join(dict.fromkeys(["default", *sorted(m.id for m in self.models.list())]))
        raise InvalidParameter(
            f"model_info_config.model_id: model '{model_id}' does not exist (configured: {known})"
        )

    def _plugin_versions(self, owner_id: int, tool_ids: Any) -> dict[int, int]:
        return self.plugins.online_versions(owner_id, tool_ids)

    def sandbox_health(self) -> dict[str, Any]:
        if self._sandbox is not None:
            return dict(self._sandbox.health())
        from coze_lab.core.sandbox import is_installed

        settings = self.config.sandbox_settings()
        return {
            "installed": is_installed(settings),
            "started": False,
            "workers": 0,
            "busy": 0,
            "runs": 0,
            "restarts": 0,
            "pyodide_version": settings.pyodide_version,
        }

    def health(self, user: UserInfo | None = None) -> dict[str, Any]:
        return {
            "version": __version__,
            "user": None
            if user is None
            else {"id": str(user.id), "name": user.name, "workspace_id": str(user.workspace_id)},
            "database": self.db.check(),
            "sandbox": self.sandbox_health(),
        }

    async def close(self) -> None:
        await self.signals.close()
        await self.ingest.close()
        stop_readers()  # a document being read must not hold up the shutdown
        if self._memory_worker is not None:
            await self._memory_worker.close()
        if self._chats is not None:
            await self._chats.close()
        if self._chatflows is not None:
            await self._chatflows.close()
        if self._engine is not None:
            await self._engine.close()
        if self._mcp is not None:
            await self._mcp.close()
        if self._completer is not None:
            await self._completer.aclose()
        if self._model_client is not None:
            await self._model_client.aclose()
        if self._sandbox is not None:
            await self._sandbox.close()
        self.offload.close()
        self.tokens.close()
        self.db.dispose()
