"""The annotator page inside a crowd platform's frame, a cross-site context, over HTTPS settings (secure
cookies): the session and CSRF cookies (SameSite=Lax) stay behind and only the worker cookie
(SameSite=None) travels, with the CSRF token the page got in task_json. The platform is a page on
``127.0.0.1`` framing the app on ``localhost``: two sites, and both count as secure origins."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.models import Assignment, Response
from tests.browser.test_highlight_task import TEXT_A, TEXT_B, make_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def platform():
    """A stand-in crowd platform on 127.0.0.1 whose page frames the URL it is given (``?src=``)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if "?src=" not in self.path:  # the browser's favicon request
                self.send_error(404)
                return
            src = self.path.split("?src=", 1)[1]
            body = f'<!doctype html><title>platform</title><iframe src="{src}" width="1000" height="800"></iframe>'
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_task_works_in_a_cross_site_frame(live_server, settings, platform, browser_context):
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    settings.HATLAB_FRAME_ANCESTORS = [platform]
    study = make_study(TEXT_A, TEXT_B)
    app = live_server.url.replace("127.0.0.1", "localhost")
    page = browser_context.new_page()
    sent_cookies: list[str] = []
    page.on(
        "request",
        lambda r: sent_cookies.append(r.all_headers().get("cookie", "")) if "/api/work/" in r.url else None,
    )
    page.goto(f"{platform}/?src={app}{invite_path(study, make_invite(study, 'framed'))}")
    frame = page.frame_locator("iframe")
    frame.locator("[data-invite-start] button").click()  # the invitee's start, inside the platform's frame
    frame.locator("#hatlab-app[data-state='item']").wait_for()
    assignment = Assignment.objects.get(study=study)
    assert sent_cookies and all("hatlab_workers=" in c and "csrftoken=" not in c for c in sent_cookies)
    # an answer goes through the same way
    task_frame = page.frames[1]
    status = task_frame.evaluate(
        """async (uid) => {
            const task = JSON.parse(document.getElementById("hatlab-task").textContent);
            const url = task.submit_url_template.replace("ASSIGNMENT", uid);
            const words = document.querySelectorAll(".hl-word").length;
            const map = Array(words).fill(0); map[0] = 1;
            const reply = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json",
                "X-CSRFToken": task.csrf_token}, body: JSON.stringify({submission_key: crypto.randomUUID(),
                answer: {label: "positive", map}, timings: {read_ms: 2000, answer_ms: 1000, label_at_ms: 2000,
                first_highlight_at_ms: 2500}})});
            return [reply.status, await reply.text()];
        }""",
        str(assignment.uid),
    )
    assert status[0] == 201, status[1]
    assert Response.objects.filter(study=study).count() == 1
