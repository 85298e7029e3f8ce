"""Knowledge bases and the folders they follow: :class:`Bases` creates, changes, re-embeds and
deletes them (with everything in them: rows, sealed originals, their evaluation), and adds and
removes their sources — one path each whatever the surface. It asks :class:`Access` who may
create what and records the changes in its audit log; the originals of uploads go through
:class:`Originals`."""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from lorebase.accounts.access import Caller
from lorebase.embed.registry import Embedders, Reachability, kb_embedders
from lorebase.errors import Forbidden, InvalidInput, NotFound, Unavailable
from lorebase.events import EventBus
from lorebase.names import checked_name
from lorebase.service.access import Access
from lorebase.service.originals import Originals
from lorebase.settings import ChunkSettings, Settings
from lorebase.store.base import KnowledgeBase, Source, Store
from lorebase.store.states import Scope, SourceKind

DEFAULT_KB = "default"
EVALS_FOLDER = "evals"
"""Under the data directory: the last evaluation of each base (``<kb>.json``) and each
evaluation's own data directory (``lorebase eval``)."""
CORPORA_FOLDER = "corpora"
"""Where an evaluation writes the BEIR corpora it indexes, under the evals folder."""
# The description of a base an older `lorebase eval` made for a BEIR corpus in the user's own
# data directory; its corpus was written out under evals/corpora/<name>-<digest>.
LEGACY_EVAL_CORPUS = re.compile(r"lorebase eval corpus .* sha256:([0-9a-f]{8,64})$")


def eval_result_path(data_dir: Path, kb: str) -> Path:
    """Where the last evaluation of base ``kb`` is kept."""
    return data_dir / EVALS_FOLDER / f"{quote(kb, safe='-_.')}.json"


def folder(path: Path | str, *, over_http: bool = False) -> Path:
    """A source folder as an absolute path; ``InvalidInput`` when it is not a folder (or not
    a path at all: a NUL byte, an unknown user's ``~name``). Over HTTP the path must be
    absolute: a relative one would be read against the server's working directory, which the
    caller neither sees nor chose (the command line resolves it against the caller's own)."""
    if over_http and not Path(path).is_absolute():  # ~user is the server's user's home
        raise InvalidInput(
            "a folder given over HTTP is an absolute path on the server's machine "
            "(/srv/docs); a relative one would be read against the server's working directory"
        )
    try:
        resolved = Path(path).expanduser().resolve()
        is_folder = resolved.is_dir()
    except (ValueError, RuntimeError, OSError):
        raise InvalidInput("that is not a usable folder path; give an absolute path") from None
    if not is_folder:
        raise InvalidInput(f"{path} is not a folder; a source must be a folder")
    return resolved


def _file(path: Path) -> Path:
    """A file's absolute path, its folder resolved (a link keeps its own name)."""
    try:
        absolute = path.expanduser().absolute()
        return absolute.parent.resolve() / absolute.name
    except (ValueError, RuntimeError, OSError):
        raise InvalidInput("that is not a usable file path; give an absolute path") from None


class Bases:
    """Knowledge bases and their sources, created and changed as a caller may."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedders: Embedders,
        events: EventBus,
        access: Access,
        originals: Originals,
    ) -> None:
        self._settings = settings
        self._store = store
        self._embedders = embedders
        self._events = events
        self._access = access
        self._originals = originals

    def _followable(self, path: Path) -> Path:
        """``path`` (resolved), unless it is lorebase's own data directory or inside it: its
        database, keys, profiles and index files are not knowledge to index (the corpora an
        evaluation writes there to index are)."""
        data = self._settings.data_dir.expanduser().resolve()
        corpora = data / EVALS_FOLDER / CORPORA_FOLDER
        if path.is_relative_to(corpora) and path != corpora:
            return path
        if path == data or path.is_relative_to(data):
            raise InvalidInput(
                f"{path} is lorebase's own data directory (or inside it), which holds its "
                "database, keys and indexes: follow the folders of your documents instead"
            )
        return path

    def create_kb(
        self,
        name: str,
        *,
        description: str = "",
        scope: Scope | str = Scope.PERSONAL,
        chunk_settings: ChunkSettings | None = None,
        sources: Sequence[Path] = (),
        team: str | None = None,
        caller: Caller | None = None,
        embedder: str | None = None,
    ) -> KnowledgeBase:
        """A new base (``Conflict`` when the name is taken in its own scope: the global bases,
        the team's, the owner's personal ones; a name used in another scope is free), owned by
        the caller, following
        ``sources`` (checked first; nothing is left behind when one is refused), embedded with
        the named ``embedder`` (default: the embedders' default; ``NotFound`` for a name no
        embedder has). The choice is kept: only :meth:`reembed_kb` changes it."""
        checked_name(name, "knowledge base name")
        scope = Scope(scope)
        if embedder is not None:
            self._embedders.config(embedder)  # NotFound, listing the names
        chosen = embedder if embedder is not None else self._embedders.default_name
        team_id = self._access.team_id(team, caller) if team else None
        if scope is Scope.TEAM and team_id is None:
            raise InvalidInput("a team knowledge base needs a team")
        self._access.check_create(caller, scope, team_id)
        if sources and caller is not None and not caller.is_admin:
            raise Forbidden("only administrators may point a knowledge base at server folders")
        folders = [self._followable(folder(path, over_http=caller is not None)) for path in sources]
        kb = self._store.create_kb(
            name,
            description=description,
            scope=scope,
            owner=caller.user.name if caller is not None else None,
            chunk_settings=chunk_settings or self._settings.chunk,
            team_id=team_id if scope is Scope.TEAM else None,
            embedder=chosen,
        )
        try:
            for path in folders:
                self._store.add_source(kb.id, str(path))
        except Exception:
            self._store.delete_kb(kb.id)
            raise
        self._access.audit(caller, "create_knowledge_base", f"kb:{kb.id}")
        return self._store.get_kb_by_id(kb.id)

    def ensure_kb(self, name: str) -> KnowledgeBase:
        """The knowledge base called ``name`` (or numbered: an id), created with default
        settings if needed (a number no base has is a name)."""
        try:
            return self._access.kb(name)
        except NotFound:
            return self.create_kb(name)

    def update_kb(
        self,
        kb: KnowledgeBase | str,
        chunk_settings: ChunkSettings | None = None,
        *,
        description: str | None = None,
        caller: Caller | None = None,
    ) -> KnowledgeBase:
        """New chunking settings (the next pass re-chunks, and re-embeds what changed) and/or
        a new description."""
        base = self._access.base(kb)
        if chunk_settings is not None:
            self._store.update_kb_chunking(base.id, chunk_settings)
        if description is not None:
            self._store.set_kb_description(base.id, description)
        self._access.audit(caller, "update_knowledge_base", f"kb:{base.id}")
        return self._store.get_kb_by_id(base.id)

    def reembed_kb(
        self, kb: KnowledgeBase | str, embedder: str, *, caller: Caller | None = None
    ) -> KnowledgeBase:
        """Move the base to the named ``embedder``: recorded now; its passes (``sync``, the
        queue's job :meth:`request_pass` queues, a server's watcher) then make every
        document's vectors with it, reusing vectors of identical texts, while searches keep
        using the current vectors; once all are made the base switches at once and the old
        vectors go. A pass cut short (a stop, a kill) leaves what it made for the next one.
        ``NotFound`` for an unknown name, ``Unavailable`` when the embedder does not answer
        now (nothing is recorded)."""
        base = self._access.base(kb)
        self._embedders.config(embedder)
        reached = self._embedders.reachability(embedder, max_age=0)
        if not reached.reachable:
            raise Unavailable(
                f"the embedder {embedder} does not answer ({reached.detail}); start it, then "
                "ask for the re-embed again"
            )
        self._store.set_kb_embedder_target(base.id, embedder)
        self._access.audit(caller, "reembed_knowledge_base", f"kb:{base.id}")
        return self._store.get_kb_by_id(base.id)

    def embedder_reachability(self, kb: KnowledgeBase) -> Reachability:
        """Whether the embedder the base answers with does (probed at most every half
        minute per embedder)."""
        name = kb_embedders(kb).answering
        try:
            return self._embedders.reachability(name)
        except NotFound:
            return Reachability(False, f"the embedder {name} is not configured any more")

    def delete_kb(self, kb: KnowledgeBase | str, *, caller: Caller | None = None) -> None:
        """The base and everything in it: rows, vectors, lexical rows (one transaction), then
        the encrypted originals of its uploads (a blob that will not go is left for the orphan
        sweep at the next start; the delete still succeeds) and its other files (its last
        evaluation)."""
        base = self._access.base(kb)
        uploads = [d.id for d in self._store.list_documents(base.id) if d.uploaded]
        self._store.delete_kb(base.id)
        if uploads:
            blobs = self._originals.blobs
            for document_id in uploads:
                with contextlib.suppress(OSError):
                    blobs.delete(document_id)
        self._delete_kb_files(base)
        self._events.publish("knowledge_base", base.id, state="deleted")
        self._access.audit(caller, "delete_knowledge_base", f"kb:{base.id}")

    def _delete_kb_files(self, base: KnowledgeBase) -> None:
        """The files kept for a base beside the database: its last evaluation and, for a base
        an older `lorebase eval` made, the corpus it wrote out."""
        evals = self._settings.data_dir / EVALS_FOLDER
        with contextlib.suppress(OSError):
            eval_result_path(self._settings.data_dir, base.name).unlink(missing_ok=True)
        legacy = LEGACY_EVAL_CORPUS.match(base.description)
        if legacy is not None:
            for corpus in (evals / "corpora").glob(f"*-{legacy.group(1)}"):
                shutil.rmtree(corpus, ignore_errors=True)

    # -- sources -----------------------------------------------------------------------------
    def sources(self, kb: KnowledgeBase | str) -> list[Source]:
        """The folders and files the base follows."""
        return self._store.list_sources(self._access.base(kb).id)

    def add_source(
        self, kb: KnowledgeBase | str, path: Path | str, *, caller: Caller | None = None
    ) -> Source:
        """Follow a folder (on this machine: over HTTP, administrators only)."""
        if caller is not None and not caller.is_admin:
            raise Forbidden("only administrators may point a knowledge base at server folders")
        base = self._access.base(kb)
        followed = self._followable(folder(path, over_http=caller is not None))
        source = self._store.add_source(base.id, str(followed))
        self._access.audit(caller, "add_source", f"kb:{base.id}")
        return source

    def source_for(self, kb: KnowledgeBase, path: Path) -> Source:
        """The source following ``path`` (a folder, or a file added on its own), added if the
        base does not follow it yet. A file inside a folder the base follows is that folder's;
        a folder holding files the base follows one by one takes them over (their documents
        are keyed under the folder's label from the next pass)."""
        if path.is_dir():
            wanted, kind = self._followable(folder(path)), SourceKind.FOLDER
        else:
            wanted, kind = self._followable(_file(path)), SourceKind.FILE
        known = self._store.list_sources(kb.id)
        for source in known:
            if source.path == str(wanted):
                return source
            inside = kind is SourceKind.FILE and source.kind is SourceKind.FOLDER
            if inside and wanted.is_relative_to(source.path):
                return source
        if kind is SourceKind.FOLDER:
            for source in known:
                if source.kind is SourceKind.FILE and Path(source.path).is_relative_to(wanted):
                    self._store.remove_source(kb.id, source.id)
        return self._store.add_source(kb.id, str(wanted), kind)

    def remove_source(
        self, kb: KnowledgeBase | str, source: int | str, *, caller: Caller | None = None
    ) -> int:
        """Stop following a folder or file (by id, path or label); its documents are dropped.
        Returns how many."""
        base = self._access.base(kb)
        for known in self._store.list_sources(base.id):
            if _matches(known, source):
                dropped = self._store.remove_source(base.id, known.id)
                self._access.audit(caller, "remove_source", f"kb:{base.id}")
                return dropped
        raise NotFound(
            f"{base.name} follows no folder or file {source!r}; `kb sources list` shows them"
        )


def _matches(source: Source, wanted: int | str) -> bool:
    if isinstance(wanted, int):
        return source.id == wanted
    text = wanted.rstrip("/")
    return text in (source.label, source.path, str(Path(text).expanduser().resolve()))
