"""Embedders: texts to vectors, behind one seam (see ``lorebase.embed.base``).

The implementations are importable from here by name, but only load when first asked for,
so ``import lorebase.embed`` stays cheap (no onnxruntime, tokenizers or httpx).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lorebase.embed.fake import FakeEmbedder
    from lorebase.embed.http import HttpEmbedder
    from lorebase.embed.onnx import OnnxEmbedder

_LAZY_MODULES = {
    "OnnxEmbedder": "lorebase.embed.onnx",
    "HttpEmbedder": "lorebase.embed.http",
    "FakeEmbedder": "lorebase.embed.fake",
}

__all__ = ["FakeEmbedder", "HttpEmbedder", "OnnxEmbedder"]


def __getattr__(name: str) -> Any:
    """Import an embedder module on first use of its class name."""
    module = _LAZY_MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
