"""Corpus: datasets of documents, each with its canonical words fixed at import."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from explain_engine.api import sentence_spans, word_spans, words_of


class Dataset(models.Model):
    """A named collection of documents owned by a researcher."""

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="datasets")
    labels = models.JSONField(default=list, blank=True, help_text="The gold label values found in the data.")
    source = models.CharField(max_length=300, blank=True, help_text="File name or origin of the import.")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="dataset_unique_name_per_owner")
        ]

    def __str__(self) -> str:
        return self.name


class Document(models.Model):
    """One text. ``words`` are ``[start, end)`` character offsets (see ``explain_engine.api.word_spans``);
    ``sentences`` are ``[first_word, end_word)`` ranges over them."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="documents")
    external_id = models.CharField(max_length=200)
    text = models.TextField()
    words = models.JSONField(default=list)
    sentences = models.JSONField(default=list)
    label = models.CharField(max_length=100, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["dataset_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "external_id"], name="document_unique_external_id"),
        ]

    def __str__(self) -> str:
        return f"{self.dataset_id}:{self.external_id}"

    @classmethod
    def from_text(cls, dataset: Dataset, external_id: str, text: str, **fields) -> Document:
        """A document with its canonical words and sentences computed from ``text``."""
        spans = word_spans(text)
        return cls(
            dataset=dataset,
            external_id=external_id,
            text=text,
            words=[list(s) for s in spans],
            sentences=[list(s) for s in sentence_spans(text, spans)],
            **fields,
        )

    @property
    def word_strings(self) -> list[str]:
        return words_of(self.text, self.words)
