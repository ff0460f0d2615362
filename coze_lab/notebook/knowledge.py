"""``cl.Knowledge``: knowledge bases from a notebook, on the server ``cl.connect()`` found.

Example:
    >>> import coze_lab as cl
    >>> docs = cl.Knowledge("docs")                         # doctest: +SKIP
    >>> docs.add("report.pdf")                              # doctest: +SKIP
    >>> docs.search("What was the revenue?")                # doctest: +SKIP
       score document_name                                 content ...
"""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coze_lab.notebook.http import StudioClient, studio_error

if TYPE_CHECKING:
    import pandas


class Knowledge:
    """A knowledge base of a space, found by name (made when absent).

    ``add`` sends a file (txt, md, csv, pdf, docx, html) or text, and by default waits
    until it is processed (a failure raises, with the reason); ``search`` recalls chunks
    (hybrid: full text and vectors) as a DataFrame; ``id`` names it to ``wf.knowledge``
    and to a bot's ``knowledge``.
    """

    def __init__(
        self,
        name: str,
        *,
        description: str = "",
        space: str | int | None = None,
        studio: StudioClient | None = None,
    ) -> None:
        from coze_lab.notebook.connect import in_space

        self.studio = studio or in_space(None, space)
        found = [
            d
            for d in self.studio.request("GET", "datasets", name=name)["datasets"]
            if d["name"] == name
        ]
        if found:
            self.info = found[0]
        else:
            body = {"name": name, "description": description}
            self.info = self.studio.request("POST", "datasets", body)

    @property
    def id(self) -> str:
        return str(self.info["dataset_id"])

    @property
    def name(self) -> str:
        return str(self.info["name"])

    def __repr__(self) -> str:
        return f"Knowledge({self.name!r}, id={self.id})"

    def add(
        self,
        source: str | Path | bytes,
        *,
        name: str | None = None,
        file_type: str | None = None,
        chunk_strategy: dict[str, Any] | None = None,
        wait: bool = True,
        timeout: float = 300.0,
    ) -> dict[str, Any]:
        """Add a file (a path) or text (``str`` with ``file_type``, or ``bytes``); the
        document as the server describes it, processed when ``wait``."""
        if isinstance(source, bytes):
            data, default_name = source, name or "document.txt"
        elif isinstance(source, Path) or (file_type is None and Path(str(source)).is_file()):
            path = Path(source)
            data, default_name = path.read_bytes(), path.name
        else:
            data, default_name = str(source).encode(), name or "text.txt"
        name = name or default_name
        kind = file_type or (name.rsplit(".", 1)[-1] if "." in name else "txt")
        body: dict[str, Any] = {
            "document_bases": [
                {
                    "name": name,
                    "source_info": {
                        "file_base64": base64.b64encode(data).decode(),
                        "file_type": kind,
                    },
                }
            ]
        }
        if chunk_strategy is not None:
            body["chunk_strategy"] = chunk_strategy
        (doc,) = self.studio.request("POST", f"datasets/{self.id}/documents", body)["documents"]
        return self._wait(doc["document_id"], timeout) if wait else doc

    def documents(self) -> list[dict[str, Any]]:
        """The documents with their status (``processing``, ``done``, ``failed``)."""
        return list(self.studio.request("GET", f"datasets/{self.id}/documents")["documents"])

    def search(self, query: str, *, top_k: int = 5, min_score: float = 0.0) -> pandas.DataFrame:
        """The chunks that best answer ``query``: score, document_name, content, seq,
        document_id, chunk_id (pandas needed)."""
        import pandas as pd

        body = {"dataset_ids": [self.id], "query": query, "top_k": top_k, "min_score": min_score}
        chunks = self.studio.request("POST", "knowledge/search", body)["chunks"]
        columns = ["score", "document_name", "content", "seq", "document_id", "chunk_id"]
        return pd.DataFrame([{c: chunk[c] for c in columns} for chunk in chunks], columns=columns)

    def _wait(self, document_id: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            doc = next(d for d in self.documents() if d["document_id"] == document_id)
            if doc["status_name"] == "failed":
                raise studio_error(4000, f"{doc['name']}: {doc['failure']}", 400)
            if doc["status_name"] == "done":
                return doc
            if time.monotonic() > deadline:
                raise TimeoutError(f"{doc['name']} is still being processed ({doc['progress']}%)")
            time.sleep(0.1)
