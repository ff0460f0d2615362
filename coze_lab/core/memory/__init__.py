"""Memory: user tables (real SQL tables with typed fields, draft and online).

Example:
    >>> from coze_lab.core.memory import parse_fields
    >>> [f.name for f in parse_fields([{"name": "title"}, {"name": "n", "type": "number"}])]
    ['title', 'n']
"""

from __future__ import annotations

from coze_lab.core.memory.tables import Field, TableInfo, TableService, parse_fields

__all__ = ["Field", "TableInfo", "TableService", "parse_fields"]
