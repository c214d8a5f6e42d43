"""Joins the three store changes of this release made side by side: OpenTelemetry's spans
(0015_otel_spans), Invariant Explorer's ids, addresses and events (0015_invariant_*) and
the trace page's render cache (0015_perfpage2_block_rendered)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0015_invariant_uuids_addresses_events"),
        ("traces", "0015_otel_spans"),
        ("traces", "0015_perfpage2_block_rendered"),
    ]

    operations = []
