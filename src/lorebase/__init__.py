"""lorebase: a local-first knowledge base with hybrid retrieval and cited answers."""

__version__ = "0.1.0"

__all__ = ["__version__"]
