"""Token counting: exact, offline, memoized.

ctxwin counts with tiktoken encodings. tiktoken itself downloads its rank files from the
internet on first use, which fails on a machine without internet and is a hidden network
call in any case; ctxwin never lets it. An encoding is loaded, in this order, from:

1. a directory you name (``TiktokenCounter(data_dir=...)`` or ``CTXWIN_TIKTOKEN_DIR``) holding
   ``<encoding>.tiktoken`` files, e.g. copied from a machine that has them;
2. tiktoken's own cache (``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or the temp folder),
   if an earlier tiktoken run downloaded the file;
3. the rank data bundled in the ``quicktok-v1`` wheel (a dependency): ``cl100k_base`` and
   ``o200k_base``.

Every file is checked against the SHA-256 hash tiktoken publishes for it, so a count is
exact or the file is refused. If the configured encoding cannot be loaded, ctxwin falls back
to one that can (``o200k_base``, then ``cl100k_base``, then a character estimate), warns
once with :class:`CounterFallbackWarning`, and the counter says so: ``exact`` is false and
``name`` names what is really counting.

"Exact" means exact for the encoding: OpenAI's models use these encodings; Anthropic and
Gemini models have tokenizers of their own, for which the counts are close estimates. Plug
in any callable (for instance a provider's count-tokens endpoint) with :class:`CallableCounter`.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import inspect
import math
import numbers
import operator
import os
import reprlib
import struct
import tempfile
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, SupportsIndex, runtime_checkable

from ctxwin._exceptions import PolicyError
from ctxwin.tokens._exact import diverges, tables_verified

__all__ = [
    "COUNTER_SPEC",
    "TOKENIZERS",
    "ApproximateCounter",
    "CallableCounter",
    "CounterFallbackWarning",
    "MemoCounter",
    "TiktokenCounter",
    "TokenCounter",
    "TokenEncoder",
    "get_counter",
    "is_counter_spec",
    "not_a_counter",
]

COUNTER_SPEC = "a TokenCounter, a callable(text) -> int or a tokenizer name"
"""What :func:`get_counter` takes, in the words of the error for anything else."""


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that counts tokens in a text.

    ``name`` says which tokenizer counted; ``exact`` whether the counts are those of the
    tokenizer that was asked for.
    """

    name: str
    exact: bool

    def count(self, text: str) -> int: ...


@runtime_checkable
class TokenEncoder(TokenCounter, Protocol):
    """A counter that can also cut text on exact token boundaries (used by capping).

    ``can_encode`` may be false at run time (a fallback that only estimates); capping then
    cuts by searching on characters with :meth:`count`.
    """

    can_encode: bool

    def encode(self, text: str) -> list[int]: ...

    def decode(self, tokens: Sequence[int]) -> str: ...


class CounterFallbackWarning(UserWarning):
    """The configured encoding could not be loaded offline; another one is counting."""


# Published by tiktoken (tiktoken_ext/openai_public.py): the pattern, special tokens and the
# SHA-256 of each rank file. Kept here so an encoding can be built without tiktoken's loader,
# which would try the network.
_ENDOFTEXT = "<|endoftext|>"
_ENCODINGS: dict[str, tuple[str, str, dict[str, int]]] = {
    "o200k_base": (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        {_ENDOFTEXT: 199999, "<|endofprompt|>": 200018},
    ),
    "cl100k_base": (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        (
            r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
            r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
        ),
        {
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
}
TOKENIZERS: tuple[str, ...] = ("o200k_base", "cl100k_base", "approx", "approx-4-chars")
"""The tokenizer names :func:`get_counter` knows (a policy may also name counters it is
given)."""
_APPROX = ("approx", "approx-4-chars")
_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
_QUICKTOK_FILES = {"o200k_base": "o200k.vocab", "cl100k_base": "cl100k.vocab"}
_FALLBACK_ORDER = ("o200k_base", "cl100k_base")

_lock = threading.Lock()
_loaded: dict[tuple[str, str | None], object] = {}  # (encoding, data_dir) -> tiktoken.Encoding
_warned: set[str] = set()


def _parse_tiktoken_file(data: bytes) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _parse_quicktok_vocab(data: bytes) -> tuple[dict[bytes, int], bytes]:
    """Read quicktok's binary vocabulary (u32 count, then u16 length, bytes, u32 rank).

    Returns the ranks and the same ranks written in tiktoken's file format, whose SHA-256
    must equal tiktoken's published hash.
    """
    (n,) = struct.unpack_from("<I", data, 0)
    off = 4
    ranks: dict[bytes, int] = {}
    unpack = struct.unpack_from
    for _ in range(n):
        (length,) = unpack("<H", data, off)
        off += 2
        token = data[off : off + length]
        off += length
        (rank,) = unpack("<I", data, off)
        off += 4
        ranks[token] = rank
    if off != len(data):
        raise ValueError("trailing bytes")
    ordered = sorted(ranks.items(), key=lambda kv: kv[1])
    text = b"".join(base64.b64encode(t) + b" " + str(r).encode() + b"\n" for t, r in ordered)
    return ranks, text


def _candidate_files(encoding: str, data_dir: str | None) -> list[Path]:
    files: list[Path] = []
    for d in (data_dir, os.environ.get("CTXWIN_TIKTOKEN_DIR")):
        if d:
            files.append(Path(d) / f"{encoding}.tiktoken")
    cache = (
        os.environ.get("TIKTOKEN_CACHE_DIR")
        or os.environ.get("DATA_GYM_CACHE_DIR")
        or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    )
    key = hashlib.sha1(_BLOB_URL.format(encoding).encode()).hexdigest()
    files.append(Path(cache) / key)
    return files


def _load_ranks(encoding: str, data_dir: str | None) -> tuple[dict[bytes, int], str] | None:
    """Find verified rank data for ``encoding`` on this machine, or None. Never networks."""
    expected = _ENCODINGS[encoding][0]
    for path in _candidate_files(encoding, data_dir):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if hashlib.sha256(data).hexdigest() == expected:
            return _parse_tiktoken_file(data), str(path)
    spec = importlib.util.find_spec("quicktok")  # locates the package without importing it
    if spec is not None and spec.origin is not None:
        vocab = Path(spec.origin).parent / "data" / _QUICKTOK_FILES[encoding]
        try:
            ranks, text = _parse_quicktok_vocab(vocab.read_bytes())
        except (OSError, ValueError, struct.error):
            return None
        if hashlib.sha256(text).hexdigest() == expected:
            return ranks, f"quicktok-v1:{vocab.name}"
    return None


def _encoding(name: str, data_dir: str | None) -> object | None:
    key = (name, data_dir)
    with _lock:
        if key in _loaded:
            return _loaded[key]
        found = _load_ranks(name, data_dir) if name in _ENCODINGS else None
        enc: object | None = None
        if found is not None:
            import tiktoken

            _, pat, special = _ENCODINGS[name]
            enc = tiktoken.Encoding(
                name, pat_str=pat, mergeable_ranks=found[0], special_tokens=special
            )
        _loaded[key] = enc
        return enc


class TiktokenCounter:
    """Counts with a tiktoken encoding loaded offline (see the module docstring).

    ``encoding`` is the encoding asked for; ``name`` the one really counting, and ``exact``
    is false when they differ (a fallback was taken).
    """

    def __init__(
        self,
        encoding: str = "o200k_base",
        *,
        data_dir: str | os.PathLike[str] | None = None,
        engine: Literal["auto", "tiktoken"] = "auto",
    ) -> None:
        self.encoding = encoding
        ddir = os.fspath(data_dir) if data_dir is not None else None
        chosen: str | None = None
        enc: object | None = None
        for candidate in (encoding, *(e for e in _FALLBACK_ORDER if e != encoding)):
            enc = _encoding(candidate, ddir)
            if enc is not None:
                chosen = candidate
                break
        self._approx: ApproximateCounter | None = None
        if chosen is None:
            self._approx = ApproximateCounter()
            self.name = self._approx.name
        else:
            self.name = chosen
        self.exact = chosen == encoding
        self._enc: Any = enc
        self._fast: Callable[[str], int] | None = None
        if engine == "auto" and chosen is not None:
            self._fast = _fast_counter(chosen, enc)
        self.engine = "quicktok" if self._fast is not None else "tiktoken"
        if not self.exact and encoding not in _warned:
            _warned.add(encoding)
            known = encoding in _ENCODINGS
            warnings.warn(
                f"tiktoken encoding {encoding!r} "
                + (
                    "is not available offline"
                    if known
                    else "is not one ctxwin knows (o200k_base, cl100k_base)"
                )
                + f"; counting with {self.name} instead, so counts are estimates. Put "
                f"{encoding}.tiktoken in CTXWIN_TIKTOKEN_DIR to count exactly.",
                CounterFallbackWarning,
                stacklevel=2,
            )

    @property
    def can_encode(self) -> bool:
        return self._approx is None

    def count(self, text: str) -> int:
        if self._fast is not None:
            return self._fast(text)
        if self._approx is not None:
            return self._approx.count(text)
        return len(self._enc.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        if self._approx is not None:
            raise NotImplementedError("the approximate fallback cannot encode")
        tokens: list[int] = self._enc.encode_ordinary(text)
        return tokens

    def decode(self, tokens: Sequence[int]) -> str:
        if self._approx is not None:
            raise NotImplementedError("the approximate fallback cannot decode")
        # Decoding a slice of tokens can split a multi-byte character at either edge; drop
        # such fragments instead of writing U+FFFD (tokens inside the slice are whole).
        data: bytes = self._enc.decode_bytes(list(tokens))
        return data.decode("utf-8", errors="ignore")

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.encoding!r}, name={self.name!r}, exact={self.exact})"


# Texts on which a fast engine must agree with tiktoken before ctxwin counts with it: the
# pre-tokenizer's corner cases (contractions, digit runs, whitespace runs, newlines, CJK,
# emoji, combining marks, mixed scripts).
_SELF_CHECK = (
    "Hello, world! I'm here; you're there. It's 12345678 and 3.14159.",
    "def f(x):\n    return x**2  # comment\n\n\t\tindented   \r\n",
    "東京の天気は晴れです。今日は2024年5月15日。",
    "emoji 🙂👍🏽 and é (e + ́) ß ﬁ İstanbul ΑΒΓ Привет مرحبا",
    '{"order_id":"A1","items":[{"name":"x","qty":2}],"total":1.5e3}',
    "      leading spaces and trailing spaces      ",
    "ALLCAPS WORDS'S and MixedCase's DON'T",
    "a" * 300 + " " + "-" * 200 + "\n" * 50,
)


def _fast_counter(name: str, enc: Any) -> Callable[[str], int] | None:
    """quicktok's counter over the same verified ranks, routed so it counts as tiktoken.

    quicktok reimplements tiktoken's BPE in C++ and counts several times faster; ctxwin uses
    it only for counting (cutting always uses tiktoken), only for the encodings it bundles,
    only with the character tables ``ctxwin.tokens._exact`` was verified against, and only
    after it gave tiktoken's counts on every text of a self-check. A text holding a
    character the engines split differently, or a lone surrogate, is counted by tiktoken.
    """
    spec = importlib.util.find_spec("quicktok")
    if name not in _QUICKTOK_FILES or spec is None or spec.origin is None:
        return None
    if not tables_verified(Path(spec.origin).parent / "data"):
        return None
    try:
        import quicktok  # type: ignore[import-untyped]

        fast: Callable[[str], int] = quicktok.get_encoding(name).count
        for text in _SELF_CHECK:
            if fast(text) != len(enc.encode_ordinary(text)):
                return None
    except Exception:  # a broken optional engine must never break counting
        return None
    reference: Callable[[str], list[int]] = enc.encode_ordinary

    def count(text: str) -> int:
        if text.isascii() or not diverges(text):
            return fast(text)
        return len(reference(text))

    return count


class ApproximateCounter:
    """A counter that needs nothing: about four characters per token. Never exact."""

    name = _APPROX[1]
    exact = False

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4


def _checked_count(n: object, counter: str, text: str) -> int:
    """``n`` as a count: a non-negative integer (``bool`` is not one), a finite
    non-negative number rounded up (``len(text) / 4``), or a :class:`~ctxwin.PolicyError`
    naming the counter that returned it."""
    if isinstance(n, SupportsIndex) and not isinstance(n, bool):  # int, numpy's integers
        value = operator.index(n)
        if value >= 0:
            return value
    elif isinstance(n, numbers.Real) and not isinstance(n, bool):
        real = float(n)
        if 0 <= real < math.inf:
            return math.ceil(real)
    raise PolicyError(
        f"the token counter {counter!r:.60} returned {reprlib.repr(n)} for a text of {len(text)} "
        "characters: a counter must return a non-negative int"
    )


class CallableCounter:
    """Wraps any ``callable(text) -> int`` as a counter (e.g. a provider's count endpoint)."""

    def __init__(self, func: Callable[[str], int], *, name: str | None = None, exact: bool = True):
        self._func = func
        self.name: str = name or str(getattr(func, "__name__", "callable"))
        self.exact = exact

    def count(self, text: str) -> int:
        return _checked_count(self._func(text), self.name, text)


class MemoCounter:
    """Memoizes another counter by content: each distinct text is counted once.

    Bounded (past ``max_entries``, the texts first counted longest ago are forgotten, used
    since or not) so a long-running agent does not grow without limit.
    """

    def __init__(
        self,
        inner: TokenCounter,
        *,
        max_entries: int = 200_000,
        sharing: MemoCounter | None = None,
    ) -> None:
        """``sharing``: count into that counter's memo, under its bound (the same text then
        counts once for both)."""
        self.inner = inner
        self.name = inner.name
        self.exact = inner.exact
        self._memo: OrderedDict[str, int] = OrderedDict() if sharing is None else sharing._memo
        self._max: int = max_entries if sharing is None else sharing._max

    def clear(self) -> None:
        """Forget every count (those of the counters sharing this memo too)."""
        self._memo.clear()

    def count(self, text: str) -> int:
        memo = self._memo
        n = memo.get(text)
        if n is None:
            n = self.inner.count(text)
            if type(n) is not int or n < 0:  # a counter of the user's
                n = _checked_count(n, self.name, text)
            memo[text] = n
            if len(memo) > self._max:
                memo.popitem(last=False)
        return n


def get_counter(spec: str | TokenCounter | Callable[[str], int] | None = None) -> TokenCounter:
    """A counter from an encoding name, a counter, or a ``callable(text) -> int``; anything
    else is a :class:`~ctxwin.PolicyError` at ``counter``, in ``load_policy``'s words."""
    if spec is None:
        return TiktokenCounter()
    if isinstance(spec, str):
        if spec in _APPROX:
            return ApproximateCounter()
        return TiktokenCounter(spec)
    if isinstance(spec, TokenCounter):
        return spec
    if callable(spec) and _takes_text(spec):
        return CallableCounter(spec)
    raise PolicyError(not_a_counter(spec), key="counter")


def is_counter_spec(spec: object) -> bool:
    """Whether :func:`get_counter` takes ``spec``: an encoding name, a counter or a
    callable that can be called with a text alone."""
    return isinstance(spec, str | TokenCounter) or (callable(spec) and _takes_text(spec))


def _takes_text(spec: Callable[..., object]) -> bool:
    """Whether ``spec`` can be called with one argument, the text: a callable of another
    signature (``lambda: 1``, ``def count(text, model)``) loaded, and the first apply ended
    in a bare TypeError from inside the meter. One whose signature cannot be read (some
    builtins) is taken."""
    try:
        inspect.signature(spec).bind("text")
    except TypeError:
        return False
    except ValueError:  # no signature to read
        return True
    return True


def not_a_counter(spec: object) -> str:
    """Why :func:`get_counter` refuses ``spec``, as a policy's counters say it too:
    ``must be a TokenCounter, ... not int 42`` (the value shown when its repr is short and
    not ``<...>``, cut to 30 characters)."""
    shown = reprlib.repr(spec)
    shown = shown if len(shown) <= 30 else shown[:27] + "..."
    kind = type(spec).__name__
    what = kind if shown.startswith("<") else f"{kind} {shown}"
    if callable(spec) and not isinstance(spec, TokenCounter):
        what += " that cannot be called with a text alone"
    return f"must be {COUNTER_SPEC}, not {what}"
