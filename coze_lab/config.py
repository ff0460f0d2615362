"""Configuration: one traitlets ``CozeLab`` section for the extension, the server and the CLI.

``c.CozeLab.database_url = "postgresql+psycopg://..."`` in a Jupyter config file, the
matching ``COZE_LAB_<NAME>`` environment variable, or a ``coze-lab`` command-line flag.
Precedence: flag > environment > config file > default.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir
from traitlets import Bool, Float, Int, List, Unicode, default
from traitlets.config import Configurable

from coze_lab.core.sandbox.settings import DEFAULT_PACKAGES, SandboxSettings, default_index_url

MiB = 1024 * 1024


def default_data_dir() -> Path:
    """``$COZE_LAB_DATA_DIR`` or ``<jupyter data dir>/coze_lab``."""
    return Path(os.environ.get("COZE_LAB_DATA_DIR") or Path(jupyter_data_dir()) / "coze_lab")


class CozeLab(Configurable):
    """Settings shared by every way of running coze_lab.

    Example:
        >>> CozeLab(data_dir="/tmp/cl").database_url
        'sqlite:////tmp/cl/coze_lab.db'
    """

    data_dir = Unicode(help="Where the SQLite database, files and sandbox cache live.").tag(
        config=True
    )
    database_url = Unicode(
        help="SQLAlchemy URL; SQLite in data_dir unless set (COZE_LAB_DATABASE_URL)."
    ).tag(config=True)
    local_user = Unicode(
        help="User name for a plain single-user Jupyter server, whose anonymous identities "
        "change per session (default: the OS user). JupyterHub names are used as they are."
    ).tag(config=True)
    auto_migrate = Bool(True, help="Upgrade the database schema on start.").tag(config=True)
    workspace_root = Unicode(
        help="Folder of the session workspaces (<space>/<session>/input, scratchpad, output). "
        "Default: coze_workspaces under the Jupyter root (JupyterLab), under data_dir for "
        "coze-lab serve."
    ).tag(config=True)
    memory_root = Unicode(
        help="Folder mirroring long-term memory as Markdown (<space>/<user>/user.md, "
        "skills/<name>.md; the database is the source of truth). Default: coze_memory under "
        "the Jupyter root (JupyterLab), under data_dir for coze-lab serve; 'none': no files."
    ).tag(config=True)
    memory_max_chars = Int(
        20_000,
        help="Longest memory document (user.md or a skill) in characters; a longer file is "
        "read cut to this.",
    ).tag(config=True)
    memory_prompt_chars = Int(
        8000, help="Most characters of memory a bot with memory gets in its prompt."
    ).tag(config=True)
    memory_model = Unicode(
        help="Model id that detects memory signals in users' messages (default: the bot's)."
    ).tag(config=True)
    memory_lease_s = Float(
        60.0,
        help="Seconds a worker's claim on a memory job lasts without renewal; a job whose "
        "worker died is claimed again after it.",
    ).tag(config=True)
    memory_poll_s = Float(
        2.0, help="Seconds between looks for memory jobs queued by other replicas."
    ).tag(config=True)
    memory_max_attempts = Int(
        5,
        help="Model attempts per memory job (exponential backoff between them); after the "
        "last, rule-based detection applies what it finds.",
    ).tag(config=True)
    max_upload_bytes = Int(100 * MiB, help="Largest file accepted by /v1/files/upload.").tag(
        config=True
    )
    max_json_bytes = Int(2 * MiB, help="Largest JSON request body.").tag(config=True)
    max_name_chars = Int(
        100, help="Longest name of a workflow, bot, conversation or workflow node title."
    ).tag(config=True)
    max_description_chars = Int(
        2000, help="Longest description of a workflow, bot, variable, function or input."
    ).tag(config=True)
    max_workflow_nodes = Int(500, help="Most nodes in one workflow (edges: four per node).").tag(
        config=True
    )

    models_file = Unicode(
        help="Model registry (YAML or JSON); also $COZE_LAB_MODELS_FILE. A 'default' model comes "
        "from OPENAI_BASE_URL / OPENAI_API_KEY / COZE_LAB_DEFAULT_MODEL when set."
    ).tag(config=True)
    outbound_allow = List(
        Unicode(),
        help="Internal networks (CIDR) that HTTP nodes and plugins may call anyway; "
        "everything private, loopback and link-local is refused otherwise.",
    ).tag(config=True)
    workflow_lease_s = Float(
        30.0,
        help="Seconds a worker's claim on a running workflow lasts without renewal; "
        "a run whose worker died is recovered after it.",
    ).tag(config=True)
    chat_keepalive_s = Float(
        15.0,
        help="Seconds a chat stream may stay quiet before conversation.chat.in_progress is "
        "sent again as a keep-alive (proxies close idle connections).",
    ).tag(config=True)
    chat_lost_after_s = Float(
        30.0,
        help="Seconds after which a chat whose server died is failed visibly (its answer so "
        "far kept, as it is written while streaming); any replica on the database does it.",
    ).tag(config=True)
    chat_file_text_chars = Int(
        50_000,
        help="Characters of one uploaded file's text (txt, md, csv, pdf) a chat model is given; "
        "longer text is cut with a notice saying so.",
    ).tag(config=True)
    embedding_model = Unicode(
        help="Registry id of the model that embeds knowledge documents and queries "
        "(OpenAI-compatible /v1/embeddings); empty: the registry's default model."
    ).tag(config=True)
    knowledge_lease_s = Float(
        120.0,
        help="Seconds a worker's claim on a knowledge document being ingested lasts; a dead "
        "worker's documents are taken up again after it.",
    ).tag(config=True)
    knowledge_poll_s = Float(
        2.0, help="Seconds between looks for queued knowledge documents (new ones wake it at once)."
    ).tag(config=True)
    knowledge_max_document_bytes = Int(
        50 * MiB, help="Largest knowledge document (txt, md, csv, pdf, docx, html) accepted."
    ).tag(config=True)
    interrupt_ttl_s = Int(7 * 24 * 3600, help="Seconds a pending question stays answerable.").tag(
        config=True
    )
    secret_key = Unicode(
        help="Key(s) that encrypt stored credentials (Fernet keys or passphrases, comma-separated; "
        "the first encrypts, all decrypt). Default: <data_dir>/secret.key, generated on first "
        "use with 0600 permissions. Set it when several replicas share one database."
    ).tag(config=True)
    public_url = Unicode(
        help="The URL users reach this server at, ending with its base URL (OAuth callbacks); "
        "default: the address the server listens on."
    ).tag(config=True)
    reuse_port = Bool(
        False,
        help="coze-lab serve binds its port with SO_REUSEPORT: several replicas on one host "
        "listen on the same port and the kernel spreads connections over them.",
    ).tag(config=True)
    hub_auth_cache_s = Float(
        30.0,
        help="Seconds coze-lab serve, as a JupyterHub service, trusts the hub's answer about a "
        "hub token or login session; a revoked token or ended session stops working within "
        "this time (0: ask the hub on every request).",
    ).tag(config=True)
    plugin_timeout_s = Float(30.0, help="Seconds a plugin tool call may take.").tag(config=True)
    plugin_retries = Int(
        2,
        help="Retries of a plugin call after a connect error, or a 5xx/429 of an idempotent call.",
    ).tag(config=True)
    plugin_max_output_chars = Int(
        20_000, help="Longest plugin response text handed to a model (truncated beyond)."
    ).tag(config=True)
    mcp_stdio_commands = List(
        Unicode(),
        help="Programs stdio MCP servers may run (a name on PATH or an absolute path; '*': "
        "any). Empty (the default): stdio MCP servers are off, as each one runs a command on "
        "this server.",
    ).tag(config=True)
    mcp_timeout_s = Float(
        30.0, help="Seconds an MCP server may take to start, to list its tools or for one call."
    ).tag(config=True)
    mcp_max_output_chars = Int(
        20_000, help="Longest MCP tool result text handed to a model (truncated beyond)."
    ).tag(config=True)
    mcp_idle_s = Float(
        300.0, help="Seconds a stdio MCP server process is kept without calls before it stops."
    ).tag(config=True)
    plugin_max_document_bytes = Int(
        2 * MiB, help="Largest OpenAPI document a plugin import reads (also after YAML aliases)."
    ).tag(config=True)
    plugin_max_operations = Int(300, help="Most operations (tools) one plugin may have.").tag(
        config=True
    )
    plugin_max_schema_nodes = Int(
        200_000,
        help="Most schema values a plugin's $ref expansion may produce, all tools together.",
    ).tag(config=True)
    plugin_import_timeout_s = Float(
        20.0, help="Seconds reading one OpenAPI document may take (in a child process)."
    ).tag(config=True)
    plugin_import_memory_mb = Int(
        1024, help="Address-space cap (MB) of the child process that reads a document."
    ).tag(config=True)

    sandbox_cache_dir = Unicode(
        help="Pyodide cache (read-only for code nodes); default <data_dir>/sandbox. "
        "Point several users at one cache on a shared hub."
    ).tag(config=True)
    sandbox_pool_size = Int(2, help="Warm Deno + Pyodide workers.").tag(config=True)
    sandbox_timeout = Int(10, help="Seconds a code node may run.").tag(config=True)
    sandbox_memory_limit_mb = Int(1024, help="RSS ceiling of a sandbox worker.").tag(config=True)
    sandbox_max_output_bytes = Int(1_000_000, help="Cap on captured stdout/stderr.").tag(
        config=True
    )
    sandbox_allow_net = List(Unicode(), help="Hosts code nodes may reach (deno --allow-net).").tag(
        config=True
    )
    sandbox_allow_read = List(Unicode(), help="Extra readable paths (--allow-read).").tag(
        config=True
    )
    sandbox_allow_write = List(Unicode(), help="Writable paths (--allow-write).").tag(config=True)
    sandbox_allow_env = List(Unicode(), help="Readable env vars (--allow-env).").tag(config=True)
    sandbox_allow_run = List(Unicode(), help="Runnable programs (--allow-run).").tag(config=True)
    sandbox_allow_ffi = List(Unicode(), help="Loadable libraries (--allow-ffi).").tag(config=True)
    sandbox_wheelhouse = Unicode(help="Folder of pure-Python wheels code nodes may import.").tag(
        config=True
    )
    sandbox_package_index_url = Unicode(
        default_index_url(),
        help="Pyodide package index the server fetches code nodes' packages from (an http(s) "
        "URL or a local mirror folder holding pyodide-lock.json and the wheels); 'none' turns "
        "packages off. Default: the official Pyodide CDN for the pinned Pyodide version.",
    ).tag(config=True)
    sandbox_packages = List(
        Unicode(),
        default_value=list(DEFAULT_PACKAGES),
        help="Pyodide packages code nodes may import (their dependencies come with them).",
    ).tag(config=True)
    sandbox_interpreters_per_worker = Int(
        3,
        help="Warm Python interpreters per sandbox process, each bound to one user "
        "(about 125 MB each); more owners than seats means interpreters are replaced.",
    ).tag(config=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{**self.env_values(), **kwargs})

    @classmethod
    def env_values(cls, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Settings given as ``COZE_LAB_<NAME>`` variables (lists are comma-separated).

        Example:
            >>> CozeLab.env_values({"COZE_LAB_SANDBOX_POOL_SIZE": "4"})
            {'sandbox_pool_size': 4}
        """
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, trait in cls.class_traits(config=True).items():
            raw = environ.get(f"COZE_LAB_{name.upper()}")
            if raw is None or raw == "":
                continue
            if isinstance(trait, Bool):
                values[name] = raw.strip().lower() in ("1", "true", "yes", "on")
            elif isinstance(trait, Int):
                values[name] = int(raw)
            elif isinstance(trait, Float):
                values[name] = float(raw)
            elif isinstance(trait, List):
                values[name] = [item.strip() for item in raw.split(",") if item.strip()]
            else:
                values[name] = raw
        return values

    @default("data_dir")
    def _default_data_dir(self) -> str:
        return str(default_data_dir())

    @default("local_user")
    def _default_local_user(self) -> str:
        return getpass.getuser()

    @default("database_url")
    def _default_database_url(self) -> str:
        # the URL sqlite_url() makes; written here so that reading the configuration (as the
        # Jupyter extension does at start-up) does not import SQLAlchemy
        return f"sqlite:///{Path(self.data_dir) / 'coze_lab.db'}"

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir).expanduser()

    @property
    def workspace_path(self) -> Path:
        """Where session workspaces live: ``workspace_root``, else ``coze_workspaces`` under
        the Jupyter server's root (when this runs inside one) or under the data dir."""
        if self.workspace_root:
            return Path(self.workspace_root).expanduser()
        jupyter_root = getattr(self.parent, "root_dir", None)
        if isinstance(jupyter_root, str) and jupyter_root:
            return Path(jupyter_root).expanduser() / "coze_workspaces"
        return self.data_path / "coze_workspaces"

    @property
    def memory_path(self) -> Path | None:
        """Where memory files are mirrored: ``memory_root`` (``none``: nowhere), else
        ``coze_memory`` under the Jupyter root (in JupyterLab) or the data dir."""
        if self.memory_root.strip().lower() == "none":
            return None
        if self.memory_root:
            return Path(self.memory_root).expanduser()
        return self._jupyter_or_data() / "coze_memory"

    def _jupyter_or_data(self) -> Path:
        jupyter_root = getattr(self.parent, "root_dir", None)
        if isinstance(jupyter_root, str) and jupyter_root:
            return Path(jupyter_root).expanduser()
        return self.data_path

    def sandbox_settings(self) -> SandboxSettings:
        return SandboxSettings(
            cache_dir=Path(self.sandbox_cache_dir).expanduser()
            if self.sandbox_cache_dir
            else self.data_path / "sandbox",
            pool_size=self.sandbox_pool_size,
            timeout_s=float(self.sandbox_timeout),
            memory_limit_mb=self.sandbox_memory_limit_mb,
            max_output_bytes=self.sandbox_max_output_bytes,
            allow_net=tuple(self.sandbox_allow_net),
            allow_read=tuple(self.sandbox_allow_read),
            allow_write=tuple(self.sandbox_allow_write),
            allow_env=tuple(self.sandbox_allow_env),
            allow_run=tuple(self.sandbox_allow_run),
            allow_ffi=tuple(self.sandbox_allow_ffi),
            wheelhouse=Path(self.sandbox_wheelhouse) if self.sandbox_wheelhouse else None,
            package_index_url=None
            if self.sandbox_package_index_url.strip().lower() in ("", "none", "off")
            else self.sandbox_package_index_url.strip(),
            packages=tuple(self.sandbox_packages),
            interpreters_per_worker=self.sandbox_interpreters_per_worker,
        )
