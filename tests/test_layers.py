"""Imports run one way, down the layers of docs/development.md ("Layers").

Every module of ``memcli/`` is parsed with :mod:`ast` (nothing is imported), and every
``import memcli…`` / ``from memcli… import …`` / relative import, at module level or inside
a function, is mapped to the unit it reaches: a sub-package of ``memcli`` (``memcli.service``)
or a top-level module (``memcli.model``).  An import inside one unit is free; one between two
units must go to a lower layer than the importer's.  No two units import each other.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "memcli"

#: The layers, top first (docs/development.md, "Layers").  A unit may import only units of a
#: lower layer; two units of one layer do not import each other.
LAYERS: list[tuple[str, ...]] = [
    ("memcli.__main__",),                                   # ``python -m memcli``
    ("memcli.cli",),                                        # entry: typer app and the fast path
    ("memcli.mcp_server",),                                 # entry: the MCP server (``memcli mcp`` starts it)
    ("memcli.service",),                                    # the operations
    ("memcli.index",),                                      # the search index (reads through store, policy)
    ("memcli.policy", "memcli.store", "memcli.agents", "memcli.changes"),  # the domain
    ("memcli.git",),                                        # git: the sealed runner, commits, history, rewrite
    ("memcli.config",),                                     # settings (config.toml)
    ("memcli.model", "memcli.fileformat"),                  # the record and its file format
    ("memcli.guards",),                                     # guard patterns: Claude Code's permission-rule syntax
    ("memcli.text",),                                       # text rules: secrets, hidden characters
    ("memcli", "memcli.errors", "memcli.timeutil", "memcli.yamlfast", "memcli.testpoint",
     "memcli.filters", "memcli.interrupts", "memcli.digests"),  # pure helpers; the read filters' table
]

#: Imports that run up today, (importer, imported) by module.  This list only shrinks: the
#: test fails when one is no longer made, so remove it from here when the code is fixed.
KNOWN_EXCEPTIONS: set[tuple[str, str]] = set()


class Import(NamedTuple):
    """One intra-package import: importer module, line, imported module."""

    importer: str
    line: int
    imported: str


def module_name(path: Path) -> str:
    """``memcli/service/write.py`` -> ``memcli.service.write``; a package's ``__init__`` is the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path) -> list[Import]:
    """Every import of a memcli module made anywhere in ``path`` (``name`` is its module name)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [Import(name, node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "memcli"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package, one level up per extra dot
                base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "memcli":
                continue
            for alias in node.names:  # ``from memcli import timeutil`` imports the module memcli.timeutil
                sub = f"{target}.{alias.name}"
                found.append(Import(name, node.lineno, sub if sub in MODULES else target))
    return sorted(set(found))  # one per (line, module), whatever the names


def unit_of(module: str) -> str:
    """The layer unit of a module: ``memcli.service.write`` -> ``memcli.service``; ``memcli.model`` as is."""
    parts = module.split(".")
    return ".".join(parts[:2])


RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
ALL_IMPORTS = [imp for name, path in MODULES.items() for imp in imports_of(name, path)]
CROSSING = [imp for imp in ALL_IMPORTS if unit_of(imp.importer) != unit_of(imp.imported)]


def _where(imp: Import) -> str:
    return f"{MODULES[imp.importer].relative_to(ROOT)}:{imp.line}: {imp.importer} imports {imp.imported}"


def test_every_unit_has_a_layer():
    missing = sorted({unit_of(m) for m in MODULES} - RANK.keys())
    assert not missing, f"add these to LAYERS here and in docs/development.md: {missing}"
    stale = sorted(RANK.keys() - {unit_of(m) for m in MODULES})
    assert not stale, f"LAYERS names units that no longer exist: {stale}"


def test_imports_go_down_the_layers():
    wrong = [_where(imp) + f" (layer {RANK[unit_of(imp.importer)]} -> {RANK[unit_of(imp.imported)]})"
             for imp in CROSSING
             if RANK[unit_of(imp.imported)] <= RANK[unit_of(imp.importer)]
             and (unit_of(imp.importer), unit_of(imp.imported)) not in KNOWN_EXCEPTIONS]
    assert not wrong, "imports that do not go down a layer (docs/development.md, Layers):\n" + "\n".join(wrong)


def test_no_two_units_import_each_other():
    edges: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for imp in CROSSING:
        edges[unit_of(imp.importer), unit_of(imp.imported)].append(imp)
    cycles = [f"{a} <-> {b}:\n  " + "\n  ".join(_where(i) for i in edges[a, b] + edges[b, a])
              for (a, b) in sorted(edges) if a < b and (b, a) in edges
              and (a, b) not in KNOWN_EXCEPTIONS and (b, a) not in KNOWN_EXCEPTIONS]
    assert not cycles, "units that import each other:\n" + "\n".join(cycles)


@pytest.mark.parametrize("pair", sorted(KNOWN_EXCEPTIONS))
def test_known_exceptions_are_still_needed(pair):
    made = [imp for imp in CROSSING if (unit_of(imp.importer), unit_of(imp.imported)) == pair]
    assert made, f"{pair[0]} no longer imports {pair[1]}: remove it from KNOWN_EXCEPTIONS"
    assert RANK[unit_of(pair[1])] <= RANK[unit_of(pair[0])], f"{pair} goes down already: remove it"


def test_text_rules_import_nothing_else_of_memcli():
    out = [_where(imp) for imp in ALL_IMPORTS
           if unit_of(imp.importer) == "memcli.text" and unit_of(imp.imported) != "memcli.text"]
    assert not out, "memcli/text/ must import nothing else of memcli:\n" + "\n".join(out)


def test_the_scanner_sees_every_kind_of_import(tmp_path):
    # the parser itself: module level, in a function, from-import of a module, relative
    (tmp_path / "memcli" / "pkg").mkdir(parents=True)
    src = tmp_path / "memcli" / "pkg" / "mod.py"
    src.write_text("import memcli.model\nfrom memcli import errors\n"
                   "def f():\n    from .. import timeutil\n    from .sibling import x\n    import os\n")
    got = imports_of("memcli.pkg.mod", src)
    assert [(i.line, i.imported) for i in got] == [
        (1, "memcli.model"), (2, "memcli.errors"), (4, "memcli.timeutil"), (5, "memcli.pkg.sibling")]


def module_names() -> dict[str, list[str]]:
    """Every module and sub-package name of ``memcli`` (its last dotted part) -> where it is;
    ``__init__`` and ``__main__`` are no names of their own."""
    names: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.stem not in ("__init__", "__main__"):
            names[path.stem].append(str(path.relative_to(ROOT)))
    for init in sorted(PACKAGE.rglob("__init__.py")):
        if init.parent != PACKAGE:
            names[init.parent.name].append(str(init.parent.relative_to(ROOT)) + "/")
    return names


def dependency_modules() -> dict[str, str]:
    """Top-level module names of every installed distribution memcli depends on, with all its
    extras, transitively -> the distribution (``frontmatter`` -> ``python-frontmatter``)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    out: dict[str, str] = {}
    seen: set[str] = set()
    todo = [("memcli", ("test", "semantic", "semantic-offline"))]
    while todo:
        name, extras = todo.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency of a dependency that is not installed
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        if key != "memcli":
            tops = set((dist.read_text("top_level.txt") or "").split())
            tops |= {f.parts[0].removesuffix(".py") for f in dist.files or []
                     if not f.parts[0].endswith((".dist-info", ".data", ".pth")) and f.parts[0] != ".."
                     and (len(f.parts) > 1 or f.parts[0].endswith(".py"))}
            out.update((top, key) for top in tops if top.isidentifier())
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in (*extras, "")):
                todo.append((req.name, tuple(req.extras)))
    return out


def test_no_module_name_repeats_a_siblings_or_a_dependencys():
    # a reader (and a grep, a traceback, an editor's "open file") tells two modules apart by name;
    # a module named as a dependency (memcli/frontmatter.py beside python-frontmatter) reads as that library
    names = module_names()
    repeated = {name: where for name, where in names.items() if len(where) > 1}
    assert not repeated, f"module names used twice in memcli/ (rename one to say what it holds): {repeated}"
    deps = dependency_modules()
    assert "frontmatter" in deps and "mcp" in deps, "the dependencies' module names were not found"
    clashing = {name: (names[name], deps[name]) for name in names if name in deps}
    assert not clashing, f"memcli modules named as a dependency's top-level module: {clashing}"
