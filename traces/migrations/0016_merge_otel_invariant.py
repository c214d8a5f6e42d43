"""Joins the two store changes of this release made side by side: OpenTelemetry's spans
(0015_otel_spans) and Invariant Explorer's ids, addresses and events (0015_invariant_*)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0015_invariant_uuids_addresses_events"),
        ("traces", "0015_otel_spans"),
    ]

    operations = []
