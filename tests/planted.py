"""A socket server planted by another user (uid and gid 65534, "nobody"), for the tests that
prove memcli's clients check a server's uid (``SO_PEERCRED``) before they send it anything:
the fork server's client, the freshness watcher's reads and the semantic model's callers.
Root only (the tests that use it are skipped otherwise)."""

from __future__ import annotations

import os
import socket
import tempfile
import time
from pathlib import Path

#: The uid and gid of the planted server.
NOBODY = 65534


class Planted:
    """The forked server: ``pid``; ``spot`` (a folder every user may write, under /tmp:
    pytest's folders are root's alone); ``got``, the bytes its connections received, written
    when it ends (``prefix`` first, so an empty answer and no answer differ)."""

    def __init__(self, accepts: int, reply: bytes = b"", prefix: bytes = b"", guard: float = 30.0) -> None:
        self.spot = Path(tempfile.mkdtemp(prefix="memcli-nobody-", dir="/tmp"))
        os.chmod(self.spot, 0o777)
        self.ready, self.got = self.spot / "s.sock", self.spot / "got"
        self.guard = guard
        self.pid = os.fork()
        if self.pid == 0:  # the child: no exec, nobody may not read this Python
            try:
                self._serve(accepts, reply, prefix)
            finally:
                os._exit(0)

    def _serve(self, accepts: int, reply: bytes, prefix: bytes) -> None:
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(self.ready))
        listener.listen(4)
        listener.settimeout(self.guard)
        data = b""
        for _ in range(accepts):
            conn, _ = listener.accept()
            conn.settimeout(2)
            try:
                data += conn.recv(65536)
            except OSError:
                pass
            if reply:
                try:
                    conn.sendall(reply)
                except OSError:  # the client hung up without a word, as it should
                    pass
            conn.close()
        self.got.write_bytes(prefix + data)

    def plant(self, path: Path) -> None:
        """Move the server's socket to ``path`` once it is bound (root moves it into the private folder)."""
        limit = time.monotonic() + self.guard
        while not self.ready.exists() and time.monotonic() < limit:
            time.sleep(0.05)
        os.replace(self.ready, path)

    def received(self) -> bytes:
        """What the server got, after it ended."""
        os.waitpid(self.pid, 0)
        return self.got.read_bytes()

    def remove(self) -> None:
        """Kill the server if it still runs, and remove its folder."""
        import shutil

        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        shutil.rmtree(self.spot, ignore_errors=True)
