"""Layout of every task kind's first item (and of the gold editor, the same page in gold mode), on a phone (375×812) and a laptop (1366×768): no line of the text
the worker reads lies under the sticky answer bar, and no button's label breaks inside a word (each word of
a button is laid out on one line). Screenshots go to ``tests/browser/output/page_layout/``."""

from __future__ import annotations

import pytest

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from tests.browser.conftest import OUTPUT, start_invite
from tests.browser.test_manage_studies import dataset_for, researcher, sign_in
from tests.browser.test_task_pages_phone import KINDS, SIZES, make_study, wait_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every element holding text the worker must read before answering, per kind.
READ = {
    "highlight": [".hl-text"],
    "nli_pair": [".nli-premise .hl-text", ".nli-hypothesis .hl-text"],
    "sentence_rating": [".rt-review"],
    "token_marking": [".hl-text", ".tm-label", ".tm-explanation"],
    "reveal_model": [".fc-predicted", ".fc-side .fc-text"],
    "justify": [".fc-lead", ".fc-evidence"],
    "investigate": [".fc-predicted", ".fc-group"],
}

COVERED_LINES = """([selectors, bar]) => {
  const dock = document.querySelector(bar).getBoundingClientRect();
  const out = [];
  for (const sel of selectors) {
    const els = document.querySelectorAll(sel);
    if (!els.length) out.push(`${sel}: not on the page`);
    for (const el of els) {
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (!node.data.trim()) continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        for (const r of range.getClientRects()) {
          if (r.width === 0 || r.height === 0 || r.bottom <= 0 || r.top >= innerHeight) continue;
          if (r.bottom > dock.top + 1 && r.top < dock.bottom - 1)
            out.push(`${sel}: "${node.data.trim()}" at y=${Math.round(r.top)} is under the bar at y=${Math.round(dock.top)}`);
        }
      }
    }
  }
  return out;
}"""

BROKEN_WORDS = """(scope) => {
  const out = [];
  for (const button of document.querySelectorAll(scope)) {
    if (!button.offsetParent) continue;
    const walker = document.createTreeWalker(button, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (tops.size > 1) out.push(`"${m[0]}" in "${button.textContent.trim()}" is broken over ${tops.size} lines`);
      }
    }
    if (button.scrollWidth > button.clientWidth + 1) out.push(`"${button.textContent.trim()}" overflows its button`);
  }
  return out;
}"""


TALLER_THAN_ROOM = """([selectors, bar]) => {
  const boxes = selectors.flatMap((sel) => [...document.querySelectorAll(sel)]).map((el) => el.getBoundingClientRect());
  if (!boxes.length) return false;
  const top = Math.min(...boxes.map((b) => b.top)), bottom = Math.max(...boxes.map((b) => b.bottom));
  return bottom - top > document.querySelector(bar).getBoundingClientRect().top - Math.max(top, 0);
}"""


def layout_problems(page, kind: str) -> list[str]:
    """Lines of the kind's text under the answer bar, and button words broken over lines. A text taller than
    the room above the bar cannot all show at once: then it must come clear of the bar when scrolled down."""
    covered = page.evaluate(COVERED_LINES, [READ[kind], ".ht-dock"])
    if covered:  # measured again once the page has settled (fonts, the bar's own content)
        page.wait_for_timeout(500)
        covered = page.evaluate(COVERED_LINES, [READ[kind], ".ht-dock"])
    if covered and page.evaluate(TALLER_THAN_ROOM, [READ[kind], ".ht-dock"]):
        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        covered = page.evaluate(COVERED_LINES, [READ[kind], ".ht-dock"])
    broken = page.evaluate(BROKEN_WORDS, "#hatlab-app button")
    return covered + broken


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("kind", KINDS)
def test_first_item_text_is_clear_of_the_bar_and_no_word_breaks(live_server, chromium, kind, size):
    study = make_study(kind)
    shots = OUTPUT / "page_layout"
    shots.mkdir(parents=True, exist_ok=True)
    context = chromium.new_context(locale="en-US", **SIZES[size])
    context.set_default_timeout(10_000)
    try:
        page = context.new_page()
        start_invite(page, live_server.url + invite_path(study, make_invite(study, f"layout-{kind}-{size}")))
        wait_item(page, kind, 1)
        page.screenshot(path=str(shots / f"{kind}_{size}.png"))
        assert page.locator(".ht-dock").count() == 1
        problems = layout_problems(page, kind)
        assert not problems, f"{kind} {size}: {problems}"
    finally:
        context.close()


@pytest.mark.parametrize("kind", ["highlight", "sentence_rating", "token_marking"])
def test_gold_editor_text_is_clear_of_the_bar(kind, live_server, browser_context):
    """The researcher's gold editor shows the item's whole text (and the token-marking explanation)
    above the bar, on a laptop and a phone-width window."""
    shots = OUTPUT / "page_layout"
    shots.mkdir(parents=True, exist_ok=True)
    owner = researcher()
    dataset = dataset_for(kind, owner)
    page = browser_context.new_page()
    sign_in(page, live_server.url)
    page.goto(live_server.url + "/studies/")
    page.locator(f"a[data-kind='{kind}']").click()
    page.fill("input[name=name]", f"{kind} golds")
    page.select_option("select[name=dataset]", str(dataset.pk))
    page.locator("button[type=submit]", has_text="Create study").click()
    page.wait_for_selector("h1 .badge.draft")
    page.get_by_role("link", name="Golds").click()
    page.get_by_role("button", name="Prepare items").click()
    page.locator("#item-1").get_by_role("link", name="Mark as gold").click()
    for size, options in SIZES.items():
        page.set_viewport_size(options["viewport"])
        page.reload()
        page.wait_for_selector("#hatlab-app[data-state='item']")
        page.screenshot(path=str(shots / f"gold_editor_{kind}_{size}.png"))
        problems = layout_problems(page, kind)
        assert not problems, f"gold editor {kind} {size}: {problems}"
