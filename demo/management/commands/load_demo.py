"""`python manage.py load_demo`: the demo datasets and the demo user (demo.generator)."""

from django.core.management.base import BaseCommand, CommandParser

from demo import generator as demo
from traces.services.organizations import organization_get_or_create


class Command(BaseCommand):
    help = (
        "Generate the demo datasets (replacing them if present) into organization "
        f"{demo.ORG_SLUG!r}, and reset the demo user ({demo.USERNAME} / {demo.PASSWORD})."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--no-user", action="store_true", help="do not create or reset the demo user"
        )
        parser.add_argument(
            "--if-absent",
            action="store_true",
            help="keep the demo datasets (and their ids) if they are all there already; "
            "`make run` uses it so that the database and its links survive restarts",
        )

    def handle(self, *args: str, no_user: bool, if_absent: bool, **options: object) -> None:
        if if_absent and demo.demo_present():
            if not no_user:
                demo.demo_user_reset(organization=organization_get_or_create(slug=demo.ORG_SLUG))
            self.stdout.write(
                f"The demo datasets are there already: kept, with their ids "
                f"(log in as {demo.USERNAME} / {demo.PASSWORD}; "
                "`manage.py load_demo` without --if-absent replaces them)."
            )
            return
        results = demo.load_demo(with_user=not no_user)
        for r in results:
            self.stdout.write(f"{r.dataset.name}: {r.traces} traces, {r.blocks} blocks")
        traces, blocks = sum(r.traces for r in results), sum(r.blocks for r in results)
        self.stdout.write(
            self.style.SUCCESS(f"Loaded {len(results)} datasets, {traces} traces, {blocks} blocks")
        )
        if not no_user:
            self.stdout.write(
                f"Log in at http://127.0.0.1:8000/ as {demo.USERNAME} / {demo.PASSWORD}"
            )
