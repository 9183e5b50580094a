"""Generate a memcli workspace of N realistic memory files, deterministic for a seed.

    python bench/generate.py --count 10000 --out /tmp/ws-10000 [--seed 7]

Runs ``memcli init DIR``, writes the files directly in memcli's layout
(``memories/<scope parts>/<YYYY-MM>/<id>-<slug>.md``, front-matter keys in the order
memcli writes them) and commits them all in one git commit. Needle words for the
benchmark (see ``corpus.py``) are planted in known numbers of memories; the counts are
printed and returned.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import corpus

CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
END = datetime(2026, 11, 15, tzinfo=timezone.utc)
SCOPES = [("project", 80), ("global", 6), ("user:alice", 6), ("user:bob", 4), ("agent:claude", 4)]
CATEGORIES = [("fact", 30), ("procedure", 18), ("preference", 14), ("decision", 12), ("feedback", 8),
              ("episode", 8), ("glossary", 5), ("goal", 5)]
SOURCES = [("user_said", 70), ("model_derived", 20), ("tool_result", 7), ("admin_edit", 3)]
PEOPLE = ["alice", "bob", "carol", "dave"]
RARE_COUNT = 5
COMMON_SHARE = 0.10
CJK_SHARE = 0.02
GIT_IDENTITY = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]


@dataclass
class Record:
    """One memory before it is written: front-matter values and body."""

    id: str
    scope: str
    category: str
    created: datetime
    updated: datetime
    source: str
    actor: str
    text: str = ""
    lang: str = "en"
    status: str = "active"
    importance: int = 3
    subject: str | None = None
    pinned: bool = False
    expire: datetime | None = None
    run_id: str | None = None
    review: dict | None = None
    tags: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    supersedes: list[str] = field(default_factory=list)
    superseded_by: list[str] = field(default_factory=list)


def pick(rng: random.Random, weighted: list[tuple[str, int]]) -> str:
    """A random value from ``(value, weight)`` pairs."""
    return rng.choices([v for v, _ in weighted], [w for _, w in weighted])[0]


def ulid(ms: int, rng: random.Random) -> str:
    """A 26-character lowercase Crockford base32 ULID: 48-bit time, 80 random bits."""
    value = (ms << 80) | rng.getrandbits(80)
    return "".join(CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))


def stamp(when: datetime) -> str:
    """RFC 3339 in UTC with ``Z``, seconds precision."""
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def slug(text: str, limit: int = 40) -> str:
    """The readable ASCII slug memcli puts after the id (same rule as memcli.store.files)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    out = ""
    for word in re.findall(r"[a-z0-9]+", ascii_text):
        if len(out) + len(word) + 1 > limit:
            break
        out = f"{out}-{word}" if out else word
    return out


def body(rng: random.Random, rec: Record, needle: str | None) -> str:
    """1-4 sentences for ``rec`` in its language, with ``needle`` planted if given."""
    if rec.lang == "zh":
        pool = corpus.CACHE_ZH_TEMPLATES if needle == "cjk" else corpus.ZH_TEMPLATES
        parts = [corpus.fill(rng, rng.choice(pool))]
        parts += [corpus.fill(rng, rng.choice(corpus.ZH_TEMPLATES)) for _ in range(rng.randint(0, 2))]
        return "".join(parts)
    if rec.lang in ("ja", "ko"):
        pool = corpus.JA_TEMPLATES if rec.lang == "ja" else corpus.KO_TEMPLATES
        return "".join(corpus.fill(rng, rng.choice(pool)) for _ in range(rng.randint(1, 2)))
    first = {"rare": corpus.RARE_TEMPLATES, "common": corpus.DEPLOY_TEMPLATES}.get(
        needle, corpus.CATEGORY_TEMPLATES[rec.category])
    parts = [corpus.fill(rng, rng.choice(first))]
    parts += [corpus.fill(rng, rng.choice(corpus.DETAIL_TEMPLATES)) for _ in range(rng.randint(0, 3))]
    text = " ".join(parts)
    return text[0].upper() + text[1:]


def make_records(count: int, rng: random.Random) -> list[Record]:
    """Records with metadata (ids increasing with createdAt), before statuses and bodies."""
    span = (END - START).total_seconds()
    records, last_ms = [], 0
    for i in range(count):
        created = START + timedelta(seconds=int((i + rng.random()) / count * span))
        ms = max(int(created.timestamp()) * 1000 + rng.randrange(1000), last_ms + 1)
        last_ms = ms
        scope = pick(rng, SCOPES)
        source = "model_derived" if scope.startswith("agent:") else pick(rng, SOURCES)
        actor = scope.split(":")[1] if ":" in scope else rng.choice(PEOPLE)
        updated = created if rng.random() < 0.7 else min(created + timedelta(seconds=rng.randrange(60 * 86400)), END)
        rec = Record(ulid(ms, rng), scope, pick(rng, CATEGORIES), created, updated, source, actor,
                     importance=rng.choices([1, 2, 3, 4, 5], [5, 15, 50, 20, 10])[0])
        rec.lang = rng.choices(["en", "zh", "ja", "ko"], [83, 15, 1, 1])[0]
        rec.run_id = None if rng.random() < 0.4 else f"{rng.getrandbits(32):08x}-session"
        rec.tags = rng.sample(corpus.TAGS, rng.choice([0, 0, 1, 1, 2, 3]))
        rec.paths = rng.sample(corpus.PATH_GLOBS, rng.choice([1, 2])) if rng.random() < 0.2 else []
        if rng.random() < 0.08:
            days = rng.randint(30, 400)
            rec.expire = (created + timedelta(days=days)).replace(hour=0, minute=0, second=0) \
                if rng.random() < 0.5 else created + timedelta(days=days)
        records.append(rec)
    return records


def assign_statuses(records: list[Record], rng: random.Random) -> None:
    """~5% not active (superseded with links both ways, pending_review, archived); reviews, subjects, pins."""
    shared = ("project", "global")
    for i, rec in enumerate(records):
        roll = rng.random()
        if roll < 0.02 and i > 50:  # rec supersedes an earlier active memory of its scope
            old = next((o for o in (records[rng.randrange(i - 50, i)] for _ in range(5))
                        if o.scope == rec.scope and o.status == "active" and not o.supersedes), None)
            if old is not None:
                old.status, old.superseded_by, old.updated, old.pinned = "superseded", [rec.id], rec.created, False
                rec.supersedes, rec.subject, old.subject = [old.id], old.subject, None
        elif roll < 0.035 and rec.scope in shared:
            rec.status, rec.source, rec.updated = "pending_review", "model_derived", rec.created
        elif roll < 0.05:
            rec.status = "archived"
        if rec.status != "pending_review" and rec.scope in shared and rec.source in ("model_derived", "tool_result"):
            by = rng.choice([p for p in PEOPLE if p != rec.actor])
            rec.review = {"by": by, "at": stamp(rec.updated), "decision": "approved"}
        if rec.subject is None and rng.random() < 0.15:
            rec.subject = f"{rng.choice(corpus.SUBJECT_AREAS)}.{rng.choice(corpus.SUBJECT_TOPICS)}"
        rec.pinned = rec.status == "active" and rng.random() < 0.002
    held: set[tuple[str, str]] = set()  # one active memory per (scope, subject), newest keeps it
    for rec in reversed(records):
        if rec.subject and rec.status in ("active", "pending_review"):
            if (rec.scope, rec.subject) in held:
                rec.subject = None
            held.add((rec.scope, rec.subject))


def assign_bodies(records: list[Record], rng: random.Random) -> dict[str, int]:
    """Write every body, planting the needles; returns how many memories hold each needle word."""
    english = [r for r in records if r.lang == "en"]
    visible = [r for r in english if r.scope == "project" and r.status == "active" and r.expire is None]
    rare = set(map(id, rng.sample(visible, min(RARE_COUNT, len(visible)))))
    rest = [r for r in english if id(r) not in rare]
    common = set(map(id, rng.sample(rest, min(len(rest), round(COMMON_SHARE * len(records))))))
    chinese = [r for r in records if r.lang == "zh"]
    cjk = set(map(id, rng.sample(chinese, min(len(chinese), round(CJK_SHARE * len(records))))))
    for rec in records:
        key = id(rec)
        needle = "rare" if key in rare else "common" if key in common else "cjk" if key in cjk else None
        rec.text = body(rng, rec, needle)
    return {word: sum(word in r.text.casefold() for r in records)
            for word in (corpus.RARE_WORD, corpus.COMMON_WORD, corpus.CJK_WORD)}


def render(rec: Record) -> str:
    """The file text, keys in memcli's order, lists in flow style."""
    def flow(values: list[str]) -> str:
        return "[" + ", ".join(f"'{v}'" if v[0] in "*&!{[" else v for v in values) + "]"

    lines = ["---", f"id: {rec.id}", f"scope: {rec.scope}", f"category: {rec.category}"]
    if rec.subject:
        lines.append(f"subject: {rec.subject}")
    lines += [f"status: {rec.status}", f"importance: {rec.importance}"]
    if rec.pinned:
        lines.append("pinned: true")
    lines += [f"createdAt: {stamp(rec.created)}", f"updatedAt: {stamp(rec.updated)}"]
    if rec.expire:
        lines.append(f"expireAt: {stamp(rec.expire)}")
    lines += ["provenance:", f"  sourceType: {rec.source}", f"  actor: {rec.actor}",
              f"  runId: {rec.run_id or 'null'}", f"  at: {stamp(rec.created)}"]
    if rec.review:
        lines += ["review:", *(f"  {k}: {v}" for k, v in rec.review.items())]
    for key, values in (("tags", rec.tags), ("paths", rec.paths), ("supersedes", rec.supersedes),
                        ("supersededBy", rec.superseded_by)):
        if values:
            lines.append(f"{key}: {flow(values)}")
    return "\n".join(lines) + "\n---\n" + rec.text + "\n"


def write_files(root: Path, records: list[Record]) -> None:
    """Write every record under ``root/memories`` in memcli's layout."""
    made: set[Path] = set()
    for rec in records:
        folder = root.joinpath("memories", *rec.scope.split(":"), rec.created.strftime("%Y-%m"))
        if folder not in made:
            folder.mkdir(parents=True, exist_ok=True)
            made.add(folder)
        name = "-".join(p for p in (rec.id, slug(rec.text)) if p) + ".md"
        (folder / name).write_text(render(rec), encoding="utf-8")


def git(root: Path, *args: str) -> None:
    """Run one git command in ``root`` with the bench identity; raise on failure."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", *GIT_IDENTITY, "-C", str(root), *args], check=True, env=env,
                   stdout=subprocess.DEVNULL)


def refuse_unsafe_target(out: Path) -> None:
    """Stop unless ``out`` is empty or absent and outside every git work tree.

    ``memcli init`` inside a work tree would use the enclosing repository, and the bulk
    ``git add -A`` would then sweep in that repository's files.
    """
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} is not empty; remove it first")
    ancestor = out.resolve()
    while not ancestor.exists():
        ancestor = ancestor.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    probe = subprocess.run(["git", "-C", str(ancestor), "rev-parse", "--show-toplevel"],
                           capture_output=True, text=True, env=env)
    if probe.returncode == 0:
        raise SystemExit(f"{out} is inside the git work tree {probe.stdout.strip()}; choose a folder outside it")


def generate(count: int, out: Path, seed: int = 7, memcli: str = "memcli") -> dict[str, int]:
    """Create the workspace at ``out`` (absent or empty, outside any git repo); return the needle counts."""
    corpus.check_needles_absent()
    refuse_unsafe_target(out)
    subprocess.run([memcli, "init", str(out)], check=True, stdout=subprocess.DEVNULL)
    rng = random.Random(seed)
    records = make_records(count, rng)
    assign_statuses(records, rng)
    needles = assign_bodies(records, rng)
    write_files(out, records)
    git(out, "add", "-A")
    git(out, "commit", "-q", "-m", f"bench: generate {count} memories (seed {seed})")
    return needles


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, required=True, help="number of memory files")
    parser.add_argument("--out", type=Path, required=True, help="workspace folder to create")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    args = parser.parse_args(argv)
    memcli = shutil.which("memcli") or sys.exit("memcli not found on PATH (activate the venv)")
    started = time.perf_counter()
    needles = generate(args.count, args.out, args.seed, memcli)
    print(f"generated {args.count} memories in {args.out} in {time.perf_counter() - started:.1f} s; "
          + ", ".join(f"{word!r} in {n}" for word, n in needles.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
