"""The semantic retriever in the service layer: who loads the model, who asks it (issue 18 point 3).

Only long-lived processes load the model (SPEC.md section 5): the MCP server starts a
:class:`Warm` at start-up, which loads the model in a background thread when ``[search]
semantic`` is ``auto`` or ``on`` and a model is available, then

- answers its tools' searches through ``index.hybrid.HybridRetriever`` (lexical until the
  model is loaded: :meth:`Warm.retriever`);
- embeds what its tools write (:meth:`Warm.after_write`) and, in the background, every
  memory of the workspace's indexes that has no current vector (``vectors.backfill``);
- serves query embeddings and semantic scores to the hooks and commands of the same
  workspace over its socket (``index.warm``).

A hook or a one-shot command asks that process through :func:`warm_for` (lexical when
none answers, within ``hybrid.WARM_BUDGET``); it never imports numpy or the model.
:func:`status` is what ``memcli doctor`` reports. :func:`close_to` lists the live
memories near one being written (issue 18 point 5: a suggestion, never a refusal).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.index import Query, Retriever
from memcli.service import Ctx

if TYPE_CHECKING:  # annotations only: the model's modules load numpy
    import logging
    import threading

    from memcli.index.embed import Embedder, Floats
    from memcli.index.hybrid import HybridRetriever, LocalSemantic, Semantic
    from memcli.index.warm import Server
    from memcli.service.write import WriteResult

#: The least score at which a live memory is named as close to one being written ("close
#: to ID: supersede it?"). Measured on the old→new pairs of bench/semantic_probe.py: see
#: docs/search.md, "Write-time help".
CLOSE_TO = 0.56
#: How many such memories a write names at most.
CLOSE_LIMIT = 3
#: Seconds a one-shot command (``recall``, ``remember``) gives a warm process in all; a hook
#: gives it ``index.hybrid.WARM_BUDGET`` (0.15 s). A warm answer takes 10-30 ms; the rest is
#: room for a loaded machine, spent only when a warm process runs and is slow.
COMMAND_BUDGET = 0.5
#: Seconds the question :class:`EarlyClose` asks before a write may take in its own thread;
#: the write waits for it at most until ``COMMAND_BUDGET`` after it was asked, as before.
EARLY_BUDGET = 3.0
#: Seconds between two looks of the background backfill at the indexes' change logs
#: (``vectors.last``: one query each); it looks for memories without a vector only when a
#: log moved, so a memory written by any process is embedded about this soon.
POLL = 0.5


def _log() -> logging.Logger:
    """memcli's semantic logger (``logging`` is imported only when something is said)."""
    import logging

    return logging.getLogger("memcli.semantic")


class Warm:
    """The model of a long-lived process and what it does with it (see the module docstring).

    Args:
        workspace: the workspace (``-w``), or None to find it from the current folder.
        actor: the caller (``--actor``), or None for the default.
        serve: also serve the workspace's socket (``index.warm``) once the model is loaded.

    Attributes:
        embedder: the loaded ``embed.Embedder``, or None (not loaded yet, off, or failed).
        reason: why there is no model, or where it came from (one line, for ``doctor``).
        ready: set once loading has ended, with a model or without.
    """

    def __init__(self, workspace: str | None = None, actor: str | None = None, serve: bool = True) -> None:
        import threading  # a long-lived process's; a hook's recall imports this module without it (1 ms)

        self.workspace = workspace
        self.actor = actor
        self.serve = serve
        self.embedder: Embedder | None = None
        self.reason = "loading"
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.work = threading.Event()
        #: query vectors by text, shared by the tool calls, the socket and the backfill: a
        #: write's "close to" question embeds the text that is stored (``vectors.text_of``),
        #: and the backfill stores that vector instead of embedding the text again
        self.queries: dict[str, Floats] = {}
        self.server: Server | None = None
        self.paths: list[Path] = []
        self.lock = threading.Lock()
        self.serving = threading.Lock()  # close() and the loader's bind of the socket, one at a time
        self.thread: threading.Thread | None = None

    def start(self) -> Warm:
        """Load the model in a background thread (returns at once)."""
        import threading

        self.thread = threading.Thread(target=self._run, name="memcli-semantic", daemon=True)
        self.thread.start()
        return self

    def close(self) -> None:
        """Stop the backfill and the socket (the model stays until the process ends)."""
        with self.serving:
            self.stop.set()
            self.work.set()
            if self.server is not None:
                self.server.close()

    def _run(self) -> None:
        try:
            self._load()
        except Exception as err:  # noqa: BLE001 - a failing model never takes the server down
            self.reason = f"the model failed to load ({type(err).__name__}: {str(err)[:160]})"
            _log().warning("memcli: semantic search is off: %s", self.reason)
        finally:
            self.ready.set()
        if self.embedder is not None:
            self._backfill_loop()

    def _load(self) -> None:
        from memcli.errors import MemcliError
        from memcli.index.embed import availability, load, mode

        try:
            ctx = Ctx.open(self.workspace, self.actor)
        except MemcliError as err:
            self.reason = f"no workspace ({err.message})"
            return
        config = ctx.ws.config
        setting = mode(config.search_semantic)
        available, _, why = availability(config.search_model, setting)
        if not available:
            self.reason = why
            if setting == "on":
                _log().warning("memcli: [search] semantic = \"on\" but %s", why)
            return
        try:
            self.embedder = load(config.search_model)
        except MemcliError as err:
            self.reason = err.line()
            _log().warning("memcli: semantic search is off: %s", self.reason)
            return
        self.reason = why
        self._stores(ctx)
        if self.serve:
            self._serve(ctx)

    def _stores(self, ctx: Ctx) -> None:
        """Note the index files of the workspace and of the person's stores (the backfill's work)."""
        from memcli.index.db import INDEX_NAME

        paths = [ctx.ws.cache / INDEX_NAME]
        try:
            paths += [store.ws.cache / INDEX_NAME for store in ctx.personal_stores()]
        except Exception:  # noqa: BLE001 - a personal store that cannot be opened has no vectors
            pass
        with self.lock:
            self.paths = list(dict.fromkeys(paths))

    def _serve(self, ctx: Ctx) -> None:
        from memcli.index.db import INDEX_NAME
        from memcli.index.warm import Server, model_handlers, socket_path

        path = socket_path(ctx.ws.cache / INDEX_NAME)
        with self.serving:  # a close() (SIGTERM) while the model loaded: no socket left behind
            if self.stop.is_set():
                return
            try:
                self.server = Server(path, model_handlers(self._ping, self._embed, self._search))
            except OSError as err:
                _log().info("memcli: not serving the model to hooks: %s", err)

    # --- the socket's handlers ------------------------------------------------------

    def _model(self) -> Embedder:
        """The loaded model: the handlers are served only once :meth:`_load` set it."""
        assert self.embedder is not None, "served before the model loaded"
        return self.embedder

    def _ping(self) -> dict[str, Any]:
        embedder = self._model()
        return {"model": embedder.model_id, "name": embedder.name}

    def _embed(self, text: str) -> tuple[str, bytes]:
        import numpy as np

        embedder = self._model()
        return embedder.model_id, np.asarray(embedder.embed([text[:20_000]])[0], dtype="<f4").tobytes()

    def _search(self, text: str, query: Query, limit: int, also: list[str], skip: set[str]) -> dict[str, Any]:
        """The socket's search: the best ``limit`` of every index this process embeds, none of
        ``skip`` (the asker's quarantined ids; the asker checks every hit again itself)."""
        from memcli.index.hybrid import LocalSemantic
        from memcli.index.vectors import search

        embedder = self._model()
        vector = LocalSemantic(None, embedder, self.queries).vector(text[:20_000])
        query.text = text
        hits: list[tuple[str, float]] = []
        extra: dict[str, float] = {}
        for path, db in self._indexes():
            top, more = search(db, str(path), embedder, query, vector, limit, also, skip=skip)
            hits += top
            extra.update(more)
        hits.sort(key=lambda item: -item[1])
        return {"model": embedder.model_id, "name": embedder.name,
                "hits": [[i, round(s, 5)] for i, s in hits[:limit]], "also": {i: round(s, 5) for i, s in extra.items()}}

    def _indexes(self) -> Iterator[tuple[Path, sqlite3.Connection]]:
        """Each index file of the workspace's stores that exists, opened for the time the
        caller works on it (closed when the loop moves on or ends)."""
        with self.lock:
            paths = list(self.paths)
        for path in paths:
            db = _connect(path)
            if db is None:
                continue
            try:
                yield path, db
            finally:
                db.close()

    # --- embedding --------------------------------------------------------------------

    def _backfill_loop(self) -> None:
        from memcli.index.vectors import backfill, last, prepare

        embedder = self._model()
        seen: dict[Path, int] = {}  # each index's change-log entry its last backfill started from
        while not self.stop.is_set():
            asked = self.work.is_set()
            self.work.clear()
            for path, db in self._indexes():
                try:
                    if not prepare(db, embedder.model_id):
                        continue
                    now = last(db)
                    if not asked and seen.get(path) == now:
                        continue  # nothing written there since: no look for missing vectors
                    backfill(db, embedder, stop=self.stop, known=self.queries)
                    seen[path] = now
                except Exception as err:  # noqa: BLE001 - the next round tries again
                    _log().info("memcli: backfill of %s stopped: %s", path, err)
            self.work.wait(POLL)

    def retriever(self, ctx: Ctx, lexical: Retriever | None = None) -> Retriever:
        """The retriever for one tool call: hybrid once the model is loaded, else lexical."""
        from memcli.index.embed import mode

        lexical = lexical if lexical is not None else ctx.catalog().retriever()
        if self.embedder is None or mode(ctx.ws.config.search_semantic) == "off":
            return lexical
        from memcli.index.hybrid import HybridRetriever, LocalSemantic

        return HybridRetriever(lexical, LocalSemantic(ctx.catalog(), self.embedder, self.queries))

    def after_write(self, ctx: Ctx) -> None:
        """Embed, now, the memories a tool call just wrote (those of its indexes with no
        current vector, a few at most); the background backfill does the rest. Never raises."""
        if self.embedder is None:
            return
        from memcli.index.hybrid import _parts
        from memcli.index.vectors import backfill

        try:
            for source in _parts(ctx.catalog()):
                backfill(source.db, self.embedder, limit=8, known=self.queries)
        except Exception as err:  # noqa: BLE001 - a write never fails for its vector
            _log().info("memcli: embedding a written memory failed: %s", err)
        self._stores(ctx)  # a write may have made the person's store
        self.work.set()

    def semantic(self, ctx: Ctx) -> LocalSemantic | None:
        """The semantic side over ``ctx``'s catalog, or None while there is no model."""
        if self.embedder is None:
            return None
        from memcli.index.hybrid import LocalSemantic

        return LocalSemantic(ctx.catalog(), self.embedder, self.queries)


def _connect(path: Path) -> sqlite3.Connection | None:
    """A connection of the background thread to an index file, or None when there is none yet."""
    from memcli.index.db import BUSY_TIMEOUT_MS

    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return db
    except sqlite3.Error:
        return None


def warm_for(ctx: Ctx, lexical: Retriever | None = None, budget: float | None = None) -> HybridRetriever | None:
    """For a hook or a one-shot command: the hybrid retriever of a warm process of this
    workspace, or None (no process answers, ``[search] semantic = "off"``, or no index).

    See ``index.hybrid.warm_retriever``; ``budget`` defaults to ``hybrid.WARM_BUDGET`` seconds.
    """
    from memcli.index.embed import mode

    if mode(ctx.ws.config.search_semantic) == "off":
        return None
    from memcli.index.hybrid import WARM_BUDGET, warm_retriever

    catalog = ctx.catalog()
    return warm_retriever(catalog, lexical if lexical is not None else catalog.retriever(),
                          deadline_s=WARM_BUDGET if budget is None else budget)


def close_to(ctx: Ctx, semantic: Semantic | None, text: str, scope: str,
             exclude: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The live (active) memories of ``scope`` the caller may see whose meaning is close to
    ``text`` (score at least ``CLOSE_TO``), best first, at most ``CLOSE_LIMIT``:
    ``[{"id", "score", "text"}]``. ``semantic`` is a ``hybrid.LocalSemantic`` or
    ``RemoteSemantic``; empty when it is None or cannot answer. Never raises.

    For a memory just written, give ``vectors.text_of(memory)``, the text its vector is made
    of: the process that embeds it for this question then stores the same vector for the
    memory (``vectors.backfill``'s ``known``) instead of embedding it a second time."""
    if semantic is None:
        return []
    from memcli.index.hybrid import similar

    query = Query(text=text, scopes=[scope], now=ctx.now, actor=ctx.actor)
    try:
        found = similar(semantic, query, text, CLOSE_TO, CLOSE_LIMIT, exclude)
    except Exception as err:  # noqa: BLE001 - a suggestion never fails a write
        _log().info("memcli: similar memories not found: %s", err)
        return []
    return [{"id": m.id, "score": round(s, 3), "text": m.text[:120]} for m, s in found]


def close_to_warm(ctx: Ctx, result: WriteResult, exclude: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """For the CLI's ``remember`` and ``supersede``: :func:`close_to` for ``result`` (a
    ``service.write.WriteResult``) by a warm process's model, or [] when none answers
    (within ``hybrid.WARM_BUDGET`` per question), the write was a no-op, or anything fails.
    The memory itself and the ones it supersedes are left out."""
    if result.outcome not in ("created", "pending_review"):
        return []
    try:
        hybrid = warm_for(ctx, budget=COMMAND_BUDGET)
    except Exception:  # noqa: BLE001 - a suggestion never fails a write
        return []
    if hybrid is None:
        return []
    from memcli.index.vectors import text_of

    memory = result.memory
    return close_to(ctx, hybrid.semantic, text_of(memory), memory.scope,
                    exclude=(memory.id, *memory.supersedes, *exclude))


class EarlyClose:
    """The question of :func:`close_to_warm` asked of a warm process before the write, so that
    its model embeds the new text and scores the live memories while the write and its git
    commit run (the answer is read after, :meth:`result`): the embedding, 15 ms on an idle
    machine and 100-400 ms on a loaded one, leaves the write's path.

    The text asked is the one the memory will hold (``vectors.text_of``: ``subject: text``,
    ``text`` trimmed as the write trims it), in the scope it will be written to (``--scope``,
    else ``[write] scope``); when the memory written differs (a supersede that keeps the old
    subject, a default scope elsewhere) :meth:`result` asks again after the write, as before.
    The answer holds only memories that existed before the write; the written memory and the
    ones it supersedes are left out. The text reaches only the caller's own warm process
    (the socket is this user's alone), which keeps it in memory among its query vectors.

    Args:
        ctx: the command's context (only its configuration, cache folder, actor and clock are
            read here: the question runs in a thread of its own, on the socket alone).
        text: the memory's text as given; subject: ``--subject``; scope: ``--scope``.
    """

    def __init__(self, ctx: Ctx, text: str | None, subject: str | None, scope: str | None) -> None:
        import time

        self.reply: dict[str, Any] | None = None
        self.thread: threading.Thread | None = None
        self.started = time.monotonic()
        self.deadline = self.started + COMMAND_BUDGET
        self.asked = ""
        self.query: Query | None = None
        if text is None:
            return
        try:
            from memcli.index.embed import mode

            config = ctx.ws.config
            if mode(config.search_semantic) == "off":
                return
            from memcli.index.db import INDEX_NAME
            from memcli.index.warm import socket_path

            path = socket_path(ctx.ws.cache / INDEX_NAME)
            if not path.exists():
                return  # no warm process: nothing to ask (one stat, as before)
            body = text.replace("\r\n", "\n").strip()
            self.asked = f"{subject}: {body}" if subject else body
            self.query = Query(text=self.asked, scopes=[scope if scope is not None else config.write_scope],
                               now=ctx.now, limit=CLOSE_LIMIT + 4, actor=ctx.actor)
        except Exception:  # noqa: BLE001 - a suggestion never fails a write
            return
        import threading

        self.thread = threading.Thread(target=self._ask, args=(path, self.query), name="memcli-close-to",
                                       daemon=True)
        self.thread.start()

    def _ask(self, path: Path, query: Query) -> None:
        import time

        from memcli.index.warm import ask, query_to_json

        end = self.started + EARLY_BUDGET  # the write's own time is the question's too
        if ask(path, {"ping": True}, end - time.monotonic()) is None:
            return
        self.reply = ask(path, {"search": query.text, "query": query_to_json(query), "limit": query.limit,
                                "also": []}, end - time.monotonic())

    def result(self, ctx: Ctx, result: WriteResult, exclude: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """What :func:`close_to_warm` gives for ``result``, from the answer to the question asked
        before the write when it asked about this memory's text and scope, else asked now."""
        import time

        from memcli.index.vectors import text_of

        if result.outcome not in ("created", "pending_review"):
            return []
        memory = result.memory
        if self.thread is None or self.query is None or text_of(memory) != self.asked \
                or self.query.scopes != [memory.scope]:
            return close_to_warm(ctx, result, exclude)
        self.thread.join(max(0.0, self.deadline - time.monotonic()))
        if self.reply is None:
            return []
        try:
            from memcli.index.hybrid import _checked

            hits = [(str(i), float(s)) for i, s in self.reply["hits"]]
            skip = {memory.id, *memory.supersedes, *exclude}
            found = [(m, s) for m, s in _checked(ctx.catalog(), self.query, hits)
                     if s >= CLOSE_TO and m.id not in skip][:CLOSE_LIMIT]
        except Exception as err:  # noqa: BLE001 - a suggestion never fails a write
            _log().info("memcli: similar memories not found: %s", err)
            return []
        return [{"id": m.id, "score": round(s, 3), "text": m.text[:120]} for m, s in found]


def close_warnings(close: list[dict[str, Any]]) -> list[str]:
    """The warning lines for :func:`close_to`'s memories: ``close to ID (0.71): "…": supersede it?``."""
    return [f"close to {c['id']} ({c['score']:.2f}): \"{c['text'][:70]}\": supersede it? "
            f"(`memcli supersede {c['id']} TEXT` replaces it)" for c in close]


def status(ctx: Ctx) -> dict[str, Any]:
    """What ``memcli doctor`` reports of the semantic retriever: ``{"active": bool, "model":
    str | None, "reason": str, "warm": bool, "vectors": {"current": n, "memories": n} | None}``.

    ``active``: searches of this workspace go by meaning where a long-lived process runs
    (the setting allows it and the runtime and the model are there); ``warm``: such a
    process answers on the workspace's socket now. Loads no model.
    """
    import os

    from memcli.index.embed import ENV_MODE, availability, mode

    config = ctx.ws.config
    active, model, reason = availability(config.search_model, mode(config.search_semantic))
    odd = (os.environ.get(ENV_MODE) or "").strip()
    if odd and odd.lower() not in ("auto", "on", "off"):  # a typo that silently changed nothing
        reason = f"{reason}; ${ENV_MODE}={odd[:40]!r} is ignored: use auto, on or off"
    out: dict[str, Any] = {"active": active, "model": model, "reason": reason, "warm": False, "vectors": None}
    if not active:
        return out
    from memcli.index.db import INDEX_NAME
    from memcli.index.warm import ask, socket_path

    reply = ask(socket_path(ctx.ws.cache / INDEX_NAME), {"ping": True}, 0.5)
    if reply:
        out["warm"] = True
        out["model"] = reply.get("name") or model
        out["reason"] = f"{reason}; served now by a long-lived process (recall, hooks and MCP search by meaning)"
        db = _connect(ctx.ws.cache / INDEX_NAME)
        if db is not None:
            from memcli.index.vectors import counts

            try:
                current, total = counts(db, str(reply.get("model")))
                out["vectors"] = {"current": current, "memories": total}
            except sqlite3.Error:
                pass
            finally:
                db.close()
    else:
        out["reason"] = (f"{reason}; loaded by `memcli mcp` (no long-lived process runs now: other commands "
                         "answer lexically)")
    return out


def embed_all(ctx: Ctx, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Embed, in this process, every memory of the workspace's indexes without a current
    vector (``index rebuild --embed``): loads the model (seconds, 200-400 MiB) and takes about
    10 ms a memory. ``progress(done, total)`` is called between batches.

    Returns:
        ``{"model": name, "embedded": n, "vectors": {"current", "memories"}}`` of the workspace's index.

    Raises:
        ModelUnavailable: the semantic extra or the model is missing, or ``[search] semantic = "off"``.
    """
    from memcli.errors import ModelUnavailable
    from memcli.index.embed import availability, load, mode
    from memcli.index.hybrid import _parts
    from memcli.index.vectors import BATCH, backfill, counts

    config = ctx.ws.config
    available, _, why = availability(config.search_model, mode(config.search_semantic))
    if not available:
        raise ModelUnavailable(f"cannot embed: {why}", hint="`memcli doctor` says what the semantic retriever needs")
    embedder = load(config.search_model)
    parts = _parts(ctx.catalog())
    total = sum(counts(s.db, embedder.model_id)[1] - counts(s.db, embedder.model_id)[0] for s in parts)
    done = 0
    for db in (s.db for s in parts):
        while True:
            step = backfill(db, embedder, limit=BATCH * 4)
            done += step
            if progress is not None:
                progress(done, total)
            if step < BATCH * 4:
                break
    own = _parts(ctx.catalog())[0].db if parts else None
    current, memories = counts(own, embedder.model_id) if own is not None else (0, 0)
    return {"model": embedder.name, "embedded": done, "vectors": {"current": current, "memories": memories}}
