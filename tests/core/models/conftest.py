"""A fresh local model server per test, and a client with retries off (errors arrive once).

Every client test runs twice: on the default lean HTTP path and on the ``openai`` SDK path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from coze_lab.core.models import ModelClient
from coze_lab.testing import ModelServer


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as srv:
        yield srv


@pytest.fixture(params=["httpx", "openai"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest_asyncio.fixture
async def client(backend: str) -> AsyncIterator[ModelClient]:
    async with ModelClient(max_retries=0, timeout=10, backend=backend) as model_client:
        yield model_client
