"""Chat records: one row per agent run, written so a cancel always wins over a late finish."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError

from coze_lab.core.chat.log import unpack
from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.conversations import (
    ConversationInfo,
    ConversationService,
    MessageInfo,
    NewMessage,
    new_message,
)
from coze_lab.core.errors import CozeLabError, NotFound
from coze_lab.core.ids import new_id
from coze_lab.store import Database
from coze_lab.store.models import Chat, ChatEventBatch, Message
from coze_lab.store.signals import Signals

ACTIVE = ("created", "in_progress", "requires_action")
FINAL = ("completed", "failed", "canceled")


class NotCancelable(CozeLabError):
    """Coze's code for a chat that has already finished (cozepy checks it)."""

    code, status = 4104, 409


@dataclass(frozen=True)
class ChatInfo:
    id: int
    owner_id: int
    conversation_id: int
    section_id: int
    bot_id: int
    bot_version: int | None
    connector_id: str
    status: str
    usage: dict[str, int] | None
    last_error: dict[str, Any] | None
    required_action: dict[str, Any] | None
    meta_data: dict[str, str]
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    failed_at: datetime | None


class NewChat:
    """A chat about to be written; ``chat`` and ``messages`` describe it already."""

    def __init__(
        self,
        store: ChatStore,
        conversation: ConversationInfo,
        chat: ChatInfo,
        messages: list[MessageInfo],
        bot_id: int | None,
        now: datetime,
        persist: bool,
        new_conversation: bool,
    ) -> None:
        self._store = store
        self._conversation = conversation
        self._bot_id = bot_id
        self._now = now
        self._persist = persist
        self._new_conversation = new_conversation
        self.chat = chat
        self.messages = messages

    def write(self, events: list[dict[str, Any]] | None = None) -> None:
        """The chat, its request messages, (for a new one) its conversation and ``events``
        (its first events, numbered from 1, packed as the log keeps them), in one
        transaction; the conversations service writes its own tables. Nobody follows the
        chat yet (its id goes out in its first event, after this): nobody to wake."""
        conversations = self._store.conversations
        with self._store.db.write() as connection:  # plain statements: every chat's path
            conversations.write_chat_start(
                connection,
                self._conversation,
                new=self._new_conversation,
                bot_id=self._bot_id,
                now=self._now,
            )
            connection.execute(insert(Chat), _chat_values(self.chat))
            if self._persist:
                conversations.insert_messages(
                    connection, self._conversation.owner_id, self.messages
                )
            if events:
                connection.execute(
                    insert(ChatEventBatch), self._store.event_batch(self.chat.id, 1, events)
                )


class ChatStore:
    """The chats table: one row per agent run (messages go through ``conversations``)."""

    def __init__(
        self,
        db: Database,
        conversations: ConversationService,
        *,
        clock: Clock = utcnow,
        signals: Signals | None = None,
    ) -> None:
        self.db = db
        self.conversations = conversations
        self._clock = clock
        #: wakes the followers of a chat on every replica when its events are written
        self.signals = signals or Signals(db)

    def prepare(
        self,
        conversation: ConversationInfo,
        *,
        bot_id: int | None,
        bot_version: int | None,
        messages: Sequence[NewMessage],
        meta_data: dict[str, str],
        persist: bool,
        new_conversation: bool = False,
    ) -> NewChat:
        """The chat's rows, not written yet: ``write()`` writes them in one transaction.

        The request's messages get their ids before the chat does, everything the chat
        writes gets one after it: :meth:`messages` tells them apart by that.
        """
        now = self._clock()
        message_ids = [new_id() for _ in messages]
        chat = ChatInfo(
            id=new_id(),
            owner_id=conversation.owner_id,
            conversation_id=conversation.id,
            section_id=conversation.section_id,
            bot_id=bot_id or 0,  # 0: a chat-flow's chat
            bot_version=bot_version,
            connector_id=conversation.connector_id,
            status="in_progress",
            usage=None,
            last_error=None,
            required_action=None,
            meta_data=dict(meta_data),
            created_at=now,
            updated_at=now,
            completed_at=None,
            failed_at=None,
        )
        infos = [
            new_message(conversation, m, now=now, chat_id=chat.id, bot_id=bot_id, message_id=mid)
            for mid, m in zip(message_ids, messages, strict=True)
        ]
        return NewChat(self, conversation, chat, infos, bot_id, now, persist, new_conversation)

    def add_messages(
        self, owner_id: int, messages: Sequence[MessageInfo], *, replacing: Sequence[int] = ()
    ) -> None:
        """Write ``messages``, in place of the partial answers ``replacing`` names."""
        self.conversations.add_messages(owner_id, messages, replacing=replacing)

    def save_partial(self, chat_id: int, owner_id: int, answer: MessageInfo) -> bool:
        """Keep the answer streamed so far (one message, rewritten as it grows) and mark the
        chat alive, in one transaction; False (nothing written) once the chat has ended."""
        with self.db.write() as connection:
            alive = connection.execute(
                update(Chat)
                .where(Chat.id == chat_id, Chat.status == "in_progress")
                .values(updated_at=self._clock())
            ).rowcount
            if not alive:
                return False
            self.conversations.put_message(connection, owner_id, answer)
            return True

    def finish(
        self,
        chat_id: int,
        status: str,
        *,
        usage: dict[str, int] | None = None,
        last_error: dict[str, Any] | None = None,
        required_action: dict[str, Any] | None = None,
        state: dict[str, Any] | None = None,
        messages: Sequence[MessageInfo] = (),
        owner_id: int | None = None,
        replacing: Sequence[int] = (),
    ) -> ChatInfo | None:
        """Record the outcome (and the last messages, in place of the partial answers
        ``replacing`` names) unless the chat was canceled meanwhile; None when it was."""
        now = self._clock()
        values: dict[str, Any] = {
            "status": status,
            "usage": usage,
            "last_error": last_error,
            "required_action": required_action,
            "state": state,
            "updated_at": now,
        }
        if status == "completed":
            values["completed_at"] = now
        if status == "failed":
            values["failed_at"] = now
        with self.db.write() as connection:
            done = connection.execute(
                update(Chat).where(Chat.id == chat_id, Chat.status.in_(ACTIVE)).values(**values)
            ).rowcount
            if not done:
                return None
            if messages or replacing:
                assert owner_id is not None, "messages need their owner"
                self.conversations.insert_messages(
                    connection, owner_id, messages, replacing=replacing
                )
            return _info(connection.execute(select(Chat.__table__).where(Chat.id == chat_id)).one())

    def resume(self, chat_id: int) -> dict[str, Any] | None:
        """Take a ``requires_action`` chat back to in_progress; its saved state, or None
        when it was not waiting (a second submit loses)."""
        with self.db.transaction() as session:
            row = session.scalars(select(Chat).where(Chat.id == chat_id).with_for_update()).first()
            if row is None or row.status != "requires_action":
                return None
            state = row.state
            row.status = "in_progress"
            row.required_action = None
            row.state = None
            row.updated_at = self._clock()
            return state

    # ---- events ---------------------------------------------------------------------------
    def append_events(self, chat_id: int, first_seq: int, events: list[dict[str, Any]]) -> bool:
        """Write events ``first_seq`` .. ``first_seq + len(events) - 1`` of a chat as one row
        and wake its followers; False when those numbers are taken (the chat was failed by
        another replica meanwhile: this one no longer writes its events)."""
        if not events:
            return True
        try:
            with self.signals.sending() as send, self.db.write() as connection:
                connection.execute(
                    insert(ChatEventBatch), self.event_batch(chat_id, first_seq, events)
                )
                send(connection, f"chat:{chat_id}")
        except IntegrityError:
            return False
        return True

    def event_batch(
        self, chat_id: int, first_seq: int, events: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The log row of events ``first_seq`` .. ``first_seq + len(events) - 1``."""
        return {
            "id": new_id(),
            "chat_id": chat_id,
            "first_seq": first_seq,
            "seq": first_seq + len(events) - 1,
            "events": events,
            "created_at": self._clock(),
        }

    def events(self, chat_id: int, after: int = 0) -> list[tuple[int, dict[str, Any]]]:
        """The chat's stored events numbered after ``after``, in order."""
        with self.db.read() as connection:
            rows = connection.execute(
                select(ChatEventBatch.first_seq, ChatEventBatch.events)
                .where(ChatEventBatch.chat_id == chat_id, ChatEventBatch.seq > after)
                .order_by(ChatEventBatch.seq)
            ).all()
        out = []
        for row in rows:
            for offset, event in enumerate(unpack(row.events)):
                seq = row.first_seq + offset
                if seq > after:
                    out.append((seq, event))
        return out

    def last_seq(self, chat_id: int) -> int:
        with self.db.read() as connection:
            return connection.scalar(
                select(func.coalesce(func.max(ChatEventBatch.seq), 0)).where(
                    ChatEventBatch.chat_id == chat_id
                )
            )

    def cancel(self, chat_id: int) -> ChatInfo:
        now = self._clock()
        with self.db.transaction() as session:
            done = session.execute(
                update(Chat)
                .where(Chat.id == chat_id, Chat.status.in_(ACTIVE))
                .values(status="canceled", updated_at=now, required_action=None, state=None)
            ).rowcount
            row = session.get(Chat, chat_id)
            if not done:
                raise NotCancelable(
                    f"chat {chat_id} cannot be canceled: it is {row.status if row else 'gone'}"
                )
            # the answer kept so far is the canceled chat's answer from now on; the replica
            # running the chat rewrites it with the last streamed text when it stops
            for message in session.scalars(
                select(Message).where(Message.chat_id == chat_id, Message.type == "answer")
            ):
                meta = dict(message.meta_data or {})
                if meta.pop("partial", None) == "true":
                    message.meta_data = {**meta, "canceled": "true"}
            # the replica running it stops it at once (a NOTIFY sent with this commit)
            self.signals.notify(session.connection(), f"cancel-chat:{chat_id}")
            return _info(row)

    def info(self, chat_id: int) -> ChatInfo | None:
        """Any chat by id (the caller has checked who may see it)."""
        with self.db.read() as connection:
            row = connection.execute(select(Chat.__table__).where(Chat.id == chat_id)).first()
            return None if row is None else _info(row)

    def canceled(self, chat_ids: Sequence[int]) -> list[int]:
        """The chats of ``chat_ids`` that were canceled."""
        if not chat_ids:
            return []
        with self.db.read() as connection:
            return list(
                connection.scalars(
                    select(Chat.id).where(Chat.id.in_(chat_ids), Chat.status == "canceled")
                )
            )

    def status(self, chat_id: int) -> str | None:
        with self.db.read() as connection:
            return connection.scalar(select(Chat.status).where(Chat.id == chat_id))

    def get(
        self, owner_id: int, connector_id: str, conversation_id: int | None, chat_id: int
    ) -> ChatInfo:
        """The owner's chat on this connector (in this conversation, when one is named)."""
        query = select(Chat).where(
            Chat.id == chat_id, Chat.owner_id == owner_id, Chat.connector_id == connector_id
        )
        if conversation_id is not None:
            query = query.where(Chat.conversation_id == conversation_id)
        with self.db.reading() as session:
            row = session.scalars(query).first()
            if row is None:
                raise NotFound(f"chat {chat_id} does not exist in this conversation")
            return _info(row)

    def messages(self, chat_id: int) -> list[MessageInfo]:
        """What the chat wrote (Coze's ``/v3/chat/message/list``): answers, tool calls and
        results, never the request's messages, questions or history the request supplied
        (their ids precede the chat's: see :meth:`prepare`)."""
        return self.conversations.chat_messages(chat_id)

    def touch(self, chat_id: int) -> bool:
        """A running chat's heartbeat (a chat that stops beating was lost with its server);
        False once the chat has ended (canceled through a replica whose signal was lost)."""
        with self.db.write() as connection:
            return bool(
                connection.execute(
                    update(Chat)
                    .where(Chat.id == chat_id, Chat.status == "in_progress")
                    .values(updated_at=self._clock())
                ).rowcount
            )

    def fail_stale(self, before: datetime) -> list[ChatInfo]:
        """Fail the in-progress chats whose heartbeat stopped before ``before``; what they
        streamed stays, as their partial answer, and their event log ends with the failure
        (a follower on any replica sees it)."""
        now = self._clock()
        error = {
            "code": 5000,
            "msg": "the server running this chat stopped; the answer so far is kept "
            "(marked partial); send the message again",
        }
        with self.db.read() as connection:
            stale = connection.scalars(
                select(Chat.id).where(Chat.status == "in_progress", Chat.updated_at < before)
            ).all()
        failed = []
        for chat_id in stale:
            with self.signals.sending() as send, self.db.write() as connection:
                done = connection.execute(
                    update(Chat)
                    .where(
                        Chat.id == chat_id, Chat.status == "in_progress", Chat.updated_at < before
                    )
                    .values(status="failed", failed_at=now, updated_at=now, last_error=error)
                ).rowcount
                if not done:
                    continue
                info = _info(
                    connection.execute(select(Chat.__table__).where(Chat.id == chat_id)).one()
                )
                last = connection.scalar(
                    select(func.coalesce(func.max(ChatEventBatch.seq), 0)).where(
                        ChatEventBatch.chat_id == chat_id
                    )
                )
                connection.execute(
                    insert(ChatEventBatch),
                    {
                        "id": new_id(),
                        "chat_id": chat_id,
                        "first_seq": last + 1,
                        "seq": last + 2,
                        "events": [
                            {"event": "conversation.chat.failed", "chat": _plain_chat(info)},
                            {"event": "done"},
                        ],
                        "created_at": now,
                    },
                )
                send(connection, f"chat:{chat_id}")
            failed.append(info)
        return failed


def _plain_chat(info: ChatInfo) -> dict[str, Any]:
    from dataclasses import asdict

    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in asdict(info).items()}


def _chat_values(chat: ChatInfo) -> dict[str, Any]:
    """The row of a starting chat (every column named, as an ORM object's insert would)."""
    return {
        "id": chat.id,
        "owner_id": chat.owner_id,
        "conversation_id": chat.conversation_id,
        "section_id": chat.section_id,
        "bot_id": chat.bot_id or None,
        "bot_version": chat.bot_version,
        "connector_id": chat.connector_id,
        "status": chat.status,
        "usage": chat.usage,
        "last_error": chat.last_error,
        "required_action": chat.required_action,
        "state": None,
        "meta_data": chat.meta_data,
        "created_at": chat.created_at,
        "updated_at": chat.updated_at,
        "completed_at": chat.completed_at,
        "failed_at": chat.failed_at,
    }


def _info(row: Any) -> ChatInfo:
    return ChatInfo(
        id=row.id,
        owner_id=row.owner_id,
        conversation_id=row.conversation_id,
        section_id=row.section_id,
        bot_id=row.bot_id or 0,  # 0: a chat-flow's chat
        bot_version=row.bot_version,
        connector_id=row.connector_id,
        status=row.status,
        usage=row.usage,
        last_error=row.last_error,
        required_action=row.required_action,
        meta_data=dict(row.meta_data or {}),
        created_at=row.created_at,
        updated_at=row.updated_at,
        completed_at=row.completed_at,
        failed_at=row.failed_at,
    )
