"""What a backend's database shares, whatever holds its connections: it is open until it is
closed, once, and refuses work after that."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from lorebase.errors import InvalidInput


class BaseDatabase:
    """A database's life: :meth:`close` closes its connections once (``_disconnect``, under
    whatever ``_closing`` holds); work asked of it afterwards fails (``_check_open``)."""

    _closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._closing():
            if not self._closed:
                self._closed = True
                self._disconnect()

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidInput("this store is closed; open it again")

    def _closing(self) -> AbstractContextManager[object]:
        """What closing holds, so that no connection is handed out meanwhile (nothing by
        default)."""
        return nullcontext()

    def _disconnect(self) -> None:
        """Close the connections."""
        raise NotImplementedError
