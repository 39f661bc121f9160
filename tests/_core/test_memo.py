def test_common_finds_the_longest_identity_prefix() -> None:
    from ctxwin._core.memo import PrefixCache

    a, b, c, d, x = (object() for _ in range(5))
    cache: PrefixCache[list[str]] = PrefixCache()
    cache.put([a, b, c], ["A", "B", "C"])
    cache.put([a, x], ["A", "X"])
    found = cache.common([a, b, d, c])  # a jump changed the third message
    assert found is not None
    n, state = found
    assert n == 2
    assert state[:n] == ["A", "B"]
    assert cache.common([d]) is None  # nothing shared
