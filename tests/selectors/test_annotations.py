"""Labels and comments read back: counts, the label filter, search and export, on real
tau2-bench runs."""

import orjson

from traces.selectors.annotations import label_counts
from traces.selectors.exports import dataset_export_lines
from traces.selectors.trace_filters import TraceFilter, traces_filtered
from traces.services.annotations import annotation_create, label_create
from traces.services.deletion import dataset_delete, trace_delete


def test_label_counts_count_traces_once_however_many_tags(runs):
    wrong = label_create(dataset=runs, name="wrong tool")
    label_create(dataset=runs, name="unused")
    first, second = runs.traces.order_by("index")[:2]
    block = first.blocks.first()
    annotation_create(trace=first, label="wrong tool")
    annotation_create(trace=first, label="wrong tool", block_id=block.pk)
    annotation_create(trace=second, label=wrong.pk)  # by id too
    counts = [(c.label.name, c.traces, c.annotations) for c in label_counts(dataset=runs)]
    assert counts == [("wrong tool", 2, 3), ("unused", 0, 0)]


def test_the_filter_finds_traces_tagged_on_a_block(runs):
    label_create(dataset=runs, name="hallucinated argument")
    trace = runs.traces.order_by("index")[3]
    call = trace.blocks.filter(sub_type="TOOL_CALL").first()
    annotation_create(trace=trace, label="hallucinated argument", block_id=call.pk)
    found = traces_filtered(
        traces=runs.traces.all(), filters=TraceFilter(label="hallucinated argument")
    )
    assert list(found) == [trace]


def test_search_finds_a_comment_and_a_label_name(runs):
    label_create(dataset=runs, name="gave up")
    first, second = runs.traces.order_by("index")[:2]
    annotation_create(trace=first, comment="zqxj never confirmed the roaming setting")
    annotation_create(trace=second, label="gave up")

    def search(text):
        return set(traces_filtered(traces=runs.traces.all(), filters=TraceFilter(text=text)))

    assert search("zqxj") == {first}
    assert search("gave up") == {second}


def test_search_still_finds_content_when_an_annotation_matches_too(runs):
    traces = list(runs.traces.order_by("index"))
    annotation_create(trace=traces[0], comment="mobile data")
    found = traces_filtered(traces=runs.traces.all(), filters=TraceFilter(text="mobile data"))
    assert traces[0] in found and len(found) > 1  # the content of other runs matches too


def test_export_carries_each_traces_labels_and_comments(runs):
    label_create(dataset=runs, name="gave up")
    trace = runs.traces.order_by("index")[1]
    block = trace.blocks.first()
    annotation_create(trace=trace, label="gave up", comment="stopped", block_id=block.pk)
    for fmt in ("chat", "blocks"):
        lines = [orjson.loads(x) for x in dataset_export_lines(dataset=runs, fmt=fmt)]
        noted = [line.get("annotations") for line in lines[1:]]
        assert noted[1] == [
            {
                "id": trace.annotations.get().pk,
                "label": "gave up",
                "comment": "stopped",
                "block_id": block.pk,
                "author": None,
                "created_at": trace.annotations.get().created_at.isoformat(),
            }
        ]
        assert noted[0] is None and noted[2] is None  # no key where there is nothing


def test_deleting_traces_and_datasets_takes_their_annotations(runs):
    label_create(dataset=runs, name="gave up")
    first = runs.traces.order_by("index")[0]
    annotation_create(trace=first, label="gave up", block_id=first.blocks.first().pk)
    trace_delete(trace=first)
    second = runs.traces.order_by("index")[0]
    annotation_create(trace=second, comment="x")
    dataset_delete(dataset=runs)
    from traces.models import Annotation, Label

    assert not Annotation.objects.exists() and not Label.objects.exists()
