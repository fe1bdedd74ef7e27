"""``manage.py import_yelphat FILES... --owner USER``: raw YELP-HAT answers as a finished study."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotate.kinds.highlight.yelphat import import_yelphat


class Command(BaseCommand):
    help = (
        "Import raw YELP-HAT MTurk CSVs (Sen et al. 2020): one document per review, one response per worker "
        "answer, grouped in a finished read-first highlight study."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--owner", required=True, help="Username of the dataset's and study's owner.")
        parser.add_argument("--dataset", default="yelp-hat", help="Dataset name (default: yelp-hat).")
        parser.add_argument("--study", default=None, help="Study name (default: '<dataset> (imported)').")

    def handle(self, *args, files: list[Path], owner: str, dataset: str, study: str | None, **options):
        user = get_user_model().objects.filter(username=owner).first()
        if user is None:
            raise CommandError(f"no user named {owner!r}")
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise CommandError(f"no such file: {', '.join(missing)}")
        try:
            result = import_yelphat(files, user, dataset_name=dataset, study_name=study)
        except ValueError as exc:
            raise CommandError(f"{exc} (nothing was imported)") from None
        self.stdout.write(
            f"dataset {result.dataset.name!r} (id {result.dataset.pk}): {result.documents} reviews; "
            f"study {result.study.name!r} ({result.study.uid}): {result.responses} responses "
            f"from {result.workers} synthetic workers"
        )
