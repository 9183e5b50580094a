"""A hand-placed file over the write limit (newcomer trust fault 4): every read serves its text
cut to ``model.MAX_BODY_CHARS`` with a note, as the 256 KiB byte bound already did, and ``check``
refuses it (rule ``size``), so verify on arrival quarantines a pulled one."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memcli.model import MAX_BODY_CHARS

MID = "01m9bigtextaaaaaaaaaaaaaaa"[:26]


@pytest.mark.parametrize("size", [300_000, 30_000])  # over the 256 KiB byte bound, and under it
def test_a_text_over_the_write_limit_is_served_cut_with_a_note(ws: Path, run, size: int) -> None:
    folder = ws / "memories" / "project"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{MID}.md").write_text(f"---\nid: {MID}\nscope: project\nstatus: active\n---\nbigword "
                                      + "y" * size + "\n", encoding="utf-8")
    listed = run("--json", "list")
    assert listed.code == 0, listed
    (memory,) = listed.json()["data"]["memories"]
    assert len(memory["text"]) < MAX_BODY_CHARS + 200 and memory["text"].startswith("bigword yyy")
    assert f"memcli serves the first {MAX_BODY_CHARS:,}" in memory["text"]
    assert "over the 20,000 a memory may hold" in listed.out  # the warning
    recalled = run("--json", "recall", "bigword")
    (hit,) = recalled.json()["data"]["hits"]
    assert hit["text"] == memory["text"]
    shown = run("--json", "show", MID)
    assert shown.code == 0 and len(shown.json()["data"]["text"]) < MAX_BODY_CHARS + 200
    subprocess.run(["git", "add", "-A"], cwd=ws, check=True)
    subprocess.run(["git", "commit", "-qm", "big"], cwd=ws, check=True)
    checked = run("check", "HEAD~1..HEAD")
    assert checked.code == 17, checked
    assert ("over the 20,000 a memory may hold" if size < 256 * 1024 else "over the 256 KiB") in checked.err, checked
