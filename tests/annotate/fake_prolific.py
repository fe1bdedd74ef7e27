"""A local stand-in for Prolific's API v1, for tests: an ``http.server`` in a thread on 127.0.0.1 (random
port) that checks the token and the documented request shapes and answers in the documented response
shapes (``results`` lists with ``_links.next`` pagination, ``{"error": {...}}`` on a 4xx).

Tests read and seed its state (``studies``, ``submissions``, ``bonuses``, ``groups``, ``messages``) and
can make it fail the next calls to a path (``fail_next``) or lose a reply after doing the work
(``lose_reply``), to exercise retries. As documented by Prolific, a submission transition is idempotent
(a repeat is ignored) and paying a bonus is not (every request pays again: ``bonuses[id]["payments"]``).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

PAGE_SIZE = 2
JOINED = "2026-08-01T10:00:00Z"
PLACEHOLDERS = ("{{%PROLIFIC_PID%}}", "{{%STUDY_ID%}}", "{{%SESSION_ID%}}")
STUDY_REQUIRED = {
    "name": str,
    "description": str,
    "external_study_url": str,
    "prolific_id_option": str,
    "completion_codes": list,
    "total_available_places": int,
    "estimated_completion_time": int,
    "reward": int,
    "device_compatibility": list,
}
TRANSITIONS = {
    ("UNPUBLISHED", "PUBLISH"): "ACTIVE",
    ("ACTIVE", "PAUSE"): "PAUSED",
    ("PAUSED", "START"): "ACTIVE",
    ("ACTIVE", "STOP"): "COMPLETED",
    ("PAUSED", "STOP"): "COMPLETED",
}


@dataclass
class Rule:
    """Misbehave on the next ``times`` calls matching ``method`` and ``pattern``: answer ``status``
    before doing anything, or (``lose``) do the work and then answer 503."""

    method: str
    pattern: re.Pattern
    times: int
    status: int = 503
    retry_after: str = "0"
    lose: bool = False


class ApiError(Exception):
    def __init__(self, status: int, detail: Any):
        super().__init__(detail)
        self.status = status
        self.detail = detail


class FakeProlific:
    def __init__(self, token: str = "test-token"):
        self.token = token
        self.workspaces = [{"id": "ws0001", "title": "Lab workspace"}]
        self.balances = {
            "ws0001": {
                "currency_code": "GBP",
                "total_balance": 60000,
                "balance_breakdown": {"rewards": 45000, "fees": 12500, "vat": 2500},
                "available_balance": 50000,
                "available_balance_breakdown": {"rewards": 37500, "fees": 10417, "vat": 2083},
            }
        }
        self.studies: dict[str, dict] = {}
        self.submissions: dict[str, dict] = {}
        self.bonuses: dict[str, dict] = {}
        self.groups: dict[str, dict] = {}
        self.messages: list[dict] = []
        self.calls: list[tuple[str, str, Any]] = []
        self.rules: list[Rule] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # --- lifecycle and test controls -------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/v1/"

    def start(self) -> FakeProlific:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def new_id(self) -> str:
        return f"{next(self._ids):024x}"

    def fail_next(
        self, method: str, path_pattern: str, status: int = 429, times: int = 1, retry_after: str = "0"
    ):
        """Answer the next ``times`` matching calls with ``status`` (and Retry-After on a 429)."""
        self.rules.append(Rule(method, re.compile(path_pattern), times, status, retry_after))

    def lose_reply(self, method: str, path_pattern: str, times: int = 1) -> None:
        """Do the work of the next matching calls but answer 503, as if the reply were lost."""
        self.rules.append(Rule(method, re.compile(path_pattern), times, lose=True))

    def add_submission(
        self, study_id: str, participant_id: str, status: str = "AWAITING REVIEW", code: str = ""
    ):
        sid = self.new_id()
        self.submissions[sid] = {
            "id": sid,
            "participant_id": participant_id,
            "study_id": study_id,
            "status": status,
            "started_at": "2026-08-01T10:00:00Z",
            "completed_at": "2026-08-01T10:20:00Z" if status != "ACTIVE" else None,
            "study_code": code,
        }
        return sid

    def calls_to(self, method: str, path: str) -> list[Any]:
        return [body for m, p, body in self.calls if m == method and p == path]

    # --- routing --------------------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict, body: Any) -> tuple[int, Any]:
        routes = [
            ("GET", r"workspaces/", self.list_workspaces),
            ("GET", r"workspaces/(\w+)/balance/", self.get_balance),
            ("GET", r"studies/", self.list_studies),
            ("POST", r"studies/", self.create_study),
            ("GET", r"studies/(\w+)/", self.get_study),
            ("PATCH", r"studies/(\w+)/", self.update_study),
            ("POST", r"studies/(\w+)/transition/", self.transition_study),
            ("GET", r"studies/(\w+)/submissions/", self.list_submissions),
            ("GET", r"submissions/(\w+)/", self.get_submission),
            ("POST", r"submissions/(\w+)/transition/", self.transition_submission),
            ("POST", r"submissions/bonus-payments/", self.set_up_bonus),
            ("POST", r"bulk-bonus-payments/(\w+)/pay/", self.pay_bonus),
            ("GET", r"participant-groups/", self.list_groups),
            ("POST", r"participant-groups/", self.create_group),
            ("POST", r"participant-groups/(\w+)/participants/", self.add_participants),
            ("DELETE", r"participant-groups/(\w+)/participants/", self.remove_participants),
            ("POST", r"messages/", self.send_message),
        ]
        for verb, pattern, view in routes:
            match = re.fullmatch(pattern, path)
            if verb == method and match:
                return view(*match.groups(), query=query, body=body)
        raise ApiError(404, f"no route {method} {path}")

    # --- views ----------------------------------------------------------------------------------------
    def page(self, items: list[dict], query: dict, base: str) -> dict:
        number = int(query.get("page", ["1"])[0])
        chunk = items[(number - 1) * PAGE_SIZE : number * PAGE_SIZE]
        more = number * PAGE_SIZE < len(items)
        extra = "".join(f"&{k}={v[0]}" for k, v in query.items() if k != "page")
        return {
            "results": chunk,
            "_links": {"next": {"href": f"{self.url}{base}?page={number + 1}{extra}" if more else None}},
            "meta": {"count": len(items)},
        }

    def list_workspaces(self, query, body):
        return 200, self.page(self.workspaces, query, "workspaces/")

    def get_balance(self, workspace_id, query, body):
        if workspace_id not in self.balances:
            raise ApiError(404, "workspace not found")
        return 200, self.balances[workspace_id]

    def list_studies(self, query, body):
        return 200, self.page(list(self.studies.values()), query, "studies/")

    def create_study(self, query, body):
        errors = {
            name: [f"must be a {kind.__name__}"]
            for name, kind in STUDY_REQUIRED.items()
            if not isinstance(body.get(name), kind)
        }
        if body.get("prolific_id_option") == "url_parameters" and not all(
            p in str(body.get("external_study_url", "")) for p in PLACEHOLDERS
        ):
            errors["external_study_url"] = ["must carry PROLIFIC_PID, STUDY_ID and SESSION_ID placeholders"]
        for code in body.get("completion_codes") or []:
            if not {"code", "code_type", "actions"} <= set(code):
                errors["completion_codes"] = ["each needs code, code_type and actions"]
        for name in ("reward", "total_available_places", "estimated_completion_time"):
            if isinstance(body.get(name), int) and body[name] <= 0:
                errors[name] = ["must be positive"]
        for flt in body.get("filters", []):
            if not isinstance(flt.get("filter_id"), str) or not isinstance(flt.get("selected_values"), list):
                errors["filters"] = ["each filter needs filter_id and selected_values"]
        if errors:
            raise ApiError(400, errors)
        sid = self.new_id()
        self.studies[sid] = {**body, "id": sid, "status": "UNPUBLISHED", "places_taken": 0}
        return 201, self.studies[sid]

    def _study(self, study_id: str) -> dict:
        if study_id not in self.studies:
            raise ApiError(404, "study not found")
        return self.studies[study_id]

    def get_study(self, study_id, query, body):
        return 200, self._study(study_id)

    def update_study(self, study_id, query, body):
        study = self._study(study_id)
        places = body.get("total_available_places")
        if places is not None and (not isinstance(places, int) or places < study["total_available_places"]):
            raise ApiError(400, {"total_available_places": ["can only be increased"]})
        study.update(body)
        return 200, study

    def transition_study(self, study_id, query, body):
        study = self._study(study_id)
        target = TRANSITIONS.get((study["status"], body.get("action")))
        if target is None:
            raise ApiError(
                400, {"action": [f"cannot {body.get('action')} a study that is {study['status']}"]}
            )
        study["status"] = target
        return 200, study

    def list_submissions(self, study_id, query, body):
        self._study(study_id)
        items = [s for s in self.submissions.values() if s["study_id"] == study_id]
        return 200, self.page(items, query, f"studies/{study_id}/submissions/")

    def _submission(self, submission_id: str) -> dict:
        if submission_id not in self.submissions:
            raise ApiError(404, "submission not found")
        return self.submissions[submission_id]

    @staticmethod
    def detailed(submission: dict) -> dict:
        """A submission as ``submissions/{id}/`` and its transition answer show it: ``participant`` and
        ``entered_code`` where the study's list shows ``participant_id`` and ``study_code``."""
        return {
            "id": submission["id"],
            "started_at": submission["started_at"],
            "status": submission["status"],
            "study_id": submission["study_id"],
            "completed_at": submission["completed_at"],
            "entered_code": submission["study_code"] or None,
            "participant": submission["participant_id"],
        }

    def get_submission(self, submission_id, query, body):
        return 200, self.detailed(self._submission(submission_id))

    def transition_submission(self, submission_id, query, body):
        """Documented as idempotent: a repeated transition is ignored."""
        submission = self._submission(submission_id)
        action = body.get("action")
        if submission["status"] == {"APPROVE": "APPROVED", "REJECT": "REJECTED"}.get(action):
            return 200, self.detailed(submission)
        if submission["status"] != "AWAITING REVIEW":
            raise ApiError(400, {"action": [f"submission is {submission['status']}"]})
        if action == "APPROVE":
            submission["status"] = "APPROVED"
        elif action == "REJECT":
            if len(body.get("message", "")) < 100:
                raise ApiError(400, {"message": ["must be at least 100 characters"]})
            if not body.get("rejection_category"):
                raise ApiError(400, {"rejection_category": ["is required"]})
            submission["status"] = "REJECTED"
            submission["rejection"] = body
        else:
            raise ApiError(400, {"action": ["must be APPROVE or REJECT"]})
        return 200, self.detailed(submission)

    def set_up_bonus(self, query, body):
        study_id = body.get("study_id")
        self._study(study_id)
        rows = [line.split(",") for line in str(body.get("csv_bonuses", "")).strip().splitlines()]
        if not rows or any(len(r) != 2 for r in rows):
            raise ApiError(400, {"csv_bonuses": ["one 'participant_id,amount' per line"]})
        participants = {s["participant_id"] for s in self.submissions.values() if s["study_id"] == study_id}
        amount = 0
        for pid, value in rows:
            if pid not in participants:
                raise ApiError(400, {"csv_bonuses": [f"{pid} took no part in the study"]})
            amount += round(float(value) * 100)
        bid = self.new_id()
        fees = round(amount / 3)
        self.bonuses[bid] = {
            "id": bid,
            "study": study_id,
            "amount": amount,
            "fees": fees,
            "total_amount": amount + fees,
            "vat": 0,
            "csv_bonuses": body["csv_bonuses"],
            "payments": 0,
        }
        return 201, {k: v for k, v in self.bonuses[bid].items() if k != "payments"}

    def pay_bonus(self, bonus_id, query, body):
        """Documented as not idempotent: every request pays the bonus again."""
        bonus = self.bonuses.get(bonus_id)
        if bonus is None:
            raise ApiError(404, "bonus not found")
        bonus["payments"] += 1
        return 202, f"Bulk bonus payment with ID {bonus_id} is being processed asynchronously."

    def list_groups(self, query, body):
        workspace = query.get("workspace_id", [""])[0]
        items = [
            {k: v for k, v in g.items() if k != "participants"}
            for g in self.groups.values()
            if g["workspace_id"] == workspace
        ]
        return 200, self.page(items, query, "participant-groups/")

    def create_group(self, query, body):
        if not body.get("workspace_id") or not body.get("name"):
            raise ApiError(400, {"name": ["workspace_id and name are required"]})
        gid = self.new_id()
        self.groups[gid] = {
            "id": gid,
            "name": body["name"],
            "workspace_id": body["workspace_id"],
            "participants": [],
        }
        return 201, {k: v for k, v in self.groups[gid].items() if k != "participants"}

    def _group_participants(self, group_id: str, body: Any) -> tuple[dict, list[str]]:
        group = self.groups.get(group_id)
        if group is None:
            raise ApiError(404, "group not found")
        ids = body.get("participant_ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ApiError(400, {"participant_ids": ["must be a list of ids"]})
        return group, ids

    def add_participants(self, group_id, query, body):
        group, ids = self._group_participants(group_id, body)
        group["participants"] = sorted(set(group["participants"]) | set(ids))
        return 200, self._members(group)

    def remove_participants(self, group_id, query, body):
        group, ids = self._group_participants(group_id, body)
        group["participants"] = sorted(set(group["participants"]) - set(ids))
        return 200, self._members(group)

    @staticmethod
    def _members(group: dict) -> dict:
        """Everyone now in the group, with the time they joined it (one fixed time here)."""
        return {"results": [{"participant_id": p, "datetime_created": JOINED} for p in group["participants"]]}

    def send_message(self, query, body):
        if not all(isinstance(body.get(k), str) and body[k] for k in ("recipient_id", "study_id", "body")):
            raise ApiError(400, {"body": ["recipient_id, study_id and body are required"]})
        self.messages.append(body)
        return 201, {}

    # --- HTTP plumbing --------------------------------------------------------------------------------
    def _take(self, method: str, path: str, lose: bool) -> Rule | None:
        with self._lock:
            for rule in self.rules:
                if (
                    rule.lose == lose
                    and rule.method == method
                    and rule.pattern.fullmatch(path)
                    and rule.times
                ):
                    rule.times -= 1
                    return rule
        return None

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                return

            def _serve(self, method: str) -> None:
                parsed = urlparse(self.path)
                path = parsed.path.removeprefix("/api/v1/")
                query = parse_qs(parsed.query)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    self._reply(400, {"error": {"status": 400, "detail": "body is not JSON"}})
                    return
                fake.calls.append((method, path, body))
                if self.headers.get("Authorization") != f"Token {fake.token}":
                    self._reply(401, {"error": {"status": 401, "detail": "Invalid token."}})
                    return
                failure = fake._take(method, path, lose=False)
                if failure is not None:
                    headers = {"Retry-After": failure.retry_after} if failure.status == 429 else {}
                    self._reply(
                        failure.status, {"error": {"status": failure.status, "detail": "try again"}}, headers
                    )
                    return
                try:
                    with fake._lock:
                        status, reply = fake.handle(method, path, query, body)
                except ApiError as exc:
                    self._reply(exc.status, {"error": {"status": exc.status, "detail": exc.detail}})
                    return
                if fake._take(method, path, lose=True) is not None:
                    self._reply(503, {"error": {"status": 503, "detail": "upstream timeout"}})
                    return
                self._reply(status, reply)

            def _reply(self, status: int, body: Any, headers: dict | None = None) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

            def do_PATCH(self):
                self._serve("PATCH")

            def do_DELETE(self):
                self._serve("DELETE")

        return Handler
