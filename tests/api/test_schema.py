import pytest
import yaml
from django.core.management import call_command


@pytest.mark.slow  # validates the whole OpenAPI document (about a second)
def test_the_schema_validates_and_describes_every_endpoint(db, tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    schema = yaml.safe_load(out.read_text())
    paths = schema["paths"]
    base = "/v1/organizations/{org}"
    assert set(paths) == {
        f"{base}/whoami",
        f"{base}/datasets",
        f"{base}/datasets/{{dataset_id}}",
        f"{base}/datasets/{{dataset_id}}/upload",
        f"{base}/datasets/{{dataset_id}}/export",
        f"{base}/traces",
        f"{base}/traces/{{trace_id}}",
        f"{base}/traces/{{trace_id}}/blocks",
        f"{base}/traces/{{trace_id}}/blocks:batch",
        f"{base}/traces/{{trace_id}}/blocks.stitched",
        f"{base}/blocks/{{block_id}}",
        f"{base}/datasets/{{dataset_id}}/labels",
        f"{base}/datasets/{{dataset_id}}/labels/{{label_id}}",
        f"{base}/traces/{{trace_id}}/annotations",
        f"{base}/annotations/{{annotation_id}}",
        f"{base}/compare/traces",
        f"{base}/compare/datasets",
    }
    summary = schema["components"]["schemas"]["CompareDatasetsSummary"]["properties"]
    assert {"shared_tasks", "mean_difference", "ci_low", "p_value", "test"} <= set(summary)
    create = paths[f"{base}/traces/{{trace_id}}/blocks"]["post"]
    assert {"201", "400", "401", "404", "409", "413", "422", "500"} <= set(create["responses"])
    assert "bearerAuth" in schema["components"]["securitySchemes"]


@pytest.mark.parametrize("url", ["/v1/schema", "/v1/docs"])
def test_schema_and_docs_are_served_without_a_cdn(client, url):
    response = client.get(url)
    assert response.status_code == 200
    body = response.content.decode()
    for cdn in ("cdn.jsdelivr", "unpkg.com", "cdnjs"):
        assert cdn not in body


def test_every_operation_asks_for_the_organization_first(db, tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--file", str(out))
    schema = yaml.safe_load(out.read_text())
    for path, operations in schema["paths"].items():
        assert path.startswith("/v1/organizations/{org}/")
        for method, operation in operations.items():
            first = operation["parameters"][0]
            assert (first["in"], first["name"], first["example"]) == ("path", "org", "demo"), (
                method, path,
            )  # fmt: skip
            assert "organization's slug" in first["description"]


def test_the_docs_page_loads_the_schema_that_names_the_organization(client):
    page = client.get("/v1/docs").content.decode()
    assert "/v1/schema" in page
    schema = client.get("/v1/schema", HTTP_ACCEPT="application/json").json()
    labels = schema["paths"]["/v1/organizations/{org}/traces/{trace_id}/annotations"]
    assert labels["post"]["parameters"][0]["name"] == "org"
