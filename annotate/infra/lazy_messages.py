"""Django's message framework, made when a request first uses it.

``django.contrib.messages``' middleware builds the message storage for every request (with the default
fallback storage, a cookie store and a session store) and saves it on every response. The annotator API
never shows a message, and on its answer path that work was about 4 % of the app's CPU (py-spy, C = 200).
Here the storage is made on first use (a view adding a message, a page listing them) and only a storage
that was made is saved: what a user sees is unchanged."""

from __future__ import annotations

from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.messages.storage import default_storage
from django.utils.functional import SimpleLazyObject, empty


class LazyMessages(MessageMiddleware):
    """:class:`MessageMiddleware` whose storage is made on first use."""

    def process_request(self, request) -> None:
        request._messages = SimpleLazyObject(lambda: default_storage(request))

    def process_response(self, request, response):
        messages = request.__dict__.get("_messages")
        if isinstance(messages, SimpleLazyObject) and messages._wrapped is empty:
            return response  # never used: nothing to read, nothing to save
        return super().process_response(request, response)
