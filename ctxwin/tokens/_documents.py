"""What an inline PDF costs: its pages, read by a bounded scan of its page tree and objects.

Anthropic bills a PDF page as its text and as an image of the page ("PDF support", *Estimate
your costs*: "Each page typically uses 1,500-3,000 tokens per page depending on content
density", and, each page being converted into an image, "the same image-based cost
calculations are applied"). The scan reads the first :data:`PDF_SCAN_BYTES` of the file and
its last :data:`PDF_TAIL_BYTES` (where writers put the page tree and the trailer), and in
both the object streams (PDF 1.5: compressed objects, inflated up to :data:`PDF_SCAN_BYTES`
in all, :data:`OBJECT_STREAMS` streams at most), each region once: linear in the bytes read.
The pages are the largest ``/Count`` of a page tree node (``/Type /Pages``: the root holds
the total, and a file saved with incremental updates keeps the old copies of the pages it
changed). Without one, they are the ``/Type /Page`` objects, each object number once (its
last definition); in a file longer than the parts scanned, in proportion to its length. A
long file with no page found counts by its size (:data:`PDF_PAGE_BYTES` a page). Anything
else (not base64, not a PDF, no page found in a file read whole) has no count here, and the
meter counts it as its flat estimate (:data:`~ctxwin.tokens._meter.IMAGE_TOKENS`).
"""

from __future__ import annotations

import math
import re
import zlib
from bisect import bisect_right
from dataclasses import dataclass, field

from ctxwin.tokens._images import inline_data

__all__ = [
    "OBJECT_STREAMS",
    "PDF_PAGE_BYTES",
    "PDF_PAGE_TOKENS",
    "PDF_SCAN_BYTES",
    "PDF_TAIL_BYTES",
    "pdf_pages",
]

PDF_PAGE_TOKENS = 3000
"""A page: the top of Anthropic's documented 1,500-3,000 tokens a page, which is above every
page measured with count_tokens, its image included (a page of text or a table 2,100 to
2,500 on Claude 4.5 and 5.5 models, a scanned page 1,600). The sum of the documented text
and a page image's most (4,600) counted a 60-page PDF that fits a 200k window as over it."""
PDF_SCAN_BYTES = 8 << 20
"""The first bytes of a PDF scanned for its pages (decoded from base64 and searched at about
10 ms a MiB: 0.1 s at most with the tail, once a document, the meter memoizing blocks), and
the most its object streams inflate to."""
PDF_TAIL_BYTES = 2 << 20
"""The last bytes of a PDF longer than :data:`PDF_SCAN_BYTES` scanned too: writers put the
page tree and the trailer at the end (a file's objects after its images, an update)."""
PDF_PAGE_BYTES = 256 << 10
"""The bytes of a page of a PDF too long to read whole and whose pages the scan does not
find: such a file is made of images, and a page scanned at 200 dpi in colour is about 250
KiB of JPEG, so 4 pages (12,000 tokens) a MiB: on the high side of scans, where a fixed
estimate (1,000 tokens) counted a 40-page file of 12 MiB 120 times too low."""
OBJECT_STREAMS = 1024
"""The most object streams inflated (a PDF of 10,000 pages has about 100)."""

_DELIMITER = rb"(?=[\s/<>\[\]()%{}]|$)"
_PAGE = re.compile(rb"/Type\s*/Page" + _DELIMITER)
"""A page object's type (``/Pages``, the page tree's, is not: a name ends at a delimiter)."""
_PAGE_TREE = re.compile(rb"/Type\s*/Pages" + _DELIMITER)
_COUNT = re.compile(rb"/Count\s+(\d{1,9})" + _DELIMITER)
_OBJECT = re.compile(rb"\sobj" + _DELIMITER)
"""An object's keyword, its numbers before it (searched for by the keyword: 30 times as fast)."""
_NUMBERS = re.compile(rb"(\d{1,10})\s+\d{1,5}$")
_OBJECT_STREAM = re.compile(rb"/Type\s*/ObjStm" + _DELIMITER)
_FIRST = re.compile(rb"/First\s+(\d{1,9})" + _DELIMITER)
_STREAM = re.compile(rb"stream\r?\n")
_DICT = re.compile(rb"<<|>>")
_INT = re.compile(rb"\d{1,10}")
_TREE_BYTES = 256 << 10
"""How far a page tree node's dictionary is searched for around its type (its /Kids of a
flat tree, some 10 bytes a page)."""
_HEADER_BYTES = 4096
"""How far an object stream's dictionary is searched around its type, for ``stream``."""


@dataclass
class _Scan:
    """What the scan found so far, and what it may still inflate."""

    inflate: int  # bytes
    streams: int
    count: int = 0  # the largest /Count of a page tree node
    pages: set[int] = field(default_factory=set)  # object numbers last defined as a page
    loose: int = 0  # page objects whose object number was not found


def pdf_pages(source: str) -> int | None:
    """The pages of an inline PDF (base64, or a ``data:`` URL of it); None when the data is
    no base64, no PDF, or, read whole, holds no page the scan finds: never an exception."""
    b64 = inline_data(source)
    if b64 is None:
        return None
    size = (len(b64.text) - b64.offset) * 3 // 4  # 4 characters for 3 bytes (+2 padding)
    try:
        head = b64.read(0, PDF_SCAN_BYTES)
        at = max(len(head), size - PDF_TAIL_BYTES)
        tail = b64.read(at, size - at) if size > at else b""
    except ValueError:
        return None
    if not head.startswith(b"%PDF-"):
        return None
    scan = _Scan(inflate=PDF_SCAN_BYTES, streams=OBJECT_STREAMS)
    for part in (head, tail):
        _tree_count(part, scan)
        _plain_pages(part, scan)
        _object_streams(part, scan)
    if scan.count > 0:
        return scan.count
    pages = len(scan.pages) + scan.loose
    scanned = len(head) + len(tail)
    if size <= scanned + 2:
        return pages or None
    if pages == 0:
        return math.ceil(size / PDF_PAGE_BYTES)
    return math.ceil(pages * size / scanned)


def _tree_count(data: bytes, scan: _Scan) -> None:
    """The largest ``/Count`` of the page tree nodes in ``data``, each searched for within
    its dictionary; a node inside one already searched is not searched again."""
    pos = 0
    while (found := _PAGE_TREE.search(data, pos)) is not None:
        start, end = _dictionary(data, found.start(), pos, _TREE_BYTES)
        count = _COUNT.search(data, start, end)
        if count is not None:
            scan.count = max(scan.count, int(count[1]))
        pos = max(end, found.end())


def _dictionary(data: bytes, at: int, floor: int, bound: int) -> tuple[int, int]:
    """Where the dictionary holding ``at`` starts (not before ``floor``) and ends, each at
    most ``bound`` bytes away (``at`` and the bound where its ``<<`` or ``>>`` is not)."""
    start, depth = at, 0
    for mark in reversed(list(_DICT.finditer(data, max(floor, at - bound), at))):
        if mark[0] == b">>":
            depth += 1
        elif depth == 0:
            start = mark.start()
            break
        else:
            depth -= 1
    end, depth = min(len(data), at + bound), 0
    for mark in _DICT.finditer(data, at, end):
        if mark[0] == b"<<":
            depth += 1
        elif depth == 0:
            end = mark.end()
            break
        else:
            depth -= 1
    return start, end


def _plain_pages(data: bytes, scan: _Scan) -> None:
    """The page objects of ``data`` by their object numbers: an object is a page when a page
    type lies between its ``N G obj`` and the next; a later definition replaces it."""
    pages = _PAGE.finditer(data)
    page = next(pages, None)
    number: int | None = None
    for keyword in _OBJECT.finditer(data):
        numbers = _NUMBERS.search(data, max(0, keyword.start() - 20), keyword.start())
        if numbers is None:
            continue
        is_page = False
        while page is not None and page.start() < numbers.start():
            is_page = True
            if number is None:
                scan.loose += 1
            page = next(pages, None)
        _define(scan, number, is_page)
        number = int(numbers[1])
    _define(scan, number, page is not None)


def _define(scan: _Scan, number: int | None, is_page: bool) -> None:
    if number is None:
        return
    if is_page:
        scan.pages.add(number)
    else:
        scan.pages.discard(number)


def _object_streams(data: bytes, scan: _Scan) -> None:
    """The pages and page tree nodes in the object streams of ``data`` (FlateDecode, the one
    filter writers use for them). After a stream the search goes on past its end; it stops
    at a header with no ``stream`` near it or no ``endstream`` after it, and at the caps."""
    view = memoryview(data)  # the streams' slices, not copies of them
    pos = 0
    while scan.streams > 0 and scan.inflate > 0:
        found = _OBJECT_STREAM.search(data, pos)
        if found is None:
            return
        start = _STREAM.search(data, found.end(), found.end() + _HEADER_BYTES)
        if start is None:
            return
        end = data.find(b"endstream", start.end())
        scan.streams -= 1
        try:
            objects = zlib.decompressobj().decompress(
                view[start.end() : end if end >= 0 else len(data)], scan.inflate
            )
        except zlib.error:
            objects = b""
        scan.inflate -= len(objects)
        if objects:
            header = _dictionary(data, found.start(), pos, _HEADER_BYTES)
            first = _FIRST.search(data, header[0], start.start())
            _packed_pages(objects, None if first is None else int(first[1]), scan)
            _tree_count(objects, scan)
        if end < 0:
            return
        pos = end + len(b"endstream")


def _packed_pages(objects: bytes, first: int | None, scan: _Scan) -> None:
    """The page objects of an inflated object stream, by the object numbers its header
    pairs with their offsets from ``first`` (without them, each page counts)."""
    ints = [int(n) for n in _INT.findall(objects, 0, first or 0)]
    numbers, offsets = ints[0::2], ints[1::2]
    if first is None or not offsets or offsets != sorted(offsets):
        scan.loose += len(_PAGE.findall(objects))
        return
    found = {bisect_right(offsets, m.start() - first) - 1 for m in _PAGE.finditer(objects, first)}
    for i, number in enumerate(numbers[: len(offsets)]):
        _define(scan, number, i in found)
