"""The dashboards' JSON API and CSV downloads (the study's owner and admins; 403 for anyone else).

Routes (under ``api/``, see :mod:`annotate.api.urls`)::

    dashboards/studies/<uid>/                             the study dashboard
    dashboards/studies/<uid>/csv/<id>.csv                 one of its charts or tables as CSV
    dashboards/studies/<uid>/machine-options/             model runs × methods it can be compared with
    dashboards/studies/<uid>/similarity/?select=<run>:<method>&…&target=predicted|gold
    dashboards/studies/<uid>/similarity/csv/<id>.csv?select=…
    dashboards/studies/<uid>/texts/<item>/?select=…       one text: human maps, CAM, SAM, machine maps

A dashboard answers 200 with ``"status": "done"`` and its figures, or — while a background job
computes it — 202 with the job's ``status``, ``progress`` (0–1), ``message`` and ``job`` id; poll
until it is done. Every chart and table carries the URL of its CSV (``csv``), addressed by the figure's
id: a chart's is its name (``behavioral``), a table's ends in ``-table`` (``behavioral-table``; see
:mod:`annotate.dashboards.charts`).
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.access import IsResearcher
from annotate.dashboards import charts
from annotate.dashboards.cache import SIMILARITY, STUDY
from annotate.dashboards.params import (
    clean_selections,
    clean_target,
    item_for,
    options_for,
    similarity_params,
    study_for,
)
from annotate.dashboards.serve import DashboardState, get_dashboard
from annotate.dashboards.similarity import text_detail
from annotate.studies.progress import study_progress

SELECT = OpenApiParameter(
    "select",
    str,
    many=True,
    pattern=r"^[0-9]+:[^\s\u0000]+$",
    description="<model run id>:<method>, repeated",
)
SELECT_REQUIRED = OpenApiParameter(
    "select",
    str,
    many=True,
    required=True,
    pattern=r"^[0-9]+:[^\s\u0000]+$",
    description="<model run id>:<method>, repeated (at least one)",
)
TARGET = OpenApiParameter("target", str, enum=["predicted", "gold"], description="which class's explanation")


def live_progress(study) -> dict:
    """The study's progress now (not cached: open assignments change without new data)."""
    p = study_progress(study)
    keys = (
        "status",
        "items_done",
        "items_verified",
        "items_total",
        "percent",
        "responses",
        "verified",
        "provisional",
        "set_aside",
        "responses_needed",
        "open_assignments",
    )
    return {k: p[k] for k in keys} | {"annotators": len(p["annotators"])}


def _with_csv_links(result: dict, csv_url) -> dict:
    out = dict(result)
    out["charts"] = [c | {"csv": csv_url(c["id"])} for c in result.get("charts", ())]
    out["tables"] = [t | {"csv": csv_url(t["id"])} for t in result.get("tables", ())]
    return out


def _pending(state: DashboardState) -> Response:
    job = state.job
    return Response(
        {
            "status": state.status,
            "progress": job.progress if job else 0.0,
            "message": job.message if job else "",
            "job": job.pk if job else None,
        },
        status=status.HTTP_202_ACCEPTED,
    )


def _csv(study, name: str, state: DashboardState, prefix: str) -> HttpResponse | Response:
    if state.status != "done":
        return _pending(state)
    assert state.result is not None  # a done state has its result
    found = charts.find(state.result, name)
    if found is None:
        raise NotFound({"name": [f"no chart or table named {name!r}"]})
    response = HttpResponse(charts.to_csv(*found), content_type="text/csv; charset=utf-8")
    slug = re.sub(r"[^A-Za-z0-9]+", "-", study.name).strip("-").lower() or "study"
    response["Content-Disposition"] = f'attachment; filename="{slug}-{prefix}{name}.csv"'
    return response


class StudyDashboardView(APIView):
    """Progress, label distribution, agreement with bootstrap intervals and notes, human maps, annotators."""

    permission_classes = [IsResearcher]

    @extend_schema(responses={200: dict, 202: dict})
    def get(self, request, uid):
        study = study_for(request.user, uid)
        state = get_dashboard(study, STUDY, {}, request.user)
        if state.status != "done":
            return _pending(state)
        body = _with_csv_links(
            state.result, lambda n: reverse("api-dashboard-study-csv", args=[study.uid, n])
        )
        return Response({**body, "status": "done", "study_progress": live_progress(study)})


class StudyDashboardCsvView(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses={(200, "text/csv"): str, 202: dict})
    def get(self, request, uid, name: str):
        study = study_for(request.user, uid)
        return _csv(study, name, get_dashboard(study, STUDY, {}, request.user), "")


class MachineOptionsView(APIView):
    """Finished model runs on the study's dataset and their methods with stored maps."""

    permission_classes = [IsResearcher]

    @extend_schema(responses={200: dict})
    def get(self, request, uid):
        study = study_for(request.user, uid)
        return Response({"runs": options_for(request.user, study)})


def _similarity_request(request, uid) -> tuple:
    study = study_for(request.user, uid)
    selections = clean_selections(request.user, study, request.query_params.getlist("select"))
    target = clean_target(request.query_params.get("target"))
    return study, selections, target


class SimilarityView(APIView):
    """Human vs machine for the selected model runs × methods (Sen et al. 2020 Tables 2–5)."""

    permission_classes = [IsResearcher]

    @extend_schema(parameters=[SELECT_REQUIRED, TARGET], responses={200: dict, 202: dict})
    def get(self, request, uid):
        study, selections, target = _similarity_request(request, uid)
        state = get_dashboard(study, SIMILARITY, similarity_params(selections, target), request.user)
        if state.status != "done":
            return _pending(state)
        query = urlencode([("select", s.key) for s in selections] + [("target", target)])
        body = _with_csv_links(
            state.result, lambda n: f"{reverse('api-dashboard-similarity-csv', args=[study.uid, n])}?{query}"
        )
        return Response({**body, "status": "done"})


class SimilarityCsvView(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(parameters=[SELECT_REQUIRED, TARGET], responses={(200, "text/csv"): str, 202: dict})
    def get(self, request, uid, name: str):
        study, selections, target = _similarity_request(request, uid)
        state = get_dashboard(study, SIMILARITY, similarity_params(selections, target), request.user)
        return _csv(study, name, state, "machine-")


class TextView(APIView):
    """One text: its words, human maps (slot order), CAM, SAM and the selected machine maps."""

    permission_classes = [IsResearcher]

    @extend_schema(parameters=[SELECT, TARGET], responses={200: dict})
    def get(self, request, uid, item: int):
        study = study_for(request.user, uid)
        selections = clean_selections(
            request.user, study, request.query_params.getlist("select"), required=False
        )
        target = clean_target(request.query_params.get("target"))
        return Response(text_detail(study, item_for(study, item), selections, target))
