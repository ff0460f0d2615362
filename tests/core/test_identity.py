from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from coze_lab.core.errors import InvalidParameter, NotFound
from coze_lab.services import Runtime


def test_ensure_user_creates_once_with_a_personal_workspace(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    again = runtime.identity.ensure_user("alice")
    assert again == alice
    workspaces, total = runtime.spaces.list(alice.id)
    assert total == 1
    assert workspaces[0].id == alice.workspace_id
    assert workspaces[0].workspace_type == "personal"
    assert workspaces[0].owner_id == alice.id


def test_users_are_distinct(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    bob = runtime.identity.ensure_user("bob")
    assert alice.id != bob.id and alice.workspace_id != bob.workspace_id
    assert runtime.spaces.list(bob.id)[0][0].id == bob.workspace_id


def test_concurrent_first_sight_makes_one_user(runtime: Runtime) -> None:
    with ThreadPoolExecutor(8) as pool:
        users = list(pool.map(lambda _: runtime.identity.ensure_user("carol"), range(16)))
    assert len({u.id for u in users}) == 1
    assert runtime.spaces.list(users[0].id)[1] == 1


@pytest.mark.parametrize("name", ["", "   ", "a\nb", "x" * 256, None, 42])
def test_bad_user_names_are_refused(runtime: Runtime, name: object) -> None:
    with pytest.raises(InvalidParameter):
        runtime.identity.ensure_user(name)  # type: ignore[arg-type]


def test_unknown_user_is_not_found(runtime: Runtime) -> None:
    with pytest.raises(NotFound):
        runtime.identity.get_user(123)


@pytest.mark.parametrize(("page_num", "page_size"), [(0, 20), (1, 0), (1, 101)])
def test_workspace_paging_is_validated(runtime: Runtime, page_num: int, page_size: int) -> None:
    alice = runtime.identity.ensure_user("alice")
    with pytest.raises(InvalidParameter):
        runtime.spaces.list(alice.id, page_num=page_num, page_size=page_size)


def test_workspace_second_page_is_empty(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    items, total = runtime.spaces.list(alice.id, page_num=2, page_size=1)
    assert items == [] and total == 1
