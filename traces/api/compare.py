"""Comparing runs (issue 12): two traces step by step, two datasets (or two slices of
datasets) task by task. Both read only: the caller must be able to read both sides, in
the organization of the URL (anything else answers 404, as a missing id does)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from traces.api.base import OrgApi
from traces.api.schema import errors
from traces.errors import ValidationFailed
from traces.policy import Action
from traces.selectors.compare import Side, dataset_compare, trace_compare


def required_param(request, name: str) -> str:
    value = request.GET.get(name, "")
    if not value:
        raise ValidationFailed(
            f"the query parameter {name} is required", {"field": name, "rule": "required"}
        )
    return value


def where_param(request, name: str) -> tuple[str, str] | None:
    """A slice as key=value (None when the parameter is absent)."""
    raw = request.GET.get(name, "")
    if not raw:
        return None
    key, sep, value = raw.partition("=")
    if not sep or not key.strip():
        raise ValidationFailed(
            f"{name} must be key=value, e.g. model=gpt-4o", {"field": name, "rule": "key=value"}
        )
    return key.strip(), value.strip()


class CompareStepOut(serializers.Serializer):
    a = serializers.CharField(allow_null=True, help_text="block id in trace a, or null")
    b = serializers.CharField(allow_null=True, help_text="block id in trace b, or null")
    same = serializers.BooleanField()

    class Meta:
        ref_name = "CompareTracesStep"


class CompareDivergenceOut(serializers.Serializer):
    a = serializers.CharField(allow_null=True)
    b = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "CompareTracesDivergence"


class CompareTaskOut(serializers.Serializer):
    task = serializers.JSONField()
    n_a = serializers.IntegerField()
    n_b = serializers.IntegerField()
    success_a = serializers.FloatField()
    success_b = serializers.FloatField()

    class Meta:
        ref_name = "CompareDatasetsTask"


class CompareSummaryOut(serializers.Serializer):
    shared_tasks = serializers.IntegerField()
    accuracy_a = serializers.FloatField(allow_null=True)
    accuracy_b = serializers.FloatField(allow_null=True)
    accuracy_a_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    accuracy_b_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    mean_difference = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True)
    test = serializers.CharField()
    in_words = serializers.CharField()

    class Meta:
        ref_name = "CompareDatasetsSummary"


class CompareTracesApi(OrgApi):
    class OutputSerializer(serializers.Serializer):
        a = serializers.CharField(help_text="trace id")
        b = serializers.CharField(help_text="trace id")
        first_divergence = CompareDivergenceOut(
            help_text="the block ids of the first step whose `same` is false; both null "
            "when the runs are identical"
        )
        steps = CompareStepOut(many=True, help_text="in aligned order")

    @extend_schema(
        operation_id="compare_traces",
        parameters=[
            OpenApiParameter("a", str, required=True, description="trace id"),
            OpenApiParameter("b", str, required=True, description="trace id"),
        ],
        responses={200: OutputSerializer, **errors(422)},
    )
    def get(self, request, org):
        a = self.trace(required_param(request, "a"), Action.READ)
        b = self.trace(required_param(request, "b"), Action.READ)
        comparison = trace_compare(a=a, b=b)
        first = comparison.first_divergence
        first_ids = comparison.step_ids(comparison.steps[first]) if first is not None else None
        steps = []
        for step in comparison.steps:
            ida, idb = comparison.step_ids(step)
            steps.append({"a": ida, "b": idb, "same": step[2]})
        return Response(
            {
                "a": a.pk,
                "b": b.pk,
                "first_divergence": {
                    "a": first_ids[0] if first_ids else None,
                    "b": first_ids[1] if first_ids else None,
                },
                "steps": steps,
            }
        )


class CompareDatasetsApi(OrgApi):
    class OutputSerializer(serializers.Serializer):
        key = serializers.CharField(allow_null=True, help_text="the metadata key of the task")
        tasks = CompareTaskOut(many=True, help_text="shared tasks, by difference B - A")
        summary = CompareSummaryOut()

    @extend_schema(
        operation_id="compare_datasets",
        parameters=[
            OpenApiParameter("a", str, required=True, description="dataset id"),
            OpenApiParameter("b", str, description="dataset id; may be left out when "
                             "a_where or b_where slices a (then: a)"),
            OpenApiParameter("key", str, description="the task key (default: task_id or the "
                             "dataset page's usual task key)"),
            OpenApiParameter("a_where", str, description="slice of a, as key=value"),
            OpenApiParameter("b_where", str, description="slice of b, as key=value"),
        ],
        responses={200: OutputSerializer, **errors(422)},
    )  # fmt: skip
    def get(self, request, org):
        a_where = where_param(request, "a_where")
        b_where = where_param(request, "b_where")
        a = self.dataset(required_param(request, "a"), Action.READ)
        if request.GET.get("b") or not (a_where or b_where):
            b = self.dataset(required_param(request, "b"), Action.READ)
        else:
            b = a
        comparison = dataset_compare(
            a=Side(a, *(a_where or (None, None))),
            b=Side(b, *(b_where or (None, None))),
            key=request.GET.get("key") or None,
        )
        s = comparison.summary

        def ci(p):
            return [p.low, p.high] if p.low is not None else None

        return Response(
            {
                "key": comparison.key,
                "tasks": [
                    {
                        "task": t.task,
                        "n_a": t.n_a,
                        "n_b": t.n_b,
                        "success_a": t.success_a,
                        "success_b": t.success_b,
                    }
                    for t in comparison.tasks
                ],
                "summary": {
                    "shared_tasks": s.shared_tasks,
                    "accuracy_a": s.accuracy_a.value,
                    "accuracy_b": s.accuracy_b.value,
                    "accuracy_a_ci": ci(s.accuracy_a),
                    "accuracy_b_ci": ci(s.accuracy_b),
                    "mean_difference": s.mean_difference,
                    "ci_low": s.ci_low,
                    "ci_high": s.ci_high,
                    "p_value": s.p_value,
                    "test": s.test,
                    "in_words": s.in_words(),
                },
            }
        )
