"""``cl.Table``: a user table from a notebook, with pandas DataFrames in and out.

The table lives on the server ``cl.connect()`` found, through the studio API (the same
tables the sidebar, the database node and bots use); its rows are yours alone. pandas is a
kernel-side dependency: ``pip install 'coze-lab[pandas]'`` (it is imported on first use).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from coze_lab.notebook.http import StudioClient, studio_error

#: rows one insert sends (the server writes them in one transaction)
MAX_INSERT_ROWS = 10_000
_KINDS = {"i": "number", "u": "number", "f": "float", "b": "boolean", "M": "date"}


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(
            "cl.Table needs pandas in the kernel: pip install 'coze-lab[pandas]'"
        ) from exc
    return pandas


class Table:
    """A user table: create and describe it, insert a DataFrame, query into a DataFrame,
    update and delete rows.

    Example:
        >>> import coze_lab as cl, pandas as pd
        >>> sales = cl.Table.from_dataframe("sales", pd.DataFrame(
        ...     {"city": ["Oslo", "Lima"], "amount": [3, 5]}))          # doctest: +SKIP
        >>> sales.query("SELECT city, amount FROM sales WHERE amount > 4")  # doctest: +SKIP
          city  amount
        0  Lima       5
        >>> sales.update({"city": "Oslo"}, {"amount": 4})                  # doctest: +SKIP
        1
    """

    def __init__(
        self,
        name: str,
        fields: Mapping[str, str] | Sequence[Mapping[str, Any]] | None = None,
        *,
        description: str = "",
        scene: str = "draft",
        studio: StudioClient | None = None,
        host: Any = None,
        space: str | int | None = None,
    ) -> None:
        """``fields``: ``{name: type}`` or ``[{name, type, description?, required?}]``
        (types: text, number, float, boolean, date); given, the table is created when the
        space has none of this name. ``scene``: the rows to work on (draft or online)."""
        self.name = name
        self.description = description
        self.scene = scene
        if isinstance(fields, Mapping):
            fields = [{"name": k, "type": v} for k, v in fields.items()]
        self.fields = [dict(f) for f in fields] if fields is not None else None
        self._studio = studio if studio is not None else None if host is None else host.studio
        self.space = space
        self._info: dict[str, Any] | None = None

    @classmethod
    def from_dataframe(
        cls,
        name: str,
        frame: Any,
        *,
        description: str = "",
        studio: StudioClient | None = None,
        host: Any = None,
        space: str | int | None = None,
    ) -> Table:
        """A new table whose fields are the frame's columns (types from the dtypes), with
        the frame's rows in it.

        >>> sales = cl.Table.from_dataframe("sales", frame)   # doctest: +SKIP
        """
        fields = {str(c): _KINDS.get(frame[c].dtype.kind, "text") for c in frame.columns}
        table = cls(name, fields, description=description, studio=studio, host=host, space=space)
        table.create()
        table.insert(frame)
        return table

    # ---- the definition ---------------------------------------------------------------
    @property
    def studio(self) -> StudioClient:
        if self._studio is None or self.space is not None:
            from coze_lab.notebook.connect import current

            base = self._studio if self._studio is not None else current()
            self._studio = base if self.space is None else base.space(self.space)
            self.space = None
        return self._studio

    @property
    def id(self) -> str:
        """The table's id (created first when it does not exist and fields were given)."""
        return str(self.info()["id"])

    def info(self) -> dict[str, Any]:
        """The table as the studio API describes it: ``{id, name, fields, published, ...}``."""
        if self._info is None:
            tables = self.studio.request("GET", "tables")["tables"]
            self._info = next((t for t in tables if t["name"] == self.name), None)
            if self._info is None:
                if self.fields is None:
                    raise studio_error(4200, f"table '{self.name}' does not exist", 404)
                return self.create()
        return self._info

    def create(self) -> dict[str, Any]:
        """Create the table (an error when the space has one of this name already)."""
        if self.fields is None:
            raise ValueError("give fields to create a table")
        body = {"name": self.name, "fields": self.fields, "description": self.description}
        self._info = self.studio.request("POST", "tables", body)
        return self._info

    def describe(self) -> Any:
        """The fields as a DataFrame: name, type, description, required (``id`` and
        ``created_at`` are the system's)."""
        pandas = _pandas()
        info = self.info()
        fields = info["fields"] if self.scene == "draft" else info["online_fields"] or []
        system = [
            {"name": "id", "type": "number", "description": "row id (system)", "required": True},
            {"name": "created_at", "type": "date", "description": "(system)", "required": True},
        ]
        return pandas.DataFrame(system + list(fields))

    def publish(self) -> dict[str, Any]:
        """Give the online table the draft's fields (published bots and workflows use it)."""
        self._info = self.studio.request("POST", f"tables/{self.id}/publish")
        return self._info

    def drop(self, *, missing_ok: bool = False) -> None:
        """Delete the table and all its rows (``missing_ok``: no error when there is none)."""
        if missing_ok:
            tables = self.studio.request("GET", "tables")["tables"]
            if not any(t["name"] == self.name for t in tables):
                return
        self.studio.request("DELETE", f"tables/{self.id}")
        self._info = None

    # ---- rows ----------------------------------------------------------------------------
    def insert(self, rows: Any) -> list[str]:
        """Add a DataFrame's rows (or a list of dicts) in one transaction: a bad row adds
        none. NaN and NaT become empty values. Returns the new rows' ids."""
        records = _records(rows)
        if not records:
            return []
        if len(records) > MAX_INSERT_ROWS:
            raise ValueError(
                f"{len(records)} rows: insert at most {MAX_INSERT_ROWS} at a time"
                " (each call is one transaction)"
            )
        body = {"rows": records, "scene": self.scene}
        return list(self.studio.request("POST", f"tables/{self.id}/rows/batch", body)["ids"])

    def query(
        self,
        sql: str | None = None,
        *,
        params: Mapping[str, Any] | None = None,
        where: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        logic: str = "and",
        fields: Sequence[str] = (),
        order_by: Sequence[Mapping[str, Any]] | str | None = None,
        limit: int = 100,
    ) -> Any:
        """Your rows as a DataFrame: by ``sql`` (one SELECT on this table, ``:name``
        placeholders bound from ``params``) or by conditions (``where={"city": "Oslo"}``
        or ``[{field, op, value}]``, ``order_by="amount"`` or ``[{field, desc}]``)."""
        pandas = _pandas()
        path = f"tables/{self.id}/query"
        if sql is not None:
            body: dict[str, Any] = {"sql": sql, "params": dict(params or {}), "scene": self.scene}
            return pandas.DataFrame(self.studio.request("POST", path, body)["rows"])
        if isinstance(order_by, str):
            order_by = [{"field": order_by.lstrip("-"), "desc": order_by.startswith("-")}]
        body = {
            "where": _conditions(where),
            "logic": logic,
            "fields": list(fields),
            "order_by": list(order_by or []),
            "limit": limit,
            "scene": self.scene,
        }
        rows = self.studio.request("POST", path, body)["rows"]
        if rows:
            return pandas.DataFrame(rows)
        names = list(fields) or [f["name"] for f in self.info()["fields"]]
        return pandas.DataFrame(columns=["id", *names])

    def update(
        self,
        where: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        values: Mapping[str, Any],
        *,
        logic: str = "and",
    ) -> int:
        """Change your rows that match ``where``; the number changed."""
        body = {
            "where": _conditions(where),
            "values": _records([values])[0],
            "logic": logic,
            "scene": self.scene,
        }
        return int(self.studio.request("POST", f"tables/{self.id}/rows/update", body)["count"])

    def delete(
        self, where: Mapping[str, Any] | Sequence[Mapping[str, Any]], *, logic: str = "and"
    ) -> int:
        """Delete your rows that match ``where`` (there is no 'delete everything')."""
        body = {"where": _conditions(where), "logic": logic, "scene": self.scene}
        return int(self.studio.request("POST", f"tables/{self.id}/rows/delete", body)["count"])

    def __repr__(self) -> str:
        known = f", id={self._info['id']}" if self._info else ""
        return f"Table({self.name!r}{known})"


def _conditions(where: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None) -> list[Any]:
    """``{"city": "Oslo"}`` (equality) or a list of ``{field, op, value}`` as is."""
    if where is None:
        return []
    if isinstance(where, Mapping):
        return [{"field": k, "op": "==", "value": v} for k, v in _records([where])[0].items()]
    return [dict(w) for w in where]


def _records(rows: Any) -> list[dict[str, Any]]:
    """Plain JSON rows from a DataFrame (numpy numbers, NaN, timestamps) or dicts."""
    if hasattr(rows, "to_json") and hasattr(rows, "columns"):
        return json.loads(rows.to_json(orient="records", date_format="iso", date_unit="s"))
    if not isinstance(rows, Sequence) or isinstance(rows, str | bytes):
        raise TypeError("rows must be a DataFrame or a list of dicts")
    if any(_is_numpy(v) for row in rows for v in dict(row).values()):
        pandas = _pandas()
        return _records(pandas.DataFrame(list(rows)))
    return [dict(row) for row in rows]


def _is_numpy(value: Any) -> bool:
    return type(value).__module__ in ("numpy", "pandas._libs.tslibs.timestamps")
