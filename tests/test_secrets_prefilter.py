"""The secret prefilter (memcli/text/secrets/prefilter.py) never misses what the full scan finds.

Three kinds of proof:

* by construction, checked against the installed detect-secrets: every plugin's denylist is
  pinned, and each anchor factor is a substring of the pattern it stands for, searched with
  that pattern's flags;
* the secret corpora (tests/fixtures/secrets, and every text of the secret test modules):
  a prefiltered scan equals the full one, and each rule or plugin that finds anything in a
  text is one the prefilter let through;
* Hypothesis: random text, every corpus secret embedded in random text, and strings
  generated from each rule's own pattern (so that every pattern matches) give the same.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import subprocess
import sys
import types

import pytest
from fixtures.secrets.corpus import NEAR_MISSES, SAMPLES, SECRETS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcli.text.hidden import scan_view
from memcli.text.secrets import _scan, detector, own_rules, prefilter, tokens

#: sha256 of every denylist pattern (source and flags) of the plugins memcli uses, as the
#: anchors of prefilter.PLUGIN_ANCHORS were derived from them. A detect-secrets upgrade that
#: changes a pattern fails here: derive that plugin's anchor again, then update the digest
#: (detect-secrets 1.5.0, with memcli's plugins.py).
DENYLIST_DIGEST = "969d258def4f00eda2440ae3062fca21242c96d9b6577ae8b0f2f568ea4e3310"


def _denylists() -> dict[str, list[re.Pattern[str]]]:
    return {type(plugin).__name__: list(plugin.denylist) for plugin, _ in detector._plugins()}


def _digest() -> str:
    text = "\n".join(f"{name}\0{p.flags}\0{p.pattern}" for name, patterns in sorted(_denylists().items())
                     for p in patterns)
    return hashlib.sha256(text.encode()).hexdigest()


def test_denylists_are_the_ones_the_anchors_were_derived_from() -> None:
    assert _digest() == DENYLIST_DIGEST, "detect-secrets' patterns changed: check prefilter.PLUGIN_ANCHORS against them"



def test_every_plugin_has_an_anchor_per_pattern_cut_from_that_pattern() -> None:
    lists = _denylists()
    assert set(prefilter.PLUGIN_ANCHORS) == set(lists) == {entry[1] for entry in detector.PLUGINS}
    for name, patterns in lists.items():
        entries = prefilter.PLUGIN_ANCHORS[name]
        flags = prefilter._flags(name)
        assert len(entries) == len(patterns) == len(flags), name
        for pattern, factors, flag in zip(patterns, entries, flags):
            assert pattern.flags & (re.IGNORECASE | re.VERBOSE) == flag, (name, pattern.pattern)
            for factor in factors:
                assert factor in pattern.pattern, (name, factor, pattern.pattern)
                re.compile(factor)  # balanced: a whole piece of the pattern
                if flag & re.VERBOSE:
                    assert not re.search(r"[\s#]", factor), (name, factor)


def _own_found(view: str) -> bool:
    """Whether any of memcli's own rules reports a candidate in ``view`` (before overlaps are merged)."""
    return bool(own_rules.candidates(view) or tokens.command_spans(view)
                or any(regex.search(view) for _, _, regex in tokens.TOKEN_RULES))


def _plugins_found(view: str) -> set[str]:
    """The plugins that report a value in some line of ``view`` (as ``detector.spans`` runs them)."""
    found = set()
    for plugin, _ in detector._plugins():
        for line in view.split("\n"):
            if any(plugin.analyze_string(line)):  # type: ignore[attr-defined]
                found.add(type(plugin).__name__)
                break
    return found


def check(text: str) -> None:
    """The prefilter's promise for one text: every rule that finds something was let through,
    and the scans with and without the prefilter agree (full and hot-path)."""
    for full in (True, False):
        view, _ = scan_view(text, fold=full)
        own, plugins = prefilter.screen(view, plugins=full)
        if _own_found(view):
            assert own, (full, text)
        if full:
            missed = _plugins_found(view) - plugins
            assert not missed, (missed, text)
        assert _scan(text, full) == _scan(text, full, screen=False), (full, text)


def _strings(value: object, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _strings(item, out)
    elif isinstance(value, dict):
        for item in value.items():
            _strings(item, out)
    elif isinstance(value, types.CodeType):
        _strings(value.co_consts, out)


def corpus_texts() -> list[str]:
    """Every text of the secret corpora: the fixtures, and the constants, parameters and
    string literals of the secret test modules."""
    out: list[str] = []
    _strings([SAMPLES, NEAR_MISSES, SECRETS], out)
    for name in ("test_secrets", "test_secrets_corpus", "test_secrets_hidden", "test_secrets_lookalikes",
                 "test_write_safety", "test_safety"):
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, types.FunctionType):
                _strings(value.__code__, out)
                for mark in getattr(value, "pytestmark", []):
                    _strings(list(mark.args), out)
            elif not isinstance(value, types.ModuleType):
                _strings(value, out)
    return sorted(set(out))


CORPUS = corpus_texts()
SECRET_TEXTS = [text for _, text in SAMPLES] + list(SECRETS)


def test_the_corpus_is_large_and_holds_secrets() -> None:
    assert len(CORPUS) > 500
    assert sum(1 for text in CORPUS if _scan(text, True, screen=False)) > 150


def test_every_corpus_text_scans_alike_with_the_prefilter() -> None:
    for text in CORPUS:
        check(text)


#: What random text is made of: letters, digits, the punctuation rules look for, look-alike
#: and full-width letters, hidden characters, CJK, newlines.
ALPHABET = st.sampled_from(list(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    " \t\n-_=:;./+@'\"`#$%<>{}[]()|\\~*?!,"
    "\u0440\u043e\u041e\u0391\u0455\uff21\uff53\uff4b\u017f\u212a\u0131\u0130\u200b\u00ad\u2060\ufeff"
    "\u5bc6\u7801\u53e3\u4ee4\u662f\u4e3a\uff1a\u00e9\u0301"))
FRAGMENTS = st.sampled_from([
    "ghp_", "gho_", "github_pat_", "xoxb-", "xoxp-1-", "sk-", "sk-ant-", "sk-proj-", "AIza", "sk_live_", "rk_test_",
    "eyJ", "AKIA", "ASIA", "A3T", "AKC", "AP1", "AccountKey=", "account_key: ", "-----BEGIN ", "PRIVATE KEY",
    "-----", "----", "PuTTY-User-Key-File-3: ssh-rsa", "SSH2", "password", "passwd", "Password is ", "pwd=",
    "secret", "api_key", "token", "TOKEN=", "DB_PASS=", "SECRET_KEY_BASE=", "Bearer ", "Authorization: Bearer ",
    "Basic ", '"auth": "', "mysql -p", "sshpass -p ", "redis-cli -a ", "--password=", "curl -u ", "--user ",
    "://", "https://hooks.slack.com/services/T", "postgres://u:", "@db", "cloudant", "clkey=", ".cloudant.com",
    "ibm_cloud_iam_key=", "cos_hmac_secret_access_key=", "softlayer_api_key=", "api.softlayer.com/soap/v3/",
    "-us12", "//registry.npmjs.org/:_authToken=", "T3BlbkFJ", "pypi-AgE", "SG.", "sq0csp-", "AC", "SK",
    "123456789:", "SSN ", "ss#", "social security number ", "密码是", "口令为", "4111 1111 1111 1111",
    "110105198804121234", "078-05-1120", "glpat-", "npm_", "hf_", "hvs.", "GOCSPX-", "dapi", "LTAI", ".atlasv1.",
    "aws", "AWS_SECRET_ACCESS_KEY=", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "0" * 13, "a1B2" * 11,
])
NOISE = st.lists(st.one_of(ALPHABET, FRAGMENTS, st.text(ALPHABET, max_size=12)), max_size=40).map("".join)


def _embedded(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(NOISE, inner, NOISE, st.sampled_from(["", " ", "\n", "\t", "=", ":", "'", '"'])).map(
        lambda t: t[0] + t[3] + t[1] + t[3] + t[2])


def _rule_patterns() -> list[re.Pattern[str]]:
    """Every pattern that can start a finding: the plugins' denylists and memcli's own rules."""
    own = [regex for _, regex, _ in own_rules._TOKEN_RULES] + [regex for _, _, regex in tokens.TOKEN_RULES] + [
        own_rules._AWS_SECRET_NAMED_RE, own_rules._AWS_SECRET_ALONE_RE, own_rules._CN_ID_RE, own_rules._CARD_RE,
        own_rules._SSN_RE, own_rules._SSN_LABELLED_RE, own_rules._ASSIGN_RE, own_rules._URL_CRED_RE,
        own_rules._BEARER_RE, own_rules._PROSE_PASSWORD_RE,
        tokens._BASIC_RE, tokens._DOCKER_RE, tokens._CMD_PASSWORD_RE, tokens._CMD_USER_RE]
    return own + [p for patterns in _denylists().values() for p in patterns]


PATTERNS = _rule_patterns()
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(NOISE)
def test_random_text_scans_alike(text: str) -> None:
    check(text)


@SETTINGS
@given(_embedded(st.sampled_from(SECRET_TEXTS)))
def test_every_corpus_secret_in_random_text_scans_alike(text: str) -> None:
    check(text)


@pytest.mark.parametrize("index", range(len(PATTERNS)), ids=[p.pattern[:40] for p in PATTERNS])
def test_text_matching_a_rule_pattern_is_let_through(index: int) -> None:
    pattern = PATTERNS[index]
    own = index < len(PATTERNS) - sum(len(p) for p in _denylists().values())

    # 20 texts for each of the ~100 patterns (2,000 in all; 60 each took a sixth of the suite's time)
    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_embedded(st.from_regex(pattern)))
    def matching(text: str) -> None:
        for full in (True, False) if own else (True,):
            view, _ = scan_view(text, fold=full)
            if pattern.search(view) is None:
                continue
            screened, names = prefilter.screen(view, plugins=full)
            if own:
                assert screened, (pattern.pattern, text)
            else:
                assert any(pattern in _denylists()[name] for name in names), (pattern.pattern, text)
        check(text)

    matching()


ENV_PARTS = st.sampled_from(["db", "pass", "password", "passwd", "pwd", "passphrase", "pw", "secret", "secrets",
                             "token", "credential", "credentials", "apikey", "private", "salt", "signing", "key",
                             "keys", "app", "cache", "sort", "export", "x"])


@SETTINGS
@given(st.lists(ENV_PARTS, min_size=1, max_size=4), st.sampled_from(["_", ".", "-", "__"]),
       st.booleans(), st.text(st.sampled_from("abcXYZ019!#%&+/-_."), min_size=1, max_size=40), NOISE)
def test_env_lines_with_a_credential_name_are_let_through(parts: list[str], sep: str, upper: bool, value: str,
                                                          noise: str) -> None:
    name = sep.join(parts)
    text = f"{noise}\n{'export ' if upper else ''}{name.upper() if upper else name}={value}\n"
    check(text)


def test_ordinary_text_imports_no_rule_and_no_detect_secrets() -> None:
    code = ("import sys\nfrom memcli.text.secrets import find_secrets, redact\n"
            "texts = ['Use pnpm, not npm, in this repo.', 'Run ./gradlew assemble before pushing; CI fails otherwise.',"
            " 'The billing API returns 500 instead of 404 when the record is missing.',"
            " '前端构建使用pnpm，不要用npm。', 'Deploys go out at 10:00 UTC from the release branch.']\n"
            "assert all(not find_secrets(t) and redact(t, full=False) == t for t in texts)\n"
            "print(' '.join(sorted(m for m in sys.modules if 'secrets' in m)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["memcli.text.secrets", "memcli.text.secrets.kinds", "memcli.text.secrets.prefilter"]


def test_a_secret_loads_only_the_plugins_that_can_match_it() -> None:
    code = ("import sys\nfrom memcli.text.secrets import find_secrets\n"
            "assert find_secrets('token ' + 'gh' + 'p_' + 'aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz123')\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('detect_secrets.plugins.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "detect_secrets.plugins.github_token" in out
    assert "detect_secrets.plugins.twilio" not in out and "detect_secrets.plugins.cloudant" not in out
