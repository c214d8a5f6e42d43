"""traces.policy for the pages: the actor of a request, and the policy's refusals as pages.

A refusal is the 404 page for something of an organization the person has no role in
(it may as well not exist), the 403 page where their role is too low, and the sign-in
page for someone not signed in, who may be allowed once they are (it reveals no more
than the 404 would: a missing id gets it too).
"""

from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.views.decorators.http import require_POST

from traces.errors import Forbidden, NotFound
from traces.policy import Action, Actor, allowed_somewhere, allows


def actor(request) -> Actor:
    """The request's actor, made once per request (it caches the person's roles)."""
    found = getattr(request, "_policy_actor", None)
    if found is None:
        found = request._policy_actor = Actor(user=getattr(request, "user", None))
    return found


def template_context(request) -> dict[str, Any]:
    """A context processor: whether to show the way to the admin, and to the upload page
    (asked only when the menu shows it: the roles are one query a request)."""
    who = actor(request)
    return {
        "may_admin": allows(who, Action.ADMIN),
        "may_upload": lambda: allowed_somewhere(who, Action.WRITE),
    }


def policy_errors(view):
    """Let a view raise the policy's NotFound and Forbidden; answer them as pages."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except (NotFound, Forbidden) as exc:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if isinstance(exc, Forbidden):
                raise PermissionDenied(exc.message) from None
            raise Http404(exc.message) from None

    return wrapped


def page_write(view):
    """A page's write: POST only, by someone signed in, the policy's refusals as pages."""
    return require_POST(login_required(policy_errors(view)))
