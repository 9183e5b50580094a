"""The warm fork server (memcli/cli/zygote.py, memcli/cli/zygote_client.py), with real processes:
a hot command answers the same through it as in-process, in the client's folder and
environment; a dead, stopped, stale or foreign server is never waited on past the budget
nor handed anything; the server exits when idle; a Ctrl-C reaches the command.

Every test here has its own socket folder (``$XDG_RUNTIME_DIR``) and stops the servers it
started (the ``zygote`` fixture); everywhere else tests/conftest.py turns the server off.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from planted import Planted

from memcli.cli import zygote, zygote_client

#: Seconds a test waits for something that takes well under one on an idle machine.
GUARD = 30.0


class Servers:
    """The socket folder of one test, its environment with the server on, and its servers."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.extra: dict[str, str | None] = {}  # None: unset
        self.pids: set[int] = set()

    @property
    def env(self) -> dict[str, str]:
        """The test's environment now, the server on, this test's socket folder, and ``extra``."""
        env = {k: v for k, v in os.environ.items() if k != zygote_client.OFF_ENV}
        env = {**env, "XDG_RUNTIME_DIR": str(self.run_dir), **self.extra}
        return {k: v for k, v in env.items() if v is not None}

    def memcli(self, *args: str, cwd: Path | str | None = None, input: str = "", env: dict | None = None,
               python: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
        """A real ``python -m memcli ARGS`` process, with the server on."""
        return subprocess.run([sys.executable, *python, "-m", "memcli", *args], input=input, capture_output=True,
                              text=True, encoding="utf-8", errors="replace", cwd=cwd, env={**self.env, **(env or {})},
                              timeout=120)

    def sockets(self) -> list[Path]:
        return sorted(self.run_dir.glob(f"memcli-{os.getuid()}/zygote-*.sock"))

    def ping(self, path: Path | None = None) -> tuple[int, int] | None:
        path = path or self.only()
        answer = zygote.ping(str(path), 2.0)
        if answer is not None:
            self.pids.add(answer[0])
        return answer

    def only(self) -> Path:
        found = self.sockets()
        assert len(found) == 1, found
        return found[0]

    def started(self, *args: str, cwd: Path | str | None = None) -> tuple[int, int]:
        """Run ``args`` (in-process: it starts the server after its answer); wait until it serves."""
        done = self.memcli(*args, cwd=cwd)
        assert done.returncode == 0, done.stderr
        limit = time.monotonic() + GUARD
        while time.monotonic() < limit:
            if self.sockets():
                answer = self.ping()
                if answer is not None:
                    return answer
            time.sleep(0.05)
        raise AssertionError(f"no server started; log: {self.log()}")

    def log(self) -> str:
        return "".join(p.read_text() for p in self.run_dir.glob(f"memcli-{os.getuid()}/zygote-*.log"))

    def stop(self) -> None:
        """Stop every server of this test: those it pinged, and any process started with its
        socket folder on the command line (a server still starting, one it never asked)."""
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and str(self.run_dir).encode() in (entry / "cmdline").read_bytes():
                    self.pids.add(int(entry.name))
            except OSError:
                pass
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        for pid in self.pids:
            gone(pid)


def gone(pid: int) -> bool:
    """Wait (up to ``GUARD``) for ``pid`` to end; whether it did."""
    limit = time.monotonic() + GUARD
    while time.monotonic() < limit:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat", "rb") as handle:
                if handle.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def zygote_on():
    run_dir = Path(tempfile.mkdtemp(prefix="mcz-", dir="/tmp"))  # short: a socket's path has at most 107 bytes
    servers = Servers(run_dir)
    try:
        yield servers
    finally:
        servers.stop()
        shutil.rmtree(run_dir, ignore_errors=True)


@pytest.fixture
def filled(ws: Path, run) -> Path:
    for text in ("Deploy billing with make deploy ENV=staging after the migrations",
                 "Use pnpm for every package in this repository",
                 "The deploy script needs AWS_PROFILE set"):
        assert run("remember", text).code == 0
    return ws


def session_start(cwd: Path, session: str) -> str:
    return json.dumps({"session_id": session, "hook_event_name": "SessionStart", "source": "startup",
                       "cwd": str(cwd), "transcript_path": str(cwd / "t.jsonl")})


def prompt(cwd: Path, session: str, text: str) -> str:
    return json.dumps({"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": text,
                       "cwd": str(cwd), "transcript_path": str(cwd / "t.jsonl")})


def same_both_ways(servers: Servers, *args: str, input_of=lambda n: "", cwd=None,
                   env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``args`` in-process and through the server; assert the same status, stdout and
    stderr, and that the server ran the second (it forked one more child than pings)."""
    alone = servers.memcli(*args, cwd=cwd, input=input_of(0), env={**(env or {}), zygote_client.OFF_ENV: "1"})
    _, before = servers.ping()
    served = servers.memcli(*args, cwd=cwd, input=input_of(1), env=env)
    _, after = servers.ping()
    assert after - before == 2, "the command did not go through the server"
    assert (served.returncode, served.stdout, served.stderr) == (alone.returncode, alone.stdout, alone.stderr)
    return served


def test_hot_commands_answer_the_same_through_the_server(zygote_on: Servers, filled: Path) -> None:
    zygote_on.started("context")
    out = same_both_ways(zygote_on, "context")
    assert "Deploy billing" in out.stdout
    out = same_both_ways(zygote_on, "--json", "recall", "deploy")
    assert out.returncode == 0 and json.loads(out.stdout)["data"]["hits"]
    out = same_both_ways(zygote_on, "recall", "deploy")
    assert "Deploy billing" in out.stdout
    out = same_both_ways(zygote_on, "hook", "claude", "session-start",
                         input_of=lambda n: session_start(filled, f"start-{n}"))
    assert "Deploy billing" in json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    out = same_both_ways(zygote_on, "hook", "claude", "user-prompt-submit",
                         input_of=lambda n: prompt(filled, f"prompt-{n}", "how do I deploy billing?"))
    assert "Deploy billing" in out.stdout
    out = same_both_ways(zygote_on, "recall", "--bogus", "deploy")
    assert out.returncode == 2 and out.stderr.startswith("memcli: error: unknown option --bogus")
    out = same_both_ways(zygote_on, "hook", "claude", "session-start", input_of=lambda n: "{not json")
    assert out.returncode == 0


def test_the_clients_environment_folder_and_umask_are_used(zygote_on: Servers, filled: Path, tmp_path: Path,
                                                           run) -> None:
    other = tmp_path / "other"
    assert run("init", str(other)).code == 0
    assert run("remember", "The other workspace keeps its zebra notes here", env={"MEMCLI_WORKSPACE": str(other)}
               ).code == 0
    zygote_on.started("context")  # started with MEMCLI_WORKSPACE=filled
    _, before = zygote_on.ping()
    by_env = zygote_on.memcli("recall", "zebra", env={"MEMCLI_WORKSPACE": str(other)})
    assert by_env.returncode == 0 and "zebra notes" in by_env.stdout
    env = {k: v for k, v in zygote_on.env.items() if k != "MEMCLI_WORKSPACE"}
    # the workspace found from the client's folder, as git finds its repository
    by_cwd = subprocess.run([sys.executable, "-m", "memcli", "recall", "zebra"], capture_output=True, text=True,
                            cwd=other / "memories", env=env, timeout=120)
    assert by_cwd.returncode == 0 and "zebra notes" in by_cwd.stdout
    none = zygote_on.memcli("recall", "deploy", cwd=tmp_path, env={"MEMCLI_WORKSPACE": ""})
    _, after = zygote_on.ping()
    assert after - before == 4, "the three commands went through the server"
    assert none.returncode == 3, none.stderr  # no workspace where the client is: the starter's is not used


def test_stream_encoding_follows_the_client(zygote_on: Servers, filled: Path, run) -> None:
    assert run("remember", "Café au lait is the team's deploy drink").code == 0
    zygote_on.started("context")
    for env in ({"PYTHONIOENCODING": "ascii:backslashreplace"}, {"PYTHONIOENCODING": "utf-8"}):
        alone = zygote_on.memcli("recall", "lait", env={**env, zygote_client.OFF_ENV: "1"})
        served = zygote_on.memcli("recall", "lait", env=env)
        assert served.stdout == alone.stdout and "lait" in served.stdout
    assert "Caf\\xe9" in served.stdout.replace("Café", "") or "Café" in served.stdout


def test_a_dead_server_is_not_waited_on(zygote_on: Servers, filled: Path) -> None:
    installed = subprocess.run([sys.executable, "-c", "from memcli.cli import zygote_client as z; "
                                "print(z.socket_path(z.installation()))"],
                               capture_output=True, text=True, env=zygote_on.env, check=True).stdout.strip()
    # the socket file of a server that died: bound, never listening, its process gone
    Path(installed).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    leftover = socket.socket(socket.AF_UNIX)
    leftover.bind(installed)
    leftover.close()
    out = zygote_on.memcli("recall", "deploy")
    assert out.returncode == 0 and "Deploy billing" in out.stdout
    zygote_on.started("recall", "deploy")  # ... and a new server took the place of the dead one
    assert Path(installed) == zygote_on.only()


def test_a_stopped_server_is_passed_over_and_replaced(zygote_on: Servers, filled: Path) -> None:
    pid, _ = zygote_on.started("context")
    os.kill(pid, signal.SIGSTOP)
    try:
        out = zygote_on.memcli("recall", "deploy")  # the budget passes: answered in-process
        assert out.returncode == 0 and "Deploy billing" in out.stdout
        limit = time.monotonic() + GUARD
        while time.monotonic() < limit:
            answer = zygote_on.ping()
            if answer is not None and answer[0] != pid:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"no new server; log: {zygote_on.log()}")
    finally:
        os.kill(pid, signal.SIGCONT)
    assert gone(pid), "the stopped server did not exit once its socket was taken over"


def test_another_installation_never_reaches_the_server(zygote_on: Servers, filled: Path) -> None:
    pid, _ = zygote_on.started("context")
    first = zygote_on.only()
    _, before = zygote_on.ping(first)
    other = zygote_on.memcli("recall", "deploy", python=("-W", "ignore::UserWarning"))  # other start-up settings
    assert other.returncode == 0 and "Deploy billing" in other.stdout
    _, after = zygote_on.ping(first)
    assert after - before == 1, "a process of another installation reached the server"
    limit = time.monotonic() + GUARD
    while len(zygote_on.sockets()) < 2 and time.monotonic() < limit:
        time.sleep(0.05)
    assert len(zygote_on.sockets()) == 2  # it started its own
    for path in zygote_on.sockets():
        zygote_on.ping(path)


def test_changed_code_is_never_served(zygote_on: Servers, filled: Path, tmp_path: Path) -> None:
    copy = tmp_path / "pkg"
    shutil.copytree(Path(zygote.__file__).parent.parent, copy / "memcli",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PYTHONPATH": str(copy)}
    zygote_on.extra.update(env)
    pid, _ = zygote_on.started("context", cwd=tmp_path)
    hot = copy / "memcli" / "cli" / "hot.py"
    source = hot.read_text()
    assert "'no memories match the query'" in source
    hot.write_text(source.replace("data['note'] or 'no memories match the query'", "'nothing found (edited)'"))
    out = zygote_on.memcli("recall", "zzzyxnothing", cwd=tmp_path)
    assert "nothing found (edited)" in out.stderr, out.stderr  # the edited code ran, in-process
    assert gone(pid), "the server of the old code did not exit"
    zygote_on.started("context", cwd=tmp_path)
    _, before = zygote_on.ping()
    out = zygote_on.memcli("recall", "zzzyxnothing", cwd=tmp_path)
    _, after = zygote_on.ping()
    assert after - before == 2 and "nothing found (edited)" in out.stderr


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_user_gets_nothing(zygote_on: Servers, filled: Path) -> None:
    """A client of another uid is refused by the server (SO_PEERCRED), and a socket another
    uid serves at the client's path is sent nothing: the command runs in-process."""
    pid, _ = zygote_on.started("context")
    path = zygote_on.only()
    spot = Path(tempfile.mkdtemp(prefix="mcz-nobody-", dir="/tmp"))
    try:
        os.chmod(spot, 0o777)
        reachable = spot / "z.sock"
        os.symlink(path, reachable)
        for folder in (zygote_on.run_dir, path.parent):  # only to let nobody reach the socket for this check
            os.chmod(folder, 0o711)
        os.chmod(path, 0o666)
        got = spot / "got"
        child = os.fork()
        if child == 0:
            try:
                os.setgid(65534)
                os.setuid(65534)
                conn = socket.socket(socket.AF_UNIX)
                conn.settimeout(5)
                try:
                    conn.connect(str(reachable))
                    request = b"x" * 64
                    try:
                        conn.sendall(len(request).to_bytes(4, "big") + request)
                        answer = conn.recv(16)
                    except OSError:
                        answer = b"(reset)"
                except OSError as err:
                    answer = repr(err).encode()
                got.write_bytes(b"answer:" + answer)
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        assert got.read_bytes() in (b"answer:", b"answer:(reset)"), got.read_bytes()
    finally:
        for folder in (zygote_on.run_dir, path.parent):
            os.chmod(folder, 0o700)
        os.chmod(path, 0o600)
        shutil.rmtree(spot)
    # a server of nobody planted at the path: the client asks its uid first and sends nothing
    os.kill(pid, signal.SIGTERM)
    assert gone(pid)
    planted = Planted(accepts=1, prefix=b"got:", guard=GUARD)
    try:
        planted.plant(path)
        out = zygote_on.memcli("recall", "deploy")
        assert out.returncode == 0 and "Deploy billing" in out.stdout
        assert planted.received() == b"got:"
    finally:
        planted.remove()


def test_the_server_exits_when_idle(zygote_on: Servers, filled: Path) -> None:
    zygote_on.extra[zygote.IDLE_ENV] = "1"
    pid, _ = zygote_on.started("context")
    assert gone(pid)
    assert zygote_on.sockets() == []
    assert "idle for 1 s" in zygote_on.log()


def test_sigterm_stops_the_server_and_its_socket(zygote_on: Servers, filled: Path) -> None:
    pid, _ = zygote_on.started("context")
    os.kill(pid, signal.SIGTERM)
    assert gone(pid)
    assert zygote_on.sockets() == []


def waiting_hook(servers: Servers, cwd: Path, *command: str) -> tuple[subprocess.Popen, int]:
    """A session-start hook (or ``command``) through the server, waiting for input that does not
    come yet, and the pid of the server's child running it (once it runs: its folder is the client's)."""
    server, _ = servers.ping()
    proc = subprocess.Popen([sys.executable, "-m", "memcli", *(command or ("hook", "claude", "session-start"))],
                            cwd=cwd,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=servers.env)
    limit = time.monotonic() + GUARD
    while time.monotonic() < limit:
        try:
            children = Path(f"/proc/{server}/task/{server}/children").read_text().split()
        except OSError:
            children = []
        for child in children:
            try:
                if os.readlink(f"/proc/{child}/cwd") == str(cwd):
                    return proc, int(child)
            except OSError:
                pass
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("the hook never ran in the server")


def interrupted(servers: Servers, cwd: Path) -> tuple[int, str]:
    """A session-start hook through the server (``waiting_hook``) sent a Ctrl-C: its status and stderr."""
    proc, _ = waiting_hook(servers, cwd)
    try:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=GUARD)
    finally:
        proc.kill()
    return proc.returncode, err


def test_ctrl_c_reaches_the_command(zygote_on: Servers, filled: Path) -> None:
    zygote_on.started("context")
    status, err = interrupted(zygote_on, filled)
    assert status == 130, err
    assert "memcli: interrupted" in err


def test_ctrl_c_before_the_command_begins_is_130_too(zygote_on: Servers, filled: Path) -> None:
    """Seen once in CI (stop 33): a Ctrl-C the client passed on while the child was taking its
    place, before memcli's main guarded against it, ended the child without a status, and the
    client died of the signal (-2). It is the command's interruption: 130, said in one line."""
    zygote_on.started("context")
    zygote_on.extra["MEMCLI_TEST_STALL_AT"] = "zygote:taken-over"  # the child waits there
    status, err = interrupted(zygote_on, filled)
    assert status == 130, err
    assert "memcli: interrupted" in err


def test_a_command_whose_child_is_killed_without_a_status_is_one_line_and_exit_19(zygote_on: Servers,
                                                                                   filled: Path) -> None:
    zygote_on.started("context")
    zygote_on.extra["MEMCLI_TEST_STALL_AT"] = "zygote:taken-over"  # the child waits there
    proc, child = waiting_hook(zygote_on, filled, "recall", "deploy")
    try:
        os.kill(child, signal.SIGKILL)
        out, err = proc.communicate(timeout=GUARD)
    finally:
        proc.kill()
    assert proc.returncode == zygote_client.NO_STATUS == 19
    assert err.count("\n") == 1 and "ended without an exit status" in err and "run the command again" in err, err
    assert out == ""


def test_a_hook_whose_child_is_killed_without_a_status_runs_in_process_and_exits_0(zygote_on: Servers,
                                                                                  filled: Path) -> None:
    """A hook exits 0 whatever happens (docs/hooks.md): a newcomer's prompt hook exited 19 with no
    output when the server's child running it was killed (a `pkill -f memcli.cli.zygote` matches
    the children too). The hook runs again in-process and gives its answer."""
    zygote_on.started("context")
    proc, child = waiting_hook(zygote_on, filled)
    try:
        os.kill(child, signal.SIGKILL)
        out, err = proc.communicate(json.dumps({"hook_event_name": "SessionStart", "session_id": "s-killed",
                                                "cwd": str(filled), "source": "startup"}), timeout=GUARD)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "ended without an exit status" in err and "it runs here instead" in err, err
    assert json.loads(out)["hookSpecificOutput"]["additionalContext"], out


def test_the_client_folder_agrees_with_index_sockets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from memcli.index.sockets import folder

    for runtime in (None, str(tmp_path), str(tmp_path / "missing")):
        if runtime is None:
            monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        else:
            monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
        assert zygote_client.folder() == str(folder())


def test_preloading_reads_no_environment_but_the_pattern_cache(tmp_path: Path) -> None:
    """What the server loads reads nothing of its starter's environment, folder or terminal
    that a command would then use: only ``text.recache``'s folder, which a child forgets, and
    the variables of ``IMPORT_ENV``, which are part of the installation (the socket's name)."""
    code = ("import os, sys\nreads = []\nget = os._Environ.__getitem__\n"
            "def rec(self, key):\n    reads.append(key)\n    return get(self, key)\n"
            "os._Environ.__getitem__ = rec\n"
            "for name in ('getcwd', 'isatty', 'get_terminal_size', 'ttyname'):\n"
            "    real = getattr(os, name)\n"
            "    setattr(os, name, lambda *a, real=real, name=name: (reads.append(name), real(*a))[1])\n"
            "from memcli.cli import zygote\nassert zygote.preload() == [], zygote.preload()\n"
            "print(' '.join(sorted(set(reads))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert set(out.stdout.split()) <= {"XDG_CACHE_HOME", "HOME", *zygote_client.IMPORT_ENV}, out.stdout


def test_a_hook_answered_by_its_watchdog_sends_its_status(zygote_on: Servers, ws: Path, run, tmp_path: Path) -> None:
    """The deadline's watchdog ends the child from its own thread (``cli.exit_now``): the
    client still gets the status and the answer, as in-process."""
    assert run("remember", "Use pnpm, never npm", "--deny", "Bash(npm install:*)").code == 0
    zygote_on.started("context")
    payload = json.dumps({"session_id": "s1", "transcript_path": "", "cwd": str(tmp_path),
                          "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls", "description": "list"}})
    out = same_both_ways(zygote_on, "hook", "claude", "pre-tool-use", cwd=tmp_path, input_of=lambda n: payload,
                         env={"MEMCLI_TEST_STALL_AT": "guards:matching"})
    assert out.returncode == 0
    answer = json.loads(out.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "deadline" in answer["permissionDecisionReason"]


def test_a_client_in_the_c_locale_is_served(zygote_on: Servers, filled: Path) -> None:
    """In the C locale the interpreter turns UTF-8 mode on and sets ``LC_CTYPE`` for what it
    starts (PEP 538, 540): the server it starts must still be of its installation."""
    zygote_on.extra.update({"LANG": "C", "LC_ALL": None, "LC_CTYPE": None, "PYTHONUTF8": None,
                            "PYTHONIOENCODING": None})
    zygote_on.started("context")
    out = same_both_ways(zygote_on, "recall", "deploy")
    assert "Deploy billing" in out.stdout


def test_the_client_step_imports_nearly_nothing() -> None:
    """What a hot command loads before the server answers: memcli, memcli.cli and the client,
    beside what the interpreter loads for ``python -c pass`` (no typing, socket, json, signal)."""
    listed = "import sys; print(' '.join(sorted(sys.modules)))"
    code = ("from memcli.cli import zygote_client as z; z.hot(['context']); z.socket_path(z.installation()); "
            "import memcli; memcli.process_started(); import _socket, _signal, marshal; " + listed)
    base, loaded = (set(subprocess.run([sys.executable, "-c", c], capture_output=True, text=True, check=True)
                        .stdout.split()) for c in (listed, code))
    assert loaded - base <= {"memcli", "memcli.cli", "memcli.cli.zygote_client", "__future__", "_socket", "_signal",
                             "marshal", "_blake2", "time"}, sorted(loaded - base)


@pytest.mark.parametrize(("words", "served"), [
    (["context"], True), (["recall", "x"], True), (["hook", "claude", "session-start"], True),
    (["hook", "codex", "user-prompt-submit"], True), (["hook", "install", "claude"], False),
    (["hook", "uninstall", "claude"], False), (["hook", "check", "claude"], False), (["remember", "x"], False),
    (["index", "status"], False), ([], False)])
def test_only_the_hot_commands_go_to_the_server(words: list[str], served: bool) -> None:
    assert zygote_client.hot(words) is served
