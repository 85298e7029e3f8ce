"""How large a request body may be, by route. :class:`~lorebase.api.guard.KeyFirst` enforces
it: from ``Content-Length`` before anything is read, and by counting a body streamed without
one (a refusal is a problem response with the security headers, like every other error)."""

from __future__ import annotations

import re

MAX_JSON_BYTES = 256 * 1024
"""The largest JSON body any route takes (a search, a tool call, a question are a few KB)."""
MULTIPART_SLACK = 64 * 1024
"""What an upload's multipart framing may add to the files it carries."""
UPLOAD_PATH = "/v1/knowledge-bases/{kb_id}/documents"
_UPLOAD = re.compile(UPLOAD_PATH.replace("{kb_id}", "[^/]+"))
IMPORT_PATH = "/v1/knowledge-bases/import"
MAX_IMPORT_BYTES = 64 * 1024**3
"""The largest export an import takes over HTTP (administrators only; spooled to disk)."""


def body_limit(method: str, path: str, max_upload_bytes: int) -> int:
    """The most bytes a request's body may hold: the upload limit (and its multipart framing)
    for an upload, :data:`MAX_JSON_BYTES` for anything else. Pure."""
    if method == "POST" and _UPLOAD.fullmatch(path):
        return max_upload_bytes + MULTIPART_SLACK
    if method == "POST" and path == IMPORT_PATH:
        return MAX_IMPORT_BYTES
    return MAX_JSON_BYTES
