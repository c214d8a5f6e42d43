"""The SQLite test database is migrated once and then copied for each run and each worker.

Running every migration takes about 2.5 s of CPU per process. `make test-fast` pays it once
on each of its two workers, so it adds about 2.5 s to a 30 s run. Now the first process to
migrate saves the result as a template, named by a digest of every migration file and of
the Django and SQLite versions. Later runs copy that file into place and use it as
pytest-django's kept database. A changed, added or removed migration changes the digest,
so a stale template is never used. `--create-db` still migrates from scratch.

Only SQLite does this. On PostgreSQL the test database is made by the server, so each run
builds it as before.
"""

import functools
import hashlib
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

TEMPLATE_DIR = Path(__file__).resolve().parents[1] / ".test-db-templates"
SIDE_FILES = ("-wal", "-shm", "-journal")


def _test_database() -> Path | None:
    """The file of this process's SQLite test database, or None on another database."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] != "django.db.backends.sqlite3":
        return None
    name = database.get("TEST", {}).get("NAME")
    return Path(name) if name and name != ":memory:" else None


@functools.cache  # asked at set-up and again to save: the migrations are read once
def _template() -> Path:
    """Where the migrated database of the migrations on disk now is kept."""
    import django
    from django.db.migrations.loader import MigrationLoader

    digest = hashlib.sha256(f"{django.__version__} {sqlite3.sqlite_version}".encode())
    loader = MigrationLoader(None, ignore_no_migrations=True)
    for key in sorted(loader.disk_migrations):
        module = __import__(loader.disk_migrations[key].__module__, fromlist=["_"])
        digest.update(repr(key).encode())
        digest.update(Path(module.__file__).read_bytes())
    return TEMPLATE_DIR / f"{digest.hexdigest()[:24]}.sqlite3"


def _remove(database: Path) -> None:
    for path in (database, *(Path(f"{database}{side}") for side in SIDE_FILES)):
        path.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def django_db_keepdb(
    request: pytest.FixtureRequest,
    django_db_modify_db_settings: None,  # the worker's suffix is on the name first
) -> bool:
    """pytest-django keeps (and skips creating) a database copied from the template."""
    database = _test_database()
    reuse: bool = request.config.getvalue("reuse_db")
    if database is None or reuse or request.config.getvalue("create_db"):
        return reuse
    template = _template()
    if not template.exists():
        return False
    # A WAL or journal left beside an older copy would be replayed into this one.
    _remove(database)
    shutil.copyfile(template, database)
    request.config.stash[_COPIED] = database
    return True


_COPIED = pytest.StashKey[Path]()


@pytest.fixture(scope="session")
def django_db_setup(
    django_db_setup: None, request: pytest.FixtureRequest, django_db_blocker
) -> Iterator[None]:
    """pytest-django's set-up, then the template saved if there was none; the copy is
    removed at the end, as pytest-django removes a database it made."""
    database = _test_database()
    copied = request.config.stash.get(_COPIED, None)
    if database is not None and copied is None and not request.config.getvalue("reuse_db"):
        _save_template(database)
    yield
    if copied is not None:
        _remove(copied)


def _save_template(database: Path) -> None:
    """A consistent copy (SQLite's backup, WAL included) under a name of this process,
    renamed into place: two workers saving at once leave one whole template."""
    template = _template()
    if template.exists():
        return
    TEMPLATE_DIR.mkdir(exist_ok=True)
    partial = template.with_name(f"{template.name}.{os.getpid()}.partial")
    source, target = sqlite3.connect(database), sqlite3.connect(partial)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    os.replace(partial, template)
    for old in TEMPLATE_DIR.glob("*.sqlite3"):  # templates of migrations gone
        if old != template:
            old.unlink(missing_ok=True)
