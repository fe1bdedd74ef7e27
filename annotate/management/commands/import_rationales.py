"""``manage.py import_rationales FORMAT PATH... --owner USER --dataset NAME [--texts DIR]``: a public
human-rationale set as a dataset and a finished study of its maps (:mod:`annotate.corpus.rationales`)."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotate.corpus.imports import CorpusImportError
from annotate.corpus.rationales import import_rationales
from explain_engine.api import RATIONALE_FORMATS, read_rationales


class Command(BaseCommand):
    help = (
        "Import a public human-rationale set (ERASER, HateXplain, e-SNLI, Zaidan et al. 2007, the 20 Newsgroups "
        "human attention, YELP-HAT) as a dataset plus a finished study whose answers are its human maps."
    )

    def add_arguments(self, parser):
        parser.add_argument("format", choices=RATIONALE_FORMATS)
        parser.add_argument("paths", nargs="+", type=Path, help="the set's file(s), or its folder (eraser)")
        parser.add_argument("--owner", required=True, help="Username of the dataset's and study's owner.")
        parser.add_argument("--dataset", required=True, help="Name of the new dataset.")
        parser.add_argument("--texts", type=Path, help="mohseni: the 20news-bydate-test folder")

    def handle(self, *args, format: str, paths: list[Path], owner: str, dataset: str, texts, **options):
        user = get_user_model().objects.filter(username=owner).first()
        if user is None:
            raise CommandError(f"no user named {owner!r}")
        try:
            records = read_rationales(format, paths, texts)
            done = import_rationales(records, user, dataset, format, ", ".join(p.name for p in paths))
        except (CorpusImportError, ValueError, FileNotFoundError) as exc:
            raise CommandError(f"{exc} (nothing was imported)") from None
        self.stdout.write(
            f"dataset {done.dataset.name!r} (id {done.dataset.pk}): {done.documents} texts; study "
            f"{done.study.name!r} ({done.study.uid}): {done.responses} human maps by {done.workers} annotators"
        )
