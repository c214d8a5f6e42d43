from django.db import IntegrityError, transaction
from django.utils.text import slugify

from traces.errors import ValidationFailed
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
