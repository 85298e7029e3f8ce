"""The HTTP service (``lorebase serve``): versioned REST under ``/v1``, built with FastAPI."""
