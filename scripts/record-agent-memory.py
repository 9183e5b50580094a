#!/usr/bin/env python3
"""Record the agents' own memory stores, written by the real, pinned CLIs, as test fixtures.

Usage (from a checkout, memcli's .venv; the CLIs of ``scripts/agent-clis.txt`` are installed by
``scripts/install-agent-clis.sh``)::

    .venv/bin/python scripts/record-agent-memory.py [--agents claude,gemini,codex] [--out DIR]

Each CLI runs in a throw-away project (``/tmp/memcli-agent-memory/project``, a fixed path so that
the stores' folder names are the same on every run) with a private HOME, against the scripted
model servers of ``tests/modelsim*.py``: the "model" makes exactly the tool calls that the CLI's
own system prompt asks a model to make to save a memory (the paths are read from the prompt the
CLI sent). The CLI runs those tools itself, so the files are the CLI's writes. The store is then
copied, HOME-relative, to ``DIR/<agent>/`` (default ``tests/fixtures/agent_memory/``); see
``tests/fixtures/agent_memory/README.md`` for what each run does.

Exit status: 0 when every store was written, 1 otherwise (the reason is printed).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

from modelsim import ModelSim, Request, Turn  # noqa: E402  (tests/ is put on sys.path above)
from modelsim_codex import CodexRequest, CodexSim  # noqa: E402
from modelsim_gemini import GeminiSim  # noqa: E402

#: The fixed place of the throw-away HOME and project (the stores' names derive from the path).
BASE = Path(tempfile.gettempdir()) / "memcli-agent-memory"
CLI_TIMEOUT = 180  # seconds: a hang guard for one CLI run
FAILED: list[str] = []

# -- what the "person" tells each agent, and what the scripted model saves ----------------------

CLAUDE_PROMPT = ("Please remember two things: in this repository we use pnpm, never npm, to install packages "
                 "(npm's lockfile broke the CI twice), and I am the billing team's backend engineer, so explain "
                 "front-end code to me in more detail.")
#: (file name, name, description, type, body) per memory, as the system prompt's format asks
CLAUDE_MEMORIES = [
    ("use-pnpm-not-npm.md", "use-pnpm-not-npm", "Install packages with pnpm, never npm, in this repository",
     "feedback", "Use pnpm, never npm, to install or add packages in this repository.\n\n"
     "**Why:** npm's lockfile broke the CI twice.\n"
     "**How to apply:** run `pnpm install` / `pnpm add PKG`; never `npm install`. See [[user-billing-backend]]."),
    ("user-billing-backend.md", "user-billing-backend", "The user is the billing team's backend engineer",
     "user", "The user is the billing team's backend engineer; explain front-end code in more detail."),
]


def claude_memory_dir(request: Request) -> Path:
    """The memory folder named in Claude Code's system prompt ("persistent file-based memory at `DIR`")."""
    found = re.search(r"persistent file-based memory at `([^`]+)`", request.system)
    if not found:
        raise RuntimeError("Claude Code's system prompt names no memory folder (is auto memory off?)")
    return Path(found.group(1))


def claude_memory_prompt(request: Request) -> str:
    """The "# Memory" section of Claude Code's system prompt."""
    found = re.search(r"(?ms)^# Memory\n.*?(?=^# )", request.system)
    return found.group(0).strip() if found else ""


def claude_script() -> list[Callable[[Request], Turn]]:
    """Write each topic file, then the index ``MEMORY.md`` (one pointer line per memory), then answer."""
    def topic(index: int) -> Callable[[Request], Turn]:
        def step(request: Request) -> Turn:
            file, name, description, kind, body = CLAUDE_MEMORIES[index]
            text = f"---\nname: {name}\ndescription: {description}\nmetadata:\n  type: {kind}\n---\n\n{body}\n"
            return Turn.tools(("Write", {"file_path": str(claude_memory_dir(request) / file), "content": text}))
        return step

    def index(request: Request) -> Turn:
        lines = [f"- [{name.replace('-', ' ').capitalize()}]({file}) — {description}"
                 for file, name, description, _, _ in CLAUDE_MEMORIES]
        return Turn.tools(("Write", {"file_path": str(claude_memory_dir(request) / "MEMORY.md"),
                                     "content": "\n".join(lines) + "\n"}))

    return [topic(0), topic(1), index, lambda request: Turn.text("Saved both to memory.")]


GEMINI_PROMPT = ("Remember these for me: across all my projects I prefer pytest over unittest. And on my machine "
                 "the staging database tunnel listens on port 6543 (do not commit that). Also, my local "
                 "release checklist: run the migrations dry-run, check the canary dashboard, then tag.")
GEMINI_GLOBAL = "# Personal preferences\n\n- Prefer pytest over unittest for tests, in every project.\n"
GEMINI_CHECKLIST = ("# Local release checklist\n\n1. Run the migrations dry-run.\n2. Check the canary dashboard.\n"
                    "3. Tag the release.\n")
GEMINI_INDEX = ("# Private project memory\n\n- The staging database tunnel listens on port 6543 on this machine "
                "(never commit it).\n- [Local release checklist](release-checklist.md): the three steps before a "
                "tag.\n")


def gemini_memory_paths(request: Request) -> tuple[Path, Path]:
    """The private project memory index and the global personal memory file that Gemini CLI's
    system prompt names ("**Private Project Memory** (`PATH`)", "**Global Personal Memory** (`PATH`)")."""
    private = re.search(r"\*\*Private Project Memory\*\* \(`([^`]+)`\)", request.system)
    personal = re.search(r"\*\*Global Personal Memory\*\* \(`([^`]+)`\)", request.system)
    if not private or not personal:
        raise RuntimeError("Gemini CLI's system prompt names no private project memory or no global memory file")
    return Path(private.group(1)), Path(personal.group(1))


def gemini_memory_prompt(request: Request) -> str:
    """The "Instruction and Memory Files" passage of Gemini CLI's system prompt."""
    found = re.search(r"(?ms)^- \*\*Instruction and Memory Files:\*\*.*?(?=^- \*\*Confirmation Protocol)",
                      request.system)
    return found.group(0).strip() if found else ""


def gemini_script() -> list[Callable[[Request], Turn]]:
    """Following the prompt's routing rules: the cross-project preference into the global personal
    memory file; the machine-specific note straight into the private ``MEMORY.md``; the checklist
    (a note with steps) into a sibling file with a pointer line in ``MEMORY.md``."""
    def personal(request: Request) -> Turn:
        return Turn.tools(("write_file", {"file_path": str(gemini_memory_paths(request)[1]), "content": GEMINI_GLOBAL}))

    def checklist(request: Request) -> Turn:
        folder = gemini_memory_paths(request)[0].parent
        return Turn.tools(("write_file", {"file_path": str(folder / "release-checklist.md"),
                                          "content": GEMINI_CHECKLIST}))

    def index(request: Request) -> Turn:
        return Turn.tools(("write_file", {"file_path": str(gemini_memory_paths(request)[0]), "content": GEMINI_INDEX}))

    return [personal, checklist, index, lambda request: Turn.text("Saved: one global preference, two private notes.")]


# Gemini CLI's Auto Memory inbox: 0.61.0 only runs its extraction agent in an interactive or ACP
# session, on chat logs of at least 10 user messages idle for 3 hours, at most every 30 minutes, so
# these patches are not the CLI's writes: they are written here in the exact shape its extraction
# prompt defines (packages/core/src/agents/skill-extraction-agent.ts: one canonical
# `.inbox/<kind>/extraction.patch` per kind, unified diffs with absolute paths in both headers, a new
# sibling note as `--- /dev/null` plus a MEMORY.md pointer hunk, brief facts straight into MEMORY.md; a
# blank context line is `{blank}`, one space),
# against the files of the gemini/ recording, and then checked with the CLI's own inbox code:
# `listInboxMemoryPatches` (what `/memory inbox` lists: parsed, hunks present, targets allowed) and
# `applyInboxMemoryPatch` (what approving it does) on a copy.
GEMINI_INBOX_PRIVATE = """\
--- /dev/null
+++ {memory}/flaky-webhook-tests.md
@@ -0,0 +1,6 @@
+# Flaky webhook tests
+
+The payment webhook tests fail at random when the local redis is not running.
+
+Start it with `redis-server --port 6380` before `make test`; the tests read
+`REDIS_PORT=6380` from `.env.local`, which is never committed.
--- {memory}/MEMORY.md
+++ {memory}/MEMORY.md
@@ -1,4 +1,6 @@
 # Private project memory
{blank}
-- The staging database tunnel listens on port 6543 on this machine (never commit it).
+- The staging database tunnel listens on port 6544 on this machine since the 2026-12 move (never commit it).
 - [Local release checklist](release-checklist.md): the three steps before a tag.
+- The local redis for the tests runs on port 6380 on this machine.
+- See {memory}/flaky-webhook-tests.md for why the webhook tests fail without the local redis.
"""
GEMINI_INBOX_GLOBAL = """\
--- {global_file}
+++ {global_file}
@@ -1,3 +1,4 @@
 # Personal preferences
{blank}
 - Prefer pytest over unittest for tests, in every project.
+- Explain a shell command in one line before running it, in every project.
"""
#: Runs Gemini CLI's own inbox code (the bundle chunk the CLI loads) on a memory folder: argv is
#: the chunk, the memory folder, then `list` or `apply`; prints JSON.
GEMINI_INBOX_CHECK = """\
const [chunk, memoryDir, action] = process.argv.slice(-3);
const core = await import(chunk);
const config = { storage: { getProjectMemoryTempDir: () => memoryDir,
                            getProjectSkillsMemoryDir: () => memoryDir + "/skills" } };
const out = action === "list" ? await core.listInboxMemoryPatches(config)
  : [await core.applyInboxMemoryPatch(config, "private", "private"),
     await core.applyInboxMemoryPatch(config, "global", "global")];
console.log(JSON.stringify(out));
"""


def gemini_core_chunk(bin_dir: Path) -> Path:
    """The bundle chunk of the installed Gemini CLI that its entry point loads and that holds the
    memory inbox code (``listInboxMemoryPatches``)."""
    bundle = bin_dir.parent / "@google" / "gemini-cli" / "bundle"
    main = re.search(r'import\("\./(gemini-[A-Z0-9]+\.js)"\)', (bundle / "gemini.js").read_text(encoding="utf-8"))
    names = re.findall(r'from "\./(chunk-[A-Z0-9]+\.js)"', (bundle / main.group(1)).read_text(encoding="utf-8")) \
        if main else []
    for name in names:
        if "async function listInboxMemoryPatches" in (bundle / name).read_text(encoding="utf-8"):
            return bundle / name
    raise RuntimeError(f"no chunk of {bundle} holds listInboxMemoryPatches")


def gemini_inbox(bin_dir: Path, home: Path, memory: Path, action: str) -> object:
    """Gemini CLI's own ``listInboxMemoryPatches`` (``list``) or ``applyInboxMemoryPatch`` of both
    kinds (``apply``) on ``memory``, with ``home`` as its HOME; the parsed JSON it printed."""
    chunk = gemini_core_chunk(bin_dir)
    done = subprocess.run(["node", "--input-type=module", "-e", GEMINI_INBOX_CHECK, "--", str(chunk), str(memory),
                           action], capture_output=True, text=True, timeout=CLI_TIMEOUT,
                          env={**base_env(home), "GEMINI_CLI_HOME": str(home)})
    if done.returncode != 0:
        raise RuntimeError(f"node: exit {done.returncode}: {done.stderr[-600:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


CODEX_PROMPT = "In this repository we use pnpm, never npm, to install packages: npm's lockfile broke the CI."
CODEX_SUMMARY = ("The user said that this repository uses pnpm, never npm, to install packages "
                 "(npm's lockfile broke the CI).")
CODEX_SLUG = "pnpm-not-npm"


def codex_extract(request: Request) -> Turn:
    """Phase 1 (one earlier rollout): the JSON its ``text.format`` schema asks for."""
    schema = ((request.body or {}).get("text") or {}).get("format", {}).get("schema", {})
    answer = {"rollout_summary": CODEX_SUMMARY, "rollout_slug": CODEX_SLUG}
    if "raw_memory" in (schema.get("properties") or {}):
        answer["raw_memory"] = CODEX_SUMMARY
    return Turn.text(json.dumps(answer))


def codex_consolidate(memories: Path) -> Callable[[Request], Turn]:
    """Phase 2 (the consolidation agent): write ``memory_summary.md`` in the format its prompt asks
    (``v1``, the four sections, a pointer line per rollout summary under ``### <project scope>`` /
    ``#### <date>``) with one ``apply_patch`` through its ``exec`` code-mode tool, then answer.
    The rollout summaries' file names and thread ids are read from the folder Codex filled
    before it started the agent (as the agent would, through a tool)."""
    def step(request: Request) -> Turn:
        assert isinstance(request, CodexRequest)
        if request.outputs():
            return Turn.text("Consolidated memory_summary.md.")
        pointers = []
        for path in sorted((memories / "rollout_summaries").glob("*.md")):
            thread = re.search(r"(?m)^thread_id: (\S+)", path.read_text(encoding="utf-8"))
            thread_id = thread.group(1) if thread else ""
            pointers.append(f"- rollout_summaries/{path.name} — the user's rule to install packages with pnpm, "
                            f"never npm; matters before adding a dependency; thread_id={thread_id}")
        day = path.name[:10] if pointers else "2026-01-01"
        summary = ["v1", "", "## User Profile", "", "A developer working in the billing service repository.", "",
                   "## User preferences", "", "- In this repository, install packages with pnpm, never npm "
                   "(npm's lockfile broke the CI).", "", "## General Tips", "",
                   "- Check the package manager before adding a dependency.", "", "## What's in Memory", "",
                   f"### {BASE / 'project'}", "", f"#### {day}", "", *pointers]
        patch = "*** Begin Patch\n*** Add File: memory_summary.md\n" + "".join(f"+{line}\n" for line in summary) + \
            "*** End Patch\n"
        code = f"const r = await tools.apply_patch({json.dumps(patch)});\ntext(JSON.stringify(r));"
        return Turn.tools(("exec", code))
    return step


CLAUDE_EDIT_PROMPT = ("Correction: we moved from pnpm to bun last week, so install packages with bun now, "
                      "never npm. And forget what I said about my role, that was wrong.")


def claude_edit_script(folder: Path) -> list[Turn]:
    """A later session, as the prompt asks ("Update that file rather than creating a duplicate;
    delete memories that turn out to be wrong"): ``Edit`` the pnpm memory (its body and
    description), ``rm`` the role memory, ``Edit`` its pointer line out of ``MEMORY.md``."""
    pnpm, role = folder / CLAUDE_MEMORIES[0][0], folder / CLAUDE_MEMORIES[1][0]
    index = folder / "MEMORY.md"
    role_line = (f"- [{CLAUDE_MEMORIES[1][1].replace('-', ' ').capitalize()}]({CLAUDE_MEMORIES[1][0]}) — "
                 f"{CLAUDE_MEMORIES[1][2]}\n")
    return [
        Turn.tools(("Read", {"file_path": str(pnpm)})),  # Edit needs the file read in this session
        Turn.tools(("Edit", {"file_path": str(pnpm), "old_string": "Use pnpm, never npm, to install or add packages",
                             "new_string": "Use bun, never npm (nor pnpm since the move), to install or add "
                                           "packages"})),
        Turn.tools(("Bash", {"command": f"rm {role}", "description": "Delete the wrong memory"}),
                   ("Read", {"file_path": str(index)})),
        Turn.tools(("Edit", {"file_path": str(index), "old_string": role_line, "new_string": ""})),
        Turn.text("Updated the package-manager memory and deleted the role one."),
    ]


# -- the runs ------------------------------------------------------------------------------------


def fail(agent: str, why: str) -> None:
    print(f"FAIL  {agent}: {why}", flush=True)
    FAILED.append(agent)


def fresh() -> tuple[Path, Path]:
    """An empty HOME and a git project under BASE."""
    shutil.rmtree(BASE, ignore_errors=True)
    home, project = BASE / "home", BASE / "project"
    home.mkdir(parents=True)
    project.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Agent Memory\n\temail = agent-memory@example.invalid\n"
                                     "[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q"], cwd=project, env=env, check=True)
    (project / "README.md").write_text("# billing service\n", encoding="utf-8")
    subprocess.run(["git", "add", "README.md"], cwd=project, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "code"], cwd=project, env=env, check=True)
    return home, project


def run(bin_dir: Path, name: str, args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """Run one agent CLI (stdin closed); a hang becomes exit -9."""
    try:
        return subprocess.run([str(bin_dir / name), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=CLI_TIMEOUT)
    except subprocess.TimeoutExpired as err:
        return subprocess.CompletedProcess(err.cmd, -9, str(err.stdout or ""), f"timed out after {CLI_TIMEOUT} s")


def copy_store(home: Path, relative: list[str], out: Path) -> list[str]:
    """Copy each HOME-relative file or folder of ``relative`` to ``out`` (emptied first); the files copied."""
    shutil.rmtree(out, ignore_errors=True)
    copied = []
    for rel in relative:
        source = home / rel
        files = sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else \
            ([source] if source.is_file() else [])
        for path in files:
            target = out / path.relative_to(home)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            copied.append(str(path.relative_to(home)))
    return copied


def base_env(home: Path) -> dict[str, str]:
    node = shutil.which("node")
    assert node is not None
    path = ":".join(dict.fromkeys(["/usr/bin", "/bin", str(Path(node).parent)]))
    return {"HOME": str(home), "PATH": path, "NO_COLOR": "1", "TZ": "UTC", "DISABLE_AUTOUPDATER": "1"}


def record_claude(bin_dir: Path, out: Path) -> None:
    home, project = fresh()
    with ModelSim(claude_script()) as sim:
        done = run(bin_dir, "claude", ["-p", CLAUDE_PROMPT, "--allowedTools", "Write"],
                   {**base_env(home), **sim.env()}, project)
        main = sim.main()
        if done.returncode != 0 or sim.errors or sim.used != 4:
            return fail("claude", f"exit {done.returncode}, {sim.used} of 4 turns, errors {sim.errors}, "
                        f"{(done.stdout + done.stderr)[-400:]!r}")
        folder = claude_memory_dir(main[0])
        prompt = claude_memory_prompt(main[0])
    results = [r for r in main[-1].tool_results()]
    if any(r.get("is_error") for r in results) or not (folder / "MEMORY.md").is_file():
        return fail("claude", f"a Write failed: {results}")
    (out / "claude").mkdir(parents=True, exist_ok=True)
    copied = copy_store(home, [str(folder.relative_to(home))], out / "claude")
    (out / "claude-system-prompt-memory.md").write_text(prompt + "\n", encoding="utf-8")
    print(f"ok    claude: {', '.join(copied)}", flush=True)
    # a second session in the same HOME and project: one memory corrected, one deleted
    with ModelSim(claude_edit_script(folder)) as sim:
        done = run(bin_dir, "claude", ["-p", CLAUDE_EDIT_PROMPT, "--allowedTools", "Edit,Bash(rm:*)"],
                   {**base_env(home), **sim.env()}, project)
        failed = [r for m in sim.main() for r in m.tool_results() if r.get("is_error")]
        if done.returncode != 0 or sim.errors or sim.used != 5 or failed:
            return fail("claude-edited", f"exit {done.returncode}, {sim.used} of 5 turns, errors {sim.errors}, "
                        f"failed tools {failed}, {(done.stdout + done.stderr)[-400:]!r}")
    copied = copy_store(home, [str(folder.relative_to(home))], out / "claude-edited")
    print(f"ok    claude-edited: {', '.join(copied)}", flush=True)


def record_gemini(bin_dir: Path, out: Path) -> None:
    home, project = fresh()
    with GeminiSim(gemini_script()) as sim:
        sim.write_settings(home)
        done = run(bin_dir, "gemini", ["-p", GEMINI_PROMPT, "--approval-mode", "yolo"],
                   {**base_env(home), **sim.env()}, project)
        main = sim.main()
        if done.returncode != 0 or sim.errors or sim.used != 4:
            return fail("gemini", f"exit {done.returncode}, {sim.used} of 4 turns, errors {sim.errors}, "
                        f"{(done.stdout + done.stderr)[-600:]!r}")
        private, personal = gemini_memory_paths(main[0])
        prompt = gemini_memory_prompt(main[0])
    answers = [json.dumps(r.get("response")) for r in main[-1].responses()]
    if not private.is_file() or not personal.is_file():
        return fail("gemini", f"a write_file failed: {answers}")
    (out / "gemini").mkdir(parents=True, exist_ok=True)
    project_dir = private.parent.parent  # ~/.gemini/tmp/<short name>/, named in ~/.gemini/projects.json
    copied = copy_store(home, [str(personal.relative_to(home)), ".gemini/projects.json",
                               str((project_dir / ".project_root").relative_to(home)),
                               str(private.parent.relative_to(home))], out / "gemini")
    (out / "gemini-system-prompt-memory.md").write_text(prompt + "\n", encoding="utf-8")
    print(f"ok    gemini: {', '.join(copied)}", flush=True)


def record_codex(bin_dir: Path, out: Path) -> None:
    """Two ``codex exec`` runs with ``[features] memories = true``. Codex's memory pipeline runs at
    a root session's start on earlier rollouts idle for ``min_rollout_idle_hours`` (at least 1)
    from an interactive source, so between the runs the first thread is moved 2 hours back and
    given the source ``cli`` in Codex's state database (``~/.codex/state_5.sqlite``); the second
    run's model turn waits until the consolidation agent has finished."""
    import sqlite3
    import time

    home, project = fresh()
    env = base_env(home)
    extra = (f'[features]\nmemories = true\n[memories]\nmin_rollout_idle_hours = 1\n'
             f'[projects."{project}"]\ntrust_level = "trusted"\n')
    memories = home / ".codex" / "memories_v2"
    with CodexSim([Turn.text("Noted: pnpm, never npm, in this repository.")]) as sim:
        sim.write_config(home / ".codex", extra)
        first = run(bin_dir, "codex", ["exec", CODEX_PROMPT], env, project)
    if first.returncode != 0:
        return fail("codex", f"first run: exit {first.returncode}, {(first.stdout + first.stderr)[-400:]!r}")
    state = sqlite3.connect(home / ".codex" / "state_5.sqlite")
    with state:
        state.execute("UPDATE threads SET source = 'cli', updated_at = updated_at - 7200, "
                      "updated_at_ms = updated_at_ms - 7200000")
    state.close()

    def wait(request: Request) -> Turn:
        for _ in range(120):
            if any(r.kind == "memory_consolidation" and isinstance(r, CodexRequest) and r.outputs()
                   for r in sim.requests):
                break
            time.sleep(0.5)
        time.sleep(2)  # the agent's last answer, then Codex records the job
        return Turn.text("Hello.")

    with CodexSim([wait]) as sim:
        sim.handlers = {"memory_extraction": codex_extract, "memory_consolidation": codex_consolidate(memories)}
        sim.write_config(home / ".codex", extra)
        second = run(bin_dir, "codex", ["exec", "hello"], env, project)
        kinds = [r.kind for r in sim.requests]
        extraction = next((r for r in sim.requests if r.kind == "memory_extraction"), None)
        consolidation = next((r for r in sim.requests if r.kind == "memory_consolidation"), None)
    if second.returncode != 0 or extraction is None or consolidation is None or \
            not (memories / "memory_summary.md").is_file():
        return fail("codex", f"second run: exit {second.returncode}, requests {kinds}, errors {sim.errors}")
    (out / "codex").mkdir(parents=True, exist_ok=True)
    copied = copy_store(home, [str(p.relative_to(home)) for p in sorted(memories.iterdir())
                               if p.name not in (".git", ".codex-baseline")], out / "codex")
    assert isinstance(extraction, CodexRequest) and isinstance(consolidation, CodexRequest)
    (out / "codex-prompt-phase1.md").write_text(extraction.system + "\n", encoding="utf-8")
    (out / "codex-prompt-phase2.md").write_text(consolidation.texts("user")[-1] + "\n", encoding="utf-8")
    print(f"ok    codex: {', '.join(copied)}", flush=True)


def record_gemini_inbox(bin_dir: Path, out: Path) -> None:
    """The Auto Memory inbox (see GEMINI_INBOX_PRIVATE): its patches against the gemini/
    recording, written in the extraction prompt's format and accepted by Gemini CLI's own
    inbox code; ``gemini-inbox-check.json`` keeps what that code said and the files approving
    the patches produces."""
    recorded = out / "gemini" / ".gemini"
    if not recorded.is_dir():
        return fail("gemini-inbox", f"{recorded} is missing: record gemini first")
    home, _ = fresh()
    shutil.copytree(recorded, home / ".gemini")
    memory = home / ".gemini" / "tmp" / "project" / "memory"
    for kind, template in (("private", GEMINI_INBOX_PRIVATE), ("global", GEMINI_INBOX_GLOBAL)):
        (memory / ".inbox" / kind).mkdir(parents=True)
        (memory / ".inbox" / kind / "extraction.patch").write_text(
            template.format(memory=memory, global_file=home / ".gemini" / "GEMINI.md", blank=" "), encoding="utf-8")
    try:
        listed = gemini_inbox(bin_dir, home, memory, "list")
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as err:
        return fail("gemini-inbox", str(err))
    kinds = sorted(k.get("kind", "") for k in listed) if isinstance(listed, list) else []
    if kinds != ["global", "private"]:
        return fail("gemini-inbox", f"Gemini CLI's inbox code listed {kinds}, not both patches: {listed}")
    copy_store(home, [str((memory / ".inbox").relative_to(home))], out / "gemini-inbox")
    try:  # approving them (in place: the headers name these absolute paths); the inbox is copied already
        applied = gemini_inbox(bin_dir, home, memory, "apply")
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as err:
        return fail("gemini-inbox", str(err))
    if not all(isinstance(a, dict) and a.get("success") for a in applied):
        return fail("gemini-inbox", f"Gemini CLI's inbox code did not apply the patches: {applied}")
    after = {str(p.relative_to(home)): p.read_text(encoding="utf-8")
             for p in (memory / "MEMORY.md", memory / "flaky-webhook-tests.md", home / ".gemini" / "GEMINI.md")}
    (out / "gemini-inbox-check.json").write_text(json.dumps({"listInboxMemoryPatches": listed,
                                                             "applyInboxMemoryPatch": applied,
                                                             "filesAfterApproving": after}, indent=1) + "\n",
                                                 encoding="utf-8")
    print(f"ok    gemini-inbox: listed {kinds}; applied: {[a['message'] for a in applied]}", flush=True)


AGENTS: dict[str, Callable[[Path, Path], None]] = {"claude": record_claude, "gemini": record_gemini,
                                                   "codex": record_codex, "gemini-inbox": record_gemini_inbox}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", default=",".join(AGENTS), help="comma-separated (default: all)")
    parser.add_argument("--keep", action="store_true", help=f"keep {BASE} (the last agent's HOME and project)")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "fixtures" / "agent_memory")
    args = parser.parse_args()
    if shutil.which("node") is None:
        sys.exit("record-agent-memory: node is not on PATH (Node.js 20+ and npm are needed)")
    installed = subprocess.run([str(HERE / "install-agent-clis.sh")], capture_output=True, text=True)
    if installed.returncode != 0:
        sys.exit(f"record-agent-memory: installing the agent CLIs failed:\n{installed.stderr}")
    bin_dir = Path(installed.stdout.strip().splitlines()[-1])
    for agent in [a for a in args.agents.split(",") if a]:
        if agent not in AGENTS:
            sys.exit(f"record-agent-memory: unknown agent {agent!r} (known: {', '.join(AGENTS)})")
        AGENTS[agent](bin_dir, args.out)
    if not args.keep:
        shutil.rmtree(BASE, ignore_errors=True)
    print(json.dumps({"failed": FAILED}))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
