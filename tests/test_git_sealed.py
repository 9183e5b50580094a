"""Only ``memcli/git/`` starts git (issue 20): every other module goes through ``memcli.git.run``.

Every module outside ``memcli/git/`` is parsed with :mod:`ast`: a process-starting call
(``subprocess.run``/``Popen``/``call``/``check_*``, ``os.system``, ``os.exec*``, ``os.spawn*``,
``os.posix_spawn*``) whose command is git, and any list that starts with the word ``"git"``
(an argv built before the call), fail the test. GitPython is not imported anywhere.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "memcli"
GIT_PACKAGE = PACKAGE / "git"

STARTERS = {("subprocess", name) for name in ("run", "Popen", "call", "check_call", "check_output", "getoutput",
                                               "getstatusoutput")}
STARTERS |= {("os", name) for name in ("system", "popen", "execv", "execve", "execvp", "execvpe", "execl", "execle",
                                       "execlp", "execlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl",
                                       "spawnle", "spawnlp", "spawnlpe", "posix_spawn", "posix_spawnp")}


def _is_git(node: ast.AST) -> bool:
    """A command that runs git: ``"git …"`` as a string, or a list/tuple whose first item is ``"git"``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        word = node.value.strip().split(" ", 1)[0]
        return word == "git" or word.endswith("/git")
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        return _is_git(node.elts[0])
    return False


def git_starts(source: str, name: str) -> list[str]:
    """``NAME:LINE: what`` for every place in ``source`` that starts git or builds git's argv."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Call):
            func = node.func
            owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
            attr = func.attr if isinstance(func, ast.Attribute) else None
            if (owner, attr) in STARTERS and node.args and _is_git(node.args[0]):
                found.append(f"{name}:{node.lineno}: {owner}.{attr} runs git")
        elif isinstance(node, ast.List) and node.elts and isinstance(node.elts[0], ast.Constant) \
                and node.elts[0].value == "git":  # a tuple such as ("git", "autocommit") is a settings key
            found.append(f"{name}:{node.lineno}: an argv that starts with 'git'")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(n == "git" or n.startswith("git.") for n in names) and not getattr(node, "level", 0):
                found.append(f"{name}:{node.lineno}: imports GitPython")
    return found


def test_nothing_outside_the_git_package_starts_git():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if GIT_PACKAGE in path.parents:
            continue
        found += git_starts(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, "start git through memcli.git.run (memcli/git/), not here:\n" + "\n".join(found)


def test_gitpython_is_imported_nowhere():
    found = [line for path in sorted(GIT_PACKAGE.rglob("*.py"))
             for line in git_starts(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
             if "GitPython" in line]
    assert not found, found
    assert "gitpython" not in (ROOT / "pyproject.toml").read_text(encoding="utf-8").lower()


def test_the_scanner_sees_every_way_of_starting_git():
    source = ("import subprocess, os\n"
              "subprocess.run(['git', 'status'])\n"
              "subprocess.Popen(('git', 'log'), cwd='.')\n"
              "os.system('git status')\n"
              "argv = ['git', *args]\n"
              "subprocess.run(['/usr/bin/git', 'log'])\n"
              "import git\n"
              "subprocess.run(['rg', 'git'])\n"
              "subprocess.run([sys.executable, '-m', 'memcli'])\n")
    lines = [int(line.split(":")[1]) for line in git_starts(source, "m.py")]
    assert sorted(set(lines)) == [2, 3, 4, 5, 6, 7]
