"""The spans the OTLP receiver keeps (traces/otel/): each trace's blocks are derived again
from all of them when a batch brings more; a span is kept once per trace."""

import django.db.models.deletion
import traces.jsontext
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('traces', '0014_order_usage_tasks'),
    ]

    operations = [
        migrations.CreateModel(
            name='OtelSpan',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('otel_trace_id', models.CharField(max_length=32)),
                ('span_id', models.CharField(max_length=16)),
                ('start_ns', models.BigIntegerField()),
                ('span', traces.jsontext.JSONTextField()),
                ('size', models.IntegerField(default=0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('trace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='otel_spans', to='traces.trace')),
            ],
            options={
                'indexes': [models.Index(fields=['otel_trace_id'], name='otel_span_trace_id')],
                'constraints': [models.UniqueConstraint(fields=('trace', 'span_id'), name='otel_span_unique')],
            },
        ),
    ]
