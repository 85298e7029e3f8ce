"""A small knowledge base for search tests: files written under a folder, indexed with the
fake embedder into a data directory whose API serves without keys (for ``TestClient``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import ServeSettings, Settings


def write_files(root: Path, files: Mapping[str, str]) -> Path:
    """``files`` (relative path → text) under ``root``; returns ``root``."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@contextmanager
def small_base(data_dir: Path, folder: Path, kb: str) -> Iterator[Lorebase]:
    """``folder`` indexed into base ``kb`` with the fake embedder, served without keys."""
    settings = Settings(data_dir=data_dir, serve=ServeSettings(auth=False, watch=False, workers=1))
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as instance:
        instance.add([folder], kb=kb)
        yield instance
