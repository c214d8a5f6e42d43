"""The REST API's JSON parser and renderer (settings.REST_FRAMEWORK), with orjson: key order
kept, `\\u0000` kept, >64-bit integers refused."""

import orjson
from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer

from traces import jsontext
from traces.errors import PayloadTooLarge, ValidationFailed


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"the request body exceeds the {limit}-byte limit (DATA_UPLOAD_MAX_MEMORY_SIZE)",
        {"field": "body", "rule": "max_bytes", "limit_bytes": limit},
    )


class OrjsonParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        # DRF reads the stream itself, past Django's own check of request.body: the limit
        # is kept here, and no more than it (and one byte) is ever read.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise _too_large(limit)
        data = stream.read(limit + 1) if stream is not None else b""
        if len(data) > limit:
            raise _too_large(limit)
        if not data:
            raise ParseError("the request body is empty; send a JSON object")
        try:
            return jsontext.loads(data)
        except jsontext.JsonTooDeep as exc:
            raise ValidationFailed(
                f"the request body is {exc}",
                {
                    "field": "body",
                    "rule": "max_depth",
                    "limit_depth": exc.limit,
                    "depth": exc.depth,
                },
            ) from None
        except jsontext.JsonError as exc:
            raise ParseError(f"the request body is not valid JSON: {exc}") from None


class OrjsonRenderer(BaseRenderer):
    media_type = "application/json"
    format = "json"
    charset = None

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        if renderer_context and renderer_context.get("indent"):  # the browsable API's page
            return orjson.dumps(data, option=orjson.OPT_INDENT_2)
        return orjson.dumps(data)
