"""The opinion lexicon settings page (researchers and admins): upload Hu & Liu's two word lists once for every
dashboard (:mod:`annotate.corpus.lexicon`)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.shortcuts import redirect, render

from annotate.access import researcher_required
from annotate.corpus.lexicon import MAX_FILE_BYTES, LexiconError, lexicon_summary, save_lexicon


class LexiconForm(forms.Form):
    positive = forms.FileField(label="Positive words", help_text="positive-words.txt: one word per line.")
    negative = forms.FileField(label="Negative words", help_text="negative-words.txt: one word per line.")


@researcher_required
def lexicon_settings(request):
    form = LexiconForm(request.POST or None, request.FILES or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            uploads = {name: form.cleaned_data[name] for name in ("positive", "negative")}
            try:
                for name, upload in uploads.items():
                    if upload.size > MAX_FILE_BYTES:
                        raise LexiconError(
                            name, f"The file has {upload.size} bytes; at most {MAX_FILE_BYTES}."
                        )
                summary = save_lexicon(uploads["positive"].read(), uploads["negative"].read())
            except LexiconError as exc:
                form.add_error(exc.field, f"Nothing was stored. {exc.message}")
            else:
                messages.success(
                    request,
                    f"Stored the opinion lexicon: {summary.positive} positive and {summary.negative} negative "
                    "words. Every dashboard now shows cross-sentiment selection rates.",
                )
                return redirect("lexicon-settings")
        status = 400
    return render(
        request, "annotate/settings/lexicon.html", {"form": form, "lexicon": lexicon_summary()}, status=status
    )
