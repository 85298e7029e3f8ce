"""An embedders file for the listing tests: a fake embedder (the default) and an http one at
a port nothing listens on, with a password in its URL and a key from the environment."""

from __future__ import annotations

import socket
from pathlib import Path

KEY = "sk-listing-secret-7781"
PASSWORD = "hunter2-url-password"
KEY_VARIABLE = "LISTING_TEST_KEY"


def dead_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def write_embedders(folder: Path) -> tuple[Path, dict[str, str]]:
    """The file, and the environment that names it and holds the key."""
    path = folder / "listing-embedders.toml"
    path.write_text(
        'default = "tiny"\n'
        "[embedders.tiny]\n"
        'kind = "fake"\n'
        "dimensions = 8\n"
        "no_answer_threshold = 0.5\n"
        "[embedders.remote]\n"
        f'url = "http://reader:{PASSWORD}@127.0.0.1:{dead_port()}/v1"\n'
        'model = "nomic-embed-text"\n'
        "dimensions = 768\n"
        "truncate = 256\n"
        'query_prefix = "ask: "\n'
        f'api_key_env = "{KEY_VARIABLE}"\n'
    )
    return path, {"LOREBASE_EMBEDDERS": str(path), KEY_VARIABLE: KEY}
