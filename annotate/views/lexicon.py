"""The opinion lexicon settings page (researchers and admins): a researcher uploads Hu & Liu's two word lists for
the dashboards of their own studies; an admin may also replace the site's lexicon, the one every study without its
owner's falls back on (:mod:`annotate.corpus.lexicon`). A researcher who asks for the site's is refused (403)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render

from annotate.access import is_admin, researcher_required
from annotate.corpus.lexicon import MAX_FILE_BYTES, LexiconError, lexicon_summary, save_lexicon

SITE_REFUSED = "site: only an admin may change the site's lexicon."


class LexiconForm(forms.Form):
    positive = forms.FileField(label="Positive words", help_text="positive-words.txt: one word per line.")
    negative = forms.FileField(label="Negative words", help_text="negative-words.txt: one word per line.")
    site = forms.BooleanField(
        required=False,
        label="The site's lexicon",
        help_text="Replace the lexicon every study without its owner's own uses (admins only).",
    )

    def __init__(self, *args, admin: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if not admin:
            del self.fields["site"]


def _store(request, form: LexiconForm) -> bool:
    """Store the form's two files as the user's lexicon (or the site's); False with a field error when refused."""
    uploads = {name: form.cleaned_data[name] for name in ("positive", "negative")}
    site = bool(form.cleaned_data.get("site"))
    try:
        for name, upload in uploads.items():
            if upload.size > MAX_FILE_BYTES:
                raise LexiconError(name, f"The file has {upload.size} bytes; at most {MAX_FILE_BYTES}.")
        summary = save_lexicon(
            uploads["positive"].read(),
            uploads["negative"].read(),
            None if site else request.user.pk,
            actor=request.user,
        )
    except LexiconError as exc:
        form.add_error(exc.field, f"Nothing was stored. {exc.message}")
        return False
    whose = "the site's opinion lexicon" if site else "your opinion lexicon"
    messages.success(
        request,
        f"Stored {whose}: {summary.positive} positive and {summary.negative} negative words. "
        "The dashboards now show cross-sentiment selection rates.",
    )
    return True


@researcher_required
def lexicon_settings(request):
    admin = is_admin(request.user)
    if request.method == "POST" and not admin and request.POST.get("site"):
        raise PermissionDenied(SITE_REFUSED)
    form = LexiconForm(request.POST or None, request.FILES or None, admin=admin)
    status = 200
    if request.method == "POST":
        if form.is_valid() and _store(request, form):
            return redirect("lexicon-settings")
        status = 400
    context = {"form": form, "lexicon": lexicon_summary(request.user.pk), "site_lexicon": lexicon_summary()}
    return render(request, "annotate/settings/lexicon.html", context, status=status)
