"""Replay memories anchored at old commits of a real repository and check `memcli stale` against git.

    python bench/stale_replay.py [REPO_OR_BUNDLE ...] [--anchors 12] [--files 8] [--symbols 5] [--commands 4]
                                 [--json PATH]

Default repositories (``tests/fixtures/repos/``, see NOTICE.md there): ``itsdangerous.bundle``
(pallets/itsdangerous, BSD-3-Clause, 677 commits to 2025-06-14: the 2018 move of
``itsdangerous.py`` to ``src/itsdangerous/__init__.py``, the tests moved into a package) and
``debug.bundle`` (debug-js/debug, MIT, 553 commits to 2026-04-01: ``node.js`` and the others
moved into ``src/``, ``src/debug.js`` renamed to ``src/common.js`` and back, the Makefile's
targets dropped for package.json scripts, most of those dropped later). Each is cloned into a
throw-away folder, a store is made on the memory branch (the code's tree is never touched),
and for each of ``--anchors`` first-parent commits spread over the history, memories are
written by hand as they would have been written then: one per sampled file ("FILE holds
…", anchored at that commit), one per sampled ``def``/``class`` name of a Python file or
``function``/``class``/``exports.`` name of a JavaScript or TypeScript file, and one per
sampled ``make`` target of the top Makefile or script of the top package.json ("Run `make
X` …", "Run `npm run X` …"; a target only when GNU make itself lists it there).
Then ``memcli stale --json`` runs once at ``HEAD`` and each verdict is checked:

* a file called renamed must be gone at ``HEAD`` and its new path must be there, and git's
  own ``git log --follow`` from the new path back must pass through the old one; following it
  commit by commit from its anchor (``git log --first-parent -M --name-status``, read here)
  must end at the same path;
* a file called deleted must be gone, and following it commit by commit must end in its deletion;
* a file that exists at ``HEAD`` must never be called renamed or deleted;
* an identifier called gone must occur nowhere in ``HEAD``'s tracked files (``git grep -w``)
  and must have occurred at its anchor; one not called gone must occur somewhere;
* a command called gone must not run from the top folder at ``HEAD``: GNU make, reading the
  top Makefile in a copy of ``HEAD``'s tree (``make -p -q -r -R``: its database, no recipe
  run), lists no such explicit target, or the top package.json has no such script; one not
  called gone must run there. (The memories name only targets of the top folder's files,
  where memcli's rule, "declared now by a file of a folder that declared it then, or by the
  top folder's", is that very question.)

Prints, per repository, the counts of memories, of checks and agreements per kind, of the
verdicts per kind, and the mismatches.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "tests" / "fixtures" / "repos"
DEFAULT = FIXTURES / "itsdangerous.bundle"
DEFAULTS = [DEFAULT, FIXTURES / "debug.bundle"]
STAMP = "2026-01-01T00:00:00Z"
#: Names a memory of this replay may call an identifier: a Python ``def``/``class``, a JavaScript
#: or TypeScript ``function``, ``class`` or ``exports.NAME``/``module.exports.NAME``.
DEFINITIONS = {
    ".py": re.compile(r"^\s*(?:def|class) ([A-Za-z_][A-Za-z0-9_]{5,})", re.M),
    ".js": re.compile(r"(?:^|\s)(?:function\*?|class) ([A-Za-z_][A-Za-z0-9_]{5,})\b"
                      r"|exports\.([A-Za-z_][A-Za-z0-9_]{5,})\s*="),
}
DEFINITIONS[".ts"] = DEFINITIONS[".mjs"] = DEFINITIONS[".cjs"] = DEFINITIONS[".js"]
#: A line that may declare make targets (a first look; GNU make decides).
MAKE_RULE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*::?(?!=)", re.M)


def git(top: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(top), *args], check=True, capture_output=True, text=True).stdout


def memcli(top: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memcli", *args], cwd=top, capture_output=True, text=True,
                          env={**os.environ, "MEMCLI_ACTOR": "replay"})


def follow(top: Path, anchor: str, path: str) -> tuple[str, str | None]:
    """("kept" | "renamed" | "deleted", final path) of ``path`` from ``anchor`` to HEAD, commit by commit."""
    out = git(top, "log", "--reverse", "--first-parent", "-M", "--name-status", "--format=@%H", f"{anchor}..HEAD")
    current: str | None = path
    for line in out.splitlines():
        if not line or line.startswith("@") or current is None:
            continue
        parts = line.split("\t")
        if parts[0].startswith("R") and parts[1] == current:
            current = parts[2]
        elif parts[0] == "D" and parts[1] == current:
            current = None
        elif parts[0] == "A" and current is None and parts[1] == path:
            current = path  # deleted, then added again
    if current == path:
        return "kept", path
    return ("deleted", None) if current is None else ("renamed", current)


def blob(top: Path, rev: str, path: str) -> bytes | None:
    """The file ``path`` at ``rev``, or None when it is not there."""
    proc = subprocess.run(["git", "-C", str(top), "show", f"{rev}:{path}"], capture_output=True)
    return proc.stdout if proc.returncode == 0 else None


class Trees:
    """The tracked files of revisions of ``top``, each written out once into a temporary folder
    (GNU make reads a Makefile with what it includes)."""

    def __init__(self, top: Path, work: Path) -> None:
        self.top, self.work, self.made = top, work, {}

    def folder(self, rev: str) -> Path:
        if rev not in self.made:
            out = self.work / f"tree-{len(self.made)}"
            out.mkdir(parents=True)
            archive = subprocess.run(["git", "-C", str(self.top), "archive", rev], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
            self.made[rev] = (out, self.make_targets(out))
        return self.made[rev][0]

    def targets(self, rev: str) -> set[str]:
        """The explicit targets GNU make knows in the top folder of ``rev`` (none without a Makefile)."""
        self.folder(rev)
        return self.made[rev][1]

    @staticmethod
    def make_targets(folder: Path) -> set[str]:
        """``make -p -q -r -R`` (print the database, run no recipe, no built-in rules): the
        files it lists as targets (an entry not preceded by "# Not a target:")."""
        if not any((folder / name).is_file() for name in ("GNUmakefile", "makefile", "Makefile")):
            return set()
        proc = subprocess.run(["make", "-p", "-q", "-r", "-R"], cwd=folder, capture_output=True, text=True,
                              timeout=60, env={"PATH": os.environ["PATH"], "HOME": str(folder)})
        found, previous = set(), ""
        for line in proc.stdout.splitlines():
            match = re.match(r"([A-Za-z0-9_.%/-]+):(?:\s|$)", line)
            if match and previous != "# Not a target:" and "%" not in match.group(1):
                found.add(match.group(1))
            previous = line
        return found


def scripts(package: bytes | None) -> set[str]:
    """The ``scripts`` of a package.json (none when it is missing or unreadable)."""
    try:
        found = json.loads(package or b"{}").get("scripts") or {}
    except (ValueError, AttributeError):
        return set()
    return set(found) if isinstance(found, dict) else set()


def declared_at(top: Path, trees: Trees, rev: str, command: str) -> bool:
    """True when ``command`` runs from the top folder at ``rev``: GNU make knows the target
    there (``make X``), or the top package.json has the script (``npm run X``)."""
    target = command.split()[-1]
    if command.startswith("make "):
        return target in trees.targets(rev)
    return target in scripts(blob(top, rev, "package.json"))


def front(key: str, anchor: str, kind: str, values: list[str]) -> str:
    """A memory file's front-matter, anchored at ``anchor`` with ``kind`` (files, symbols, commands)."""
    return (f"---\nid: {key}\nscope: project\nstatus: active\ncreatedAt: {STAMP}\nupdatedAt: {STAMP}\n"
            f"anchor:\n  commit: {anchor}\n  {kind}: {json.dumps(values)}\n---\n")


def write_memories(top: Path, trees: Trees, anchors: int, per_files: int, per_symbols: int,
                   per_commands: int = 4) -> dict[str, dict]:
    """Hand-written memories anchored at ``anchors`` commits; ``{id: {"anchor", "files", "symbols",
    "commands"}}``."""
    store = top / ".memcli" / "memories" / "project"
    store.mkdir(parents=True, exist_ok=True)
    commits = git(top, "rev-list", "--first-parent", "--reverse", "HEAD").split()
    picks = [commits[int(i * (len(commits) - 1) / max(1, anchors))] for i in range(anchors)]
    written: dict[str, dict] = {}

    def add(key: str, anchor: str, kind: str, value: str, text: str) -> None:
        written[key] = {"anchor": anchor, "files": [], "symbols": [], "commands": [], kind: [value]}
        (store / f"{key}.md").write_text(front(key, anchor, kind, [value]) + text + "\n", encoding="utf-8")

    for n, anchor in enumerate(picks):
        tree = [p for p in git(top, "ls-tree", "-r", "--name-only", anchor).splitlines()
                if not p.startswith(".") and "/" not in p[:1]]
        step = max(1, len(tree) // per_files)
        for k, path in enumerate(tree[::step][:per_files]):
            add(f"r{n:02d}f{k:02d}", anchor, "files", path, f"{path} is where that part of the code lives.")
        names: list[str] = []
        for path in tree:
            rule = DEFINITIONS.get(Path(path).suffix)
            if rule is None or "node_modules/" in path or path.endswith(".min.js"):
                continue
            source = (blob(top, anchor, path) or b"").decode("utf-8", "replace")
            for match in rule.finditer(source):
                name = next(g for g in match.groups() if g)
                if name not in names:
                    names.append(name)
        step = max(1, len(names) // per_symbols)
        for k, name in enumerate(names[::step][:per_symbols]):
            add(f"r{n:02d}s{k:02d}", anchor, "symbols", name, f"Use `{name}` for this.")
        makefile = (blob(top, anchor, "Makefile") or b"").decode("utf-8", "replace")
        known = trees.targets(anchor) if makefile else set()
        commands = [f"make {t}" for t in dict.fromkeys(MAKE_RULE.findall(makefile)) if t in known]
        commands += [f"npm run {s}" for s in sorted(scripts(blob(top, anchor, "package.json")))]
        step = max(1, len(commands) // max(1, per_commands))
        for k, command in enumerate(commands[::step][:per_commands]):
            add(f"r{n:02d}c{k:02d}", anchor, "commands", command, f"Run `{command}` before pushing.")
    git(top / ".memcli", "add", "-A")
    git(top / ".memcli", "-c", "user.name=replay", "-c", "user.email=replay@example.invalid", "commit", "-q",
        "-m", "replayed memories")
    return written


def replay(source: Path, work: Path, anchors: int, per_files: int, per_symbols: int, per_commands: int = 4) -> dict:
    """Clone ``source``, write the memories, run ``memcli stale`` and check every verdict."""
    top = work / "code"
    subprocess.run(["git", "clone", "-q", str(source), str(top)], check=True, capture_output=True)
    if memcli(top, "init", "--branch").returncode != 0:
        raise SystemExit("memcli init --branch failed")
    trees = Trees(top, work / "trees")
    written = write_memories(top, trees, anchors, per_files, per_symbols, per_commands)
    started = time.perf_counter()
    result = memcli(top, "--json", "stale")
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"memcli stale failed: {result.stderr}")
    stale = {v["id"]: v for v in json.loads(result.stdout)["data"]["stale"]}
    head_files = set(git(top, "ls-tree", "-r", "--name-only", "HEAD").splitlines())
    counts: dict[str, int] = {}
    checked: dict[str, dict[str, int]] = {kind: {"checks": 0, "agree": 0} for kind in ("files", "symbols", "commands")}
    mismatches = []

    def tally(kind: str, ok: bool, miss: dict) -> None:
        checked[kind]["checks"] += 1
        checked[kind]["agree"] += ok
        if not ok:
            mismatches.append(miss)

    for key, memory in written.items():
        reasons = stale.get(key, {}).get("reasons", [])
        for reason in reasons:
            counts[reason["kind"]] = counts.get(reason["kind"], 0) + 1
        for path in memory["files"]:
            said = next((r for r in reasons if r["name"] == path), None)
            truth, final = follow(top, memory["anchor"], path)
            if path in head_files:
                ok = said is None
            elif said is None:
                ok = False
            elif said["kind"] == "renamed":  # git's own --follow, from the new path back, must pass the old one
                names = git(top, "log", "--follow", "--name-only", "--format=", "HEAD", "--", said["now"]).split()
                ok = said["now"] in head_files and path in names and (truth, final) == ("renamed", said["now"])
            else:
                ok = said["kind"] == "deleted" and truth == "deleted"
            tally("files", ok, {"id": key, "path": path, "said": said, "git": [truth, final]})
        for name in memory["symbols"]:
            said = next((r for r in reasons if r["name"] == name), None)
            present = subprocess.run(["git", "-C", str(top), "grep", "-q", "-w", "-F", name, "HEAD"]).returncode == 0
            tally("symbols", said is None if present else said is not None,
                  {"id": key, "symbol": name, "said": said, "present_at_head": present})
        for command in memory["commands"]:
            said = next((r for r in reasons if r["name"] == command), None)
            there = declared_at(top, trees, "HEAD", command)
            tally("commands", said is None if there else (said is not None and said["kind"] == "command"),
                  {"id": key, "command": command, "said": said, "declared_at_head": there})
    name = source.parent.name if source.name in ("repo", ".git") else source.name  # a fetched mirror: owner+name/repo
    return {"repository": name, "commits": int(git(top, "rev-list", "--count", "HEAD")),
            "memories": len(written), "anchors": anchors, "stale_memories": len(stale), "verdicts": counts,
            "checked": checked, "checks": sum(c["checks"] for c in checked.values()),
            "agree": sum(c["agree"] for c in checked.values()), "mismatches": mismatches,
            "seconds": round(seconds, 2)}


def verdicts_of(data: dict) -> dict:
    """``{id: (reasons, changes)}`` of a ``memcli stale --json``'s data, for comparing two runs."""
    out = {v["id"]: (sorted(json.dumps(r, sort_keys=True) for r in v["reasons"]), []) for v in data["stale"]}
    for v in data.get("changed", []):
        out[v["id"]] = ([], sorted(json.dumps(c, sort_keys=True) for c in v["changes"]))
    for v in data["stale"]:
        out[v["id"]] = (out[v["id"]][0], sorted(json.dumps(c, sort_keys=True) for c in v.get("changes", [])))
    return out


def walk(source: Path, work: Path, steps: int, anchors: int = 6, per_files: int = 6, per_symbols: int = 3,
         per_commands: int = 3) -> dict:
    """Incremental judging on a real history: memories anchored over the first third of it,
    then the code's ``HEAD`` moved forward in ``steps`` steps (``git reset --hard`` along the
    first-parent history) and, at each, ``memcli stale`` (judging only what the move touched,
    from the verdicts of the step before) compared with a whole judgement (``stale --refresh``
    of every id, which saves nothing)."""
    top = work / "code"
    subprocess.run(["git", "clone", "-q", str(source), str(top)], check=True, capture_output=True)
    commits = git(top, "rev-list", "--first-parent", "--reverse", "HEAD").split()
    third = commits[len(commits) // 3]
    git(top, "reset", "-q", "--hard", third)
    if memcli(top, "init", "--branch").returncode != 0:
        raise SystemExit("memcli init --branch failed")
    written = write_memories(top, Trees(top, work / "trees"), anchors, per_files, per_symbols, per_commands)
    ids = sorted(written)
    memcli(top, "stale", "--quiet")
    rest = commits[len(commits) // 3 + 1:]
    marks = [rest[int((i + 1) * (len(rest) - 1) / steps)] for i in range(steps)]
    rounds = []
    for mark in marks:
        git(top, "reset", "-q", "--hard", mark)
        quick = json.loads(memcli(top, "--json", "stale").stdout)["data"]
        whole = json.loads(memcli(top, "--json", "stale", "--refresh", *ids).stdout)["data"]
        same = verdicts_of(quick) == verdicts_of(whole)
        rounds.append({"head": mark[:7], "position": commits.index(mark), "judged": quick["checked"],
                       "reused": quick["reused"], "stale": len(quick["stale"]), "changed": len(quick["changed"]),
                       "agree": same})
    return {"repository": source.name, "memories": len(written), "rounds": rounds,
            "agree": all(r["agree"] for r in rounds)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="*", type=Path, default=DEFAULTS, help="repositories or git bundles")
    parser.add_argument("--anchors", type=int, default=12)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--symbols", type=int, default=5)
    parser.add_argument("--commands", type=int, default=4)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    results = []
    for repo in args.repos:
        with tempfile.TemporaryDirectory(prefix="memcli-replay-") as tmp:
            out = replay(repo, Path(tmp), args.anchors, args.files, args.symbols, args.commands)
        results.append(out)
        print(json.dumps(out, indent=1), flush=True)
    for out in results:
        per = ", ".join(f"{k} {c['agree']}/{c['checks']}" for k, c in out["checked"].items())
        print(f"{out['repository']}: {out['commits']} commits, {out['memories']} memories at {out['anchors']} anchors, "
              f"{out['stale_memories']} stale; verdicts {out['verdicts']}; agree with git: {per}; "
              f"mismatches {len(out['mismatches'])}; stale took {out['seconds']} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0 if not any(out["mismatches"] for out in results) else 1


if __name__ == "__main__":
    sys.exit(main())
