"""Conversations, their sections (context windows) and messages, scoped to an owner and a
connector."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, select, update

from coze_lab.core import connectors
from coze_lab.core.clock import Clock, to_unix, utcnow
from coze_lab.core.conversations.content import check_content, check_meta_data, file_ids
from coze_lab.core.errors import InvalidParameter, NotFound
from coze_lab.core.ids import new_id
from coze_lab.core.limits import Limits
from coze_lab.core.spaces import visible
from coze_lab.store import Database
from coze_lab.store.models import BotConnector, BotRecord, Conversation, Message

MAX_INITIAL_MESSAGES = 100
#: Coze's message feedback
FEEDBACK_TYPES = ("like", "unlike")
MAX_FEEDBACK_REASONS, MAX_FEEDBACK_COMMENT_CHARS = 10, 1000


@dataclass(frozen=True)
class ConversationInfo:
    id: int
    owner_id: int
    bot_id: int | None
    connector_id: str
    name: str
    meta_data: dict[str, str]
    section_id: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Turn:
    """A question or an answer of a conversation's history, as a model prompt needs it."""

    role: str
    content: str
    content_type: str


@dataclass(frozen=True)
class MessageInfo:
    id: int
    conversation_id: int
    section_id: int
    chat_id: int | None
    bot_id: int | None
    role: str
    type: str
    content: str
    content_type: str
    meta_data: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    reasoning_content: str | None = None
    #: the user's like or unlike of a bot's answer: feedback_type, reason_types, comment
    feedback: dict[str, Any] | None = None
    #: an answer's usage: ``token_count``, ``input_count``, ``output_count`` (Coze's chat
    #: usage fields) and ``cost`` when the model has prices
    usage: dict[str, Any] | None = None


@dataclass(frozen=True)
class MessagePage:
    """A page in list order; ``has_more``: more messages lie beyond it in that direction."""

    items: list[MessageInfo]
    first_id: int | None
    last_id: int | None
    has_more: bool


@dataclass(frozen=True)
class NewMessage:
    """A message about to be written (validated)."""

    role: str
    content: str
    content_type: str = "text"
    type: str = ""
    meta_data: dict[str, Any] | None = None

    @property
    def message_type(self) -> str:
        return self.type or ("question" if self.role == "user" else "answer")


@dataclass(frozen=True)
class MessageEdit:
    """A change to a stored message; None leaves a field as it is (the content is checked
    again with the stored content type, or the stored content with the new type)."""

    content: str | None = None
    content_type: str | None = None
    meta_data: dict[str, str] | None = None


@dataclass(frozen=True)
class ConversationEdit:
    """A change to a conversation; None leaves a field as it is."""

    name: str | None = None
    meta_data: dict[str, str] | None = None


@dataclass(frozen=True)
class Feedback:
    """A user's like or unlike of one of the bot's answers (checked by the web layer's
    parser: ``feedback_type`` in FEEDBACK_TYPES, at most MAX_FEEDBACK_REASONS labels)."""

    feedback_type: str
    reason_types: tuple[str, ...] = ()
    comment: str = ""


def message_row(
    conversation: Conversation | ConversationInfo,
    message: NewMessage,
    *,
    now: datetime,
    chat_id: int | None = None,
    bot_id: int | None = None,
    message_id: int | None = None,
) -> Message:
    return Message(
        id=message_id or new_id(),
        owner_id=conversation.owner_id,
        conversation_id=conversation.id,
        section_id=conversation.section_id,
        chat_id=chat_id,
        bot_id=bot_id if bot_id is not None else conversation.bot_id,
        role=message.role,
        type=message.message_type,
        content=message.content,
        content_type=message.content_type,
        meta_data=message.meta_data or {},
        created_at=now,
        updated_at=now,
    )


def new_message(
    conversation: ConversationInfo,
    message: NewMessage,
    *,
    now: datetime,
    chat_id: int | None = None,
    bot_id: int | None = None,
    message_id: int | None = None,
) -> MessageInfo:
    """A message about to be written to ``conversation`` (``add_messages`` writes it)."""
    return message_info(
        message_row(
            conversation, message, now=now, chat_id=chat_id, bot_id=bot_id, message_id=message_id
        )
    )


class ConversationService:
    """Conversation and message CRUD for one owner on one connector.

    Example:
        >>> conversations = ConversationService(db)                        # doctest: +SKIP
        >>> conv = conversations.create(user.id, "1024", bot_id=bot.id)     # doctest: +SKIP
        >>> conversations.clear(user.id, "1024", conv.id) != conv.section_id  # doctest: +SKIP
        True
    """

    def __init__(
        self,
        db: Database,
        *,
        clock: Clock = utcnow,
        check_file: Callable[[int, int], None] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self._check_file = check_file
        self.limits = limits or Limits()

    def check_files(self, owner_id: int, messages: Sequence[NewMessage]) -> None:
        """NotFound for a file a message names that the owner cannot read."""
        for message in messages:
            self._check_file_ids(owner_id, file_ids(message.content, message.content_type))

    def _check_file_ids(self, owner_id: int, ids: Sequence[int]) -> None:
        if self._check_file is not None:
            for file_id in ids:
                self._check_file(owner_id, file_id)

    # ---- conversations -------------------------------------------------------------------
    def create(
        self,
        owner_id: int,
        connector_id: str,
        *,
        bot_id: int | None = None,
        name: str = "",
        meta_data: Any = None,
        messages: Sequence[NewMessage] = (),
    ) -> ConversationInfo:
        meta = check_meta_data(meta_data)
        name = self.limits.name(name, "name", required=False)
        if len(messages) > MAX_INITIAL_MESSAGES:
            raise InvalidParameter(f"messages allows at most {MAX_INITIAL_MESSAGES} items")
        self.check_files(owner_id, messages)
        now = self._clock()
        with self._db.transaction() as session:
            if bot_id is not None:
                _usable_bot(session, owner_id, bot_id, connector_id)
            row = Conversation(
                id=new_id(),
                owner_id=owner_id,
                bot_id=bot_id,
                connector_id=connector_id,
                name=name,
                meta_data=meta,
                section_id=new_id(),
                created_at=now,
                updated_at=now,
            )
            session.add(row)
            session.flush()
            session.add_all(message_row(row, m, now=now) for m in messages)
            return _conversation(row)

    def get(self, owner_id: int, connector_id: str, conversation_id: int) -> ConversationInfo:
        with self._db.reading() as session:
            return _conversation(self._owned(session, owner_id, connector_id, conversation_id))

    def list(
        self,
        owner_id: int,
        connector_id: str,
        *,
        bot_id: int | None,
        page_num: int = 1,
        page_size: int = 50,
        newest_first: bool = True,
    ) -> tuple[list[ConversationInfo], bool]:
        query = select(Conversation).where(
            Conversation.owner_id == owner_id, Conversation.connector_id == connector_id
        )
        if bot_id is not None:
            query = query.where(Conversation.bot_id == bot_id)
        order = Conversation.id.desc() if newest_first else Conversation.id.asc()
        with self._db.reading() as session:
            rows = session.scalars(
                query.order_by(order).offset((page_num - 1) * page_size).limit(page_size + 1)
            ).all()
        return [_conversation(r) for r in rows[:page_size]], len(rows) > page_size

    def update(
        self, owner_id: int, connector_id: str, conversation_id: int, edit: ConversationEdit
    ) -> ConversationInfo:
        """Rename (``name``) and/or replace the ``meta_data`` of a conversation; fields the
        edit leaves out stay as they are."""
        meta = None if edit.meta_data is None else check_meta_data(edit.meta_data)
        name = None if edit.name is None else self.limits.name(edit.name, "name", required=False)
        with self._db.transaction() as session:
            row = self._owned(session, owner_id, connector_id, conversation_id)
            if name is not None:
                row.name = name
            if meta is not None:
                row.meta_data = meta
            row.updated_at = self._clock()
            return _conversation(row)

    def delete(self, owner_id: int, connector_id: str, conversation_id: int) -> None:
        with self._db.transaction() as session:
            session.delete(self._owned(session, owner_id, connector_id, conversation_id))

    def clear(self, owner_id: int, connector_id: str, conversation_id: int) -> int:
        """Start a new section: later chats see none of the earlier messages (all are kept)."""
        with self._db.transaction() as session:
            row = self._owned(session, owner_id, connector_id, conversation_id)
            row.section_id = new_id()
            row.updated_at = self._clock()
            return row.section_id

    # ---- messages ---------------------------------------------------------------------------
    def create_message(
        self, owner_id: int, connector_id: str, conversation_id: int, message: NewMessage
    ) -> MessageInfo:
        self.check_files(owner_id, [message])
        with self._db.transaction() as session:
            conversation = self._owned(session, owner_id, connector_id, conversation_id)
            row = message_row(conversation, message, now=self._clock())
            session.add(row)
            conversation.updated_at = row.created_at
            return message_info(row)

    def list_messages(
        self,
        owner_id: int,
        connector_id: str,
        conversation_id: int,
        *,
        order: str = "desc",
        chat_id: int | None = None,
        before_id: int | None = None,
        after_id: int | None = None,
        limit: int = 50,
    ) -> MessagePage:
        """Cursor pagination in list order: ``after_id`` continues past a message,
        ``before_id`` goes back towards the start of the list (both exclusive)."""
        if order not in ("asc", "desc"):
            raise InvalidParameter("order must be 'asc' or 'desc'")
        if before_id is not None and after_id is not None:
            raise InvalidParameter("give before_id or after_id, not both")
        descending = order == "desc"
        query = select(Message).where(Message.conversation_id == conversation_id)
        if chat_id is not None:
            query = query.where(Message.chat_id == chat_id)
        backwards = before_id is not None
        if after_id is not None:
            query = query.where(Message.id < after_id if descending else Message.id > after_id)
        if before_id is not None:
            query = query.where(Message.id > before_id if descending else Message.id < before_id)
        # walking backwards reads the nearest messages first, then restores list order
        ascending_read = descending == backwards
        query = query.order_by(Message.id.asc() if ascending_read else Message.id.desc())
        with self._db.reading() as session:
            self._owned(session, owner_id, connector_id, conversation_id)
            rows = list(session.scalars(query.limit(limit + 1)))
        more = len(rows) > limit
        rows = rows[:limit]
        if backwards:
            rows.reverse()
        items = [message_info(r) for r in rows]
        return MessagePage(
            items,
            items[0].id if items else None,
            items[-1].id if items else None,
            more,
        )

    def get_message(
        self, owner_id: int, connector_id: str, conversation_id: int, message_id: int
    ) -> MessageInfo:
        with self._db.reading() as session:
            self._owned(session, owner_id, connector_id, conversation_id)
            return message_info(self._message(session, conversation_id, message_id))

    def modify_message(
        self,
        owner_id: int,
        connector_id: str,
        conversation_id: int,
        message_id: int,
        edit: MessageEdit,
    ) -> MessageInfo:
        with self._db.transaction() as session:
            self._owned(session, owner_id, connector_id, conversation_id)
            row = self._message(session, conversation_id, message_id)
            if edit.content is not None or edit.content_type is not None:
                content, content_type = check_content(
                    row.content if edit.content is None else edit.content,
                    edit.content_type or row.content_type,
                )
                self._check_file_ids(owner_id, file_ids(content, content_type))
                row.content, row.content_type = content, content_type
            if edit.meta_data is not None:
                row.meta_data = check_meta_data(edit.meta_data)
            row.updated_at = self._clock()
            return message_info(row)

    def set_feedback(
        self,
        owner_id: int,
        connector_id: str,
        conversation_id: int,
        message_id: int,
        feedback: Feedback | None,
    ) -> None:
        """Record the user's like or unlike of one of the bot's answers (replacing an
        earlier one); None removes it."""
        stored = None if feedback is None else {
            "feedback_type": feedback.feedback_type,
            "reason_types": list(dict.fromkeys(feedback.reason_types)),
            "comment": feedback.comment,
            "created_at": to_unix(self._clock()),
        }
        with self._db.transaction() as session:
            self._owned(session, owner_id, connector_id, conversation_id)
            row = self._message(session, conversation_id, message_id)
            if row.role != "assistant" or row.type != "answer":
                raise InvalidParameter(
                    f"message {message_id} is not a bot's answer: feedback is for answers"
                )
            if feedback is None and row.feedback is None:
                raise NotFound(f"message {message_id} has no feedback")
            row.feedback = stored

    def delete_message(
        self, owner_id: int, connector_id: str, conversation_id: int, message_id: int
    ) -> MessageInfo:
        with self._db.transaction() as session:
            self._owned(session, owner_id, connector_id, conversation_id)
            row = self._message(session, conversation_id, message_id)
            info = message_info(row)
            session.delete(row)
            return info

    def last_answer(self, conversation: ConversationInfo) -> MessageInfo | None:
        """The newest assistant message of the conversation's current section."""
        with self._db.reading() as session:
            row = session.scalars(
                select(Message)
                .where(
                    Message.conversation_id == conversation.id,
                    Message.section_id == conversation.section_id,
                    Message.role == "assistant",
                )
                .order_by(Message.id.desc())
                .limit(1)
            ).first()
            return None if row is None else message_info(row)
    def chat_messages(self, chat_id: int) -> list[MessageInfo]:
        """The messages a chat wrote, oldest first: the ids after the chat's own (a chat's
        request messages get theirs before it) and no questions."""
        with self._db.reading() as session:
            rows = session.scalars(
                select(Message)
                .where(Message.chat_id == chat_id, Message.id > chat_id, Message.type != "question")
                .order_by(Message.id.asc())
            )
            return [message_info(r) for r in rows]

    def history(self, conversation: ConversationInfo, *, rounds: int) -> list[MessageInfo]:
        """The questions and answers of the current section, the last ``rounds`` rounds."""
        if rounds <= 0:
            return []
        with self._db.read() as conn:
            rows = conn.execute(
                select(Message.__table__)
                .where(
                    Message.conversation_id == conversation.id,
                    Message.section_id == conversation.section_id,
                    Message.type.in_(("question", "answer")),
                )
                .order_by(Message.id.desc())
                .limit(rounds * 8)
            ).all()
        return [message_info(r) for r in _last_rounds(rows, rounds)]

    def chat_context(
        self, owner_id: int, connector_id: str, conversation_id: int, *, rounds: int
    ) -> tuple[ConversationInfo, list[Turn]]:
        """The owner's conversation and the last ``rounds`` rounds of its current section,
        in one read: what a chat in an existing conversation needs before its model
        request. Prepared statements and only the columns a prompt uses (this read is on
        every such chat's first token)."""
        with self._db.read() as conn:
            row = conn.execute(
                _OWNED_CONVERSATION,
                {"id": conversation_id, "owner": owner_id, "connector": connector_id},
            ).first()
            if row is None:
                raise NotFound(f"conversation {conversation_id} does not exist")
            conversation = _conversation(row)
            if rounds <= 0:
                return conversation, []
            rows = conn.execute(
                _RECENT_TURNS,
                {"id": conversation.id, "section": conversation.section_id, "limit": rounds * 8},
            ).all()
        return conversation, [
            Turn(r.role, r.content, r.content_type) for r in _last_rounds(rows, rounds)
        ]

    # ---- writes of a chat (the chat's transaction passes its connection) --------------------
    def write_chat_start(
        self,
        connection: Any,
        conversation: ConversationInfo,
        *,
        new: bool,
        bot_id: int | None,
        now: datetime,
    ) -> None:
        """A chat starts in ``conversation``: create it (``new``) or mark it updated."""
        if new:
            connection.execute(
                insert(Conversation),
                {
                    "id": conversation.id,
                    "owner_id": conversation.owner_id,
                    "bot_id": bot_id,
                    "connector_id": conversation.connector_id,
                    "name": conversation.name,
                    "meta_data": conversation.meta_data,
                    "section_id": conversation.section_id,
                    "created_at": now,
                    "updated_at": now,
                },
            )
        else:
            connection.execute(
                update(Conversation)
                .where(Conversation.id == conversation.id)
                .values(updated_at=now, bot_id=func.coalesce(Conversation.bot_id, bot_id))
            )

    def insert_messages(
        self,
        connection: Any,
        owner_id: int,
        messages: Sequence[MessageInfo],
        *,
        replacing: Sequence[int] = (),
    ) -> None:
        """Write messages inside the caller's transaction (plain INSERTs: a chat's hot path);
        the messages ``replacing`` names (a chat's partial answers) are removed first."""
        if replacing:
            connection.execute(
                delete(Message).where(Message.owner_id == owner_id, Message.id.in_(replacing))
            )
        if messages:
            connection.execute(insert(Message), [_message_values(owner_id, m) for m in messages])

    def add_messages(
        self, owner_id: int, messages: Sequence[MessageInfo], *, replacing: Sequence[int] = ()
    ) -> None:
        """Write messages in a transaction of their own."""
        if messages or replacing:
            with self._db.write() as connection:
                self.insert_messages(connection, owner_id, messages, replacing=replacing)

    def put_message(self, connection: Any, owner_id: int, message: MessageInfo) -> None:
        """Write ``message`` inside the caller's transaction, in place of the stored message
        with its id if there is one (a chat's answer, rewritten as it streams)."""
        kept = connection.execute(
            update(Message)
            .where(Message.id == message.id, Message.owner_id == owner_id)
            .values(content=message.content, updated_at=message.updated_at)
        ).rowcount
        if not kept:
            connection.execute(insert(Message), _message_values(owner_id, message))

    # ---- internals ----------------------------------------------------------------------------
    def _owned(
        self, session: Any, owner_id: int, connector_id: str, conversation_id: int
    ) -> Conversation:
        row = session.scalars(
            select(Conversation).where(
                Conversation.id == conversation_id,
                Conversation.owner_id == owner_id,
                Conversation.connector_id == connector_id,
            )
        ).first()
        if row is None:
            raise NotFound(f"conversation {conversation_id} does not exist")
        return row

    def _message(self, session: Any, conversation_id: int, message_id: int) -> Message:
        row = session.scalars(
            select(Message).where(
                Message.id == message_id, Message.conversation_id == conversation_id
            )
        ).first()
        if row is None:
            raise NotFound(f"message {message_id} does not exist in this conversation")
        return row


def _usable_bot(session: Any, owner_id: int, bot_id: int, connector_id: str) -> None:
    """A bot of one of the user's spaces (the conversation itself stays the user's),
    published to ``connector_id`` (the Playground uses drafts): the same refusal as a chat
    with that bot on that connector."""
    found = session.scalar(
        select(BotRecord.id).where(
            BotRecord.id == bot_id, visible(BotRecord.workspace_id, owner_id)
        )
    )
    if found is None:
        raise NotFound(f"bot {bot_id} does not exist")
    if connector_id != connectors.PLAYGROUND and not session.scalar(
        select(BotConnector.bot_id).where(
            BotConnector.bot_id == bot_id, BotConnector.connector_id == connector_id
        )
    ):
        raise connectors.not_published(bot_id, connector_id)


def _last_rounds(rows: Sequence[Any], rounds: int) -> list[Any]:
    """Of question and answer rows, newest first: the last ``rounds`` rounds, oldest first,
    starting with a question."""
    kept: list[Any] = []
    questions = 0
    for row in rows:
        kept.append(row)
        if row.type == "question":
            questions += 1
            if questions == rounds:
                break
    kept.reverse()
    while kept and kept[0].type != "question":
        kept.pop(0)  # an answer without its question would confuse the model
    return kept


_conversations, _messages = Conversation.__table__, Message.__table__
#: built once: building a statement costs more than running it on SQLite
_OWNED_CONVERSATION = select(_conversations).where(
    _conversations.c.id == bindparam("id"),
    _conversations.c.owner_id == bindparam("owner"),
    _conversations.c.connector_id == bindparam("connector"),
)
_RECENT_TURNS = (
    select(_messages.c.role, _messages.c.type, _messages.c.content, _messages.c.content_type)
    .where(
        _messages.c.conversation_id == bindparam("id"),
        _messages.c.section_id == bindparam("section"),
        _messages.c.type.in_(("question", "answer")),
    )
    .order_by(_messages.c.id.desc())
    .limit(bindparam("limit"))
)


def _conversation(row: Any) -> ConversationInfo:
    return ConversationInfo(
        id=row.id,
        owner_id=row.owner_id,
        bot_id=row.bot_id,
        connector_id=row.connector_id,
        name=row.name,
        meta_data=dict(row.meta_data or {}),
        section_id=row.section_id,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def message_info(row: Message) -> MessageInfo:
    return MessageInfo(
        id=row.id,
        conversation_id=row.conversation_id,
        section_id=row.section_id,
        chat_id=row.chat_id,
        bot_id=row.bot_id,
        role=row.role,
        type=row.type,
        content=row.content,
        content_type=row.content_type,
        meta_data=dict(row.meta_data or {}),
        created_at=row.created_at,
        updated_at=row.updated_at,
        reasoning_content=row.reasoning_content,
        feedback=row.feedback,
        usage=row.usage,
    )


def _message_values(owner_id: int, info: MessageInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "owner_id": owner_id,
        "conversation_id": info.conversation_id,
        "section_id": info.section_id,
        "chat_id": info.chat_id,
        "bot_id": info.bot_id,
        "role": info.role,
        "type": info.type,
        "content": info.content,
        "content_type": info.content_type,
        "meta_data": info.meta_data,
        "created_at": info.created_at,
        "updated_at": info.updated_at,
        "reasoning_content": info.reasoning_content,
        "usage": info.usage,
    }
