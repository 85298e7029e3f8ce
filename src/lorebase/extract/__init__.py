"""Extraction: bytes of a supported file to ordered structural elements with provenance."""

from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.extract.registry import extract_bytes, extract_file, extractor_for
from lorebase.formats import is_supported

__all__ = [
    "DocumentBuilder",
    "Extractor",
    "extract_bytes",
    "extract_file",
    "extractor_for",
    "is_supported",
]
