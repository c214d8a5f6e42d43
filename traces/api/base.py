"""What every API view shares: authentication, JSON, the organization in the URL, and the
policy's answer for every object an operation reads or changes."""

from django.conf import settings
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.views import APIView

from traces.api import schema as _schema  # noqa: F401  (registers the auth schemes)
from traces.api.auth import (
    BearerKeyAuthentication,
    CsrfSessionAuthentication,
    SignedInToWrite,
    actor_of,
)
from traces.api.json import OrjsonParser, OrjsonRenderer
from traces.errors import PayloadTooLarge, ValidationFailed
from traces.models import Block, Dataset, Organization, Trace
from traces.policy import Action, organization_readable, require
from traces.selectors.blocks import block_get_in_org
from traces.selectors.traces import dataset_get, trace_get

# Margin over the largest payload limit for the rest of a block's body (raw, extra).
BODY_MARGIN = 1 << 20


def largest_block_body() -> int:
    largest = max(
        settings.LIMIT_MSG_BYTES,
        settings.LIMIT_THINK_BYTES,
        settings.LIMIT_TOOL_ARGS_BYTES,
        settings.LIMIT_TOOL_RESULT_BYTES,
    )
    # raw may repeat the payload (it is the provider's copy of it)
    return 2 * largest + BODY_MARGIN


class OrgApi(APIView):
    authentication_classes = [BearerKeyAuthentication, CsrfSessionAuthentication]
    permission_classes = [SignedInToWrite]
    # JSON for code (and any client that accepts it first); DRF's browsable API for a
    # browser signed in with a session (Accept: text/html). Its page shows the answer
    # escaped, under the site's strict Content-Security-Policy (its scripts are files).
    renderer_classes = [OrjsonRenderer, BrowsableAPIRenderer]
    parser_classes = [OrjsonParser]
    # Bodies larger than this are refused from Content-Length, before they are read.
    max_body_bytes: int | None = None
    # Not HTTP TRACE: Django would dispatch it to `trace()`, the helper below (a 500).
    http_method_names = [m for m in APIView.http_method_names if m != "trace"]

    def __init_subclass__(cls, **kwargs):
        """Name each operation's own serializers after it in the OpenAPI schema."""
        super().__init_subclass__(**kwargs)
        for attr, suffix in (("InputSerializer", "Input"), ("OutputSerializer", "Output")):
            serializer = cls.__dict__.get(attr)
            if serializer is not None and "Meta" not in serializer.__dict__:
                name = cls.__name__.removesuffix("Api") + suffix
                serializer.Meta = type("Meta", (), {"ref_name": name})

    def max_body(self) -> int:
        return self.max_body_bytes or largest_block_body()

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self.actor = actor_of(request.user)
        self.organization: Organization = organization_readable(self.actor, kwargs["org"])
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit = self.max_body()
        if length > limit:
            raise PayloadTooLarge(
                f"the request body of {length} bytes exceeds the {limit}-byte limit "
                "of this endpoint",
                {"field": "body", "limit_bytes": limit, "actual_bytes": length},
            )

    def require(self, action: Action, obj=None) -> None:
        """NotFound or Forbidden unless the caller may do `action` (to the organization of
        the URL when no object is given)."""
        require(self.actor, action, self.organization if obj is None else obj)

    def dataset(self, dataset_id: str, action: Action) -> Dataset:
        found = dataset_get(organization=self.organization, dataset_id=dataset_id)
        self.require(action, found)
        return found

    def trace(self, trace_id: str, action: Action) -> Trace:
        found = trace_get(organization=self.organization, trace_id=trace_id)
        self.require(action, found)
        return found

    def block(self, block_id: str, action: Action) -> Block:
        found = block_get_in_org(organization=self.organization, block_id=block_id)
        self.require(action, found)
        return found


class OrgUploadApi(OrgApi):
    parser_classes = [MultiPartParser, FormParser]

    def max_body(self) -> int:
        return settings.UPLOAD_MAX_BYTES


def valid_input(serializer_class, data):
    """The body checked by the operation's input serializer (422 VALIDATION otherwise)."""
    if not isinstance(data, dict):
        raise ValidationFailed("the body must be a JSON object", {"field": "body", "rule": "type"})
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
