"""``manage.py seed_demo``: a researcher, an admin, a synthetic dataset and a running study of every kind.

Passwords come from ``HATLAB_DEMO_PASSWORD`` (default ``hatlab-demo``). Running it again reuses what
exists. Prints the URLs to open.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction
from django.urls import reverse

from annotate.access import RESEARCHER_GROUP
from annotate.corpus import TextRecord, store_records
from annotate.demo import generate_reviews
from annotate.demo_evaluation import seed_evaluation_demo
from annotate.demo_rating import seed_rating_demos
from annotate.lifecycle import start_study
from annotate.models import Dataset, Study
from annotate.providers.local.adapter import invite_path, make_invite
from annotate.tasks import get_kind

DATASET = "demo reviews"
STUDY = "Demo: read-first highlighting"
GOLD_EVERY = 10


class Command(BaseCommand):
    help = "Create demo users, a synthetic review dataset and a running read-first highlight study."

    def add_arguments(self, parser):
        parser.add_argument(
            "--reviews", type=int, default=40, help="Number of synthetic reviews (default 40)."
        )
        parser.add_argument("--invites", type=int, default=3, help="Invite links to print (default 3).")

    def handle(self, *args, reviews: int, invites: int, **options):
        password = os.environ.get("HATLAB_DEMO_PASSWORD", "hatlab-demo")
        users = get_user_model().objects
        with transaction.atomic():
            researcher, _ = users.get_or_create(username="researcher")
            researcher.set_password(password)
            researcher.save()
            researcher.groups.add(Group.objects.get_or_create(name=RESEARCHER_GROUP)[0])
            admin, _ = users.get_or_create(
                username="admin", defaults={"is_staff": True, "is_superuser": True}
            )
            admin.is_staff = admin.is_superuser = True
            admin.set_password(password)
            admin.save()
            dataset, created = Dataset.objects.get_or_create(
                owner=researcher,
                name=DATASET,
                defaults={
                    "description": "Synthetic restaurant reviews with known sentiment words.",
                    "source": "demo",
                },
            )
            if created:
                records = [
                    TextRecord(
                        line=i + 1,
                        id=r["id"],
                        text=r["text"],
                        label=r["label"],
                        metadata={"sentiment_map": r["map"]}
                        | ({"gold": {"label": r["label"], "map": r["map"]}} if i % GOLD_EVERY == 0 else {}),
                    )
                    for i, r in enumerate(generate_reviews(reviews, seed=7))
                ]
                store_records(dataset, records)
            study = Study.objects.filter(owner=researcher, name=STUDY).first()
            if study is None:
                kind = get_kind("highlight")
                study = Study.objects.create(
                    name=STUDY,
                    owner=researcher,
                    dataset=dataset,
                    kind=kind.name,
                    config=kind.validate_config({"mode": "read_first"}),
                    instructions=(
                        "Read the review and choose its sentiment first. Then click every word that shows "
                        "that sentiment. Choose 'cannot decide' when the review gives no clear sentiment."
                    ),
                    annotators_per_item=3,
                    time_limit_s=900,
                    provider_config={"open_enrollment": True},
                )
            if study.status == Study.Status.DRAFT:
                start_study(study)
        base = settings.HATLAB_PUBLIC_URL.rstrip("/")
        self.stdout.write(
            f"researcher: researcher / {'(from HATLAB_DEMO_PASSWORD)' if 'HATLAB_DEMO_PASSWORD' in os.environ else password}"
        )
        self.stdout.write("admin:      admin / (same password)")
        self.stdout.write(f"sign in:    {base}{reverse('login')}")
        self.stdout.write(f"study:      {base}{reverse('study-detail', args=[study.uid])}")
        self.stdout.write(f"annotate:   {base}{reverse('work-entry', args=[study.uid])}  (open link)")
        for _ in range(invites):
            self.stdout.write(f"invite:     {base}{invite_path(study, make_invite(study))}")
        self.stdout.write("training the demo classifiers for the evaluation studies ...")
        for extra in seed_rating_demos(researcher) + seed_evaluation_demo(researcher):
            results = (
                "ratings-results"
                if extra.kind in {"sentence_rating", "token_marking"}
                else "evaluation-results"
            )
            self.stdout.write(f"{extra.kind + ':':<16}{base}{reverse('work-entry', args=[extra.uid])}")
            self.stdout.write(f"{'  results:':<16}{base}{reverse(results, args=[extra.uid])}")
        self.stdout.write(f"API docs:   {base}{reverse('api-docs')}")
