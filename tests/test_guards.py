"""Guards (issue 24): Claude Code's permission-rule syntax, enforced by every agent's pre-tool hook,
reviewed as any write, and counted in ``memcli stats``."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_memcli
from memcli import guards as g
from memcli.errors import ValidationFailed
from memcli.policy.suggest import suggest

if TYPE_CHECKING:
    from cli_runner import Result, Runner

# --- the pattern language, table-driven ---------------------------------------------------

BASH = [
    # (pattern, command, matches)
    ("Bash", "anything at all", True),
    ("Bash(*)", "rm -rf build", True),
    ("Bash(npm run build)", "npm run build", True),
    ("Bash(npm run build)", "npm run build --watch", False),
    ("Bash(npm install:*)", "npm install", True),
    ("Bash(npm install:*)", "npm install left-pad", True),
    ("Bash(npm install:*)", "npm installer", False),
    ("Bash(npm install:*)", "pnpm install left-pad", False),
    ("Bash(npm install *)", "npm install left-pad", True),
    ("Bash(npm install *)", "npm install", True),  # a lone trailing " *" is optional
    ("Bash(ls *)", "lsof", False),  # the space keeps a word boundary
    ("Bash(ls*)", "lsof", True),
    ("Bash(git * main)", "git push origin main", True),
    ("Bash(git * main)", "git push origin dev", False),
    ("Bash(* install)", "pnpm install", True),
    # compound commands: each part on its own
    ("Bash(npm install:*)", "cd web && npm install x", True),
    ("Bash(npm install:*)", "make build; npm install", True),
    ("Bash(npm install:*)", "false || npm install y", True),
    ("Bash(npm install:*)", "cat package.json | npm install", True),
    ("Bash(npm install:*)", "(cd web; npm install)", True),
    ("Bash(npm install:*)", "echo $(npm install z)", True),
    ("Bash(cd web:*)", "cd web && npm install x", True),
    ("Bash(echo:*)", "echo ok && npm install x", True),
    ("Bash(echo ok && npm:*)", "echo ok && npm install", False),  # never across an operator
    # assignments, wrappers, redirections, shells
    ("Bash(npm install:*)", "FOO=1 npm install y", True),
    ("Bash(npm install:*)", "A=1 B=2 npm install", True),
    ("Bash(npm install:*)", "timeout 30 npm install", True),
    ("Bash(npm install:*)", "nohup nice -n 5 npm install", True),
    ("Bash(npm install:*)", "env CI=1 npm install", True),
    ("Bash(npm install:*)", "npm install > log.txt 2>&1", True),
    ("Bash(npm install:*)", "sh -c 'npm install x'", True),
    ("Bash(npm install:*)", "bash -lc \"cd web && npm install\"", True),
    # shell syntax around a command (newcomer fault: each of these got no decision under a deny)
    ("Bash(npm install:*)", "for i in 1; do npm install x; done", True),
    ("Bash(npm install:*)", "for i in 1\ndo\n  npm install x\ndone", True),
    ("Bash(npm install:*)", "if true; then npm install x; fi", True),
    ("Bash(npm install:*)", "if false; then :; elif true; then npm install; else npm install y; fi", True),
    ("Bash(npm install:*)", "while true; do npm install x; done", True),
    ("Bash(npm install:*)", "until false; do npm install x; done", True),
    ("Bash(npm install:*)", "! npm install x", True),
    ("Bash(npm install:*)", "{ npm install x; }", True),
    ("Bash(npm install:*)", "case $x in a) npm install x;; esac", True),
    ("Bash(npm install:*)", "function f { npm install x; }", True),
    ("Bash(npm install:*)", "for npm in install; do :; done", False),  # a for head is no command
    ("Bash(npm install:*)", "sudo npm install x", True),
    ("Bash(npm install:*)", "sudo -u bob -E npm install x", True),
    ("Bash(npm install:*)", "sudo -iu bob -- npm install x", True),
    ("Bash(npm install:*)", "doas -u bob npm install x", True),
    ("Bash(npm install:*)", "command npm install x", True),
    ("Bash(npm install:*)", "command -v npm install", False),  # looks npm up, runs nothing
    ("Bash(npm install:*)", "builtin exec npm install x", True),
    ("Bash(npm install:*)", "exec -a n npm install x", True),
    ("Bash(npm install:*)", "xargs npm install < list", True),
    ("Bash(npm install:*)", "xargs -0 -n 1 -I {} npm install {} < list", True),
    ("Bash(npm install:*)", "timeout -s KILL 5 npm install", True),
    ("Bash(npm install:*)", "stdbuf -oL npm install", True),
    ("Bash(npm install:*)", "env -S 'npm install x'", True),
    ("Bash(npm install:*)", "env -u HOME -S'npm install' x", True),
    ("Bash(npm install:*)", "env --split-string='CI=1 npm install'", True),
    ("Bash(npm install:*)", "FOO=1 sudo BAR=2 nohup npm install", True),
    ("Bash(npm install:*)", "/usr/bin/npm install x", True),
    ("Bash(npm install:*)", "./node_modules/.bin/npm install", True),
    ("Bash(npm install:*)", "sudo /usr/local/bin/npm install", True),
    ("Bash(npm install:*)", "eval \"npm install x\"", True),
    ("Bash(npm install:*)", "eval npm install x", True),
    ("Bash(npm install:*)", "eval 'cd web && npm install x'", True),
    ("Bash(npm install:*)", "bash -e -c 'npm install x'", True),
    ("Bash(npm install:*)", "bash -o pipefail -c 'npm install x'", True),
    ("Bash(npm install:*)", "bash --norc -c -x 'npm install x'", True),
    ("Bash(npm install:*)", "bash script.sh -c 'npm install x'", False),  # an argument of the script
    ("Bash(npm install:*)", "env - npm install x", True),
    ("Bash(npm install:*)", "sudo sh -c 'for p in a; do npm install $p; done'", True),
    ("Bash(npm install:*)", "$'npm' install x", True),  # bash's ANSI-C quoting
    ("Bash(npm install:*)", "$'\\x6epm' $'\\151nstall'", True),
    ("Bash(npm install:*)", "$\"npm\" install", True),  # locale quoting
    ("Bash(npm install:*)", "echo $'npm install'", False),
    ("Bash(npm install:*)", "cat <(npm install x)", True),  # process substitution
    ("Bash(npm install:*)", "echo hi > >(npm install x)", True),
    ("Bash(npm install:*)", "echo eval npm install", False),
    ("Bash(npm install:*)", "echo sudo npm install", False),
    # more wrappers (util-linux, procps, tracers) and package runners: each ran the command
    # past a deny (stop 33's note)
    ("Bash(terraform destroy:*)", "ionice -c 3 terraform destroy", True),
    ("Bash(terraform destroy:*)", "setsid terraform destroy", True),
    ("Bash(terraform destroy:*)", "flock /tmp/l terraform destroy -auto-approve", True),
    ("Bash(terraform destroy:*)", "flock -n /tmp/l -c 'cd infra && terraform destroy'", True),
    ("Bash(terraform destroy:*)", "flock /tmp/l grep -c terraform destroy.log", False),  # grep's -c
    ("Bash(terraform destroy:*)", "chrt -r 5 terraform destroy", True),
    ("Bash(terraform destroy:*)", "taskset -c 0,1 terraform destroy", True),
    ("Bash(terraform destroy:*)", "chroot /srv/jail terraform destroy", True),
    ("Bash(terraform destroy:*)", "watch -n 5 terraform destroy", True),
    ("Bash(terraform destroy:*)", "watch 'terraform plan && terraform destroy'", True),
    ("Bash(terraform destroy:*)", "strace -f -o /tmp/t terraform destroy", True),
    ("Bash(terraform destroy:*)", "su -c 'terraform destroy' deploy", True),
    ("Bash(terraform destroy:*)", "su deploy -c 'terraform destroy'", True),
    ("Bash(terraform destroy:*)", "su - deploy -lc 'terraform destroy'", True),
    ("Bash(terraform destroy:*)", "runuser -u deploy -- terraform destroy", True),
    ("Bash(terraform destroy:*)", "script -q -c 'terraform destroy' /dev/null", True),
    ("Bash(terraform destroy:*)", "doppler run -- terraform destroy", True),
    ("Bash(terraform destroy:*)", "op run --env-file .env -- terraform destroy", True),
    ("Bash(terraform destroy:*)", "aws-vault exec prod -- terraform destroy", True),
    ("Bash(rm -rf:*)", "find . -name '*.tmp' -exec rm -rf {} +", True),
    ("Bash(rm -rf:*)", "find . -name x -execdir rm -rf {} \\; -print", True),
    ("Bash(rm -rf:*)", "find . -exec sh -c 'rm -rf \"$1\"' _ {} \\;", True),
    ("Bash(rm -rf:*)", "find . -name rm -print", False),
    ("Bash(prisma migrate reset:*)", "npx prisma migrate reset --force", True),
    ("Bash(prisma migrate reset:*)", "npx prisma@5.2.0 migrate reset", True),
    ("Bash(prisma migrate reset:*)", "npx -y prisma migrate reset", True),
    ("Bash(prisma migrate reset:*)", "npx -c 'prisma migrate reset'", True),
    ("Bash(prisma migrate reset:*)", "npm exec -- prisma migrate reset", True),
    ("Bash(prisma migrate reset:*)", "pnpm exec prisma migrate reset", True),
    ("Bash(prisma migrate reset:*)", "pnpm dlx prisma migrate reset", True),
    ("Bash(prisma migrate reset:*)", "bunx prisma migrate reset", True),
    ("Bash(terraform destroy:*)", "npx some-tool -c 'terraform destroy'", False),  # the package's -c
    ("Bash(alembic downgrade:*)", "uv run alembic downgrade base", True),
    ("Bash(alembic downgrade:*)", "uv run --with psycopg alembic downgrade base", True),
    ("Bash(alembic downgrade:*)", "poetry run alembic downgrade -1", True),
    ("Bash(alembic downgrade:*)", "pipenv run alembic downgrade -1", True),
    ("Bash(rake db:drop:*)", "bundle exec rake db:drop", True),
    ("Bash(uv run:*)", "uv run pytest", True),
    ("Bash(npx:*)", "npx prisma migrate reset", True),
    # a wrapped or keyword form is matched with its prefix too, a path-qualified one as written too
    ("Bash(sudo:*)", "sudo npm install x", True),
    ("Bash(sudo npm:*)", "sudo npm install x", True),
    ("Bash(xargs:*)", "find . | xargs rm", True),
    ("Bash(eval:*)", "eval \"ls\"", True),
    ("Bash(/usr/bin/npm:*)", "/usr/bin/npm install x", True),
    ("Bash(rm:*)", "for f in a b; do rm $f; done", True),
    # quoted text is not a command
    ("Bash(npm install:*)", "echo 'npm install'", False),
    ("Bash(npm install:*)", "git commit -m \"npm install && fix\"", False),
    ("Bash(npm install:*)", "grep 'npm install' README.md", False),
]


@pytest.mark.parametrize(("pattern", "command", "expected"), BASH)
def test_bash_patterns_match_as_claude_code_documents(pattern: str, command: str, expected: bool) -> None:
    assert g.matches(g.parse(pattern), g.Call("Bash", command=command)) is expected


WHERE = g.Where(cwd="/p/web", root="/p", home="/home/a")
PATHS = [
    ("Edit(migrations/**)", "Edit", "/p/web/migrations/001.sql", True),
    ("Edit(migrations/**)", "Write", "/p/web/migrations/001.sql", True),  # Edit covers every editing tool
    ("Edit(migrations/**)", "Read", "/p/web/migrations/001.sql", False),
    ("Edit(/migrations/**)", "Edit", "/p/migrations/001.sql", True),  # /path: from the project's root
    ("Edit(/migrations/**)", "Edit", "/p/web/migrations/001.sql", False),
    ("Read(.env)", "Read", "/p/web/config/.env", True),  # a name without / matches at any depth
    ("Read(.env)", "Read", "/p/.env", False),  # relative to the working folder
    ("Read(.env)", "Read", "/p/web/.env.example", False),
    ("Read(//etc/passwd)", "Read", "/etc/passwd", True),
    ("Read(~/.ssh/**)", "Read", "/home/a/.ssh/id_ed25519", True),
    ("Edit(*.lock)", "Edit", "/p/web/sub/pnpm.lock", True),
    ("Write(docs/)", "Write", "/p/web/docs/a/b.md", True),  # a folder: the files in it
    ("Read", "Read", "/anything", True),
]


@pytest.mark.parametrize(("pattern", "tool", "path", "expected"), PATHS)
def test_path_patterns_follow_gitignore_rules(pattern: str, tool: str, path: str, expected: bool) -> None:
    assert g.matches(g.parse(pattern), g.Call(tool, paths=[path]), WHERE) is expected


@pytest.mark.parametrize(("url", "expected"), [("https://example.com/a", True), ("http://EXAMPLE.com", True),
                                               ("https://api.example.com/", False), ("https://evil.com/example.com",
                                                                                     False)])
def test_webfetch_domain(url: str, expected: bool) -> None:
    assert g.matches(g.parse("WebFetch(domain:example.com)"), g.Call("WebFetch", urls=[url])) is expected
    assert g.matches(g.parse("WebFetch(domain:*.example.com)"), g.Call("WebFetch", urls=["https://api.example.com"]))


@pytest.mark.parametrize(("pattern", "said"), [
    ("Bash(", "expected Tool or Tool(specifier)"), ("Foo(x)", "unknown tool 'Foo'"), ("bash(npm)", "unknown tool"),
    ("Bash()", "is empty"), ("Bash(npm:* x:*)", "':*' may only end"), ("Bash(:*)", "nothing before"),
    ("WebFetch(example.com)", "domain:HOST"), ("Read(a\nb)", "one line"), ("", "non-empty"),
])
def test_bad_patterns_are_refused(pattern: str, said: str) -> None:
    with pytest.raises(ValidationFailed) as err:
        g.parse(pattern)
    assert said in err.value.message


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_splitting_never_crashes(command: str) -> None:
    parts = g.commands_of(command)
    assert all(isinstance(p, str) and p for p in parts)
    g.matches(g.parse("Bash(npm install:*)"), g.Call("Bash", command=command))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="$'\"\\ ax;", max_size=60))
def test_a_line_whose_quotes_close_is_read_without_a_failed_quote(command: str) -> None:
    # the tokenizer is linear because a quoted token never fails to close on a line _BALANCED
    # accepts (a failed one would rescan to the end, over and over)
    if g._BALANCED.fullmatch(command) is not None:
        assert all(m.lastgroup != "other" for m in g._TOKEN.finditer(command)), command


LIMITS = [
    # (command, what split says of it: "" when read whole)
    ("true && " * (g.MAX_PARTS - 1) + "npm install x", ""),
    ("true && " * g.MAX_PARTS + "npm install x", "more than 1,000 simple commands, the limit"),
    ("true; " * g.MAX_PARTS, ""),  # operators after the last part: nothing unread
    ("echo ok;;;;; " * 2 + "npm install", ""),  # empty parts do not count
    ("bash -c '" + "true && " * g.MAX_PARTS + "npm install x'", "more than 1,000 simple commands"),  # inside sh -c
    ("npm install " + "a" * (g.MAX_COMMAND_CHARS - 12), ""),
    ("npm install " + "a" * 200_000, "200,012 characters, over the limit of 100,000"),
    ("'" + "a" * (g.MAX_COMMAND_CHARS - 1), ""),  # an open quote, read as plain text
    ('"' + "\\a" * (g.MAX_COMMAND_CHARS // 2 - 1), ""),
    ("a && " * (g.MAX_COMMAND_CHARS // 5), "more than 1,000 simple commands"),
    # wrappers and reserved words in front of one command, shell scripts inside each other
    ("sudo " * g.MAX_PREFIXES + "npm install x", ""),
    ("sudo " * (g.MAX_PREFIXES + 1) + "npm install x", "more than 16 wrappers or reserved words"),
    ("nohup " * (g.MAX_COMMAND_CHARS // 6), "more than 16 wrappers or reserved words"),
    ("eval " * (g.MAX_COMMAND_CHARS // 5), "nests shell scripts (sh -c, eval) more than 3 deep"),
    ("do " * (g.MAX_COMMAND_CHARS // 3), "more than 16 wrappers or reserved words"),
    ("bash -c \"sh -c 'eval npm install x'\"", ""),
    ("eval eval eval npm install x", ""),
    ("eval eval eval eval npm install x", "nests shell scripts (sh -c, eval) more than 3 deep"),
    ("bash -c \"sh -c 'eval \\\"bash -c npm\\\"'\"", "nests shell scripts (sh -c, eval) more than 3 deep"),
]


@pytest.mark.parametrize(("command", "said"), LIMITS)
def test_a_command_over_the_limits_is_said_to_be_unread(command: str, said: str) -> None:
    parts, cut = g.split(command)
    assert (cut == "") is (said == "") and said in cut, cut
    assert g.unchecked(g.Call("Bash", command=command)) == cut
    if not said and "npm install" in command:
        assert g.matches(g.parse("Bash(npm install:*)"), g.Call("Bash", command=command))


@pytest.mark.parametrize(("pattern", "command", "expected"), [
    # wildcards are matched piece by piece: many stars on a long command take linear time
    ("Bash(git" + " *" * 30 + " main)", "git" + " a" * 5_000, False),
    ("Bash(git" + " *" * 30 + " main)", "git" + " a" * 5_000 + " main", True),
    ("Bash(*a*a*a*a*a*a*a*a*a*a*a*a*b)", "a" * 50_000, False),
    ("Bash(\\* x *)", "* x y", True), ("Bash(\\* x *)", "a x y", False),  # an escaped star is a star
])
def test_wildcards_on_long_commands(pattern: str, command: str, expected: bool) -> None:
    assert g.matches(g.parse(pattern), g.Call("Bash", command=command)) is expected


WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(WORD, min_size=1, max_size=4), st.sampled_from(["&&", "||", ";", "|", "&"]),
       st.lists(WORD, min_size=1, max_size=4))
def test_a_prefix_never_reaches_across_an_operator(left: list[str], op: str, right: list[str]) -> None:
    # "Bash(LEFT RIGHT...:*)" spans the operator: it matches "LEFT OP RIGHT" only if one side alone matches
    spanning = g.parse(f"Bash({' '.join(left)} {right[0]}:*)")
    command = f"{' '.join(left)} {op} {' '.join(right)}"
    alone = g.commands_of(command)
    assert g.matches(spanning, g.Call("Bash", command=command)) == any(
        g.command_matches(spanning.spec or "", p) for p in alone)
    # and a prefix of the right side always matches, whatever is on the left
    assert g.matches(g.parse(f"Bash({right[0]}:*)"), g.Call("Bash", command=command))


SIMPLE = st.builds(lambda prog, args: " ".join([prog, *args]),
                   st.sampled_from(["npm", "git", "rm", "/usr/bin/npm", "./bin/git", "FOO=1 npm", "timeout 5 rm"]),
                   st.lists(WORD, max_size=3))
COMMAND = st.builds(lambda first, rest: " ".join([first, *(op + " " + c for op, c in rest)]), SIMPLE,
                    st.lists(st.tuples(st.sampled_from(["&&", "||", ";", "|", "\n"]), SIMPLE), max_size=3))
WRAPS = [
    lambda c: f"for i in 1; do {c}; done",
    lambda c: f"if true; then {c}; fi",
    lambda c: f"while true; do {c}; done",
    lambda c: f"sudo {c}",
    lambda c: f"sudo -u bob -E {c}",
    lambda c: f"command {c}",
    lambda c: f"exec {c}",
    lambda c: f"eval {shlex.quote(c)}",
    lambda c: f"{{ {c}; }}",
]


@settings(max_examples=300, deadline=None)
@given(COMMAND, st.sampled_from(["npm", "npm install", "git", "git push", "rm", "rm -rf", "FOO=1 npm"]),
       st.sampled_from(range(len(WRAPS))), st.booleans())
def test_a_command_a_guard_matches_is_matched_inside_shell_syntax(command: str, prefix: str, wrap: int,
                                                                   twice: bool) -> None:
    """For any command C a guard matches, ``for i in 1; do C; done``, ``if true; then C; fi``,
    ``sudo C``, ``command C``, ``eval 'C'`` (and these twice over) match it too."""
    rule = g.parse(f"Bash({prefix}:*)")
    if not g.matches(rule, g.Call("Bash", command=command)):
        return
    wrapped = WRAPS[wrap](command)
    if twice:
        wrapped = WRAPS[(wrap + 1) % len(WRAPS)](wrapped)
    assert g.matches(rule, g.Call("Bash", command=wrapped)), (command, wrapped, g.split(wrapped))
    assert g.split(wrapped)[1] == ""


SUGGESTIONS = [
    # (text, the --deny patterns suggested): the command's words as written, up to the first
    # that is not a command's; never a bare program broader than what was said
    ("Use pnpm, never npm, for packages in this repository", ["Bash(npm:*)"]),
    ("never run npm install here", ["Bash(npm install:*)"]),
    ("Don't use `git push --force` on main", ["Bash(git push --force:*)"]),
    ("Always use pnpm, not npm.", ["Bash(npm:*)"]),
    ("Never run rm -rf on the build folder", ["Bash(rm -rf:*)"]),
    ("never run git push --force", ["Bash(git push --force:*)"]),
    ("Never run git push --force on main", ["Bash(git push --force:*)"]),
    ("Never run terraform destroy against prod", ["Bash(terraform destroy:*)"]),  # stop 33's note
    ("Never run kubectl delete namespace during business hours", ["Bash(kubectl delete namespace:*)"]),
    ("Never run docker compose down -v.", ["Bash(docker compose down -v:*)"]),
    ("never run npm publish, use the release script", ["Bash(npm publish:*)"]),
    ("never use sudo pip install", ["Bash(sudo pip install:*)"]),
    ("不要运行 npm publish", ["Bash(npm publish:*)"]),
    ("不要运行 git push --force 到主分支", ["Bash(git push --force:*)"]),
    ("禁止运行 rm -rf build/", ["Bash(rm -rf build/:*)"]),
    ("不要用 npm 安装依赖", ["Bash(npm:*)"]),
    ("禁止 rm -rf /", ["Bash(rm -rf /:*)"]),
    ("never forget the tests", []),
    # prose after the command (a newcomer got "Bash(npm install inside api/:*)", which never matches)
    ("Never run npm install inside api/, it has no package.json.", ["Bash(npm install:*)"]),
    ("Never run rm -rf build/ while the server runs", ["Bash(rm -rf build/:*)"]),
    ("Never run make all locally", ["Bash(make all:*)"]),
    # full-width (CJK) punctuation right after the command ends it as ASCII punctuation does
    # (a newcomer got "Bash(npm:*)", which blocks every npm command)
    ("不要运行 npm publish，发布由 CI 完成。", ["Bash(npm publish:*)"]),
    ("禁止运行 npm publish。", ["Bash(npm publish:*)"]),
    ("不要运行 npm publish, 发布由 CI 完成.", ["Bash(npm publish:*)"]),
    ("禁止运行 git push --force！改用 --force-with-lease", ["Bash(git push --force:*)"]),
    ("不要运行 npm publish发布", ["Bash(npm publish:*)"]),
    ("不要用 npm，用 pnpm", ["Bash(npm:*)"]),
]


@pytest.mark.parametrize(("text", "expected"), SUGGESTIONS)
def test_suggestions_from_the_text(text: str, expected: list[str]) -> None:
    assert suggest(text) == expected


@pytest.mark.parametrize("text", ["不要运行 npm publish，发布由 CI 完成。", "禁止运行 npm publish。"])
def test_remember_suggests_the_command_before_full_width_punctuation(ws: Path, run: Runner, text: str) -> None:
    """Newcomer fault: ``memcli remember "不要运行 npm publish，发布由 CI 完成。"`` suggested
    --deny 'Bash(npm:*)', which would block every npm command."""
    out = run("remember", text)
    assert out.code == 0, out
    assert "--deny 'Bash(npm publish:*)'" in out.err and "Bash(npm:*)" not in out.err, out


# --- writing -------------------------------------------------------------------------------


def test_remember_stores_guards_and_refuses_a_bad_one(ws: Path, run: Runner) -> None:
    out = run("--json", "remember", "Use pnpm, never npm, for packages in this repository",
              "--deny", "Bash(npm install:*)", "--ask", "Edit(migrations/**)")
    assert out.code == 0, out
    memory = out.json()["data"]["memory"]
    assert memory["guards"] == [{"deny": "Bash(npm install:*)"}, {"ask": "Edit(migrations/**)"}]
    text = (ws / memory["path"]).read_text(encoding="utf-8")
    assert "guards:\n  - deny: Bash(npm install:*)\n  - ask: Edit(migrations/**)\n" in text
    before = subprocess.run(["git", "-C", str(ws), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    bad = run("remember", "Never touch the vendored code", "--deny", "Vendor(x)")
    assert bad.code == 5 and bad.err.count("\n") == 1 and "unknown tool 'Vendor'" in bad.err, bad
    assert subprocess.run(["git", "-C", str(ws), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout == before
    hint = run("remember", "Never run git push --force on main")
    assert "--deny 'Bash(git push --force:*)'" in hint.err, hint


def _hook(run: Runner, agent: str, payload: dict, cwd: Path) -> dict | str:
    event = "post-tool-use" if payload.get("hook_event_name") == "AfterTool" else "pre-tool-use"
    out = run("hook", agent, event, input=json.dumps(payload), cwd=cwd)
    assert out.code == 0, out
    return json.loads(out.out) if out.out.strip() else ""


def _claude(command: str, cwd: Path, session: str = "s1") -> dict:
    return {"session_id": session, "transcript_path": "", "cwd": str(cwd), "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": command, "description": "install"}}


def _codex(command: str, cwd: Path) -> dict:  # the pre-tool-use.command.input schema of Codex 0.171
    return {"session_id": "c1", "transcript_path": None, "cwd": str(cwd), "hook_event_name": "PreToolUse",
            "model": "gpt-5", "permission_mode": "default", "turn_id": "t1", "tool_name": "Bash",
            "tool_use_id": "call_1", "tool_input": {"command": command}}


def _gemini(command: str, cwd: Path) -> dict:  # BeforeTool of Gemini CLI 0.61
    return {"session_id": "g1", "transcript_path": "", "cwd": str(cwd), "hook_event_name": "BeforeTool",
            "timestamp": "2026-12-03T00:00:00Z", "tool_name": "run_shell_command",
            "tool_input": {"command": command, "description": "install"}}


def test_every_agent_denies_a_guarded_call_quoting_the_memory(ws: Path, run: Runner, tmp_path: Path) -> None:
    mid = run("--json", "remember", "Use pnpm, never npm, for packages in this repository",
              "--deny", "Bash(npm install:*)").json()["data"]["id"]
    folder = tmp_path / "code"
    folder.mkdir()
    claude = _hook(run, "claude", _claude("npm install left-pad", folder), folder)
    assert isinstance(claude, dict)
    out = claude["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "deny"
    assert mid in out["permissionDecisionReason"]
    assert "Use pnpm, never npm, for packages in this repository" in out["permissionDecisionReason"]
    assert _hook(run, "claude", _claude("pnpm install left-pad", folder), folder) == ""
    assert _hook(run, "claude", _claude("cd web && FOO=1 npm install x", folder), folder) != ""
    codex = _hook(run, "codex", _codex("npm install left-pad", folder), folder)
    assert isinstance(codex, dict) and codex["hookSpecificOutput"]["permissionDecision"] == "deny"
    gemini = _hook(run, "gemini", _gemini("npm install left-pad", folder), folder)
    assert isinstance(gemini, dict) and gemini["decision"] == "deny" and mid in gemini["reason"]
    stats = run("--json", "stats").json()["data"]
    assert stats["usage"]["denied"] == 4
    row = next(r for r in stats["perMemory"] if r["id"] == mid)
    assert row["denied"] == 4
    table = run("stats", "--memories")
    assert mid in table.out and "denied" in table.out


@pytest.mark.parametrize(("agent", "command"), [
    ("claude", "for i in 1; do npm install x; done"),
    ("claude", "sudo -u bob -E npm install x"),
    ("codex", "if true; then /usr/bin/npm install x; fi"),
    ("gemini", "eval \"npm install x\""),
    ("claude", "xargs npm install < list"),
    ("claude", "find web -maxdepth 0 -execdir npm install x \\;"),
    ("gemini", "su -c 'npm install x' bob"),
    ("codex", "uv run --with x npm install y"),
])
def test_shell_syntax_around_a_command_does_not_get_it_past_a_deny(ws: Path, run: Runner, tmp_path: Path,
                                                                    agent: str, command: str) -> None:
    """Newcomer fault (HIGH): under deny Bash(npm install:*) a loop, an if, sudo, a path-qualified
    npm, eval or xargs around npm install got no decision from the real pre-tool hook."""
    mid = run("--json", "remember", "Use pnpm, never npm", "--deny", "Bash(npm install:*)").json()["data"]["id"]
    payload = {"claude": _claude, "codex": _codex, "gemini": _gemini}[agent](command, tmp_path)
    found, reason = _decision(_hook(run, agent, payload, tmp_path))
    assert found == "deny" and mid in reason and "Bash(npm install:*)" in reason, reason
    fine = {"claude": _claude, "codex": _codex, "gemini": _gemini}[agent](command.replace("npm", "pnpm"), tmp_path)
    assert _hook(run, agent, fine, tmp_path) == ""


def test_ask_is_asked_by_claude_and_denied_by_codex(ws: Path, run: Runner, tmp_path: Path) -> None:
    run("remember", "Deploys go through the release checklist", "--ask", "Bash(make deploy:*)")
    claude = _hook(run, "claude", _claude("make deploy prod", tmp_path), tmp_path)
    assert isinstance(claude, dict) and claude["hookSpecificOutput"]["permissionDecision"] == "ask"
    codex = _hook(run, "codex", _codex("make deploy prod", tmp_path), tmp_path)
    assert isinstance(codex, dict) and codex["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "cannot ask" in codex["hookSpecificOutput"]["permissionDecisionReason"]
    gemini = _hook(run, "gemini", _gemini("make deploy prod", tmp_path), tmp_path)
    assert isinstance(gemini, dict) and gemini["decision"] == "ask"


def test_a_warn_guard_lets_the_call_through_and_counts_a_violation(ws: Path, run: Runner, tmp_path: Path) -> None:
    mid = run("--json", "remember", "Prefer make test over calling pytest directly",
              "--warn", "Bash(pytest:*)").json()["data"]["id"]
    answer = _hook(run, "claude", _claude("pytest -x tests", tmp_path), tmp_path)
    assert isinstance(answer, dict) and "permissionDecision" not in answer["hookSpecificOutput"]
    assert mid in answer["hookSpecificOutput"]["additionalContext"]  # delivered: the memory is about this command
    row = next(r for r in run("--json", "stats").json()["data"]["perMemory"] if r["id"] == mid)
    assert row["violated"] == 1 and row["delivered"] == 1


@pytest.mark.parametrize("pattern", ["Bash", "Bash(*)", "Bash(* *)"])
def test_a_teammates_guard_on_the_whole_shell_warns_and_only_ones_own_denies(ws: Path, run: Runner, tmp_path: Path,
                                                                            pattern: str) -> None:
    """Red team, stop 35 (HIGH 10): a teammate's memory with ``deny: Bash`` passed review like
    any memory and stopped alice's agent from running any command. A guard that takes a
    working tool away is enforced only from the reader's own memories; a teammate's counts as
    ``warn`` (delivered, counted), and a teammate's guard on a command still denies."""
    whole = run("--actor", "bob", "--json", "remember", "Agents must not use the shell in this repository",
                "--deny", pattern).json()["data"]["id"]
    narrow = run("--actor", "bob", "--json", "remember", "Never force-push to main",
                 "--deny", "Bash(git push --force:*)").json()["data"]["id"]
    for agent, payload in (("claude", _claude("ls -la", tmp_path)), ("codex", _codex("git status", tmp_path)),
                           ("gemini", _gemini("make test", tmp_path))):
        decision, _ = _decision(_hook(run, agent, payload, tmp_path))
        assert decision == "", (agent, decision)
    answer = _hook(run, "claude", _claude("make build", tmp_path, session="s2"), tmp_path)
    assert isinstance(answer, dict) and whole in answer["hookSpecificOutput"]["additionalContext"]
    assert "permissionDecision" not in answer["hookSpecificOutput"]
    found, reason = _decision(_hook(run, "claude", _claude("git push --force origin main", tmp_path), tmp_path))
    assert found == "deny" and narrow in reason and whole not in reason
    found, _ = _decision(_hook(run, "claude", _claude("x=1; " + "true && " * 1200 + "true", tmp_path), tmp_path))
    assert found == "deny"  # the teammate's command guard still refuses what it cannot check
    row = next(r for r in run("--json", "stats").json()["data"]["perMemory"] if r["id"] == whole)
    assert row["violated"] >= 1 and not row.get("denied")
    assert f"enforced: counts {pattern}" in run("context").out  # said as the hook enforces it for alice
    assert f"enforced: denies {pattern}" in run("--actor", "bob", "context").out
    own = run("--json", "remember", "No shell for agents here, my call", "--deny", pattern).json()["data"]["id"]
    found, reason = _decision(_hook(run, "claude", _claude("git status", tmp_path, session="s3"), tmp_path))
    assert found == "deny" and own in reason and whole not in reason


@pytest.mark.parametrize("depth", [10, 500, 2000])
def test_a_nested_tool_input_never_gets_a_call_past_a_deny(ws: Path, run: Runner, tmp_path: Path, depth: int) -> None:
    """Newcomer, stop 36 (HIGH): a field nested 500-989 deep in the tool input made the hook
    exit 5 with no answer, and from 990 deep (past json's reader) exit 0 with no decision: the
    call went through a deny guard. Every hook exits 0, and an input memcli cannot read is
    refused while a deny guard is in force."""
    mid = run("--json", "remember", "Never force-push", "--deny", "Bash(git push --force:*)").json()["data"]["id"]
    payload = json.dumps(_claude("git push --force", tmp_path))
    nested = payload.replace('"description": "install"', '"x": ' + "[" * depth + "]" * depth)
    found, reason = _decision(_hook_raw(run, "claude", nested, tmp_path))
    assert found == "deny" and mid in reason, reason


def test_an_unreadable_tool_input_without_guards_is_let_through(ws: Path, run: Runner, tmp_path: Path) -> None:
    run("remember", "Deploys go out on Tuesdays")
    assert _hook_raw(run, "claude", '{"tool_input": ' + "[" * 3000 + "]" * 3000 + "}", tmp_path) == ""
    assert _hook_raw(run, "claude", "not json", tmp_path) == ""


@pytest.mark.parametrize("cwd", ["{}/\u0000", "{}/" + "x" * 5000])
def test_a_cwd_that_cannot_be_read_fails_closed(ws: Path, run: Runner, tmp_path: Path, cwd: str) -> None:
    """Newcomer, stop 36: a NUL byte (or an over-long name) in the hook's cwd raised in the guard
    matching, the hook said "memcli hook failed" and the denied call went through."""
    mid = run("--json", "remember", "Never read the env file", "--deny", "Read(.env)").json()["data"]["id"]
    raw = json.dumps({"session_id": "s", "cwd": "CWD", "hook_event_name": "PreToolUse", "tool_name": "Read",
                      "tool_input": {"file_path": ".env"}}).replace("CWD", cwd.format(tmp_path))
    found, reason = _decision(_hook_raw(run, "claude", raw, tmp_path))
    assert found == "deny" and mid in reason, reason


def _hook_raw(run: Runner, agent: str, raw: str, cwd: Path) -> dict | str:
    out = run("hook", agent, "pre-tool-use", input=raw, cwd=cwd)
    assert out.code == 0, out
    return json.loads(out.out) if out.out.strip() else ""


@pytest.mark.parametrize(("pattern", "away"), [
    ("Bash", True), ("Bash(*)", True), ("Bash(**)", True), ("Bash(* *)", True), ("Edit", True), ("Edit(**)", True),
    ("Edit(/**)", True), ("Edit(//**)", True), ("Read(**)", True), ("Read(/**)", True), ("Write(**)", True),
    ("Bash(git:*)", False), ("Bash(git push --force:*)", False), ("Edit(migrations/**)", False),
    ("Read(.env)", False), ("Edit(*.py)", False), ("Read(~/**)", False), ("WebFetch", False)])
def test_which_guards_take_a_working_tool_away(pattern: str, away: bool) -> None:
    """Red team, stop 36 (F5): Bash(* *), Edit(**), Read(/**) and the like from a teammate were
    enforced, though they stop every ordinary call as surely as the tool alone."""
    assert g.takes_tool_away(g.Guard("deny", g.parse(pattern))) is away
    assert g.takes_tool_away(g.Guard("warn", g.parse(pattern))) is False


def test_an_agents_guard_waits_for_review_and_is_enforced_once_approved(ws: Path, run: Runner, tmp_path: Path) -> None:
    out = run("--json", "remember", "Never run the seed script against production", "--source-type",
              "model_derived", "--deny", "Bash(./seed.sh:*)")
    assert out.json()["data"]["memory"]["status"] == "pending_review"
    mid = out.json()["data"]["id"]
    assert _hook(run, "claude", _claude("./seed.sh prod", tmp_path), tmp_path) == ""  # pending: not enforced
    assert run("--actor", "bob", "approve", mid).code == 0
    denied = _hook(run, "claude", _claude("./seed.sh prod", tmp_path), tmp_path)
    assert isinstance(denied, dict) and denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    context = run("context").out
    assert "enforced: denies Bash(./seed.sh:*)" in context


def test_a_command_memory_is_delivered_once_before_that_command(tmp_path: Path, run: Runner,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "Makefile").write_text("e2e:\n\techo ok\nlint:\n\techo ok\n", encoding="utf-8")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(code), *args], check=True)
    assert run("init", str(code)).code == 0  # the store on the code's memory branch
    monkeypatch.delenv("MEMCLI_WORKSPACE", raising=False)
    written = run("--json", "remember", "Run make e2e only with the staging database up", cwd=code).json()["data"]
    assert "make e2e" in (written["memory"].get("anchor") or {}).get("commands", []), written
    first = _hook(run, "claude", _claude("cd code && make e2e", code, session="s9"), code)
    assert isinstance(first, dict) and written["id"] in first["hookSpecificOutput"]["additionalContext"]
    assert _hook(run, "claude", _claude("make e2e", code, session="s9"), code) == ""  # once per session
    assert _hook(run, "claude", _claude("make lint", code, session="s10"), code) == ""


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_check_refuses_a_guard_added_to_an_existing_memory_by_hand(ws: Path, run: Runner) -> None:
    start = git(ws, "rev-parse", "HEAD")
    path = ws / run("--json", "remember", "Keep migrations reversible").json()["data"]["memory"]["path"]
    text = path.read_text(encoding="utf-8").replace("\n---\n", "\nguards:\n  - deny: Edit(migrations/**)\n---\n", 1)
    path.write_text(text, encoding="utf-8")
    git(ws, "commit", "-qam", "add a guard by hand")
    out = run_memcli("-w", str(ws), "check", f"{start}..HEAD")
    assert out.code == 17, out
    assert "adds a guard (deny Edit(migrations/**)) to an existing memory" in out.err
    # written by memcli, the guard is on a new memory (supersede): a normal write
    start = git(ws, "rev-parse", "HEAD")
    fresh = run("remember", "Use the release script", "--deny", "Bash(npm publish:*)")
    assert fresh.code == 0
    assert run_memcli("-w", str(ws), "check", f"{start}..HEAD").code == 0


@pytest.mark.slow
def test_the_mcp_remember_tool_takes_guards_and_its_proposal_waits(ws: Path) -> None:
    from test_mcp_server import ClientSession, drive, text_of

    async def steps(client: ClientSession) -> None:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        schema = listed["remember"].input_schema["properties"]
        assert "deny" in schema and "ask" in schema
        done = await client.call_tool("remember", {"text": "Never publish from a laptop",
                                                   "deny": ["Bash(npm publish:*)"]})
        assert not done.is_error, text_of(done)
        memory = done.structured_content["memory"]
        assert memory["status"] == "pending_review" and memory["guards"] == [{"deny": "Bash(npm publish:*)"}]
        bad = await client.call_tool("remember", {"text": "Never touch vendor", "deny": ["Vendor(x)"]})
        assert bad.is_error and "unknown tool 'Vendor'" in text_of(bad)
    drive(ws, steps)


# --- violations from the transcript at session end -------------------------------------------

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
#: each agent's recorded session (tests/fixtures/transcripts/README.md): `npm install left-pad`
#: denied by the hook, then `pnpm install left-pad` and `pytest -q` run
GUARDED = {"claude": "claude-2.1.332-guarded.jsonl", "codex": "codex-0.171.0-guarded.jsonl",
           "gemini": "gemini-0.61.0-guarded.jsonl"}
BEFORE = {"MEMCLI_NOW": "2026-12-01T00:00:00Z"}  # the sessions were recorded on 2026-12-06


def _end(run: Runner, agent: str, session: str, transcript: Path, cwd: Path) -> Result:
    payload = {"session_id": session, "transcript_path": str(transcript), "cwd": str(cwd),
               "hook_event_name": "SessionEnd", "reason": "exit"}
    out = run("hook", agent, "session-end", input=json.dumps(payload), cwd=cwd)
    assert out.code == 0 and out.out == "", out
    return out


def _violated(run: Runner) -> dict[str, int]:
    return {r["id"]: r["violated"] for r in run("--json", "stats", "--memories").json()["data"]["perMemory"]}


@pytest.mark.parametrize("agent", sorted(GUARDED))
@pytest.mark.slow
def test_session_end_counts_the_guarded_calls_the_transcript_shows_ran(ws: Path, run: Runner, tmp_path: Path,
                                                                       agent: str) -> None:
    def remember(text: str, flag: str, pattern: str, env: dict[str, str] = BEFORE) -> str:
        return run("--json", "remember", text, flag, pattern, env=env).json()["data"]["id"]
    npm = remember("Use pnpm, never npm, for packages in this repository", "--deny", "Bash(npm install:*)")
    pytest_ = remember("Prefer make test to calling pytest directly", "--warn", "Bash(pytest:*)")
    pnpm = remember("Packages are added by the release owner only", "--deny", "Bash(pnpm install:*)")
    later = remember("Run the tests in the container", "--deny", "Bash(pytest -q)", env={})  # after the session
    out = _end(run, agent, "recorded-session", FIXTURES / GUARDED[agent], tmp_path)
    assert "2 guard violations" in out.err, out
    counts = _violated(run)
    # blocked by the hook (the transcript shows the refusal): no violation; the two calls that ran
    # unseen by a pre-tool hook: one each; a memory written after the call: none
    assert (counts.get(npm, 0), counts[pytest_], counts[pnpm], counts.get(later, 0)) == (0, 1, 1, 0)
    _end(run, agent, "recorded-session", FIXTURES / GUARDED[agent], tmp_path)  # a resumed session ends again
    assert _violated(run) == counts
    rows = [json.loads(line) for line in (ws / ".cache" / "usage.jsonl").read_text().splitlines()]
    found = [r for r in rows if r.get("source") == "transcript"]
    assert len(found) == 2 and all(len(r["call"]) == 16 for r in found)
    assert {key for r in found for key in r} == {"at", "actor", "agent", "session", "event", "ids", "pattern", "call",
                                                "source"}  # no command, no text


def test_a_call_the_hook_already_counted_is_not_counted_again(ws: Path, run: Runner, tmp_path: Path) -> None:
    mid = run("--json", "remember", "Prefer make test to calling pytest directly", "--warn", "Bash(pytest:*)",
              env=BEFORE).json()["data"]["id"]
    # the hook saw the call (a warn guard lets it through and counts it), then the session ends
    assert _hook(run, "claude", _claude("pytest -q", tmp_path, session="seen"), tmp_path) != ""
    _end(run, "claude", "seen", FIXTURES / GUARDED["claude"], tmp_path)
    assert _violated(run)[mid] == 1


def test_the_usage_journal_shows_each_person_only_their_own_sessions(ws: Path, run: Runner, tmp_path: Path) -> None:
    mid = run("--json", "remember", "Use pnpm, never npm", "--deny", "Bash(npm install:*)").json()["data"]["id"]
    _hook(run, "claude", _claude("npm install left-pad", tmp_path, session="alices"), tmp_path)
    mine = run("--json", "stats", "--memories").json()["data"]
    theirs = run("--actor", "bob", "--json", "stats", "--memories").json()["data"]
    assert mine["usage"]["denied"] == 1 and [r["id"] for r in mine["perMemory"]] == [mid]
    assert theirs["usage"]["denied"] == 0 and theirs["perMemory"] == []
    assert "alices" not in (ws / ".cache" / "usage.jsonl").read_text()  # the session id is hashed


def test_gemini_gets_a_files_memory_after_the_tool_and_only_guards_before_it(tmp_path: Path, run: Runner,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    code = tmp_path / "code"
    (code / "src").mkdir(parents=True)
    (code / "src" / "billing.py").write_text("RATE_CENTS = 300\n", encoding="utf-8")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(code), *args], check=True)
    assert run("init", str(code)).code == 0
    monkeypatch.delenv("MEMCLI_WORKSPACE", raising=False)
    mid = run("--json", "remember", "Billing amounts are integer cents", "--path", "src/billing.py",
              cwd=code).json()["data"]["id"]
    assert run("recall", "cents", cwd=code).code == 0  # the index built before the hooks and their 2 s deadline
    call = {"session_id": "g7", "transcript_path": "", "cwd": str(code), "tool_name": "read_file",
            "tool_input": {"file_path": str(code / "src" / "billing.py")}}
    before = _hook(run, "gemini", {**call, "hook_event_name": "BeforeTool"}, code)
    assert before == ""  # Gemini CLI 0.61 would drop a BeforeTool context: nothing is given, nothing counted
    after = _hook(run, "gemini", {**call, "hook_event_name": "AfterTool",
                                  "tool_response": {"llmContent": "RATE_CENTS = 300"}}, code)
    assert isinstance(after, dict) and after["hookSpecificOutput"]["hookEventName"] == "AfterTool"
    assert mid in after["hookSpecificOutput"]["additionalContext"]
    assert _hook(run, "gemini", {**call, "hook_event_name": "AfterTool"}, code) == ""  # once per session
    rows = run("--json", "stats", "--memories", cwd=code).json()["data"]["perMemory"]
    assert [(r["id"], r["delivered"]) for r in rows] == [(mid, 1)]


# --- decay by use: compact's candidates to retire ----------------------------------------------


def test_compact_proposes_memories_no_session_was_given_for_90_days(ws: Path, run: Runner) -> None:
    old = {"MEMCLI_NOW": "2026-01-01T00:00:00Z"}
    used = run("--json", "remember", "The staging database is ledger_stage", env=old).json()["data"]["id"]
    idle = run("--json", "remember", "The old CI ran on Jenkins", env=old).json()["data"]["id"]
    now = {"MEMCLI_NOW": "2026-12-01T00:00:00Z"}

    def candidates() -> list[str]:
        return [c["id"] for c in run("--json", "compact", env=now).json()["data"]["retireCandidates"]]
    assert candidates() == []  # no journal: nothing is known about use, nothing is proposed

    def line(at: str, ids: list[str], actor: str = "alice") -> str:
        return json.dumps({"at": at, "actor": actor, "agent": "claude", "session": "5e55", "event": "injected",
                           "ids": ids}) + "\n"
    journal = ws / ".cache" / "usage.jsonl"
    journal.write_text(line("2026-01-02T00:00:00Z", [used, idle], actor="bob"), encoding="utf-8")
    assert candidates() == []  # another person's journal says nothing of yours
    journal.write_text(line("2026-01-02T00:00:00Z", [used, idle]) + line("2026-11-20T00:00:00Z", [used]),
                       encoding="utf-8")
    assert candidates() == [idle]
    assert f"candidate to retire {idle}" in run("compact", env=now).out
    assert run("--json", "show", idle, env=now).json()["data"]["status"] == "active"  # proposed only


# --- calls memcli cannot check in full -------------------------------------------------------

TOO_MANY = "true && " * g.MAX_PARTS + "npm install x"  # the guarded part is past the last one read
TOO_LONG = "npm install " + "a" * 200_000


def _decision(answer: dict | str) -> tuple[str, str]:
    if not isinstance(answer, dict):
        return "", ""
    if "decision" in answer:  # Gemini CLI
        return answer["decision"], answer["reason"]
    out = answer["hookSpecificOutput"]
    return out.get("permissionDecision", ""), out.get("permissionDecisionReason", "")


UNCHECKED = [
    # (guard, agent, command, env, decision, the limit the reason names)
    ("--deny", "claude", TOO_MANY, {}, "deny", "more than 1,000 simple commands"),
    ("--deny", "codex", TOO_MANY, {}, "deny", "more than 1,000 simple commands"),
    ("--deny", "gemini", TOO_MANY, {}, "deny", "more than 1,000 simple commands"),
    ("--deny", "claude", TOO_LONG, {}, "deny", "over the limit of 100,000"),
    ("--ask", "claude", TOO_MANY, {}, "ask", "more than 1,000 simple commands"),
    ("--ask", "codex", TOO_LONG, {}, "deny", "cannot ask"),
    ("--ask", "gemini", TOO_LONG, {}, "ask", "over the limit of 100,000"),
    # past the hook's deadline while the guards are matched
    ("--deny", "claude", "ls", {"MEMCLI_TEST_STALL_AT": "guards:matching"}, "deny", "deadline"),
    ("--ask", "codex", "ls", {"MEMCLI_TEST_STALL_AT": "guards:matching"}, "deny", "deadline"),
    # no deny or ask guard on the shell: nothing to refuse
    ("--warn", "claude", TOO_MANY, {}, "", ""),
    ("--warn", "claude", "ls", {"MEMCLI_TEST_STALL_AT": "guards:matching"}, "", ""),
]


@pytest.mark.parametrize(("flag", "agent", "command", "env", "decision", "said"), UNCHECKED)
@pytest.mark.slow
def test_a_call_too_long_or_complex_to_check_is_not_let_through(ws: Path, run: Runner, tmp_path: Path,
                                                                flag: str, agent: str, command: str,
                                                                env: dict[str, str], decision: str,
                                                                said: str) -> None:
    mid = run("--json", "remember", "Use pnpm, never npm", flag, "Bash(npm install:*)").json()["data"]["id"]
    run("remember", "Migrations are written by the release owner", "--deny", "Edit(migrations/**)")
    payload = {"claude": _claude, "codex": _codex, "gemini": _gemini}[agent](command, tmp_path)
    out = run("hook", agent, "pre-tool-use", input=json.dumps(payload), cwd=tmp_path, env=env)
    assert out.code == 0, out
    answer = json.loads(out.out) if out.out.strip() else ""
    found, reason = _decision(answer)
    assert found == decision, out
    if decision:
        assert "too long or complex to check against the guards" in reason and said in reason, reason
        assert mid in reason and "Bash(npm install:*)" in reason
        assert "migrations" not in reason  # only the guards on the call's tool


def test_a_patch_over_the_file_limit_is_not_let_through(ws: Path, run: Runner, tmp_path: Path) -> None:
    from memcli.agents.tool_calls import MAX_FILES

    run("remember", "Migrations are written by the release owner", "--deny", "Edit(migrations/**)")
    files = [f"src/f{i}.py" for i in range(MAX_FILES)] + ["migrations/001.sql"]
    patch = "*** Begin Patch\n" + "".join(f"*** Add File: {f}\n+x\n" for f in files) + "*** End Patch\n"
    payload = {**_codex("", tmp_path), "tool_name": "apply_patch", "tool_input": {"command": patch}}
    found, reason = _decision(_hook(run, "codex", payload, tmp_path))
    assert found == "deny" and f"more than {MAX_FILES} files" in reason, reason
    payload["tool_input"] = {"command": patch.replace("*** Add File: src/f0.py\n+x\n", "")}  # 20 files: read whole
    found, reason = _decision(_hook(run, "codex", payload, tmp_path))
    assert found == "deny" and "says:" in reason, reason  # denied by the memory itself


@pytest.mark.parametrize("line", ["*** Add File: generated/api.ts\n+x\n",
                                  "*** Update File: generated/api.ts\n@@\n-a\n+b\n"])
def test_a_write_guard_holds_for_a_file_a_codex_patch_writes(ws: Path, run: Runner, tmp_path: Path,
                                                             line: str) -> None:
    """Stop 32's leftover: a ``Write(path)`` guard did not hold for a file Codex's apply_patch adds
    (the patch read as an Edit call only, and a Write rule covers no Edit call). Codex's hooks
    match apply_patch as Edit and as Write, so both kinds of rule hold for it."""
    run("remember", "generated/ is written by the code generator only", "--deny", "Write(generated/**)")
    patch = f"*** Begin Patch\n{line}*** End Patch\n"
    payload = {**_codex("", tmp_path), "tool_name": "apply_patch", "tool_input": {"command": patch}}
    found, reason = _decision(_hook(run, "codex", payload, tmp_path))
    assert found == "deny" and "Write(generated/**)" in reason, reason
    payload["tool_input"] = {"command": patch.replace("generated/api.ts", "src/api.ts")}
    assert _decision(_hook(run, "codex", payload, tmp_path))[0] == ""  # another file: not this guard's


MALFORMED_CALLS = [
    ("Read", {"file_path": ["/p/.env"]}),  # a path as a list
    ("Read", {"file_path": 7}),
    ("Read", "/p/.env"),  # tool_input not an object
    ("Bash", "npm install x"),
    ("Bash", {"command": {"argv": ["npm", "install"]}}),
    ("Bash", {"command": ["npm", 3]}),
    ("Bash", {"command": None}),  # newcomer fault: a null command was let through
    ("Bash", {}),  # no command at all
    ("Bash", {"description": "install", "timeout": 60000}),
    ("Bash", {"cmd": None, "workdir": "/p"}),
]


@pytest.mark.parametrize(("agent", "tool", "tool_input", "malformed"), [
    # (agent, tool_name, tool_input, read as malformed): each agent names its shell command
    # "command" (Codex's exec_command: "cmd"); a call with neither, or a null, runs nothing memcli can read
    ("claude", "Bash", {"command": "npm install x", "description": "install"}, False),
    ("codex", "exec_command", {"cmd": "npm install x"}, False),
    ("codex", "shell", {"command": ["bash", "-lc", "npm install x"]}, False),
    ("gemini", "run_shell_command", {"command": "npm install x", "dir_path": "web"}, False),
    ("claude", "Bash", {"command": ""}, False),  # an empty command runs nothing
    ("claude", "Bash", {"command": None}, True),
    ("claude", "Bash", {}, True),
    ("codex", "exec_command", {"cmd": None}, True),
    ("gemini", "run_shell_command", {"description": "install"}, True),
    ("claude", "Bash", {"command": []}, True),
])
def test_a_shell_call_without_a_command_is_malformed(agent: str, tool: str, tool_input: dict,
                                                     malformed: bool) -> None:
    from memcli.agents.tool_calls import call_of

    call = call_of(agent, tool, tool_input)
    assert call is not None and call.malformed is malformed and bool(g.unchecked(call)) is malformed
    if not malformed and call.command:
        assert g.matches(g.parse("Bash(npm install:*)"), call)


@pytest.mark.parametrize(("tool", "tool_input"), MALFORMED_CALLS)
def test_a_tool_call_in_no_form_an_agent_sends_is_not_let_through_a_guard(ws: Path, run: Runner, tmp_path: Path,
                                                                       tool: str, tool_input: object) -> None:
    """Newcomer fault (stop 32): with a deny guard on Read(.env) or Bash(npm install:*) in force,
    a pre-tool-use input whose file path or command memcli cannot read (a list, a number, a
    tool_input that is not an object) got no answer at all: let through unchecked, against
    guards.md's promise. It is refused, naming why, as a call too long to check is."""
    run("remember", "Never read .env", "--deny", "Read(.env)")
    run("remember", "Use pnpm, never npm", "--deny", "Bash(npm install:*)")
    payload = {"session_id": "s1", "transcript_path": "", "cwd": str(tmp_path), "hook_event_name": "PreToolUse",
               "tool_name": tool, "tool_input": tool_input}
    found, reason = _decision(_hook(run, "claude", payload, tmp_path))
    assert found == "deny" and "not in the form its agent sends" in reason, reason
    fine = {**payload, "tool_input": {"file_path": str(tmp_path / "README.md")} if tool == "Read"
            else {"command": "pnpm install"}}
    assert _hook(run, "claude", fine, tmp_path) == ""  # a well-formed call the guards do not match


def test_a_malformed_call_on_a_tool_no_guard_holds_is_let_through(ws: Path, run: Runner, tmp_path: Path) -> None:
    run("remember", "Never read .env", "--deny", "Read(.env)")
    payload = {"session_id": "s1", "transcript_path": "", "cwd": str(tmp_path), "hook_event_name": "PreToolUse",
               "tool_name": "Bash", "tool_input": "npm install x"}
    assert _hook(run, "claude", payload, tmp_path) == ""


def test_the_catalog_gives_the_guarded_memories_from_the_index_without_decoding_the_rest(ws: Path, run: Runner) -> None:
    """The pre-tool hook reads the memories with guards (and anchor commands) through
    ``Catalog.guarded``, not every active memory (1.1-1.8 s at 10,000 memories, stop 34): the
    index's answer is the scan's, and a text that quotes the key is no guard."""
    from memcli.index.catalog import ScanCatalog
    from memcli.service import Ctx

    ids = [run("--json", "remember", f"Never run tool{n} reset", "--deny",
               f"Bash(tool{n} reset:*)").json()["data"]["id"] for n in range(3)]
    run("remember", 'The JSON holds "guards": [ and "commands": [ keys')
    run("remember", "Plain memory about ports")
    retired = run("--json", "remember", "Never run tool9 reset", "--deny", "Bash(tool9 reset:*)").json()["data"]["id"]
    assert run("forget", retired).code == 0
    ctx = Ctx.open(str(ws))
    catalog = ctx.catalog()
    assert sorted(m.id for m in catalog.guarded()) == sorted(ids)
    assert sorted(m.id for m in ScanCatalog(ctx.ws.files.scan()).guarded()) == sorted(ids)


@pytest.mark.parametrize(("agent", "committed"), [("claude", False), ("gemini", False), ("claude", True)])
def test_a_guard_holds_while_its_memory_file_does_not_read(ws: Path, run: Runner, tmp_path: Path, agent: str,
                                                          committed: bool) -> None:
    """Newcomer MEDIUM (stop 34): a stray edit that broke a guarded memory's YAML switched its
    guard off (the pre-tool hook let npm install through). The committed version's guard holds
    until the file reads again; and once the broken edit is committed with plain git (newcomer,
    stop 36: the guard then went out of force), the last committed version that reads."""
    mid = run("--json", "remember", "Use pnpm, never npm", "--deny", "Bash(npm install:*)").json()["data"]["id"]
    path = next((ws / "memories").rglob(f"{mid}*.md"))
    path.write_text(path.read_text(encoding="utf-8").replace("status: active", "status: [active"), encoding="utf-8")
    if committed:
        git(ws, "commit", "-qam", "tweak")
    assert "skipped" in run("recall", "pnpm").err  # the file does not read now
    payload = {"claude": _claude, "gemini": _gemini}[agent]("npm install x", tmp_path)
    found, reason = _decision(_hook(run, agent, payload, tmp_path))
    assert found == "deny" and mid in reason and "Bash(npm install:*)" in reason, reason
    assert _hook(run, agent, {"claude": _claude, "gemini": _gemini}[agent]("pnpm install x", tmp_path), tmp_path) == ""
