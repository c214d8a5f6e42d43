"""A dataset of real runs for tests of reading features: tau2-bench's telecom results
(20 traces, 5 tasks x 4 trials, rewards 16 x 1 and 4 x 0) from ../shared/data."""

from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.conftest import SHARED_DATA, organization, written_for_the_module
from traces.models import Dataset, Membership, Organization
from traces.services.imports import trace_import

TAU2 = SHARED_DATA / "tau2-bench" / "gpt-4.1_telecom_no-user_4trials_5tasks.json"


def tau2_dataset(org: Organization, name: str = "telecom") -> Dataset:
    if not TAU2.is_file():
        pytest.skip(f"{TAU2} is absent: the real benchmark files are not here")
    with TAU2.open("rb") as handle:
        result = trace_import(organization=org, dataset_name=name, files=[(TAU2.name, handle)])
    return result.dataset


@pytest.fixture(scope="module")
def stored_tau2(django_db_setup, django_db_blocker) -> Iterator[str]:
    """tau2_dataset imported into acme once for the module that asks (each of its tests
    writes in a transaction rolled back at its end); its id."""
    with written_for_the_module(django_db_blocker):
        yield tau2_dataset(organization("acme")).pk


@pytest.fixture
def runs(org: Organization, stored_tau2: str) -> Dataset:
    """The module's tau2-bench dataset in `org`, read afresh for each test (a plugin of
    tests/conftest.py: any test may ask for it)."""
    return Dataset.objects.get(pk=stored_tau2)


def signed_in(org: Organization, role: str) -> Client:
    """A browser client signed in as a new user named `role`, with that role in `org`."""
    user = get_user_model().objects.create(username=role)
    Membership.objects.create(user=user, organization=org, role=role)
    client = Client()
    client.force_login(user)
    return client
