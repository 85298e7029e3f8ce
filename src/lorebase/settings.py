"""Settings, built once and passed down. Frozen; validated on construction."""

from __future__ import annotations

from dataclasses import dataclass

from lorebase.errors import InvalidInput

MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ExtractSettings:
    """Limits for reading one file.

    ``max_file_bytes``: files larger than this are ``too_large`` without being read.
    ``max_expanded_bytes``: bound on what a container (docx zip parts, PDF content streams)
    may decompress to: the decompression-bomb guard.
    ``max_text_chars``: bound on the extracted text of one document.
    """

    max_file_bytes: int = 64 * MB
    max_expanded_bytes: int = 512 * MB
    max_text_chars: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        for name in ("max_file_bytes", "max_expanded_bytes", "max_text_chars"):
            if getattr(self, name) <= 0:
                raise InvalidInput(f"{name} must be a positive number")


@dataclass(frozen=True, slots=True)
class ChunkSettings:
    """How documents are cut into chunks.

    ``chunk_size``: most characters in one chunk (200-4000).
    ``max_tokens``: most estimated tokens in one chunk (see ``lorebase.chunk.tokens``); whichever
    of the two binds first ends the chunk. The default sits a little above the 256-token window
    of the bundled embedding model, since the estimate runs below real word-piece counts for
    long words.
    ``overlap``: characters the next chunk repeats from the end of the previous one.
    """

    chunk_size: int = 1200
    max_tokens: int = 320
    overlap: int = 200

    def __post_init__(self) -> None:
        if not 200 <= self.chunk_size <= 4000:
            raise InvalidInput("chunk_size must be between 200 and 4000 characters")
        if not 32 <= self.max_tokens <= 8192:
            raise InvalidInput("max_tokens must be between 32 and 8192")
        if not 0 <= self.overlap <= self.chunk_size // 2:
            raise InvalidInput("overlap must be between 0 and half of chunk_size")

    @property
    def key(self) -> str:
        """A short stable string naming these settings (part of chunk ids)."""
        return f"c{self.chunk_size}-t{self.max_tokens}-o{self.overlap}"
