"""The consent text's Markdown as safe HTML: CommonMark with raw HTML escaped (never passed through),
no images (nothing is loaded from elsewhere), and links only to web and mail addresses."""

from __future__ import annotations

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_SCHEMES = ("http://", "https://", "mailto:")


def _validate_link(url: str) -> bool:
    return url.strip().lower().startswith(_SCHEMES)


_MD = MarkdownIt("commonmark", {"html": False, "linkify": False}).disable("image")
_MD.validateLink = _validate_link  # type: ignore[method-assign]


def render_markdown(text: str) -> SafeString:
    """``text`` (Markdown) as HTML in which every character of the author's text is escaped."""
    return mark_safe(_MD.render(text or ""))  # noqa: S308 - html=False escapes raw HTML
