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


def test_many_conversations_in_turn_each_resume_where_they_stopped() -> None:
    """With 8 entries, a server going round 9 conversations found none of them again: each
    request re-read its whole history (review s47-6: 58 ms a request at 670 messages)."""
    from ctxwin._core.memo import PREFIX_ENTRIES, PrefixCache

    cache: PrefixCache[int] = PrefixCache()
    histories = [[object() for _ in range(10)] for _ in range(PREFIX_ENTRIES)]
    for k, history in enumerate(histories):
        cache.put(history, k)
    for _ in range(2):  # round after round, each one grown by a message
        for k, history in enumerate(histories):
            found = cache.take(history)
            assert found == (len(history), k)
            history.append(object())
            cache.put(history, k)
    cache.put([object()], -1)  # one more: the oldest goes
    assert cache.take(histories[0]) is None
    assert cache.take(histories[1]) is not None


def test_the_objects_held_are_bounded_but_the_newest_entry_stays() -> None:
    from ctxwin._core.memo import PrefixCache

    cache: PrefixCache[str] = PrefixCache(size=64, items=100)
    old = [object() for _ in range(60)]
    new = [object() for _ in range(60)]
    cache.put(old, "old")
    cache.put(new, "new")  # 120 objects: the oldest entry goes
    assert cache.take(old) is None
    assert cache.take(new) == (60, "new")
    huge = [object() for _ in range(500)]
    cache.put(huge, "huge")  # over the bound alone: kept, the newest
    assert cache.take(huge) == (500, "huge")
