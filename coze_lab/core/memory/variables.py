"""Variable values (Coze's ``/v1/variables``): a bot's variables, set per end user.

A value belongs to (bot, token owner, connector, end user): the end user is Coze's
``connector_uid``, the ``user_id`` a caller's app sends with ``/v3/chat``. The bot's
configuration on that connector (the draft on the Playground, the published version
elsewhere) says which keywords exist: an unknown or disabled one is refused, naming it. A
keyword never set reads as its default. In a chat, stored values override the defaults;
the request's ``custom_variables`` override both.

Who writes: the end user (``by="user"``: ``PUT /v1/variables``, the notebook, the sidebar)
where the variable says ``user_can_set``; the bot itself (``by="agent"``: the
``save_variable`` tool, a workflow's assign node) where it says ``agent_can_set``. A
keyword the writer may not set is refused, naming it, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError, IntegrityError

from coze_lab.core import connectors
from coze_lab.core.bots import BotConfig, BotService
from coze_lab.core.bots.config import MAX_VALUE_CHARS, MAX_VARIABLES, Variable
from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import new_id
from coze_lab.store import Database
from coze_lab.store.models import VariableValue

#: the longest ``connector_uid`` (the column's width)
MAX_UID_CHARS = 255
#: connectors whose values may be read and written (the Playground's: the draft's)
CONNECTORS = (connectors.API, connectors.WEB_SDK, connectors.PLAYGROUND)
#: who writes a value: the end user, or the bot (its tool, its workflows)
WRITERS = {"user": "user_can_set", "agent": "agent_can_set"}


@dataclass(frozen=True)
class VariableItem:
    """One variable as an end user sees it: its value, or its default (times None)."""

    keyword: str
    value: str
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class VariableState:
    """A variable's definition and an end user's value of it (None: never set)."""

    variable: Variable
    value: str
    updated_at: datetime | None = None


@dataclass(frozen=True)
class Scope:
    """Whose values: a bot, the token's owner, a connector and the owner's end user."""

    bot_id: int
    owner_id: int
    connector_id: str
    connector_uid: str


def bot_context(scope: Scope) -> dict[str, str]:
    """A workflow run's bot context (stored with the run): whose variables its variable
    and assign nodes read and write.

    Example:
        >>> bot_context(Scope(7, 1, "1024", "u1"))
        {'bot_id': '7', 'connector_id': '1024', 'connector_uid': 'u1'}
    """
    return {
        "bot_id": str(scope.bot_id),
        "connector_id": scope.connector_id,
        "connector_uid": scope.connector_uid,
    }


def check_uid(value: Any) -> str:
    """A ``connector_uid``: a non-empty string of at most 255 characters.

    Example:
        >>> check_uid("user-1")
        'user-1'
    """
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameter("connector_uid is required: the end user the values belong to")
    if len(value) > MAX_UID_CHARS:
        raise InvalidParameter(f"connector_uid is longer than {MAX_UID_CHARS} characters")
    return value


def check_values(data: Any) -> dict[str, str]:
    """The ``data`` of an update: ``[{keyword, value}]``, string values of at most
    ``MAX_VALUE_CHARS`` characters, each keyword once.

    Example:
        >>> check_values([{"keyword": "city", "value": "Oslo"}])
        {'city': 'Oslo'}
    """
    if not isinstance(data, list) or not data:
        raise InvalidParameter("data must be a non-empty list of {keyword, value}")
    if len(data) > MAX_VARIABLES:
        raise InvalidParameter(f"data sets at most {MAX_VARIABLES} variables")
    values: dict[str, str] = {}
    for item in data:
        if not isinstance(item, dict):
            raise InvalidParameter("each item of data must be an object {keyword, value}")
        keyword, value = item.get("keyword"), item.get("value")
        if not isinstance(keyword, str) or not keyword:
            raise InvalidParameter("each item of data needs a keyword")
        if not isinstance(value, str):
            raise InvalidParameter(f"the value of {keyword} must be a string")
        if len(value) > MAX_VALUE_CHARS:
            raise InvalidParameter(
                f"the value of {keyword} is longer than {MAX_VALUE_CHARS} characters"
            )
        if keyword in values:
            raise InvalidParameter(f"data sets {keyword} twice")
        values[keyword] = value
    return values


class VariableService:
    """Read and write an end user's variable values.

    Example:
        >>> variables = VariableService(db, bots)                             # doctest: +SKIP
        >>> scope = variables.scope(user.id, bot.id, "1024", "end-user-1")    # doctest: +SKIP
        >>> variables.update(scope, {"city": "Oslo"})                         # doctest: +SKIP
        >>> [v.value for v in variables.retrieve(scope, ["city"])]            # doctest: +SKIP
        ['Oslo']
    """

    def __init__(self, db: Database, bots: BotService, *, clock: Clock = utcnow) -> None:
        self._db = db
        self._bots = bots
        self._clock = clock

    def scope(
        self, owner_id: int, bot_id: int, connector_id: str, connector_uid: Any
    ) -> tuple[Scope, BotConfig]:
        """The scope of a request and the bot's configuration on that connector (404: a
        bot the owner cannot see; 4015: not published there)."""
        if connector_id not in CONNECTORS:
            raise InvalidParameter(f"connector_id must be one of {', '.join(CONNECTORS)}")
        uid = check_uid(connector_uid)
        resolved = self._bots.resolve(owner_id, bot_id, connector_id)
        return Scope(bot_id, owner_id, connector_id, uid), resolved.config

    def bot_context(
        self, owner_id: int, bot_id: int, connector_id: str, connector_uid: Any
    ) -> dict[str, str]:
        """A workflow run's bot context, checked like :meth:`scope` (the owner sees the bot,
        published on that connector)."""
        return bot_context(self.scope(owner_id, bot_id, connector_id, connector_uid)[0])

    def states(self, scope: Scope, config: BotConfig) -> list[VariableState]:
        """Every enabled variable with its definition and this end user's value (the
        studio's view: the sidebar, the notebook)."""
        items = {item.keyword: item for item in self.retrieve(scope, config, [])}
        return [
            VariableState(v, items[v.keyword].value, items[v.keyword].updated_at)
            for v in config.variables
            if v.keyword in items
        ]

    def retrieve(
        self, scope: Scope, config: BotConfig, keywords: Sequence[str]
    ) -> list[VariableItem]:
        """The values of ``keywords`` (none: every enabled variable), defaults for those
        never set; an unknown keyword is a 400 naming it."""
        known = config.variable_defaults()
        wanted = list(dict.fromkeys(keywords)) or list(known)
        _require_known(wanted, known)
        stored = self._stored(scope, wanted)
        items = []
        for keyword in wanted:
            row = stored.get(keyword)
            if row is None:
                items.append(VariableItem(keyword, known[keyword]))
            else:
                created = row.created_at or row.updated_at
                items.append(VariableItem(keyword, row.value, created, row.updated_at))
        return items

    def update(
        self, scope: Scope, config: BotConfig, values: Mapping[str, str], *, by: str = "user"
    ) -> None:
        """Set the values, all or none (checked with :func:`check_values` first); ``by``
        (user, agent) must be allowed to set each (``user_can_set``, ``agent_can_set``)."""
        _require_known(list(values), config.variable_defaults())
        flag = WRITERS[by]
        refused = [k for k in values if not getattr(config.variable(k), flag)]
        if refused:
            who = "the end user" if by == "user" else "the bot (agent)"
            raise InvalidParameter(
                f"{who} may not set the variable keywords: {', '.join(refused)} ({flag} is false)"
            )
        for attempt in range(3):  # two writers inserting the same new keyword: one retries
            try:
                self._write(scope, values)
                return
            except DBAPIError as exc:
                # the loser of the race: a unique violation, or on MariaDB a deadlock on the
                # gap both writers locked (the transaction rolled back: nothing was written)
                retry = isinstance(exc, IntegrityError) or "deadlock" in str(exc).lower()
                if not retry or attempt == 2:
                    raise

    def values(self, scope: Scope, config: BotConfig) -> dict[str, str]:
        """What a chat's prompt uses: the defaults, overridden by the stored values."""
        values = config.variable_defaults()
        if values:
            for keyword, row in self._stored(scope, list(values)).items():
                values[keyword] = row.value
        return values

    def _stored(self, scope: Scope, keywords: list[str]) -> dict[str, Any]:
        if not keywords:
            return {}
        with self._db.read() as conn:
            rows = conn.execute(
                select(
                    VariableValue.keyword,
                    VariableValue.value,
                    VariableValue.created_at,
                    VariableValue.updated_at,
                ).where(*_where(scope), VariableValue.keyword.in_(keywords))
            ).all()
        return {row.keyword: row for row in rows}

    def _write(self, scope: Scope, values: Mapping[str, str]) -> None:
        now = self._clock()
        with self._db.transaction() as session:
            rows = {
                row.keyword: row
                for row in session.scalars(
                    select(VariableValue)
                    .where(*_where(scope), VariableValue.keyword.in_(list(values)))
                    .with_for_update()
                )
            }
            for keyword, value in values.items():
                row = rows.get(keyword)
                if row is None:
                    session.add(
                        VariableValue(
                            id=new_id(),
                            bot_id=scope.bot_id,
                            owner_id=scope.owner_id,
                            connector_id=scope.connector_id,
                            connector_uid=scope.connector_uid,
                            keyword=keyword,
                            value=value,
                            created_at=now,
                            updated_at=now,
                        )
                    )
                else:
                    row.value = value
                    row.updated_at = now


def _where(scope: Scope) -> tuple[Any, ...]:
    return (
        VariableValue.bot_id == scope.bot_id,
        VariableValue.owner_id == scope.owner_id,
        VariableValue.connector_id == scope.connector_id,
        VariableValue.connector_uid == scope.connector_uid,
    )


def _require_known(keywords: Sequence[str], known: Mapping[str, str]) -> None:
    unknown = [k for k in keywords if k not in known]
    if unknown:
        raise InvalidParameter(
            f"unknown variable keywords: {', '.join(unknown)} (the bot's enabled variables"
            f" are: {', '.join(known) or 'none'})"
        )
