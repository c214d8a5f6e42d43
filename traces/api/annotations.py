"""Failure labels and comments: a dataset's vocabulary of labels (list, add, remove) and a
trace's annotations (list, add on the trace or one of its blocks, delete)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from traces.api.base import OrgApi, valid_input
from traces.api.schema import errors
from traces.models import Annotation, Label
from traces.policy import Action
from traces.selectors.annotations import (
    annotation_get_in_org,
    annotations_of,
    label_counts,
    label_get,
)
from traces.selectors.exports import annotation_export
from traces.services.annotations import (
    COMMENT_MAX,
    LABEL_DESCRIPTION_MAX,
    LABEL_NAME_MAX,
    annotation_create,
    annotation_delete,
    label_create,
    label_delete,
)


class LabelOut(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    traces = serializers.IntegerField(help_text="traces tagged with it (on the trace or a block)")
    annotations = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class AnnotationOut(serializers.Serializer):
    id = serializers.CharField()
    label = serializers.CharField(allow_null=True, help_text="a label of the dataset's vocabulary")
    comment = serializers.CharField(allow_blank=True)
    block_id = serializers.CharField(allow_null=True, help_text="null: on the trace itself")
    author = serializers.CharField(allow_null=True, help_text="null: written with an API key")
    created_at = serializers.DateTimeField()
    address = serializers.CharField(
        required=False, help_text="an Invariant Explorer address anchoring it to text, if any"
    )
    extra_metadata = serializers.JSONField(
        required=False, help_text="Explorer's free JSON of the note, and what an upload said of it"
    )


def label_out(label: Label, traces: int = 0, annotations: int = 0) -> dict:
    return {
        "id": label.id,
        "name": label.name,
        "description": label.description,
        "traces": traces,
        "annotations": annotations,
        "created_at": label.created_at,
    }


def annotation_out(annotation: Annotation) -> dict:
    return annotation_export(annotation)


class LabelListApi(OrgApi):
    class OutputSerializer(serializers.Serializer):
        labels = LabelOut(many=True)

    @extend_schema(
        operation_id="labels_list",
        responses={200: OutputSerializer, **errors()},
        description="The dataset's vocabulary of labels, the most used first, with counts.",
    )
    def get(self, request, org, dataset_id):
        dataset = self.dataset(dataset_id, Action.READ)
        counts = label_counts(dataset=dataset)
        return Response({"labels": [label_out(c.label, c.traces, c.annotations) for c in counts]})


class LabelCreateApi(OrgApi):
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(
            allow_blank=True, trim_whitespace=False,
            help_text=f"at most {LABEL_NAME_MAX} characters, one line",
        )  # fmt: skip
        description = serializers.CharField(
            required=False, allow_blank=True, default="",
            help_text=f"at most {LABEL_DESCRIPTION_MAX} characters",
        )  # fmt: skip

    @extend_schema(
        operation_id="labels_create",
        request=InputSerializer,
        responses={201: LabelOut, **errors(400, 403, 409, 422)},
        description="Members add labels; a name the vocabulary has already is 409 DUPLICATE_LABEL.",
    )
    def post(self, request, org, dataset_id):
        dataset = self.dataset(dataset_id, Action.WRITE)
        data = valid_input(LabelCreateApi.InputSerializer, request.data)
        label = label_create(dataset=dataset, name=data["name"], description=data["description"])
        return Response(label_out(label), status=201)


class LabelDeleteApi(OrgApi):
    @extend_schema(
        operation_id="labels_delete",
        responses={204: None, **errors(403)},
        description="Owners only: removes the label and every annotation that uses it.",
    )
    def delete(self, request, org, dataset_id, label_id):
        dataset = self.dataset(dataset_id, Action.READ)
        label = label_get(dataset=dataset, label_id=label_id)
        self.require(Action.MANAGE, label)
        label_delete(label=label)
        return Response(status=204)


class AnnotationListApi(OrgApi):
    class OutputSerializer(serializers.Serializer):
        annotations = AnnotationOut(many=True)

    @extend_schema(
        operation_id="annotations_list",
        responses={200: OutputSerializer, **errors()},
        description="The trace's labels and comments, its blocks' included, oldest first.",
    )
    def get(self, request, org, trace_id):
        trace = self.trace(trace_id, Action.READ)
        return Response(
            {"annotations": [annotation_out(a) for a in annotations_of(trace=trace)[:10_000]]}
        )


class AnnotationCreateApi(OrgApi):
    class InputSerializer(serializers.Serializer):
        label = serializers.CharField(
            required=False, allow_null=True, allow_blank=True,
            help_text="name or id of a label of the trace's dataset",
        )  # fmt: skip
        comment = serializers.CharField(
            required=False, allow_blank=True, default="", trim_whitespace=False,
            help_text=f"free text, at most {COMMENT_MAX} characters",
        )  # fmt: skip
        block_id = serializers.CharField(
            required=False, allow_null=True, help_text="a block of the trace; none: the trace"
        )

    @extend_schema(
        operation_id="annotations_create",
        request=InputSerializer,
        responses={201: AnnotationOut, **errors(400, 403, 422)},
        description="A label, a comment or both, on the trace or one of its blocks.",
    )
    def post(self, request, org, trace_id):
        trace = self.trace(trace_id, Action.WRITE)
        data = valid_input(AnnotationCreateApi.InputSerializer, request.data)
        annotation = annotation_create(
            trace=trace,
            label=data.get("label"),
            comment=data.get("comment", ""),
            block_id=data.get("block_id"),
            author=self.actor.user,
            api_key=self.actor.api_key,
        )
        return Response(annotation_out(annotation), status=201)


class AnnotationDeleteApi(OrgApi):
    @extend_schema(operation_id="annotations_delete", responses={204: None, **errors(403)})
    def delete(self, request, org, annotation_id):
        annotation = annotation_get_in_org(
            organization=self.organization, annotation_id=annotation_id
        )
        self.require(Action.WRITE, annotation)
        annotation_delete(annotation=annotation)
        return Response(status=204)
