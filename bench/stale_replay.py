"""Replay memories anchored at old commits of a real repository and check `memcli stale` against git.

    python bench/stale_replay.py [REPO_OR_BUNDLE] [--anchors 12] [--files 8] [--symbols 5] [--json PATH]

Default repository: ``tests/fixtures/repos/itsdangerous.bundle`` (pallets/itsdangerous, BSD-3-Clause,
its history up to 2025-06-14: 677 commits, with the 2018 move of ``itsdangerous.py`` to
``src/itsdangerous/__init__.py`` and of the tests into a package). It is cloned into a
throw-away folder, a store is made on the memory branch (the code's tree is never touched),
and for each of ``--anchors`` first-parent commits spread over the history, memories are
written by hand as they would have been written then: one per sampled file ("FILE holds
…", anchored at that commit) and one per sampled ``def``/``class`` name of a Python file.
Then ``memcli stale --json`` runs once at ``HEAD`` and each verdict is checked:

* a file called renamed must be gone at ``HEAD`` and its new path must be there, and git's
  own ``git log --follow`` from the new path back must pass through the old one; following it
  commit by commit from its anchor (``git log --first-parent -M --name-status``, read here)
  must end at the same path;
* a file called deleted must be gone, and following it commit by commit must end in its deletion;
* a file that exists at ``HEAD`` must never be called renamed or deleted;
* an identifier called gone must occur nowhere in ``HEAD``'s tracked files (``git grep -w``)
  and must have occurred at its anchor.

Prints the counts of memories and verdicts per kind, the agreements and the mismatches.
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
DEFAULT = HERE.parent / "tests" / "fixtures" / "repos" / "itsdangerous.bundle"
STAMP = "2026-01-01T00:00:00Z"


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


def write_memories(top: Path, anchors: int, per_files: int, per_symbols: int) -> dict[str, dict]:
    """Hand-written memories anchored at ``anchors`` commits; ``{id: {"anchor", "files", "symbols"}}``."""
    store = top / ".memcli" / "memories" / "project"
    store.mkdir(parents=True, exist_ok=True)
    commits = git(top, "rev-list", "--first-parent", "--reverse", "HEAD").split()
    picks = [commits[int(i * (len(commits) - 1) / max(1, anchors))] for i in range(anchors)]
    written: dict[str, dict] = {}
    for n, anchor in enumerate(picks):
        tree = [p for p in git(top, "ls-tree", "-r", "--name-only", anchor).splitlines()
                if not p.startswith(".") and "/" not in p[:1]]
        step = max(1, len(tree) // per_files)
        for k, path in enumerate(tree[::step][:per_files]):
            key = f"r{n:02d}f{k:02d}"
            written[key] = {"anchor": anchor, "files": [path], "symbols": []}
            (store / f"{key}.md").write_text(
                f"---\nid: {key}\nscope: project\nstatus: active\ncreatedAt: {STAMP}\nupdatedAt: {STAMP}\n"
                f"anchor:\n  commit: {anchor}\n  files: [{json.dumps(path)}]\n---\n"
                f"{path} is where that part of the code lives.\n", encoding="utf-8")
        names: list[str] = []
        for path in [p for p in tree if p.endswith(".py")]:
            source = git(top, "show", f"{anchor}:{path}")
            names += [m for m in re.findall(r"^\s*(?:def|class) ([A-Za-z_][A-Za-z0-9_]{5,})", source, re.M)
                      if m not in names]
        step = max(1, len(names) // per_symbols)
        for k, name in enumerate(names[::step][:per_symbols]):
            key = f"r{n:02d}s{k:02d}"
            written[key] = {"anchor": anchor, "files": [], "symbols": [name]}
            (store / f"{key}.md").write_text(
                f"---\nid: {key}\nscope: project\nstatus: active\ncreatedAt: {STAMP}\nupdatedAt: {STAMP}\n"
                f"anchor:\n  commit: {anchor}\n  symbols: [{name}]\n---\n"
                f"Use `{name}` for this.\n", encoding="utf-8")
    git(top / ".memcli", "add", "-A")
    git(top / ".memcli", "-c", "user.name=replay", "-c", "user.email=replay@example.invalid", "commit", "-q",
        "-m", "replayed memories")
    return written


def replay(source: Path, work: Path, anchors: int, per_files: int, per_symbols: int) -> dict:
    """Clone ``source``, write the memories, run ``memcli stale`` and check every verdict."""
    top = work / "code"
    subprocess.run(["git", "clone", "-q", str(source), str(top)], check=True, capture_output=True)
    if memcli(top, "init", "--branch").returncode != 0:
        raise SystemExit("memcli init --branch failed")
    written = write_memories(top, anchors, per_files, per_symbols)
    started = time.perf_counter()
    result = memcli(top, "--json", "stale")
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"memcli stale failed: {result.stderr}")
    stale = {v["id"]: v for v in json.loads(result.stdout)["data"]["stale"]}
    head_files = set(git(top, "ls-tree", "-r", "--name-only", "HEAD").splitlines())
    counts: dict[str, int] = {}
    agree, mismatches = 0, []
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
            agree += ok
            if not ok:
                mismatches.append({"id": key, "path": path, "said": said, "git": [truth, final]})
        for name in memory["symbols"]:
            said = next((r for r in reasons if r["name"] == name), None)
            present = subprocess.run(["git", "-C", str(top), "grep", "-q", "-w", "-F", name, "HEAD"]).returncode == 0
            ok = said is None if present else said is not None
            agree += ok
            if not ok:
                mismatches.append({"id": key, "symbol": name, "said": said, "present_at_head": present})
    checks = sum(len(m["files"]) + len(m["symbols"]) for m in written.values())
    return {"memories": len(written), "anchors": anchors, "stale_memories": len(stale), "verdicts": counts,
            "checks": checks, "agree": agree, "mismatches": mismatches, "seconds": round(seconds, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", type=Path, default=DEFAULT, help="a repository or a git bundle")
    parser.add_argument("--anchors", type=int, default=12)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--symbols", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memcli-replay-") as tmp:
        out = replay(args.repo, Path(tmp), args.anchors, args.files, args.symbols)
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0 if not out["mismatches"] else 1


if __name__ == "__main__":
    sys.exit(main())
