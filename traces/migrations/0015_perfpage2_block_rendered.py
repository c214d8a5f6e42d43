"""Block.rendered: the trace page's render cache of a block (explorer/trace_page.py).
A nullable column without a default: added in place on both databases, no row rewritten."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("traces", "0014_order_usage_tasks")]

    operations = [
        migrations.AddField(
            model_name="block",
            name="rendered",
            field=models.TextField(blank=True, null=True),
        ),
    ]
