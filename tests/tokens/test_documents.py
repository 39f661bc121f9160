"""An inline PDF's pages, counted by a bounded scan of its objects; anything without a
page count keeps the flat estimate."""

from __future__ import annotations

import zlib

import pytest

from ctxwin.tokens import _documents
from ctxwin.tokens._documents import pdf_pages
from tests.tokens.documents import b64, pdf


@pytest.mark.parametrize("pages", [1, 2, 80])
def test_the_pages_of_a_pdf_are_its_page_objects(pages: int) -> None:
    """Not its page tree's ``/Type /Pages`` node."""
    assert pdf_pages(b64(pdf(pages))) == pages


@pytest.mark.parametrize("tree", [True, False])
def test_the_pages_in_a_compressed_object_stream_are_counted(tree: bool) -> None:
    assert pdf_pages(b64(pdf(12, packed=True, tree=tree))) == 12


@pytest.mark.parametrize("tree", [True, False])
def test_an_incremental_update_counts_each_page_once(tree: bool) -> None:
    """The update writes a page again under its number: by the tree's /Count, or without
    one by the object's number, not as a page more."""
    assert pdf_pages(b64(pdf(60, updated=True, tree=tree))) == 60


def test_the_root_count_of_the_page_tree_is_the_pages() -> None:
    """Not an inner node's, nor the count of another dictionary near it."""
    tree = (
        b"2 0 obj\n<< /Count 7 /Kids [4 0 R 5 0 R] /Type /Pages >>\nendobj\n"
        b"4 0 obj\n<< /Type /Pages /Parent 2 0 R /Kids [6 0 R] /Count 4 >>\nendobj\n"
        b"5 0 obj\n<< /Type /Outlines /Count 90 >>\nendobj\n6 0 obj\n<</Type/Page>>\nendobj\n"
    )
    assert pdf_pages(b64(b"%PDF-1.7\n" + tree)) == 7


def test_a_data_url_of_a_pdf_is_read_as_its_base64() -> None:
    assert pdf_pages("data:application/pdf;base64," + b64(pdf(3))) == 3


@pytest.fixture
def short_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan of 20,000 bytes from the start and 5,000 from the end."""
    monkeypatch.setattr(_documents, "PDF_SCAN_BYTES", 20_000)
    monkeypatch.setattr(_documents, "PDF_TAIL_BYTES", 5_000, raising=False)


@pytest.mark.usefixtures("short_scan")
@pytest.mark.parametrize("pages_last", [True, False])
def test_a_pdf_longer_than_the_scan_counts_its_page_tree_at_either_end(pages_last: bool) -> None:
    """Its pages written after its images (in its tail) or before them (not scaled)."""
    assert pdf_pages(b64(pdf(4, filler=60_000, pages_last=pages_last))) == 4


@pytest.mark.usefixtures("short_scan")
def test_a_pdf_longer_than_the_scan_without_a_tree_counts_its_pages_in_proportion() -> None:
    """The pages found in the parts scanned stand for the rest."""
    data = pdf(4, filler=25_000, tree=False)  # 4 pages in the 25,000 bytes scanned
    assert pdf_pages(b64(data)) == -(-4 * len(data) // 25_000)


@pytest.mark.usefixtures("short_scan")
def test_a_long_pdf_whose_pages_are_not_found_counts_by_its_size() -> None:
    data = b"%PDF-1.7\n" + b"q" * (_documents.PDF_PAGE_BYTES * 3 - 9)  # 3 pages of its size
    assert pdf_pages(b64(data)) == 3


def _counting_inflations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every object stream the scan inflates, counted."""
    inflated: list[int] = []
    original = zlib.decompressobj

    def decompressobj() -> zlib._Decompress:
        inflated.append(1)
        return original()

    monkeypatch.setattr(zlib, "decompressobj", decompressobj)
    return inflated


def test_object_stream_headers_inside_a_stream_are_not_inflated_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a stream the scan goes on past its end: linear, not a search to the end of
    the file and an inflation for each header (20,000 pages counted, seconds a MiB)."""
    inflated = _counting_inflations(monkeypatch)
    stream = b"<</Type/ObjStm>>stream\n" + zlib.compress(b"<</Type/Page>>")
    assert pdf_pages(b64(b"%PDF-1.7\n" + stream * 5_000 + b"\nendstream")) == 1
    assert len(inflated) == 1


def test_an_object_stream_header_with_no_stream_near_it_ends_the_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inflated = _counting_inflations(monkeypatch)
    headers = b"<</Type/ObjStm>>" + b" " * 5_000 + b"stream\n"
    assert pdf_pages(b64(b"%PDF-1.7\n" + headers * 100 + b"1 0 obj<</Type/Page>>")) == 1
    assert inflated == []


def test_the_object_streams_inflated_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    inflated = _counting_inflations(monkeypatch)
    monkeypatch.setattr(_documents, "OBJECT_STREAMS", 3)
    stream = b"<</Type/ObjStm>>stream\n" + zlib.compress(b"<</Type/Page>>") + b"\nendstream\n"
    assert pdf_pages(b64(b"%PDF-1.7\n" + stream * 10)) == 3
    assert len(inflated) == 3


@pytest.mark.parametrize(
    "source",
    [
        b64(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF"),  # no page
        b64(b"GIF89a" + b"/Type /Page " * 3),  # not a PDF
        b64(pdf(2))[:-3],  # cut short: no base64
        "!!!! not base64 !!!!",
        "data:application/pdf,%PDF-1.4",  # a data URL that is not base64
        "",
    ],
)
def test_what_has_no_page_count_has_none(source: str) -> None:
    assert pdf_pages(source) is None
