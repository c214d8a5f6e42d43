from django.db import IntegrityError, connection, transaction
from django.utils.text import slugify

from traces.errors import NotFound, ValidationFailed
from traces.models import Organization


def organization_get_or_create(*, slug: str) -> Organization:
    clean = slugify(slug)
    if not clean or clean != slug:
        raise ValidationFailed(
            f"organization slug {slug!r} may hold only lower-case letters, digits, - and _",
            {"field": "org", "rule": "slug"},
        )
    try:
        return Organization.objects.get(slug=slug)
    except Organization.DoesNotExist:
        pass
    try:
        with transaction.atomic():
            return Organization.objects.create(slug=slug, name=slug)
    except IntegrityError:  # created by a concurrent request
        return Organization.objects.get(slug=slug)


def organization_hold(*, organization: Organization) -> None:
    """The organization's row still there, for a write about to put rows under it;
    NotFound if it was deleted meanwhile (an upload read for minutes before it writes).
    PostgreSQL: held FOR KEY SHARE until the commit, so that its delete waits (and other
    writes into it do not). SQLite: the write transaction (IMMEDIATE) keeps every other
    write out already; an import does not check its keys there (traces/bulk.py
    `keys_made_here`), so this is what refuses an organization gone. Must run inside a
    transaction."""
    table = connection.ops.quote_name(Organization._meta.db_table)
    lock = " FOR KEY SHARE" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {table} WHERE id = %s{lock}", [organization.pk])
        if cursor.fetchone() is None:
            raise NotFound(f"no organization {organization.slug!r}", {"org": organization.slug})
