"""A user's own API key for a named HTTP embedder, which their personal bases are embedded
(and searched) with: their own account at a hosted provider, say.

The key is sealed with the data key before it is stored (``user_embedder_keys``), never
shown back — listings name the embedder and when the key was set —, never logged, and a
data-key rotation seals it again. Only HTTP embedders take one (``InvalidInput`` otherwise:
a local model has no account to bill). An administrator forbids them all with
``LOREBASE_USER_EMBEDDER_KEYS=0``: none can be set, and those kept are not used.

Which key a base is embedded with is looked up for each pass and each search of a personal
base (:meth:`OwnEmbedderKeys.resolve`), remembered for :data:`RESOLVE_SECONDS` by this
process, and forgotten here as soon as its owner changes or removes it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from lorebase.accounts.access import Caller
from lorebase.embed.registry import Embedders
from lorebase.errors import Forbidden, InvalidInput, LorebaseError, NotFound, Unavailable
from lorebase.service.access import Access
from lorebase.service.originals import Originals
from lorebase.settings import Settings
from lorebase.vault.rotation import Reseal

log = logging.getLogger(__name__)

OWN_KEY_CONTEXT = "user-embedder-key"
RESOLVE_SECONDS = 30.0
MAX_KEY_CHARS = 4096
FORBIDDEN = (
    "an administrator turned own embedder keys off (LOREBASE_USER_EMBEDDER_KEYS=0); "
    "your personal bases use the server's embedders as configured"
)


class OwnEmbedderKeys:
    """Users' own embedder keys: set, listed (names only), removed, and resolved for the
    embedders of their personal bases."""

    def __init__(
        self,
        settings: Settings,
        access: Access,
        originals: Originals,
        embedders: Embedders,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._allowed = settings.user_embedder_keys
        self._access = access
        self._originals = originals
        self._embedders = embedders
        self._clock = clock
        self._known: dict[tuple[str, str], tuple[float, str | None]] = {}
        self._lock = threading.Lock()
        originals.also_reseal(self._reseal_all)

    def set(self, caller: Caller, embedder: str, key: str) -> None:
        """Keep ``key`` (sealed) as the caller's own for the named HTTP embedder."""
        if not self._allowed:
            raise Forbidden(FORBIDDEN)
        config = self._embedders.config(embedder)  # NotFound: `lorebase embedders` lists them
        if config.kind != "http":
            raise InvalidInput(
                f"only HTTP embedders take a key of your own; {embedder!r} is a "
                f"{config.kind} embedder (`lorebase embedders` lists the http ones)"
            )
        key = key.strip()
        if not key or len(key) > MAX_KEY_CHARS or any(c.isspace() or ord(c) < 32 for c in key):
            raise InvalidInput(
                f"an API key is 1 to {MAX_KEY_CHARS} characters without spaces or control "
                "characters; paste it again"
            )
        sealed = self._originals.seal(key, OWN_KEY_CONTEXT)
        self._access.accounts.set_embedder_key(caller.user.id, embedder, sealed)
        self._forget(caller.user.name, embedder)
        self._access.audit(caller, "set_embedder_key", f"user:{caller.user.id} embedder:{embedder}")

    def remove(self, caller: Caller, embedder: str) -> None:
        """Forget the caller's own key for the embedder (``NotFound`` when there is none)."""
        if not self._access.accounts.delete_embedder_key(caller.user.id, embedder):
            raise NotFound("you keep no key for that embedder; list yours to see them")
        self._forget(caller.user.name, embedder)
        self._access.audit(
            caller, "remove_embedder_key", f"user:{caller.user.id} embedder:{embedder}"
        )

    def listed(self, caller: Caller) -> list[tuple[str, float]]:
        """The embedders the caller keeps a key for, with when it was set (never the keys)."""
        return self._access.accounts.embedder_keys(caller.user.id)

    def resolve(self, owner: str, embedder: str) -> str | None:
        """The key ``owner`` keeps for ``embedder`` (None: none, not allowed, or not readable
        here), remembered a moment."""
        if not self._allowed:
            return None
        now = self._clock()
        with self._lock:
            known = self._known.get((owner, embedder))
        if known is not None and known[0] > now:
            return known[1]
        key: str | None = None
        try:
            sealed = self._access.accounts.sealed_embedder_key(owner, embedder)
            if sealed is not None:
                key = self._originals.open(sealed, OWN_KEY_CONTEXT)
        except LorebaseError as error:  # no accounts, no data key, another key: the server's
            log.warning("a user's own embedder key was not usable (%s)", type(error).__name__)
        with self._lock:
            self._known[(owner, embedder)] = (now + RESOLVE_SECONDS, key)
        return key

    def _forget(self, owner: str, embedder: str) -> None:
        with self._lock:
            self._known.pop((owner, embedder), None)

    def _reseal_all(self, reseal: Reseal) -> int:
        """A data-key rotation: every kept key sealed again with the new key (none without
        accounts: a library instance opened without them keeps no user's key)."""
        try:
            accounts = self._access.accounts
        except Unavailable:
            return 0
        kept = accounts.sealed_embedder_keys()
        for user_id, embedder, sealed in kept:
            accounts.set_embedder_key(user_id, embedder, reseal(sealed, OWN_KEY_CONTEXT))
        with self._lock:
            self._known.clear()
        return len(kept)
