"""One module per agent behind one registry (issue 20, scope 3 and "must show" 3).

A fourth agent, written here as one module and registered through
``memcli.agents.registry.register``, gets ``hook install`` (project and ``--user``), ``mcp
install``, a hook run with a payload in its own format answered in its own format, and its
transcripts read by ``extract`` and ``agents.transcript.parse`` — with no change to memcli.
The memcli processes are real subprocesses: a small wrapper registers the agent, then runs
memcli's own ``main`` (the fast path included), as a plugin would.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: The fourth agent: everything memcli needs to know about "Kite", in one module.
KITE = textwrap.dedent('''
    """Kite, a made-up agent with formats of its own: hooks ``begin``/``ask``/``end`` in
    ``.kite/hooks.json`` (timeouts in tenths of a second), stdin ``{"kite": {...}}``, answers
    ``{"kite_context": TEXT}``, transcripts of ``{"kite_log": ...}`` lines, MCP in ``.kite/mcp.json``."""
    import json

    from memcli.agents.hook_protocol import HookInput
    from memcli.agents.registry import Agent
    from memcli.agents.transcript import Turn, string

    def parse_input(raw):
        try:
            data = json.loads(raw)["kite"]
        except (ValueError, KeyError, TypeError):
            return HookInput(), "hook input is not Kite's JSON"
        return HookInput(session_id=data.get("session", ""), transcript_path=data.get("log", ""),
                         cwd=data.get("folder", ""), event=data.get("event", ""), prompt=data.get("text", "")), None

    def answer(event, context):
        return json.dumps({"kite_context": context}) + "\\n" if context and event != "end" else ""

    def claims(entry):
        return isinstance(entry.get("kite_log"), dict)

    class Reader:
        def __init__(self, out):
            self.out = out

        def feed(self, number, entry):
            record = entry["kite_log"] if claims(entry) else {}
            self.out.session_id = self.out.session_id or string(record.get("session"))
            text = string(record.get("said"))
            if record.get("who") in ("person", "kite") and text:
                role = "user" if record["who"] == "person" else "assistant"
                self.out.messages.append(Turn(self.out.session_id, string(record.get("id")), None, text.strip(),
                                              number, role))
            else:
                self.out.unknown_lines += 1

        def finish(self):
            pass

    AGENT = Agent(
        "kite", "Kite", {"session-start": "begin", "user-prompt-submit": "ask", "session-end": "end"},
        hook_help="Kite hook (stdin: {\\"kite\\": ...}; stdout: {\\"kite_context\\": ...}). Always exits 0.",
        timeouts={"session-start": 4}, timeout_scale=10, parse_input=parse_input, answer=answer,
        settings={"project": ".kite/hooks.json", "user": ".kite/hooks.json"},
        trust_steps=lambda where, project: ["open Kite once and allow memcli's hooks"],
        transcript=__name__, transcript_label="Kite log (~/.kite/logs/*.jsonl)", transcript_path="~/.kite/logs/*.jsonl",
        mcp_config=lambda user, project: (project if not user else __import__("pathlib").Path.home()) / ".kite"
        / "mcp.json",
        mcp_note="Kite reads .kite/mcp.json once you allow it", tool_env=("KITE_TOOL",),
    )
''')


@pytest.fixture
def kite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The Kite module on ``sys.path`` (this process and its children), registered here, and
    a runner of memcli that registers it first."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "kite_agent.py").write_text(KITE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", str(folder))
    from memcli.agents import registry

    registry.register("kite", "kite_agent")
    code = ("import sys\nfrom memcli.agents import registry\nregistry.register('kite', 'kite_agent')\n"
            "from memcli.cli import main\nmain(sys.argv[1:])\n")

    def run(*args: str, cwd: Path | None = None, input: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, input=input, capture_output=True,
                              text=True, timeout=60)
    yield run
    registry.unregister("kite")
    sys.modules.pop("kite_agent", None)


@pytest.fixture
def proj(project: Path, run) -> Path:
    """A project with a workspace at its top and one memory."""
    assert run("init", str(project)).code == 0
    assert run("remember", "The staging database is called ledger_stage.", cwd=project).code == 0
    return project


@pytest.mark.slow
def test_a_fourth_agent_gets_hook_install_in_its_own_files_names_and_units(kite, proj):
    done = kite("hook", "install", "kite", cwd=proj)
    assert done.returncode == 0 and done.stderr == "", done
    written = json.loads((proj / ".kite" / "hooks.json").read_text(encoding="utf-8"))
    assert list(written["hooks"]) == ["begin", "ask", "end"]
    handlers = {name: groups[0]["hooks"][0] for name, groups in written["hooks"].items()}
    assert handlers["begin"]["command"].endswith("memcli hook kite session-start")
    assert [h["timeout"] for h in handlers.values()] == [40, 50, 100]  # tenths of a second: 4 s, 5 s, 10 s
    assert "matcher" not in written["hooks"]["begin"][0]
    assert "next: open Kite once and allow memcli's hooks" in done.stdout
    again = kite("hook", "install", "kite", cwd=proj)
    assert again.returncode == 0 and "nothing to change" in again.stdout, again
    user = kite("hook", "install", "kite", "--user", cwd=proj)
    assert user.returncode == 0 and (Path.home() / ".kite" / "hooks.json").is_file(), user
    local = kite("hook", "install", "kite", "--local", cwd=proj)
    assert local.returncode == 2 and "kite has no local settings file" in local.stderr, local
    removed = kite("hook", "uninstall", "kite", cwd=proj)
    assert removed.returncode == 0 and "removed begin" in removed.stdout, removed
    mcp = kite("mcp", "install", "kite", cwd=proj)
    assert mcp.returncode == 0 and "Kite reads .kite/mcp.json once you allow it" in mcp.stderr, mcp
    assert "memcli" in json.loads((proj / ".kite" / "mcp.json").read_text(encoding="utf-8"))["mcpServers"]


@pytest.mark.slow
def test_a_fourth_agent_gets_a_hook_run_with_its_payload_and_answer(kite, proj):
    payload = json.dumps({"kite": {"event": "begin", "session": "k1", "folder": str(proj)}})
    started = kite("hook", "kite", "session-start", cwd=proj, input=payload)
    assert started.returncode == 0 and started.stderr == "", started
    assert "ledger_stage" in json.loads(started.stdout)["kite_context"]
    asked = kite("hook", "kite", "user-prompt-submit", cwd=proj, input=json.dumps(
        {"kite": {"event": "ask", "session": "k2", "folder": str(proj), "text": "what is the staging database?"}}))
    assert asked.returncode == 0 and "ledger_stage" in json.loads(asked.stdout)["kite_context"], asked
    other = kite("hook", "kite", "pre-tool-use", cwd=proj, input=payload)
    assert other.returncode == 0 and other.stdout == "", other
    assert "kite has no 'pre-tool-use' hook in memcli (use session-start, user-prompt-submit, session-end)" \
        in other.stderr
    foreign = kite("hook", "kite", "session-start", cwd=proj, input=json.dumps({"session_id": "x", "cwd": str(proj)}))
    assert foreign.returncode == 0 and "hook input is not Kite's JSON" in foreign.stderr, foreign
    typer_path = kite("hook", "kite", "--help", cwd=proj)  # the fast path gives --help to typer
    assert typer_path.returncode == 0 and "Kite hook" in typer_path.stdout, typer_path


LOG = [
    {"kite_log": {"session": "kite-7", "id": "m1", "who": "person",
                  "said": "From now on always run the benchmarks with `make bench` before committing."}},
    {"kite_log": {"session": "kite-7", "id": "m2", "who": "kite", "said": "Understood, I will always use pandas."}},
    {"kite_log": {"note": "a record Kite's reader does not know"}},
]


def test_a_fourth_agent_gets_its_transcripts_read(kite, proj, tmp_path):
    from memcli.agents import transcript as tr

    text = "".join(json.dumps(line) + "\n" for line in LOG)
    parsed = tr.parse(text.splitlines(keepends=True))
    assert parsed.format == "kite" and parsed.session_id == "kite-7"
    assert [(t.uuid, t.role) for t in parsed.messages] == [("m1", "user"), ("m2", "assistant")]
    assert parsed.unknown_lines == 1
    path = tmp_path / "kite-7.jsonl"
    path.write_text(text, encoding="utf-8")
    found = kite("--json", "extract", str(path), cwd=proj)
    assert found.returncode == 0, found
    data = json.loads(found.stdout)["data"]
    assert data["format"] == "kite"
    assert [c["text"] for c in data["candidates"]] == [LOG[0]["kite_log"]["said"]]
    foreign = tmp_path / "other.jsonl"
    foreign.write_text('{"what": "no agent writes this"}\n', encoding="utf-8")
    refused = kite("extract", str(foreign), cwd=proj)
    assert refused.returncode == 5 and "Kite log (~/.kite/logs/*.jsonl)" in refused.stderr, refused


def test_the_registry_is_lazy_and_knows_each_agents_tool_environment(kite):
    from memcli.agents import registry

    assert registry.names()[:3] == ("claude", "codex", "gemini") and registry.known("kite")
    assert registry.running_under({"KITE_TOOL": "1"}).name == "kite"
    assert registry.running_under({"CLAUDECODE": "1"}).name == "claude"
    assert registry.running_under({"PATH": "/usr/bin"}) is None
    with pytest.raises(ValueError):
        registry.register("Not A Name", "kite_agent")
    probe = ("import sys\nfrom memcli.agents import registry\nregistry.get('claude')\n"
             "print(sorted(m for m in sys.modules if m.startswith('memcli.agents.')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "memcli.agents.claude" in loaded and "codex" not in loaded and "gemini" not in loaded, loaded


def test_a_claude_hook_imports_no_other_agents_module(ws, run):
    from test_imports import loaded_modules

    modules = loaded_modules("hook", "claude", "session-start")
    assert "memcli.agents.claude" in modules
    assert not {"memcli.agents.codex", "memcli.agents.gemini"} & modules
