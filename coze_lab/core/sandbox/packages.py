"""Pyodide packages (numpy, pandas, ...) for code nodes, fetched by the host, never by the code.

The host sees which packages a code node imports (:func:`find_imports`, like
``pyodide.code.find_imports``), keeps those on the allow-list (``SandboxSettings.packages``
and their dependencies), downloads them from the configured Pyodide package index
(``package_index_url``: an ``http(s)://`` URL or a local mirror directory), checks each file
against the sha256 in the index's ``pyodide-lock.json`` and stores it read-only in
``<cache_dir>/packages/`` (content-addressed, shared by every owner). The sandbox reads the
cached files; it has no network access.

Example:
    >>> sorted(find_imports("import pandas as pd\\nfrom numpy.linalg import inv\\nfrom . import x"))
    ['numpy', 'pandas']
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlparse

import httpx

from .settings import SandboxSettings

#: where the message of a missing package points the administrator
DOCS_HINT = "see docs/guides/sandbox.md#packages-numpy-pandas"
#: an unreachable index is asked again after this many seconds (runs fail fast meanwhile)
RETRY_AFTER_S = 30.0
_CHUNK = 1 << 16


def canonical(name: str) -> str:
    """Package names compare like pip's (``Python_Dateutil`` == ``python-dateutil``).

    Example:
        >>> canonical("Python_Dateutil")
        'python-dateutil'
    """
    return re.sub(r"[-_.]+", "-", name).lower()


def find_imports(code: str) -> set[str]:
    """Top-level names of the absolute imports in ``code`` (empty when it does not parse).

    Example:
        >>> code = "import a.b, c\\ntry:\\n    import d\\nexcept ImportError:\\n    pass"
        >>> sorted(find_imports(code))
        ['a', 'c', 'd']
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


class PackageUnavailable(Exception):
    """A package a code node imports cannot be provided (message says what to set)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message


@dataclass(frozen=True)
class Package:
    """One entry of ``pyodide-lock.json``."""

    name: str
    file_name: str
    sha256: str
    depends: tuple[str, ...]
    imports: tuple[str, ...]


@dataclass(frozen=True)
class LoadedPackage:
    """A verified, cached package file and the modules to import once it is installed."""

    name: str
    path: str
    imports: tuple[str, ...]


class Lock:
    """A parsed ``pyodide-lock.json``.

    Example:
        >>> lock = Lock.from_json({"info": {}, "packages": {
        ...     "a": {"name": "a", "file_name": "a.whl", "sha256": "0", "depends": ["B"],
        ...           "imports": ["a"]},
        ...     "b": {"name": "b", "file_name": "b.whl", "sha256": "1", "depends": [],
        ...           "imports": ["bee"]}}})
        >>> [p.name for p in lock.closure(["a"])], lock.by_import["bee"]
        (['b', 'a'], 'b')
    """

    def __init__(self, info: dict[str, Any], packages: dict[str, Package]) -> None:
        self.info = info
        self.packages = packages
        self.by_import: dict[str, str] = {}
        for key, pkg in packages.items():
            for mod in pkg.imports:
                self.by_import.setdefault(mod, key)

    @classmethod
    def from_json(cls, data: Any) -> Lock:
        if not isinstance(data, dict) or not isinstance(data.get("packages"), dict):
            raise ValueError("not a pyodide-lock.json (no 'packages' object)")
        packages: dict[str, Package] = {}
        for key, entry in data["packages"].items():
            if not isinstance(entry, dict):
                continue
            name = str(entry.get("name") or key)
            sha = str(entry.get("sha256") or "")
            file_name = str(entry.get("file_name") or "")
            if not re.fullmatch(r"[0-9a-f]{64}", sha) or not _safe_file_name(file_name):
                continue  # an entry we cannot verify is never used
            packages[canonical(name)] = Package(
                name=name,
                file_name=file_name,
                sha256=sha,
                depends=tuple(canonical(d) for d in entry.get("depends") or ()),
                imports=tuple(str(m) for m in entry.get("imports") or ()),
            )
        info = data.get("info") if isinstance(data.get("info"), dict) else {}
        return cls(dict(info), packages)

    def closure(self, names: Iterable[str]) -> list[Package]:
        """``names`` and everything they depend on, dependencies first (KeyError if unknown)."""
        order: list[Package] = []
        seen: set[str] = set()

        def visit(key: str) -> None:
            if key in seen:
                return
            seen.add(key)
            pkg = self.packages[key]
            for dep in pkg.depends:
                visit(dep)
            order.append(pkg)

        for name in names:
            visit(canonical(name))
        return order

    def allowed(self, names: Iterable[str]) -> set[str]:
        """Canonical names of ``names`` and their dependencies (unknown names are skipped)."""
        keys = [canonical(n) for n in names if canonical(n) in self.packages]
        try:
            return {canonical(p.name) for p in self.closure(keys)}
        except KeyError:  # a dependency missing from the lock: allow what is known
            return set(keys)


def _safe_file_name(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*\.(whl|zip|tar|tgz|tar\.gz)", name))


class PackageIndex:
    """The allow-listed Pyodide packages of one sandbox pool.

    Example:
        >>> index = PackageIndex(SandboxSettings(cache_dir=Path("/tmp/cl/sbx"), packages=()))
        >>> index.wanted("import pandas")   # not on the allow-list, not in any known lock
        []
    """

    def __init__(
        self,
        settings: SandboxSettings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self.url = (settings.package_index_url or "").strip() or None
        self.root = Path(settings.cache_dir) / "packages"
        self._transport = transport
        self._bundled = self._read_bundled()
        self._lock: Lock | None = None
        self._lock_error: tuple[float, str] | None = None
        self._lock_guard = asyncio.Lock()
        self._file_guards: dict[str, asyncio.Lock] = {}
        self._verified: set[str] = set()
        self._imports_cache: dict[str, tuple[str, ...]] = {}

    # -- which packages does a code node want ---------------------------------------------
    def _read_bundled(self) -> Lock | None:
        from .install import pyodide_dir

        try:
            return Lock.from_json(
                json.loads((pyodide_dir(self.settings) / "pyodide-lock.json").read_text())
            )
        except (OSError, ValueError):
            return None

    def _known(self) -> Lock | None:
        return self._lock or self._bundled

    def wanted(self, code: str) -> list[str]:
        """Import names in ``code`` that are Pyodide packages (allowed or not), sorted."""
        hit = self._imports_cache.get(code)
        if hit is not None:
            return list(hit)
        lock = self._known()
        allow = {canonical(n) for n in self.settings.packages}
        names: tuple[str, ...] = ()
        if "import" in code:
            names = tuple(
                sorted(
                    n
                    for n in find_imports(code)
                    if canonical(n) in allow or (lock is not None and n in lock.by_import)
                )
            )
        if len(self._imports_cache) > 512:
            self._imports_cache.clear()
        self._imports_cache[code] = names
        return list(names)

    # -- resolving: lock file, allow-list, files ---------------------------------------------
    async def prepare(self, imports: list[str]) -> tuple[list[LoadedPackage], dict[str, str]]:
        """Fetch (or find in the cache) what ``imports`` need.

        Returns the packages to install, dependencies first, and for each import name that
        cannot be provided the message the code node's ``ModuleNotFoundError`` becomes.
        """
        loaded: dict[str, LoadedPackage] = {}
        missing: dict[str, str] = {}
        for name in imports:
            try:
                for pkg in await self._resolve(name):
                    loaded.setdefault(pkg.name, pkg)
            except PackageUnavailable as exc:
                missing[name] = exc.message
        return list(loaded.values()), missing

    def _not_available(self, name: str, why: str) -> PackageUnavailable:
        return PackageUnavailable(
            name,
            f"{name} is not available: {why}. Set sandbox_package_index_url to a Pyodide "
            f"package index or a local mirror ({DOCS_HINT})",
        )

    def _not_allowed(self, import_name: str, package: str) -> PackageUnavailable:
        return PackageUnavailable(
            import_name,
            f"{import_name} (Pyodide package {package!r}) is not allowed in code nodes: "
            f"add it to sandbox_packages ({DOCS_HINT})",
        )

    async def _resolve(self, import_name: str) -> list[LoadedPackage]:
        if self.url is None:
            raise self._not_available(import_name, "Pyodide packages are turned off")
        if self._lock is None and self._bundled is not None:
            # known to be off the allow-list: say so without asking the index
            key = self._bundled.by_import.get(import_name)
            allowed = self._bundled.allowed(self.settings.packages)
            allowed |= {canonical(n) for n in self.settings.packages}
            if key is not None and key not in allowed:
                raise self._not_allowed(import_name, self._bundled.packages[key].name)
        try:
            lock = await self.lock()
        except _IndexUnreachable as exc:
            raise self._not_available(import_name, str(exc)) from None
        key = lock.by_import.get(import_name)
        if key is None:
            raise PackageUnavailable(
                import_name,
                f"{import_name} is not in the Pyodide package index at {self.url}",
            )
        allowed = lock.allowed(self.settings.packages)
        if key not in allowed:
            raise self._not_allowed(import_name, lock.packages[key].name)
        try:
            chain = lock.closure([key])
        except KeyError as exc:
            raise PackageUnavailable(
                import_name, f"{import_name} needs {exc.args[0]!r}, missing from the index's lock"
            ) from None
        out = []
        for pkg in chain:
            path = await self._file(pkg)
            out.append(LoadedPackage(canonical(pkg.name), str(path), pkg.imports))
        return out

    async def lock(self) -> Lock:
        """The index's ``pyodide-lock.json`` (fetched once; a copy is kept for offline use).

        Raises ``OSError`` (a subclass) with the reason when the index cannot be read.
        """
        if self._lock is not None:
            return self._lock
        async with self._lock_guard:
            if self._lock is not None:
                return self._lock
            now = time.monotonic()
            if self._lock_error and now - self._lock_error[0] < RETRY_AFTER_S:
                raise _IndexUnreachable(self._lock_error[1])
            saved = self._index_dir() / "pyodide-lock.json"
            try:
                raw = await self._get_bytes("pyodide-lock.json", limit=64 << 20)
                lock = Lock.from_json(json.loads(raw))
                self._check_abi(lock)
            except (OSError, ValueError, httpx.HTTPError) as exc:
                reason = f"no Pyodide package index is reachable ({self.url}: {_why(exc)})"
                if isinstance(exc, _AbiMismatch):
                    reason = str(exc)
                if saved.is_file() and not isinstance(exc, _AbiMismatch):
                    lock = Lock.from_json(json.loads(saved.read_text()))
                else:
                    self._lock_error = (now, reason)
                    raise _IndexUnreachable(reason) from None
            else:
                await asyncio.to_thread(_write_atomic, saved, raw)
            self._lock = lock
            self._imports_cache.clear()  # what counts as a package may have changed
            return lock

    def _check_abi(self, lock: Lock) -> None:
        if self._bundled is None:
            return
        mine = self._bundled.info.get("abi_version")
        theirs = lock.info.get("abi_version")
        if mine and theirs and mine != theirs:
            raise _AbiMismatch(
                f"the package index at {self.url} is built for Pyodide ABI {theirs}, this "
                f"sandbox (Pyodide {self.settings.pyodide_version}) needs {mine}"
            )

    def _index_dir(self) -> Path:
        digest = hashlib.sha256((self.url or "").encode()).hexdigest()[:16]
        return self.root / f"index-{digest}"

    async def _file(self, pkg: Package) -> Path:
        # content-addressed; the file keeps its own name (Pyodide reads the package name in it)
        target = self.root / "files" / pkg.sha256 / pkg.file_name
        key = str(target)
        guard = self._file_guards.setdefault(key, asyncio.Lock())
        async with guard:
            if key in self._verified:
                return target
            if target.is_file():
                if await asyncio.to_thread(_sha256_file, target) == pkg.sha256:
                    self._verified.add(key)
                    return target
                target.unlink()  # damaged cache entry: fetch it again
            try:
                data = await self._get_bytes(pkg.file_name, limit=512 << 20)
            except (OSError, ValueError, httpx.HTTPError) as exc:
                raise self._not_available(
                    pkg.name, f"no Pyodide package index is reachable ({self.url}: {_why(exc)})"
                ) from None
            got = hashlib.sha256(data).hexdigest()
            if got != pkg.sha256:
                raise PackageUnavailable(
                    pkg.name,
                    f"{pkg.name} was refused: {pkg.file_name} from {self.url} does not match "
                    f"the sha256 in pyodide-lock.json (expected {pkg.sha256}, got {got})",
                )
            await asyncio.to_thread(_write_atomic, target, data, 0o444)
            self._verified.add(key)
            return target

    async def _get_bytes(self, name: str, *, limit: int) -> bytes:
        assert self.url is not None
        parsed = urlparse(self.url)
        if parsed.scheme in ("http", "https"):
            url = urljoin(self.url if self.url.endswith("/") else self.url + "/", name)
            async with (
                httpx.AsyncClient(
                    transport=self._transport,
                    timeout=self.settings.package_fetch_timeout_s,
                    follow_redirects=True,
                    trust_env=False,
                ) as client,
                client.stream("GET", url) as resp,
            ):
                resp.raise_for_status()
                chunks, size = [], 0
                async for chunk in resp.aiter_bytes(_CHUNK):
                    size += len(chunk)
                    if size > limit:
                        raise ValueError(f"{name} is larger than {limit} bytes")
                    chunks.append(chunk)
                return b"".join(chunks)
        if parsed.scheme in ("", "file"):
            base = Path(parsed.path if parsed.scheme == "file" else self.url).expanduser()
            path = base / name
            if path.stat().st_size > limit:
                raise ValueError(f"{name} is larger than {limit} bytes")
            return await asyncio.to_thread(path.read_bytes)
        raise ValueError(f"unsupported package index URL scheme {parsed.scheme!r}")


class _AbiMismatch(ValueError):
    pass


class _IndexUnreachable(OSError):
    pass


def _why(exc: BaseException) -> str:
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


__all__ = [
    "LoadedPackage",
    "Lock",
    "Package",
    "PackageIndex",
    "PackageUnavailable",
    "canonical",
    "find_imports",
]
