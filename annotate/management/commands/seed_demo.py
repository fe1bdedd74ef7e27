"""``manage.py seed_demo``: a researcher, an admin, and running demo studies of every task kind.

Each kind folder's ``demo.py`` makes its own datasets and studies (see :mod:`annotate.tasks`).
Passwords come from ``HATLAB_DEMO_PASSWORD`` (default ``hatlab-demo``). Running it again reuses what
exists and keeps everyone signed in (a password is set again only when it changed). Prints the URLs to open, and invite links to the default kind's study.
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
from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.tasks import default_kind, folder_modules, get_kind


def keep_password(user, password: str) -> None:
    """Give ``user`` the demo password, leaving the stored hash alone when it already matches: a new hash
    (a new salt) changes the session hash of every signed-in browser, and running the demo again would
    sign everyone out."""
    if not user.check_password(password):
        user.set_password(password)
    user.save()


class Command(BaseCommand):
    help = "Create demo users and a running demo study of every task kind (with their datasets)."

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
            keep_password(researcher, password)
            researcher.groups.add(Group.objects.get_or_create(name=RESEARCHER_GROUP)[0])
            admin, _ = users.get_or_create(
                username="admin", defaults={"is_staff": True, "is_superuser": True}
            )
            admin.is_staff = admin.is_superuser = True
            keep_password(admin, password)
        base = settings.HATLAB_PUBLIC_URL.rstrip("/")
        self.stdout.write(
            f"researcher: researcher / {'(from HATLAB_DEMO_PASSWORD)' if 'HATLAB_DEMO_PASSWORD' in os.environ else password}"
        )
        self.stdout.write("admin:      admin / (same password)")
        self.stdout.write(f"sign in:    {base}{reverse('login')}")
        studies = [
            study for module in folder_modules("demo") for study in module.seed_demo(researcher, reviews)
        ]
        main = next(study for study in studies if study.kind == default_kind())
        self.stdout.write(f"study:      {base}{reverse('study-detail', args=[main.uid])}")
        self.stdout.write(f"annotate:   {base}{reverse('work-entry', args=[main.uid])}  (open link)")
        for _ in range(invites):
            self.stdout.write(f"invite:     {base}{invite_path(main, make_invite(main))}")
        for study in studies:
            self.stdout.write(f"{study.kind + ':':<16}{base}{reverse('work-entry', args=[study.uid])}")
            if get_kind(study.kind).results_page() is not None:
                self.stdout.write(f"{'  results:':<16}{base}{reverse('study-results', args=[study.uid])}")
        self.stdout.write(f"API docs:   {base}{reverse('api-docs')}")
