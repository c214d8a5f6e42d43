"""Invariant Explorer's /api/v1 (spec invariant-explorer-api.md): one class per operation,
thin; traces/invariant/services.py writes, selectors.py reads, traces.policy answers who
may. Explorer's clients expect 401 (not 404 or 403) for someone else's private object."""

from typing import Any

from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse
from rest_framework import exceptions as drf
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from traces.api.auth import CsrfSessionAuthentication, actor_of
from traces.api.json import OrjsonParser, OrjsonRenderer
from traces.errors import BadRequest, Forbidden, NotFound, Unauthorized
from traces.invariant import selectors, services
from traces.invariant.auth import DEVELOPER, ExplorerAuthentication, dev_user_get_or_create
from traces.invariant.errors import explorer_exception_handler
from traces.invariant.events import BadTimestamp, timestamp_parsed
from traces.invariant.uploads import explorer_dataset_upload
from traces.models import Dataset, Organization, Trace
from traces.policy import Action, allows, organizations_where
from traces.selectors.datasets import dataset_attachment_disposition
from traces.services.api_keys import api_key_create
from traces.services.deletion import dataset_delete, trace_delete

MAX_INT_PARAM = 2**31 - 1  # a limit, offset or length beyond it means nothing more


class ExplorerApi(APIView):
    authentication_classes = [ExplorerAuthentication, CsrfSessionAuthentication]
    permission_classes: list = []
    # Not in /v1's OpenAPI schema: Explorer's contract (invariant-explorer-api.md) is its.
    schema = None
    renderer_classes = [OrjsonRenderer]
    parser_classes = [OrjsonParser]

    def get_exception_handler(self):
        return explorer_exception_handler

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self.actor = actor_of(request.user)
        for name, values in request.query_params.lists():
            # a NUL reaches text comparisons that PostgreSQL refuses with a 500
            if "\x00" in name or any("\x00" in v for v in values):
                raise BadRequest(f"the query parameter {name!r} holds a NUL (U+0000)")

    # --- who ------------------------------------------------------------------------

    def signed_in(self) -> None:
        if self.actor.is_anonymous:
            raise Unauthorized("Unauthorized: an API key (Authorization: Bearer) is required")

    def home(self, action: Action = Action.WRITE) -> Organization:
        """The caller's own namespace: a key's organization; a user's organization of
        their username, else the first (by slug) where they may do `action`."""
        self.signed_in()
        if self.actor.api_key is not None:
            organization = self.actor.api_key.organization
        else:
            mine = organizations_where(self.actor, Action.READ)
            organization = mine.filter(slug=self.actor.user.get_username()).first()
            organization = organization or organizations_where(self.actor, action).first()
        if organization is None or not allows(self.actor, action, organization):
            raise Unauthorized(f"Unauthorized: your role may not {action.value} here")
        return organization

    def writer(self) -> services.Writer:
        return services.Writer(user=self.actor.user, api_key=self.actor.api_key)

    def owns(self, obj: Any, action: Action = Action.WRITE) -> bool:
        return allows(self.actor, action, obj)

    def trace(self, trace_id: str, action: Action = Action.READ) -> Trace:
        trace = selectors.explorer_trace_get(trace_id=trace_id)
        if not allows(self.actor, action, trace):
            raise Unauthorized(f"Unauthorized {'get' if action is Action.READ else 'change'}")
        return trace

    def dataset_checked(self, dataset: Dataset, action: Action) -> Dataset:
        if not allows(self.actor, action, dataset):
            raise Unauthorized(f"Unauthorized {'get' if action is Action.READ else 'change'}")
        return dataset

    # --- what -----------------------------------------------------------------------

    def body(self) -> dict[str, Any]:
        if not isinstance(self.request.data, dict):
            raise BadRequest("the request body must be a JSON object")
        return self.request.data

    def int_param(self, name: str, default: int | None = None) -> int | None:
        raw = self.request.query_params.get(name)
        if raw is None or raw == "":
            return default
        if not raw.isascii() or not raw.lstrip("-").isdigit():
            raise drf.ValidationError({name: ["must be an integer"]})
        # the digits are counted before int() reads them: Python refuses over 4,300 of
        # them, and the database a number over its column's 64 bits
        digits = raw.lstrip("-").lstrip("0")
        if raw.startswith("-") and digits or len(digits) > len(str(MAX_INT_PARAM)):
            raise BadRequest(f"{name} must be between 0 and {MAX_INT_PARAM}")
        value = int(digits or "0")
        if value > MAX_INT_PARAM:
            raise BadRequest(f"{name} must be between 0 and {MAX_INT_PARAM}")
        return value

    def bool_param(self, name: str, default: bool) -> bool:
        raw = self.request.query_params.get(name)
        if raw is None:
            return default
        if raw.lower() in ("true", "1", "yes", "on"):
            return True
        if raw.lower() in ("false", "0", "no", "off"):
            return False
        raise drf.ValidationError({name: ["must be a boolean"]})


# --- health, users, keys ----------------------------------------------------------------


class HealthApi(ExplorerApi):
    def get(self, request):
        return Response({"status": "ok"})


class SignupApi(ExplorerApi):
    """Test mode's harness makes its user here; elsewhere users are made by an admin."""

    def post(self, request):
        if not settings.DEV_MODE:
            raise NotFound("signing up is only in test mode (DEV_MODE)")
        dev_user_get_or_create(username=DEVELOPER)
        return Response({"success": True})


class IdentityApi(ExplorerApi):
    def get(self, request):
        return Response({"username": self.home(Action.READ).slug})


class KeyCreateApi(ExplorerApi):
    def post(self, request):
        organization = self.home(Action.MANAGE)
        made = api_key_create(
            organization=organization, name="Invariant Explorer key",
            created_by=self.actor.user, role=self.actor.role_in(organization.pk),
            minted_by=self.actor.api_key,
        )  # fmt: skip
        return Response({"id": selectors.key_uuid(made.api_key), "key": made.secret})


# --- traces -----------------------------------------------------------------------------


def _list_of_lists(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, list) for v in value)


class PushTraceApi(ExplorerApi):
    def post(self, request):
        organization = self.home()
        data = self.body()
        messages, notes, metadata = (
            data.get("messages"),
            data.get("annotations"),
            data.get("metadata"),
        )
        dataset_name = data.get("dataset")
        if not _list_of_lists(messages):
            raise BadRequest("messages must be a non-empty list of lists of events")
        for key, value in (("annotations", notes), ("metadata", metadata)):
            if value is not None and (not isinstance(value, list) or len(value) != len(messages)):
                raise BadRequest(f"{key} must be null or a list as long as messages")
        if dataset_name is not None and not isinstance(dataset_name, str):
            raise BadRequest("dataset must be a string")
        traces, dataset = services.explorer_traces_push(
            organization=organization, messages=messages, annotations=notes,
            metadata=metadata, dataset_name=dataset_name, writer=self.writer(),
        )  # fmt: skip
        out: dict[str, Any] = {"id": [str(t.uuid) for t in traces]}
        if dataset is not None:
            out["dataset"] = dataset.name
        out["username"] = organization.slug
        return Response(out)


class AppendMessagesApi(ExplorerApi):
    def post(self, request, trace_id):
        self.signed_in()
        data = self.body()
        messages, notes = data.get("messages"), data.get("annotations")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages must be a non-empty list of events")
        if len(messages) > settings.EXPLORER_MAX_APPEND_EVENTS:
            raise BadRequest(
                f"an append adds at most {settings.EXPLORER_MAX_APPEND_EVENTS} events "
                f"(EXPLORER_MAX_APPEND_EVENTS); this one has {len(messages)}: send them in parts"
            )
        if not all(isinstance(m, dict) for m in messages):
            raise BadRequest("each message must be an object")
        if notes is not None and (
            not isinstance(notes, list) or not all(isinstance(n, dict) for n in notes)
        ):
            raise BadRequest("annotations must be a list of objects")
        try:
            timestamps = [
                timestamp_parsed(m["timestamp"]) if "timestamp" in m else None for m in messages
            ]
        except BadTimestamp as exc:
            raise BadRequest(str(exc)) from None
        trace = selectors.explorer_trace_get(trace_id=trace_id)
        if not self.owns(trace):
            raise NotFound("Trace not found")
        normalised = [
            {**m, "timestamp": t.isoformat()} if t is not None else m
            for m, t in zip(messages, timestamps, strict=True)
        ]
        services.explorer_messages_append(
            trace=trace, messages=normalised, timestamps=timestamps, annotations=notes or [],
            writer=self.writer(),
        )  # fmt: skip
        return Response({"success": True})


class TraceGetApi(ExplorerApi):
    def get(self, request, trace_id):
        trace = self.trace(trace_id)
        return Response(
            selectors.trace_out(
                trace,
                include_annotations=self.bool_param("include_annotations", True),
                max_length=self.int_param("max_length", 100_000),
            )
        )


class TraceDeleteApi(ExplorerApi):
    def delete(self, request, trace_id):
        self.signed_in()
        trace_delete(trace=self.trace(trace_id, Action.WRITE))
        return Response({"message": "deleted"})


class SnippetsApi(ExplorerApi):
    def get(self, request):
        organization = self.home(Action.READ)
        limit = self.int_param("limit", 100) or 0
        traces = selectors.snippets_of(organization=organization, limit=limit)
        return Response([selectors.trace_out(t, include_annotations=False) for t in traces])


class TraceImageApi(ExplorerApi):
    def get(self, request, dataset_name, trace_id, image_id):
        trace = self.trace(trace_id)
        data = selectors.trace_image(trace=trace, sha=image_id.removesuffix(".png"))
        if data is None:
            raise NotFound("Image not found")
        return HttpResponse(data, content_type="image/png")


# --- annotations ------------------------------------------------------------------------


class AnnotateApi(ExplorerApi):
    def post(self, request, trace_id):
        self.signed_in()
        trace = self.trace(trace_id, Action.WRITE)
        data = self.body()
        (note,) = services.annotations_add(trace=trace, notes=[data], writer=self.writer())
        return Response(selectors.annotation_out(note, trace=trace, with_user=False))


class AnnotationsListApi(ExplorerApi):
    def get(self, request, trace_id):
        trace = self.trace(trace_id)
        notes = selectors.trace_annotations(trace=trace)
        return Response([selectors.annotation_out(a, trace=trace) for a in notes])


class _OwnAnnotation(ExplorerApi):
    def own_annotation(self, trace_id: str, annotation_id: str, verb: str):
        """The trace and the annotation, if the caller wrote it (401 otherwise)."""
        self.signed_in()
        trace = self.trace(trace_id, Action.WRITE)
        note = selectors.explorer_annotation_get(trace=trace, annotation_id=annotation_id)
        if not selectors.is_author(note, self.actor):
            raise Unauthorized(f"Unauthorized: only its author may {verb} an annotation")
        return trace, note


class AnnotationUpdateApi(_OwnAnnotation):
    def put(self, request, trace_id, annotation_id):
        trace, note = self.own_annotation(trace_id, annotation_id, "change")
        data = self.body()
        note = services.explorer_annotation_update(
            annotation=note, content=data.get("content"), extra_metadata=data.get("extra_metadata")
        )
        return Response(selectors.annotation_out(note, trace=trace))


class AnnotationDeleteApi(_OwnAnnotation):
    def delete(self, request, trace_id, annotation_id):
        _, note = self.own_annotation(trace_id, annotation_id, "delete")
        note.delete()
        return Response({"message": "deleted"})


# --- datasets ---------------------------------------------------------------------------


class DatasetCreateApi(ExplorerApi):
    def post(self, request):
        organization = self.home()
        data = self.body()
        metadata = data.get("metadata", {})
        is_public = data.get("is_public", False)
        if not isinstance(metadata, dict):
            raise BadRequest("metadata must be an object")
        if not isinstance(is_public, bool):
            raise BadRequest("is_public must be a boolean")
        if is_public and not allows(self.actor, Action.MANAGE, organization):
            raise Unauthorized("Unauthorized: only owners make a dataset public")
        dataset = services.explorer_dataset_create(
            organization=organization, name=data.get("name"), metadata=metadata,
            is_public=is_public,
        )  # fmt: skip
        return Response(selectors.dataset_out(dataset, owner=True))


class DatasetUploadApi(ExplorerApi):
    parser_classes = [MultiPartParser, FormParser]

    def post(self, request):
        organization = self.home()
        upload = request.FILES.get("file")
        if upload is None:
            raise drf.ValidationError({"file": ["Field required"]})
        is_public = request.data.get("is_public", "false")
        if not isinstance(is_public, str) or is_public.lower() not in ("true", "false"):
            raise BadRequest("is_public must be 'true' or 'false'")
        public = is_public.lower() == "true"
        if public and not allows(self.actor, Action.MANAGE, organization):
            raise Unauthorized("Unauthorized: only owners make a dataset public")
        dataset = explorer_dataset_upload(
            organization=organization, name=request.data.get("name"), data=upload.read(),
            is_public=public, writer=self.writer(),
        )  # fmt: skip
        return Response(selectors.dataset_out(dataset, owner=True))


class DatasetListApi(ExplorerApi):
    KINDS = ("private", "public", "homepage", "any")

    def get(self, request):
        kind = request.query_params.get("kind")
        if kind not in self.KINDS:
            raise drf.ValidationError({"kind": [f"must be one of {', '.join(self.KINDS)}"]})
        include_metadata = self.bool_param("include_metadata", True)
        rows = selectors.dataset_list_for(
            actor=self.actor, kind=kind, q=request.query_params.get("q"),
            limit=self.int_param("limit"),
        )  # fmt: skip
        return Response(
            [
                selectors.dataset_out(
                    d,
                    owner=self.owns(d, Action.MANAGE),
                    with_user=True,
                    include_metadata=include_metadata,
                    latest=d.latest,
                )  # fmt: skip
                for d in rows
            ]
        )


class _OneDataset(ExplorerApi):
    """The operations on a dataset named by id (`dataset_id`) or by owner and name."""

    def dataset(self, action: Action, **kwargs) -> Dataset:
        if "dataset_id" in kwargs:
            found = selectors.explorer_dataset_get(dataset_id=kwargs["dataset_id"])
        else:
            found = selectors.explorer_dataset_by_name(
                username=kwargs["username"], name=kwargs["name"]
            )
        return self.dataset_checked(found, action)


class DatasetGetApi(_OneDataset):
    def get(self, request, **kwargs):
        dataset = self.dataset(Action.READ, **kwargs)
        owner = self.owns(dataset, Action.MANAGE)
        return Response(selectors.dataset_out(dataset, owner=owner, full=True))


class DatasetDeleteApi(_OneDataset):
    def delete(self, request, **kwargs):
        self.signed_in()
        dataset_delete(dataset=self.dataset(Action.MANAGE, **kwargs))
        return Response({"message": "Deleted"})


class DatasetTracesApi(_OneDataset):
    def get(self, request, **kwargs):
        dataset = self.dataset(Action.READ, **kwargs)
        indices = None
        raw = request.query_params.get("indices")
        if raw and "name" in kwargs:
            parts = [p.strip() for p in raw.split(",") if p.strip()]
            if not all(p.isascii() and p.isdigit() for p in parts):
                raise drf.ValidationError({"indices": ["must be integers separated by commas"]})
            indices = [int(p) for p in parts]
        limit, offset = self.int_param("limit"), self.int_param("offset", 0)
        return Response(
            selectors.dataset_traces_page(
                dataset=dataset,
                limit=limit,
                offset=offset,
                indices=indices,
            )  # fmt: skip
        )


class DatasetDownloadApi(_OneDataset):
    only_annotated = False

    def get(self, request, **kwargs):
        dataset = self.dataset(Action.READ, **kwargs)
        lines = selectors.dataset_download_lines(
            dataset=dataset, owner=self.owns(dataset, Action.MANAGE),
            include_ids=self.bool_param("include_trace_ids", False),
            only_annotated=self.only_annotated or self.bool_param("only_annotated", False),
        )  # fmt: skip
        response = StreamingHttpResponse(lines, content_type="application/json")
        response["Content-Disposition"] = dataset_attachment_disposition(
            dataset=dataset, suffix=".jsonl"
        )
        return response


class DatasetAnnotatedDownloadApi(DatasetDownloadApi):
    only_annotated = True


class DatasetMetadataGetApi(ExplorerApi):
    def get(self, request, dataset_name):
        owner_username = request.query_params.get("owner_username")
        if owner_username is None:
            home = self.home(Action.READ)
            dataset = Dataset.objects.filter(organization=home, name=dataset_name).first()
            if dataset is None:
                raise NotFound("Dataset not found")
        else:
            self.signed_in()
            dataset = selectors.explorer_dataset_by_name(username=owner_username, name=dataset_name)
            if not dataset.is_public and self.actor.role_in(dataset.organization_id) is None:
                raise Forbidden("Forbidden: the dataset is private")
        metadata = selectors.dataset_out(dataset, owner=False)["extra_metadata"]
        return Response(metadata)


class DatasetMetadataUpdateApi(ExplorerApi):
    def put(self, request, dataset_name):
        home = self.home()
        dataset = Dataset.objects.filter(organization=home, name=dataset_name).first()
        if dataset is None:
            raise NotFound("Dataset not found")
        data = self.body()
        metadata = services.explorer_metadata_update(
            dataset=dataset, metadata=data.get("metadata"),
            replace_all=data.get("replace_all", False),
        )  # fmt: skip
        return Response({k: v for k, v in metadata.items() if k != "policies"})
