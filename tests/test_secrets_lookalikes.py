"""The secret gate's issue-19 kinds beyond the corpus (tests/fixtures/secrets/corpus.py holds
their samples and near misses): look-alike letters folded before a full scan and mapped back
to the original text, memcli's plugins as detect-secrets itself loads them, and the public
example SSNs in every form."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memcli.text import confusables
from memcli.text.hidden import scan_view
from memcli.text.secrets import find_secrets, redact, secret_spans

BODY = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz123"  # 36 characters, a made-up token body


@pytest.mark.parametrize(("ch", "ascii"), [("\u0440", "p"), ("\u043e", "o"), ("\u041e", "O"), ("\u0391", "A"),
                                           ("\u03bf", "o"), ("\u0131", "i"), ("\u01c1", "ll"), ("\u2013", "-")])
def test_look_alike_letters_fold_to_the_ascii_they_imitate(ch: str, ascii: str) -> None:
    assert confusables.fold(ch) == ascii


@pytest.mark.parametrize("ch", ["a", "密", "码", "は", "한", "é", "ß", "❤", "😀", " "])
def test_ascii_cjk_accents_and_emoji_are_left_as_they_are(ch: str) -> None:
    assert confusables.fold(ch) == ch


def test_the_folded_view_maps_back_to_the_original_characters() -> None:
    text = "token gh\u0440_" + BODY[:10] + "\u043e" + BODY[11:] + " end"
    view, offsets = scan_view(text, fold=True)
    assert view == "token ghp_" + BODY[:10] + "o" + BODY[11:] + " end"
    assert scan_view(text)[0] == text  # the hot path's view is not folded
    (start, end, kind), = secret_spans(text)
    assert kind == "GitHub token" and text[start:end] == text[6:-4]
    assert redact(text, secret_spans(text)) == "token [secret removed: github-token] end"
    assert secret_spans(text, full=False) == []  # full=False: no table, no detect-secrets


def test_prose_in_other_scripts_is_not_a_secret_when_folded() -> None:
    for text in ("Пароль от Wi-Fi спросите у админа", "Ключ API хранится в Vault", "ο κωδικός είναι στο Vault",
                 "коммит 3f2a9c1e4b5d6a7f8e9d0c1b2a3f4e5d6c7b8a9f, релиз 2024-05-12"):
        assert find_secrets(text) == [], text


@pytest.mark.parametrize("text", ["SSN 078-05-1120", "SSN 078 05 1120", "ssn: 078051120", "SSN 219.09.9999"])
def test_the_public_example_ssns_pass_in_every_form(text: str) -> None:
    assert find_secrets(text) == []


@pytest.mark.parametrize("text", ["SSN 666 12 3456", "ssn 000123456", "SSN 123 00 4567", "ssn 900.12.3456"])
def test_never_issued_ssns_pass_in_every_form(text: str) -> None:
    assert find_secrets(text) == []


def test_a_refusal_never_echoes_the_look_alike_token(ws: Path, run) -> None:
    token = "gh\u0440_" + BODY
    result = run("remember", "--", f"push with {token}")
    assert result.code == 6 and result.err.count("\n") == 1, result
    assert "GitHub token" in result.err and token not in result.err + result.out and BODY not in result.err
    assert not list((ws / "memories").rglob("*.md"))


def test_detect_secrets_loads_memclis_plugins_as_its_own(tmp_path: Path) -> None:
    """The widened plugins are detect-secrets plugins: its own CLI runs them from the file."""
    import json

    import memcli.text.secrets.plugins as plugins

    key = tmp_path / "deploy.ppk"
    key.write_text("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n"
                   "accountkey = " + "Q" * 85 + "A==\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "detect_secrets", "scan", "--plugin", plugins.__file__, str(key)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (results,) = json.loads(proc.stdout)["results"].values()
    found = {(r["type"], r["line_number"]) for r in results}
    assert {("Private Key", 1), ("Azure Storage Account access key", 3)} <= found


MIXED = "ab1_- \n\u0440\u043e\u041e\u0391\u01c1\u2013\u200b\uff21\u00e9\u5bc6\u0301"  # ASCII, look-alikes, hidden, CJK


@given(text=st.text(alphabet=st.sampled_from(MIXED), max_size=60))
def test_the_folded_view_always_maps_back_in_order(text: str) -> None:
    view, offsets = scan_view(text, fold=True)
    if offsets is None:
        assert view == text
        return
    assert len(offsets) == len(view) + 1 and offsets[-1] == len(text)
    assert offsets == sorted(offsets) and all(0 <= i < len(text) for i in offsets[:-1])
    assert all(confusables.fold(c) == c for c in view)  # nothing left to fold: the view is its own skeleton
