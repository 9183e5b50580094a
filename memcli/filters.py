"""The read filters of ``recall`` and ``list``, defined once. Pure; imports nothing of memcli.

:data:`FILTERS` is the one table: each row gives the filter's name (the attribute of
:class:`Filters`, and the MCP ``recall`` tool's argument), its command-line options, its
kind and default, and its help. The fast path (``cli/fast.py``) parses the options from it,
the typer commands (``cli/read_cmds.py``) get their parameters from it, the MCP tools
(``mcp_server/tools.py``) map their arguments through it, and ``service.read.build_query`` checks
the values and turns them into an ``index.Query``. Adding a filter: a row here, its check in
``build_query`` (a plain value passes through when ``query`` is set), the ``index.Query``
field the retrievers read, and the argument of the MCP tool's schema (``mcp_server/server.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any


class Filter:
    """One read filter.

    Attributes:
        name: the :class:`Filters` attribute and the MCP argument (``scopes``).
        keyword: the command-line keyword (the typer parameter, the fast path's key: ``scope``).
        options: the command-line options (``("--scope", "-s")``).
        kind: ``list`` (repeatable option), ``str``, ``int`` or ``flag``.
        default: the value when not given (a list kind: a fresh empty list).
        help: the option's help line.
        mcp: True when the MCP ``recall`` tool takes it.
        query: True when ``build_query`` hands the value to ``index.Query`` as it is, under
            the same name (else ``build_query`` reads it itself).
    """

    __slots__ = ("name", "keyword", "options", "kind", "default", "help", "mcp", "query")

    def __init__(self, name: str, keyword: str, options: tuple[str, ...], kind: str, default: Any, help: str,
                 mcp: bool = True, query: bool = False) -> None:
        self.name = name
        self.keyword = keyword
        self.options = options
        self.kind = kind
        self.default = default
        self.help = help
        self.mcp = mcp
        self.query = query


#: Every read filter, in the order the commands list their options.
FILTERS: tuple[Filter, ...] = (
    Filter("scopes", "scope", ("--scope", "-s"), "list", None, "Read only these scopes; repeatable."),
    Filter("statuses", "status", ("--status",), "list", None, "Statuses to include (default active)."),
    Filter("category", "category", ("--category", "-c"), "str", None, "Only this category.", query=True),
    Filter("tag", "tag", ("--tag", "-t"), "str", None, "Only memories with this tag.", query=True),
    Filter("subject", "subject", ("--subject",), "str", None, "Only this subject.", query=True),
    Filter("path", "path", ("--path",), "str", None, "Only memories whose paths globs match this file.",
           query=True),
    Filter("created_after", "created_after", ("--created-after",), "str", None,
           "Created at or after (date or time).", mcp=False),
    Filter("created_before", "created_before", ("--created-before",), "str", None, "Created before (date or time).",
           mcp=False),
    Filter("updated_after", "updated_after", ("--updated-after",), "str", None,
           "Updated at or after (date or time).", mcp=False),
    Filter("updated_before", "updated_before", ("--updated-before",), "str", None, "Updated before (date or time).",
           mcp=False),
    Filter("include_expired", "include_expired", ("--include-expired",), "flag", False,
           "Include memories past their expireAt.", query=True),
    Filter("limit", "limit", ("--limit", "-n"), "int", 20, "At most this many results (top-k).", query=True),
    Filter("sessions", "sessions", ("--sessions",), "flag", False,
           "Also search your own session memories (session:*, e.g. summaries of past sessions).", mcp=False),
)
BY_NAME = {f.name: f for f in FILTERS}
BY_KEYWORD = {f.keyword: f for f in FILTERS}
#: The time filters (RFC 3339 times or dates; ``build_query`` parses them).
TIMES = ("created_after", "created_before", "updated_after", "updated_before")


class Filters:
    """The values of the read filters (:data:`FILTERS`), as given: checked by
    ``service.read.build_query``. ``statuses`` may hold comma-separated lists, the times are
    RFC 3339 strings or dates. A list left None is a fresh empty one (all readable scopes;
    ``active`` only). ``sessions``: also search the caller's own session memories
    (``session:*``, summaries of past sessions).

    Raises:
        TypeError: a keyword that names no filter.
    """

    __slots__ = tuple(f.name for f in FILTERS)
    if TYPE_CHECKING:  # the attributes are the table's names, typed by their kind there
        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...

    def __init__(self, **values: Any) -> None:
        unknown = sorted(set(values) - BY_NAME.keys())
        if unknown:
            raise TypeError(f"no read filter named {', '.join(unknown)}")
        for f in FILTERS:
            value = values.get(f.name, f.default)
            setattr(self, f.name, ([] if value is None else value) if f.kind == "list" else value)

    @classmethod
    def from_options(cls, **options: Any) -> "Filters":
        """Filters from command-line keywords (``scope=[...]``, ``status=[...]`` …; see
        :attr:`Filter.keyword`); a keyword left None takes the filter's default.

        Raises:
            TypeError: a keyword that names no filter.
        """
        unknown = sorted(set(options) - BY_KEYWORD.keys())
        if unknown:
            raise TypeError(f"no read filter option {', '.join(unknown)}")
        return cls(**{BY_KEYWORD[k].name: v for k, v in options.items() if v is not None})

    def __repr__(self) -> str:
        return "Filters(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in FILTERS) + ")"
