"""The duplicate and contradiction gates compare only texts whose length can reach their
rapidfuzz ratio (``policy.gates.ratio_lengths``, issue 21 point 3: a write no longer loads
every text of its scope); the window must never drop a text that reaches the ratio."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from memcli.policy.gates import ratio_lengths

TEXTS = st.text(alphabet=st.sampled_from("abcde fgh.中文"), max_size=60)


@settings(max_examples=500)
@given(TEXTS, TEXTS, st.integers(min_value=1, max_value=100))
def test_a_text_that_reaches_the_ratio_is_inside_the_window(a: str, b: str, threshold: int) -> None:
    if fuzz.ratio(a, b) >= threshold:
        low, high = ratio_lengths(len(a), threshold)
        assert low <= len(b) <= high


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=1, max_value=100))
def test_the_window_holds_the_length_itself(length: int, threshold: int) -> None:
    low, high = ratio_lengths(length, threshold)
    assert low <= length <= high


def test_near_duplicates_and_contradictions_are_still_found_through_the_index(ws, run) -> None:
    base = "The staging database listens on port 5432 and is reset every night at two"
    assert run("remember", base).code == 0
    assert run("remember", "Short unrelated note about tabs").code == 0
    assert run("remember", base + " and more words that make this text much longer than the first one, "
               "far past any ratio the gate would report").code == 0
    near = run("--json", "remember", base.replace("two", "three"))
    assert near.code == 0, near
    assert "near duplicate of" in near.out  # the JSON envelope's warnings
    same = run("--json", "remember", base + ".")
    assert same.json()["data"]["outcome"] == "noop"  # exact, once normalised
    assert run("remember", "The release branch is frozen on Fridays").code == 0
    flipped = run("remember", "The release branch is not frozen on Fridays")
    assert "possible conflict with" in flipped.err, flipped
