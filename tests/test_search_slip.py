"""The stemmed-typo check of exact hits runs without rapidfuzz and agrees with it (issue 21)."""

from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import OSA

from memcli.index.search import _slip

WORDS = st.text(st.sampled_from("abcde"), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(WORDS, WORDS)
def test_slip_is_an_osa_distance_of_one_that_is_not_a_suffix(a: str, b: str) -> None:
    assert _slip(a, b) == (not (a.startswith(b) or b.startswith(a)) and OSA.distance(a, b) == 1)


def test_slip_examples() -> None:
    assert _slip("kubernets", "kubernetes") and _slip("deploymnet", "deployment") and _slip("cahce", "cache")
    assert not _slip("deploy", "deployments") and not _slip("cache", "cache") and not _slip("cache", "crash")
