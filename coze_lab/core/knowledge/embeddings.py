"""Embeddings through the model registry: any OpenAI-compatible ``/v1/embeddings``.

Vectors are stored as float32 little-endian blobs (what sqlite-vec reads as-is) and
normalised to unit length, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from coze_lab.core.models import ModelClient, ModelRegistry, ModelSpec

#: texts per embeddings request
BATCH = 64


class Embedder(Protocol):
    """Turns texts into vectors (one per text, all of one length)."""

    name: str

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class RegistryEmbedder:
    """An embedding model of the registry, called with the ``openai`` SDK.

    ``model_id``: a registry id; empty: the registry's default model (the demo model
    server answers embeddings too).

    Example:
        >>> embedder = RegistryEmbedder(registry, client, "embedding")   # doctest: +SKIP
        >>> vectors = await embedder.embed(["hello"])                     # doctest: +SKIP
    """

    def __init__(
        self, registry: Callable[[], ModelRegistry], client: ModelClient, model_id: str = ""
    ) -> None:
        self._registry = registry
        self._client = client
        self._model_id = model_id

    @property
    def spec(self) -> ModelSpec:
        registry = self._registry()
        return registry.get(self._model_id) if self._model_id else registry.default()

    @property
    def name(self) -> str:
        return self.spec.id

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        spec = self.spec
        for start in range(0, len(texts), BATCH):
            vectors.extend(await self._client.embed(spec, list(texts[start : start + BATCH])))
        return vectors


def normalise(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to unit length (a zero vector stays zero).

    Example:
        >>> normalise([3.0, 4.0])
        [0.6, 0.8]
    """
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else [0.0 for _ in vector]


def pack(vector: Sequence[float]) -> bytes:
    """The float32 little-endian blob of a (normalised) vector.

    Example:
        >>> unpack(pack([0.6, 0.8]))[1] == struct.unpack("<f", struct.pack("<f", 0.8))[0]
        True
    """
    values = normalise(vector)
    return struct.pack(f"<{len(values)}f", *values)


def unpack(blob: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(blob) // 4}f", blob))
