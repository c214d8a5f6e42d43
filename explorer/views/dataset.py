"""Placeholder until the page is built."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse


@login_required
def placeholder(request, **kwargs):
    return HttpResponse("coming soon")
