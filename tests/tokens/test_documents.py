"""An inline PDF's pages, counted by a bounded scan of its objects; anything without a
page count keeps the flat estimate."""

from __future__ import annotations

import pytest

from ctxwin.tokens import _documents
from ctxwin.tokens._documents import pdf_pages
from tests.tokens.documents import b64, pdf


@pytest.mark.parametrize("pages", [1, 2, 80])
def test_the_pages_of_a_pdf_are_its_page_objects(pages: int) -> None:
    """Not its page tree's ``/Type /Pages`` node."""
    assert pdf_pages(b64(pdf(pages))) == pages


def test_the_pages_in_a_compressed_object_stream_are_counted() -> None:
    assert pdf_pages(b64(pdf(12, packed=True))) == 12


def test_a_data_url_of_a_pdf_is_read_as_its_base64() -> None:
    assert pdf_pages("data:application/pdf;base64," + b64(pdf(3))) == 3


def test_a_pdf_longer_than_the_scan_counts_its_pages_in_proportion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the first bytes are decoded: the pages found there stand for the rest."""
    data = pdf(4, filler=30_000)
    monkeypatch.setattr(_documents, "PDF_SCAN_BYTES", len(data) // 2)
    assert pdf_pages(b64(data)) in (8, 9)  # 4 pages in half of it, rounded up


@pytest.mark.parametrize(
    "source",
    [
        b64(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF"),  # no page
        b64(b"%PDF-1.4\n2 0 obj << /Type /Pages /Count 3 >> endobj\n"),  # a tree, no page
        b64(b"GIF89a" + b"/Type /Page " * 3),  # not a PDF
        b64(pdf(2))[:-3],  # cut short: no base64
        "!!!! not base64 !!!!",
        "data:application/pdf,%PDF-1.4",  # a data URL that is not base64
        "",
    ],
)
def test_what_has_no_page_count_has_none(source: str) -> None:
    assert pdf_pages(source) is None
