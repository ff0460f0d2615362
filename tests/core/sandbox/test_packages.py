"""Pyodide packages for code nodes (issue 14): fetched by the host from a package index,
verified against ``pyodide-lock.json``, cached read-only, imported by the code.

The index here is a real HTTP server on loopback serving tiny wheels built by the test (the
Pyodide CDN is not reachable from the test machines).
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import stat
import threading
import uuid
import zipfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio

from coze_lab.core.sandbox import WorkerPool
from coze_lab.core.sandbox.install import pyodide_dir
from coze_lab.core.sandbox.packages import Lock, PackageIndex, find_imports

from .conftest import CACHE, make_settings

pytestmark = pytest.mark.asyncio(loop_scope="session")


def wheel(directory: Path, name: str, body: str) -> Path:
    """A minimal pure-Python wheel with one module ``name``."""
    path = directory / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}/__init__.py", body)
        z.writestr(
            f"{name}-1.0.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
        )
        z.writestr(
            f"{name}-1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        z.writestr(f"{name}-1.0.dist-info/RECORD", "")
    return path


def entry(path: Path, depends: list[str] = (), sha: str | None = None) -> dict[str, object]:
    name = path.name.split("-")[0]
    return {
        "name": name,
        "version": "1.0",
        "file_name": path.name,
        "install_dir": "site",
        "sha256": sha or hashlib.sha256(path.read_bytes()).hexdigest(),
        "package_type": "package",
        "imports": [name],
        "depends": list(depends),
    }


@dataclass
class Index:
    """A Pyodide package index on loopback: ``url``, the files it served."""

    root: Path
    url: str = ""
    hits: list[str] = field(default_factory=list)
    server: http.server.ThreadingHTTPServer | None = None

    def start(self) -> Index:
        hits, root = self.hits, self.root

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a: object, **k: object) -> None:
                super().__init__(*a, directory=str(root), **k)  # type: ignore[arg-type]

            def do_GET(self) -> None:
                hits.append(self.path.lstrip("/"))
                super().do_GET()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/pyodide/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    root = tmp_path_factory.mktemp("index")
    files = root / "pyodide"
    files.mkdir()
    tag = uuid.uuid4().hex[:8]  # fresh bytes, so the shared cache never has them yet
    dep = wheel(files, "cozedep", f"TAG = {tag!r}\n")
    pkg = wheel(
        files, "cozepkg", "import cozedep\nSTATE = []\ndef tag():\n    return cozedep.TAG\n"
    )
    other = wheel(files, "cozeother", "X = 1\n")
    evil = wheel(files, "cozeevil", "X = 'genuine'\n")
    evil_sha = hashlib.sha256(evil.read_bytes()).hexdigest()
    wheel(files, "cozeevil", "X = 'tampered'\n")  # what the index now serves instead
    bundled = json.loads((pyodide_dir(make_settings()) / "pyodide-lock.json").read_text())
    lock = {
        "info": bundled["info"],
        "packages": {
            "cozepkg": entry(pkg, ["cozedep"]),
            "cozedep": entry(dep),
            "cozeother": entry(other),
            "cozeevil": entry(evil, sha=evil_sha),
        },
    }
    (files / "pyodide-lock.json").write_text(json.dumps(lock))
    idx = Index(root).start()
    idx.tag = tag  # type: ignore[attr-defined]
    yield idx
    idx.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def pkg_pool(sandbox_cache: Path, index: Index) -> AsyncIterator[WorkerPool]:
    settings = make_settings(
        pool_size=1, package_index_url=index.url, packages=("cozepkg", "cozeevil")
    )
    p = WorkerPool(settings)
    await p.start()
    yield p
    await p.close()


USE = "import cozepkg\ndef main(args):\n    return {'tag': cozepkg.tag()}\n"


async def test_package_is_fetched_by_the_host_verified_cached_and_imported(
    pkg_pool: WorkerPool, index: Index
) -> None:
    res = await pkg_pool.run(USE, {}, owner="alice")
    assert res.error is None, res.to_dict()
    assert res.output == {"tag": index.tag}  # type: ignore[attr-defined]
    assert set(index.hits) >= {
        "pyodide/pyodide-lock.json",
        "pyodide/cozepkg-1.0-py3-none-any.whl",
        "pyodide/cozedep-1.0-py3-none-any.whl",  # a dependency comes along
    }
    cached = list((CACHE / "packages" / "files").rglob("cozepkg-1.0-py3-none-any.whl"))
    served = (index.root / "pyodide" / "cozepkg-1.0-py3-none-any.whl").read_bytes()
    match = [p for p in cached if p.read_bytes() == served]
    assert len(match) == 1
    assert match[0].parent.name == hashlib.sha256(served).hexdigest()
    assert not stat.S_IMODE(match[0].stat().st_mode) & 0o222  # read-only
    # warm: the same owner's next run neither fetches nor installs again
    hits = len(index.hits)
    again = await pkg_pool.run(USE, {}, owner="alice")
    assert again.output == res.output and len(index.hits) == hits
    assert again.meta["timing"]["prepare_ms"] < res.meta["timing"]["prepare_ms"]


async def test_code_still_has_no_network_to_the_index(pkg_pool: WorkerPool, index: Index) -> None:
    hits = len(index.hits)
    code = (
        "from pyodide.http import pyfetch\nasync def main(args):\n    try:\n"
        f"        await pyfetch({index.url + 'pyodide-lock.json'!r})\n        return {{'r': 'fetched'}}\n"
        "    except Exception as e:\n        return {'r': str(e)}\n"
    )
    res = await pkg_pool.run(code, {}, owner="alice")
    assert res.output is not None and "Requires net access" in res.output["r"], res.to_dict()
    assert len(index.hits) == hits


async def test_a_tampered_package_is_refused(pkg_pool: WorkerPool, index: Index) -> None:
    res = await pkg_pool.run(
        "import cozeevil\ndef main(args):\n    return {'x': cozeevil.X}\n", {}, owner="alice"
    )
    assert res.error is not None and res.error.type == "package_unavailable", res.to_dict()
    assert "cozeevil was refused" in res.error.message and "sha256" in res.error.message
    assert "pyodide/cozeevil-1.0-py3-none-any.whl" in index.hits
    assert not list((CACHE / "packages" / "files").rglob("cozeevil-*"))


async def test_a_package_off_the_allow_list_is_not_installed(
    pkg_pool: WorkerPool, index: Index
) -> None:
    res = await pkg_pool.run(
        "import cozeother\ndef main(args):\n    return {}\n", {}, owner="alice"
    )
    assert res.error is not None and res.error.type == "package_unavailable", res.to_dict()
    assert "not allowed in code nodes: add it to sandbox_packages" in res.error.message
    assert "pyodide/cozeother-1.0-py3-none-any.whl" not in index.hits
    # a guarded import is the code's business: no error
    ok = await pkg_pool.run(
        "try:\n    import cozeother\nexcept ImportError:\n    cozeother = None\n"
        "def main(args):\n    return {'has': cozeother is not None}\n",
        {},
        owner="alice",
    )
    assert ok.output == {"has": False}, ok.to_dict()


async def test_package_state_stays_with_its_owner(pkg_pool: WorkerPool) -> None:
    touch = "import cozepkg\ndef main(args):\n    cozepkg.STATE.append(args.params['who'])\n    return {'state': list(cozepkg.STATE)}\n"
    a1 = await pkg_pool.run(touch, {"who": "alice"}, owner="alice")
    b1 = await pkg_pool.run(touch, {"who": "bob"}, owner="bob")
    a2 = await pkg_pool.run(touch, {"who": "alice"}, owner="alice")
    assert a1.error is None and b1.error is None and a2.error is None, (a1, b1, a2)
    assert b1.output == {"state": ["bob"]}  # bob's interpreter installed its own copy
    assert "bob" not in a2.output["state"]  # type: ignore[index]
    # replacing a module attribute of the package is detected like any other module
    before = pkg_pool.health()["interpreter_restarts"]
    await pkg_pool.run(
        "import cozepkg\ndef main(args):\n    cozepkg.tag = lambda: 'patched'\n    return {}\n",
        {},
        owner="bob",
    )
    res = await pkg_pool.run(USE, {}, owner="bob")
    assert res.output is not None and res.output["tag"] != "patched"
    assert pkg_pool.health()["interpreter_restarts"] > before


async def test_cached_packages_work_when_the_index_is_gone(
    pkg_pool: WorkerPool, index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    await pkg_pool.run(USE, {}, owner="alice")  # lock and wheels are in the cache by now
    settings = make_settings(pool_size=1, package_index_url=index.url, packages=("cozepkg",))
    offline = PackageIndex(settings)

    async def unreachable(name: str, *, limit: int) -> bytes:
        raise OSError("connection refused")

    monkeypatch.setattr(offline, "_get_bytes", unreachable)
    p = WorkerPool(settings, package_index=offline)
    try:
        res = await p.run(USE, {}, owner="alice")
        assert res.error is None, res.to_dict()
        assert res.output == {"tag": index.tag}  # type: ignore[attr-defined]
    finally:
        await p.close()


async def test_offline_the_error_says_what_to_set(sandbox_cache: Path) -> None:
    settings = make_settings(pool_size=1, package_index_url="http://127.0.0.1:9/pyodide/")
    p = WorkerPool(settings)
    try:
        res = await p.run("import pandas as pd\ndef main(args):\n    return {}\n", {}, owner="x")
        assert res.error is not None and res.error.type == "package_unavailable"
        assert res.error.message.startswith(
            "pandas is not available: no Pyodide package index is reachable "
            "(http://127.0.0.1:9/pyodide/: "
        )
        assert "Set sandbox_package_index_url to a Pyodide package index or a local mirror" in (
            res.error.message
        )
        assert "ModuleNotFoundError: No module named 'pandas'" in res.error.message
    finally:
        await p.close()
    off = WorkerPool(make_settings(pool_size=1, package_index_url=None))
    try:
        res = await off.run("import numpy\ndef main(args):\n    return {}\n", {})
        assert res.error is not None and res.error.type == "package_unavailable"
        assert "numpy is not available: Pyodide packages are turned off" in res.error.message
    finally:
        await off.close()


# ---------------------------------------------------------------- the index, alone --------
async def test_find_imports_and_lock_closure() -> None:
    assert find_imports("import a.b as c\nfrom d.e import f\nfrom . import g\nx = 'import h'") == {
        "a",
        "d",
    }
    assert find_imports("def (:") == set()
    lock = Lock.from_json(
        {
            "info": {},
            "packages": {
                "pandas": {
                    "name": "pandas",
                    "file_name": "pandas.whl",
                    "sha256": "a" * 64,
                    "depends": ["numpy", "python-dateutil"],
                    "imports": ["pandas"],
                },
                "numpy": {
                    "name": "numpy",
                    "file_name": "numpy.whl",
                    "sha256": "b" * 64,
                    "depends": [],
                    "imports": ["numpy"],
                },
                "python-dateutil": {
                    "name": "python-dateutil",
                    "file_name": "d.whl",
                    "sha256": "c" * 64,
                    "depends": ["six"],
                    "imports": ["dateutil"],
                },
                "six": {
                    "name": "six",
                    "file_name": "six.whl",
                    "sha256": "d" * 64,
                    "depends": [],
                    "imports": ["six"],
                },
                "bad": {"name": "bad", "file_name": "../x.whl", "sha256": "e" * 64},
            },
        }
    )
    assert [p.name for p in lock.closure(["pandas"])] == [
        "numpy",
        "six",
        "python-dateutil",
        "pandas",
    ]
    assert lock.allowed(["pandas"]) == {"pandas", "numpy", "python-dateutil", "six"}
    assert "bad" not in lock.packages  # an unsafe file name is never used


async def test_an_index_for_another_pyodide_abi_is_refused(
    tmp_path: Path, sandbox_cache: Path
) -> None:
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "pyodide-lock.json").write_text(
        json.dumps({"info": {"abi_version": "1999_0"}, "packages": {}})
    )
    index = PackageIndex(make_settings(package_index_url=str(mirror), packages=("numpy",)))
    loaded, missing = await index.prepare(["numpy"])
    assert loaded == [] and "built for Pyodide ABI 1999_0" in missing["numpy"]


async def test_a_local_mirror_directory_works(tmp_path: Path, sandbox_cache: Path) -> None:
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    w = wheel(mirror, "cozelocal", "X = 1\n")
    (mirror / "pyodide-lock.json").write_text(
        json.dumps({"info": {}, "packages": {"cozelocal": entry(w)}})
    )
    settings = make_settings(package_index_url=f"file://{mirror}", packages=("cozelocal",))
    index = PackageIndex(settings)
    index.root = tmp_path / "cache"
    loaded, missing = await index.prepare(["cozelocal"])
    assert missing == {} and len(loaded) == 1
    assert Path(loaded[0].path).read_bytes() == w.read_bytes()
    assert os.path.dirname(loaded[0].path).startswith(str(tmp_path / "cache"))
