"""The API's pages of a list: DRF's page numbers, with ``page`` held to what the schema says it is.

DRF reads ``?page=`` (empty) as the first page; the schema calls ``page`` an integer, so an empty or
non-numeric ``page``, or one below 1, is a 400 naming it (the schema gives its ``minimum``), and a page
past the last stays a 404.
"""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination


class StrictPageNumberPagination(PageNumberPagination):
    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param)
        if raw is not None and not (raw.isascii() and raw.isdigit() and int(raw) >= 1):
            raise ValidationError({self.page_query_param: ["must be a page number: a whole number from 1"]})
        return super().get_page_number(request, paginator)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"] = {**parameter["schema"], "minimum": 1}
        return parameters
