"""OpenTelemetry in (issue 14): the OTLP/HTTP trace receiver's decoding (decode.py), the
mapping of GenAI and OpenInference spans to blocks (mapping.py) and the write
(service.py)."""
