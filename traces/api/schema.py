"""OpenAPI helpers: every operation documents the error envelope for its failures."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

from traces.api.outputs import ErrorOut

_ERRORS = {
    400: "MALFORMED_JSON: the body is not JSON",
    401: "UNAUTHENTICATED: no or a bad API key",
    403: "FORBIDDEN: your role in the organization does not allow it",
    404: "NOT_FOUND: no such organization, dataset, trace or block (or not yours)",
    405: "METHOD_NOT_ALLOWED",
    409: "PARENT_SUBTYPE_MISMATCH, DUPLICATE_CALL_ID, DUPLICATE_RESULT_SEQ, IMMUTABLE_FIELD, "
    "DUPLICATE_NAME or DUPLICATE_LABEL",
    413: "PAYLOAD_TOO_LARGE: a field over its byte limit, or a body over the endpoint's limit",
    422: "VALIDATION: details name the field and rule",
    500: "INTERNAL: no traceback is ever sent",
}


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    chosen = codes or (401, 404, 500)
    return {
        code: OpenApiResponse(response=ErrorOut, description=_ERRORS[code])
        for code in sorted({*chosen, 401, 404, 500})
    }


ORG_DESCRIPTION = (
    "the organization's slug (e.g. `demo`): every path of the API is under "
    "/v1/organizations/{org}/, and a key works in its own organization only"
)


def describe_organization(result, generator, request, public):
    """A postprocessing hook: the `org` path parameter of every operation says what it is
    and gives an example, so that the docs page shows the organization in every path and
    "Try it out" asks for it first."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path" and parameter.get("name") == "org":
                    parameter["description"] = ORG_DESCRIPTION
                    parameter["example"] = "demo"
            parameters = operation.get("parameters", [])
            operation["parameters"] = sorted(
                parameters, key=lambda p: (p.get("in") != "path", p.get("name") != "org")
            )
    return result


def page_parameters(*, most: int, default: int) -> list[OpenApiParameter]:
    """The parameters of a list answered a page at a time."""
    return [
        OpenApiParameter("cursor", str, description="next_cursor of the previous page"),
        OpenApiParameter("limit", int, description=f"1 to {most}, default {default}"),
    ]


class BearerKeyScheme(OpenApiAuthenticationExtension):
    target_class = "traces.api.auth.BearerKeyAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "an organization's API key"}


class SessionScheme(OpenApiAuthenticationExtension):
    target_class = "traces.api.auth.CsrfSessionAuthentication"
    name = "cookieAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": "sessionid"}
