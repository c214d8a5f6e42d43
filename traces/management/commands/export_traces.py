from django.core.management.base import BaseCommand, CommandError

from traces.errors import TraceStoreError
from traces.selectors.datasets import dataset_get_by_name, organization_get
from traces.selectors.exports import EXPORT_FORMATS, dataset_export_lines


class Command(BaseCommand):
    help = "Write a dataset as JSONL to standard output."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--org", default="default")
        parser.add_argument("--format", choices=EXPORT_FORMATS, default="chat")

    def handle(self, *args, dataset, org, format, **options):
        try:
            found = dataset_get_by_name(organization=organization_get(slug=org), name=dataset)
        except TraceStoreError as exc:
            raise CommandError(exc.message) from None
        for line in dataset_export_lines(dataset=found, fmt=format):
            self.stdout.write(line.decode(), ending="")
