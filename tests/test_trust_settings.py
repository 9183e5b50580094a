"""Which changes of memcli.toml loosen trust (``policy.trust_settings``; hnc3 fault 1): pure."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memcli.config import Config
from memcli.policy.trust_settings import compare, covers

SCOPES = st.sampled_from(["project", "global", "channel:*", "channel:ops", "task:*", "task:x", "agent:*", "*"])


def loosened(before: Config, after: Config) -> list[str]:
    return [c.key for c in compare(before, after) if c.loosens]


@pytest.mark.parametrize(("change", "keys"), [
    ({"shared_scopes": []}, ["[scopes] shared"]),
    ({"shared_scopes": ["project", "global", "channel:*", "task:*"]}, []),
    ({"shared_scopes": ["*"]}, []),
    ({"shared_scopes": ["project", "global", "channel:?"]}, ["[scopes] shared"]),  # a narrower glob
    ({"read_scopes": []}, ["[scopes] read"]),  # hides every guard
    ({"read_scopes": ["global", "project", "user:{actor}", "agent:bot"]}, ["[scopes] read"]),  # unreviewed
    ({"read_scopes": ["global", "project", "user:{actor}", "channel:ops"]}, []),  # reviewed
    ({"write_scope": "agent:bot"}, ["[scopes] write"]),
    ({"write_scope": "global"}, []),
    ({"allow_self_approve": True}, ["[review] allow_self_approve"]),
    ({"signing": "ssh"}, []),
    ({"near_duplicate": 99}, ["[gates] near_duplicate"]),
    ({"near_duplicate": 80}, []),
    ({"on_conflict": "fail"}, []),
    ({"kind": "personal"}, ["[workspace] kind"]),
    ({"workspace_id": None}, ["[workspace] id"]),
    ({"workspace_id": "01otherworkspace00000000000"}, ["[workspace] id"]),  # red team, stop 36: hid your guards
    ({"context_budget": 9000}, []),  # more room: named, in force
    ({"hook_deadline": 0.1}, ["[hooks] deadline"]),  # red team, stop 36: answered before the guards were read
    ({"autocommit": False}, ["[git] autocommit"]),  # red team, stop 36: your writes left unshared
    ({"ttl": {"goal": "30d", "episode": "90d", "fact": "1m"}}, ["[ttl]"]),  # your next guard expired in 1 minute
    ({"ttl": {"goal": "7d", "episode": "90d"}}, ["[ttl]"]),
    ({"ttl": {"goal": "60d", "episode": "never"}}, []),  # kept longer: named, in force
    # red team, stop 35: each of these was in force at once from a teammate's push
    ({"hook_deadline": 60.0}, ["[hooks] deadline"]),  # past the agent's 5 s hook timeout
    ({"context_budget": 200}, ["[context] budget"]),  # an empty session start
    ({"hook_extract": True}, ["[hooks] extract"]),  # your session mined into shared memories
    ({"hook_summarize": True}, ["[hooks] summarize"]),
    ({"sync_session_end": True}, ["[sync] session_end"]),
    ({"sync_session_start": True}, ["[sync] session_start"]),
])
def test_each_setting_loosens_one_way(change: dict, keys: list[str]) -> None:
    before = Config(workspace_id="01abcdefghjkmnpqrstvwxyz00")
    after = Config(workspace_id="01abcdefghjkmnpqrstvwxyz00")
    for attr, value in change.items():
        setattr(after, attr, value)
    assert loosened(before, after) == keys
    assert not any(c.loosens for c in compare(after, after))


def test_the_way_back_of_a_boolean_or_a_choice_does_not_loosen() -> None:
    strict = Config(allow_self_approve=False, signing="ssh", on_conflict="fail")
    lax = Config(allow_self_approve=True, signing="off", on_conflict="supersede")
    assert loosened(strict, lax) == ["[review] allow_self_approve", "[review] signing", "[gates] on_conflict"]
    assert loosened(lax, strict) == [] and len(compare(lax, strict)) == 3  # tightening: named


@given(st.lists(SCOPES, max_size=5), st.lists(SCOPES, max_size=3))
def test_adding_shared_patterns_never_loosens_and_removing_an_uncovered_one_does(base: list[str],
                                                                                  extra: list[str]) -> None:
    before, after = Config(shared_scopes=base), Config(shared_scopes=base + extra)
    assert "[scopes] shared" not in loosened(before, after)
    gone = [p for p in base if not any(covers(q, p) for q in extra)]
    if gone:
        assert "[scopes] shared" in loosened(Config(shared_scopes=base), Config(shared_scopes=extra))


def test_covers_is_the_safe_answer_for_globs() -> None:
    assert covers("channel:*", "channel:ops") and covers("channel:*", "channel:*") and covers("*", "channel:?")
    assert not covers("channel:?", "channel:*") and not covers("chan[n]el:*", "channel:ops")
