"""Tests for the sensitive-data gate, memcli.text.secrets.

Token-shaped examples are assembled at run time so the file itself does not look like
it leaks credentials to secret scanners.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcli.text.secrets import KINDS, SecretFinding, find_secrets

GH_TOKEN = "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8"  # ghp_ + 36 alphanumerics
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"
SLACK = "xox" + "b-123456789012-AbCdEfGhIjKl"
OPENAI = "sk-" + "proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12"
ANTHROPIC = "sk-" + "ant-api03-" + "Ab12Cd34Ef56Gh78Ij90Kl12"
GOOGLE = "AI" + "za" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
STRIPE = "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc"
JWT = "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"


def kinds(text: str) -> list[str]:
    return [f.kind for f in find_secrets(text)]


POSITIVES = [
    (PEM, "private key (PEM)"),
    ("-----BEGIN " + "PGP PRIVATE KEY BLOCK-----", "private key (PEM)"),
    ("-----BEGIN " + "PRIVATE KEY-----", "private key (PEM)"),
    (f"aws_access_key_id = {AWS_KEY_ID}", "AWS access key id"),
    ("ASIA" + "Y34FZKBOKMUTVV7A", "AWS access key id"),
    (f"aws_secret_access_key = {AWS_SECRET}", "AWS secret access key"),
    (f"AWS_SECRET_ACCESS_KEY: {AWS_SECRET}", "AWS secret access key"),
    # a bare secret key with a context word near it (detect-secrets' AWSKeyDetector, gitleaks' old rule)
    (f"The secret is {AWS_SECRET}.", "AWS secret access key"),
    (f"{AWS_SECRET} appears in the AWS docs", "AWS secret access key"),
    (f"my aws creds: the access key is in 1password, the other half {AWS_SECRET}", "AWS secret access key"),
    (f"clientSecret '{AWS_SECRET}'", "AWS secret access key"),
    (f"credentials\t{AWS_SECRET}", "AWS secret access key"),
    (f"the token is {GH_TOKEN}", "GitHub token"),
    ("github_pat_" + "11ABCDEFG0123456789_abcdefXYZ", "GitHub token"),
    (f"SLACK_BOT={SLACK}", "Slack token"),
    (f"client = OpenAI(api_key='{OPENAI}')", "OpenAI API key"),
    (f"key {ANTHROPIC}", "Anthropic API key"),
    (f"maps key {GOOGLE}", "Google API key"),
    (f"stripe {STRIPE}", "Stripe key"),
    (f"Authorization: Bearer {JWT}", "JSON web token"),
    ("password: hunter22", "password"),
    ("DB_PASSWORD=s3cr3t!pass", "password"),
    ("DB_PASSWORD=correcthorse", "password"),
    ('password = "changeme"', "password"),
    ("password: changeme", "password"),
    ("密码：Abc@12345", "password"),
    ("数据库口令是Passw0rd2024，别外传", "password"),
    ("api_key = 'a8f5f167f44f4964e6c998dee827110c'", "generic API key/token assignment"),
    ("access_token=9f8e7d6c5b4a39281706", "generic API key/token assignment"),
    ('"client_secret": "Zm9vYmFyYmF6cXV4"', "generic API key/token assignment"),
    # a secret named in prose (newcomer, stop 34: 41 characters, so no AWS secret's length)
    ("The staging deploy secret is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY2 for the CI user.",
     "generic API key/token assignment"),
    ("the api token for prod was Xk9fQ2mZpL7vRt3nBw8yHc4jDs6aGe1u", "generic API key/token assignment"),
    ("the webhook secret is 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", "generic API key/token assignment"),
    ("密钥是 Xk9fQ2mZpL7vRt3nBw8yHc4jDs6aGe1u", "generic API key/token assignment"),
    ("card 4111 1111 1111 1111 exp 12/25", "payment card number"),
    ("5555-5555-5555-4444", "payment card number"),
    ("amex 378282246310005", "payment card number"),
    ("discover 6011111111111117", "payment card number"),
    ("mastercard 2223003122003222", "payment card number"),
    ("mc2 2223003122003222", "payment card number"),
    ("unionpay 6200000000000005", "payment card number"),
    ("ssn 123-45-6789", "US social security number"),
    ("call 555-12-1234", "US social security number"),  # SSN-shaped (3-2-4), valid area: flagged
    ("身份证号11010519491231002X。", "Chinese resident ID number"),
    ("id 110101199003074514", "Chinese resident ID number"),
]


@pytest.mark.parametrize(("text", "kind"), POSITIVES)
def test_positive(text: str, kind: str) -> None:
    assert kinds(text) == [kind]


NEGATIVES = [
    # near misses of each rule
    "-----BEGIN PUBLIC KEY-----",
    "AKIA" + "IOSFODNN7EXAMPL",  # 15 after the prefix
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY appears in the docs",  # no name, no key id, no context word
    "deployed to aws at commit 3f2a9c1e4b5d6a7f8e9d0c1b2a3f4e5d6c7b8a9f",
    # 40-character tokens near "aws", "secret" or "key" that are not secret keys
    "The key commit is 3f2a9c1e4b5d6a7f8e9d0c1b2a3f4e5d6c7b8a9f.",  # a git SHA-1, lowercase hex
    "AWS secret rotated in 3F2A9C1E4B5D6A7F8E9D0C1B2A3F4E5D6C7B8A9F",  # uppercase hex
    "the secret key sha1 is da39a3ee5e6b4b0d3255bfef95601890afd80709 (empty input)",
    "aws key file: /Users/Alice/Projects/Ledger/Config/Aws1 holds it",  # a path of words
    "secret notes under docs/Guides/aws/Secrets/rotation/Steps12 are public",
    "the secret message is VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVy",  # base64 of "The quick brown fox jumps over"
    "the key class AbstractSingletonProxyFactoryBeanManage2 is Java",  # a camelCase identifier
    "the monkey wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY and the laws",  # context words inside other words
    "aws key at keys/wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY.pem",  # part of a longer path
    "ghp_" + "short",
    "xoxb-short",
    "the sk-learn-style estimator API",
    "sk-this-is-a-long-hyphenated-slug-name",
    "AI" + "zaShort",
    "sk_" + "live_short",
    "eyJhbGciOiJ.notajwt",
    "card 4111111111111112",  # fails Luhn
    "1234567812345670",  # Luhn-valid but no card network starts with 1
    "order id 41111111111111110000",  # inside a longer digit run
    "ids 5432 6379 8080 9090 3000",
    "000-12-3456 666-12-3456 900-12-3456 123-00-4567 123-45-0000",
    "110105194912310021",  # bad GB 11643 checksum
    "110105194913310021",  # month 13, checksum valid
    "9110105194912310021X",  # inside a longer run
    # placeholders
    "API_KEY=<your-api-key>",
    'password = "********"',
    "password: ***",
    "password: xxxxxxxx",
    "password: ${DB_PASSWORD}",
    "token: $GITHUB_TOKEN",
    "token: %API_TOKEN%",
    "token: REDACTED",
    "password: your-password-here",
    "password: ......",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    # prose and code about secrets
    "the password policy requires 12 characters",
    "rotate the token every 90 days",
    "the secret is that we cache everything",
    "the token is 01kx5n2mtr29mq1nfzsjvpxs0v",  # a memcli id: lowercase, no case mix
    "the access key for ci is stored in vault under kv/ci/AccessKey2024",
    "the credential was rotated on 2026-11-29T10:00:00Z",
    "the signing key is ed25519, kept in the team's vault",
    "the API key is generated per environment by terraform",
    "set token: see vault",
    "use the `token` field of the response",
    "password reset flow in auth/reset.py",
    "passwords are hashed with argon2",
    "the token bucket limits requests to 100/s",
    "token = request.headers.get('Authorization')",
    "api_key = os.environ['OPENAI_API_KEY']",
    "client_secret = settings.CLIENT_SECRET",
    "secret_key = get_random_secret_key()",
    "pwd = os.getcwd()",
    "PWD=/home/alice/src",
    "api_key: SecretStr",
    "auth_token: str | None = None",
    "foo(token=new_token)",
    "secret: stored in Vault under kv/app",
    "password: minimum 12 characters",
    "`password`: required, min 12 chars",
    "max_tokens = 4096 for the summarizer",
    "The tokenizer splits on whitespace",
    "password_hash = bcrypt.hashpw(pw, salt)",
    "if password == confirm_password:",
    "npm install jsonwebtoken@9.0.2",
    "POSTGRES_PASSWORD: postgres",
    # ordinary memories
    "Run `make test` before committing",
    "git sha 3f2a9c1e4b5d6a7f8e9d0c1b2a3f4e5d6c7b8a9f",
    "Ubuntu 20.04 is the base image",
    "Postgres listens on port 5432",
    "ISO date 2026-11-29T10:00:00Z",
    "Meeting at 2026-11-29 10:00, SLA is 99.95%",
    "Build 1700000000000 finished in 93.5s",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "Phone: 415-555-2671",
    "version 1.2.3-rc.4 pins numpy==1.26.4",
    "see RFC 7468 for PEM headers",
    # Chinese
    "用户身份验证失败，重跑gen-itgc后修复",
    "数据库密码在 Vault 里，不要写进配置",
    "密码是什么？请问管理员",
    "口令策略：至少 12 位，包含大小写字母",
    "重置密码的接口在 auth/reset.py",
    "令牌每 90 天轮换一次",
    "在 token: 字段里返回 JWT",
    "用户密码：请联系运维获取",
    "部署前先运行 make test，端口是 8080",
    "订单号 20241129000123 已归档",
]


def test_enough_negatives() -> None:
    assert len(NEGATIVES) >= 30


@pytest.mark.parametrize("text", NEGATIVES)
def test_negative(text: str) -> None:
    assert find_secrets(text) == []


def test_specific_kind_wins_over_assignment() -> None:
    assert kinds(f"github_token={GH_TOKEN}") == ["GitHub token"]
    assert kinds(f"OPENAI_API_KEY={OPENAI}") == ["OpenAI API key"]
    assert kinds(f"aws_secret_access_key = {AWS_SECRET}") == ["AWS secret access key"]


def test_aws_secret_on_same_line_as_key_id() -> None:
    found = find_secrets(f"{AWS_KEY_ID} {AWS_SECRET}\n{AWS_SECRET}")
    assert [(f.kind, f.line, f.column) for f in found] == [
        ("AWS access key id", 1, 1), ("AWS secret access key", 1, 22)]


def test_several_cards_on_a_line() -> None:
    assert kinds("cards: 4111111111111111 5555555555554444") == ["payment card number"] * 2
    assert kinds("4111 1111 1111 1111, 5555-5555-5555-4444") == ["payment card number"] * 2


def test_git_sha_is_not_an_aws_secret() -> None:
    sha = "3f2a9c1e4b5d6a7f8e9d0c1b2a3f4e5d6c7b8a9f"
    assert kinds(f"{AWS_KEY_ID} rotated in commit {sha}") == ["AWS access key id"]
    assert "AWS secret access key" not in kinds(f"aws_secret_access_key = {sha}")


def test_line_and_column_on_multiline_text() -> None:
    text = (
        "Deploy notes\n"
        f"  token {GH_TOKEN}\n"
        "nothing here\n"
        "密码：Abc@12345 and ssn 123-45-6789\n"
        + PEM
    )
    found = [(f.kind, f.line, f.column) for f in find_secrets(text)]
    assert found == [
        ("GitHub token", 2, 9),
        ("password", 4, 4),
        ("US social security number", 4, 22),
        ("private key (PEM)", 5, 1),
    ]


SECRETS = [GH_TOKEN, AWS_SECRET, AWS_KEY_ID, SLACK, OPENAI, ANTHROPIC, GOOGLE, STRIPE, JWT,
           "hunter22", "4111111111111111", "123-45-6789", "11010519491231002X"]


def test_findings_never_contain_the_secret() -> None:
    text = "\n".join([
        f"aws_secret_access_key = {AWS_SECRET}", f"{AWS_KEY_ID}", GH_TOKEN, SLACK, OPENAI, ANTHROPIC,
        GOOGLE, STRIPE, JWT, "password: hunter22", "4111111111111111", "123-45-6789",
        "11010519491231002X", PEM])
    found = find_secrets(text)
    assert len(found) == 14
    assert {f.kind for f in found} <= set(KINDS)
    for finding in found:
        shown = " ".join([str(finding), repr(finding), finding.kind])
        for secret in SECRETS:
            assert secret not in shown
            assert secret[:8] not in shown
        assert "MIIEowIBAAKCAQEA" not in shown


def test_finding_is_frozen_and_printable() -> None:
    finding = SecretFinding("password", 3, 7)
    assert str(finding) == "password at line 3, column 7"
    with pytest.raises(AttributeError):
        finding.line = 4  # type: ignore[misc]


def test_duplicates_collapse() -> None:
    assert len(find_secrets(f"{GH_TOKEN} {GH_TOKEN}")) == 2
    assert kinds("身份证 11010519491231002X") == ["Chinese resident ID number"]


def test_large_input_is_fast() -> None:
    text = ("plain words and numbers 20.04 port 5432 " * 5000) + ("a-" * 20000) + ("9" * 20000)
    assert find_secrets(text) == []


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises_and_sorted(text: str) -> None:
    found = find_secrets(text)
    keys = [(f.line, f.column) for f in found]
    assert keys == sorted(keys)
    assert len(set((f.kind, f.line, f.column) for f in found)) == len(found)
    lines = text.split("\n")
    for f in found:
        assert f.kind in KINDS
        assert 1 <= f.line <= len(lines)
        assert 1 <= f.column <= len(lines[f.line - 1])


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\n"), max_size=40),
       st.sampled_from([" ", "\n", "：", " token "]))
def test_embedded_github_token_is_located(prefix: str, sep: str) -> None:
    text = prefix + sep + GH_TOKEN + " done"
    line = text.count("\n", 0, text.index(GH_TOKEN)) + 1
    column = text.index(GH_TOKEN) - (text.rfind("\n", 0, text.index(GH_TOKEN)) + 1) + 1
    found = [f for f in find_secrets(text) if f.kind == "GitHub token"]
    assert (line, column) in [(f.line, f.column) for f in found]


# --- the gate in `remember` (CASES.md M4: an AWS secret access key is refused) ----------


@pytest.mark.parametrize("text", [
    f"The secret is {AWS_SECRET}.",
    f"Our AWS deploy user signs with {AWS_SECRET} for now",
    f"{AWS_SECRET} is the key for the backup bucket",
])
def test_remember_refuses_a_bare_aws_secret_key_near_a_context_word(ws, run, text: str) -> None:
    from conftest import git

    result = run("--json", "remember", text)
    assert result.code == 6, result
    message = result.json()["error"]["message"]
    assert message.startswith("refused: the text holds an AWS secret access key at line 1, column "), message
    assert AWS_SECRET not in result.out + result.err and AWS_SECRET[:12] not in result.out + result.err
    plain = run("remember", text)
    assert plain.code == 6 and AWS_SECRET not in plain.out + plain.err and plain.err.count("\n") == 1
    assert "AWS secret access key" in plain.err
    assert not list((ws / "memories").rglob("*.md"))
    assert AWS_SECRET not in git(ws, "log", "-p", "--all")


@pytest.mark.parametrize("text", [
    "3f2a9c1e4b5d6a7f8e9d0c1b2a3f4e5d6c7b8a9f",  # a git hash on its own
    "The key fix is in commit 3f2a9c1e4b5d6a7f8e9d0c1b2a3f4e5d6c7b8a9f, see the AWS notes",
    "The secret file's sha1 is DA39A3EE5E6B4B0D3255BFEF95601890AFD80709 before the key rotation",
    "The AWS secret key loader lives at /Users/Alice/Projects/Ledger/Config/Aws1 and reads env vars",
    "Key paths: src/Memcli/policy/Secrets/checks/Aws/v22 holds the aws rules",
    "the secret message is VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVy, base64 of a pangram",
])
@pytest.mark.slow
def test_remember_accepts_hashes_paths_and_encoded_words_near_key_words(ws, run, text: str) -> None:
    result = run("--json", "remember", text)
    assert result.code == 0, result
    assert result.json()["data"]["memory"]["text"] == text
