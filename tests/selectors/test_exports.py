"""traces/selectors/exports.py: images go back into an export only from the trace's own."""

import base64
import hashlib
import io
import json

from demo.generator import tiny_png
from traces.selectors.exports import trace_events
from traces.services.imports import trace_import
from traces.services.organizations import organization_get_or_create

PNG = tiny_png()
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


def imported(org, dataset: str, content) -> object:
    line = json.dumps([{"role": "user", "content": content}]).encode() + b"\n"
    result = trace_import(
        organization=org, dataset_name=dataset, files=[("t.jsonl", io.BytesIO(line))]
    )
    return result.dataset.traces.get()


def test_an_export_restores_the_traces_own_images_byte_for_byte(org):
    content = [{"type": "image_url", "image_url": {"url": PNG_URL}}]
    assert trace_events(trace=imported(org, "pictures", content))[0]["content"] == content


def test_an_export_never_restores_another_organizations_image(org):
    imported(org, "pictures", [{"type": "image_url", "image_url": {"url": PNG_URL}}])
    rival = organization_get_or_create(slug="rival")
    ref = "data:image/png;base64,te-image:sha256:" + hashlib.sha256(PNG).hexdigest()
    content = [{"type": "image_url", "image_url": {"url": ref}}]
    exported = trace_events(trace=imported(rival, "stolen", content))
    assert exported[0]["content"] == content  # the reference as written, no bytes


def _round_trip(org, dataset, fmt: str):
    from traces.selectors.exports import dataset_export_lines

    data = b"".join(dataset_export_lines(dataset=dataset, fmt=fmt))
    result = trace_import(
        organization=org, dataset_name=f"again-{fmt}", files=[(f"{fmt}.jsonl", io.BytesIO(data))]
    )
    return result.dataset


FIELDS = (
    "name", "metadata", "extra", "reward", "block_count", "task", "trial",
    "input_tokens", "output_tokens", "cost_usd", "duration_seconds",
)  # fmt: skip


def test_an_export_imports_back_as_the_traces_it_holds_a_readers_reward_included(org):
    """A researcher's reward (the trace's extra), the names, the usage figures and the
    metadata come back when an export of either format is imported (the chat export lost
    the names and the reward set in the page; the blocks one the reward and usage)."""
    from tests.real_runs import tau2_dataset
    from traces.services.annotations import trace_extra_update

    dataset = tau2_dataset(org, name="telecom")
    first = dataset.traces.order_by("index").first()
    trace_extra_update(trace=first, extra={"reward": 0.5, "note": "partly right"})
    before = list(dataset.traces.order_by("index").values_list(*FIELDS))
    assert before[0][3] == 0.5 and before[0][7] is not None  # the reward, input tokens
    for fmt in ("chat", "blocks"):
        again = _round_trip(org, dataset, fmt)
        assert list(again.traces.order_by("index").values_list(*FIELDS)) == before, fmt
