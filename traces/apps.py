from django.apps import AppConfig
from django.db.models.signals import post_migrate


class TracesConfig(AppConfig):
    name = "traces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(sqlite_parent_triggers, sender=self)


def sqlite_parent_triggers(sender, using: str = "default", **kwargs) -> None:
    """SQLite keeps a block's parent in its trace with two triggers (migration 0002),
    and every migration that rebuilds traces_block drops them; each such migration puts
    them back, and after any migrate they are put back here too, so that a new migration
    that forgets to (makemigrations does not know of them) cannot leave the rule off."""
    from django.db import connections
    from django.db.migrations.recorder import MigrationRecorder

    from traces.migrations._parent_same_trace import SQLITE_UP

    connection = connections[using]
    if connection.vendor != "sqlite":
        return
    if "traces_block" not in connection.introspection.table_names():
        return
    applied = MigrationRecorder(connection).applied_migrations()
    if ("traces", "0002_parent_in_same_trace") not in applied:
        return
    with connection.cursor() as cursor:
        for sql in SQLITE_UP:
            cursor.execute(sql)
