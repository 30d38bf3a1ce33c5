"""A student's feedback page in Chromium: student text stays text, nothing is fetched, it prints."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: grading_support
from grading_support import X, _ts, write_class  # noqa: E402

from labs.core import grading  # noqa: E402
from labs.core import ledger  # noqa: E402

pytestmark = [pytest.mark.browser]

HOSTILE = ("<script>window.pwned=1</script> <img src=x onerror=window.pwned=2> "
           "[link](https://example.invalid) `code` **bold** </td></tr></table><h1>x</h1>")


def test_feedback_page_shows_student_text_as_text(page, artifacts, tmp_path):
    sub = write_class(tmp_path / "sub", tmp_path / "work", ids=("ada",))
    led = ledger.Ledger("ada", tmp_path / "work" / "second")
    led.append("predict", lab_id="lab01", item_id="lab01.levers", ts=_ts(90), lab_version="v1",
               payload={"value": "x", "label": HOSTILE, "answer_type": "choice",
                        "confidence": 2, "reason": HOSTILE})
    (sub / "ada" / "roofline-ledger-ada (1).jsonl").write_bytes(led.path.read_bytes())
    overrides = tmp_path / "o.csv"
    comment = HOSTILE.replace('"', "")
    overrides.write_text(f'student,item,points,comment\nada,{X},2,"{comment}"\n')
    out = tmp_path / "out"
    grading.main([str(sub), "-o", str(out), "--overrides", str(overrides)])
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto((out / "feedback" / "ada.html").as_uri())
    assert page.locator("script, img, a, h1 ~ h1").count() == 0  # no element from student text
    assert page.locator("h1").count() == 1
    assert page.evaluate("window.pwned === undefined")
    body = page.inner_text("body")
    assert "<script>window.pwned=1</script>" in body and "onerror" in body  # shown, as text
    assert requests == [(out / "feedback" / "ada.html").as_uri()]  # nothing else fetched
    page.screenshot(path=str(artifacts / "feedback-ada.png"), full_page=True)
    page.emulate_media(media="print")
    page.screenshot(path=str(artifacts / "feedback-ada-print.png"), full_page=True)
    assert page.pdf(format="A4")[:4] == b"%PDF"
