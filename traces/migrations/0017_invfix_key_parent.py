"""A key made with another key (Explorer's keys/create) records it, to be revoked with it."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0016_merge_release"),
    ]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="minted_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="minted",
                to="traces.apikey",
            ),
        ),
    ]
