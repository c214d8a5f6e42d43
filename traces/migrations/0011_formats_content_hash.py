"""Duplicate imports (issue 11 item 6): Trace.content_hash, indexed per dataset."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('traces', '0010_formats_tool_errors'),
    ]

    operations = [
        migrations.AddField(
            model_name='trace',
            name='content_hash',
            field=models.CharField(blank=True, db_default='', default='', max_length=64),
        ),
        migrations.AddIndex(
            model_name='trace',
            index=models.Index(fields=['dataset', 'content_hash'], name='trace_dataset_content_hash'),
        ),
    ]
