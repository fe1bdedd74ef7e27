"""``manage.py import_texts FILE --dataset NAME --owner USER``: import a CSV or JSONL file."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotate.corpus.imports import FORMATS, CorpusImportError, detect_format, import_texts
from annotate.models import Dataset


class Command(BaseCommand):
    help = "Import texts (fields id, text, label, optional metadata) from a CSV or JSONL file into a dataset."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--dataset", required=True, help="Dataset name (created when missing).")
        parser.add_argument("--owner", required=True, help="Username of the dataset's owner.")
        parser.add_argument("--format", choices=FORMATS, help="Default: from the file extension.")
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--labels",
            default="",
            help="The labels the documents may have, comma-separated (default: the file's).",
        )

    def handle(
        self,
        *args,
        file: Path,
        dataset: str,
        owner: str,
        format: str | None,
        description: str,
        labels: str,
        **options,
    ):
        user = get_user_model().objects.filter(username=owner).first()
        if user is None:
            raise CommandError(f"no user named {owner!r}")
        if not file.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            with transaction.atomic():
                target, created = Dataset.objects.get_or_create(
                    owner=user, name=dataset, defaults={"description": description, "source": file.name}
                )
                done = import_texts(target, file.read_bytes(), format or detect_format(file.name), labels)
        except CorpusImportError as exc:
            listed = "\n".join(f"  {line}" for line in exc.sentences())
            raise CommandError(f"{file}: nothing was imported:\n{listed}") from None
        verb = "created" if created else "extended"
        self.stdout.write(f"{verb} dataset {target.name!r} (id {target.pk}): {done.sentence(target.name)}")
