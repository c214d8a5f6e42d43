"""The installed client (client/, `trace_explorer_client`) against a live server
(pytest-django's live_server: the real API in a thread of this process, over real
sockets, on the test database). No mocks."""

import json
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from django.core.signals import request_started

from tests.kinds_of import no_orphans
from trace_explorer_client import Block, PendingBlock, Trace, TraceApiError, TraceClient
from traces.models import Block as BlockRow
from traces.models import Trace as TraceRow
from traces.services.api_keys import api_key_create
from traces.services.organizations import organization_get_or_create

CLIENT_DIR = Path(__file__).resolve().parents[2] / "client"
CLIENT_FILE = CLIENT_DIR / "trace_explorer_client.py"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def key(org):
    return api_key_create(organization=org, name="client tests").secret


@pytest.fixture
def tc(live_server, key):
    with TraceClient(live_server.url, key, "acme") as client:
        yield client


@pytest.fixture
def requests_seen():
    """Paths of the requests the live server starts handling (Django's request_started
    signal, sent in the server's threads of this process)."""
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()

    def record(sender, environ, **kwargs):
        with lock:
            seen.append((environ["REQUEST_METHOD"], environ["PATH_INFO"]))

    request_started.connect(record, weak=False, dispatch_uid="client-tests")
    yield seen
    request_started.disconnect(dispatch_uid="client-tests")


def batch_posts(seen):
    return [path for method, path in seen if method == "POST" and path.endswith("blocks:batch")]


def stored_count(trace):
    return BlockRow.objects.filter(trace_id=trace.id).count()


# --------------------------------------------------------------------------- no Django


@pytest.mark.slow
def test_the_client_installs_alone_and_works_with_no_django(tmp_path, live_server, key):
    """client/ built and installed by pip into a fresh venv (no site packages: no Django,
    no project) gives a client that logs a trace to the live server."""
    source = shutil.copytree(
        CLIENT_DIR, tmp_path / "client", ignore=shutil.ignore_patterns("*.egg-info", "build")
    )
    dist, venv = tmp_path / "dist", tmp_path / "venv"
    pip = [sys.executable, "-m", "pip", "--quiet"]
    run(*pip, "wheel", "--no-deps", "--no-index", "--no-build-isolation", "-w", dist, source)
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    run(*pip, "--python", python, "install", "--no-index", "--no-deps", *dist.glob("*.whl"))
    script = textwrap.dedent(
        f"""
        import json, sys
        for project in ("django", "traces", "explorer"):
            try:
                __import__(project)
            except ImportError:
                pass
            else:
                raise SystemExit(f"{{project}} is importable here")
        import trace_explorer_client as client
        with client.TraceClient({live_server.url!r}, {key!r}, "acme") as tc:
            trace = tc.create_trace(dataset="no-django", name="plain python")
            message = trace.log_message("user", "hi")
            call = trace.log_act(message, "c1", "search", {{"q": "x"}})
            trace.log_observe(call, "c1", output="found", extra={{"reward": 1}})
            try:
                trace.log_act(message, "c1", "search", {{}})
            except client.TraceApiError as exc:
                code = exc.code
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("django", "traces"))
        print(json.dumps({{"trace": trace.id, "code": code, "loaded": loaded,
                          "file": client.__file__}}))
        """
    )
    out = json.loads(run(python, "-I", "-c", script, cwd=tmp_path))
    assert Path(out["file"]).is_relative_to(venv)  # the installed copy, not the source
    assert out["code"] == "DUPLICATE_CALL_ID"
    assert out["loaded"] == []
    rows = BlockRow.objects.filter(trace_id=out["trace"]).order_by("created_at", "id")
    assert [r.sub_type for r in rows] == ["MESSAGE", "TOOL_CALL", "TOOL_RESULT"]
    assert rows[2].extra == {"reward": 1}


def run(*command, cwd=None) -> str:
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_client_source_imports_nothing_of_django_or_the_project():
    import ast

    tree = ast.parse(CLIENT_FILE.read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules.add((node.module or "").split(".")[0])
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    assert modules <= stdlib, modules - stdlib


# --------------------------------------------------------------------------- spec/004


def test_the_spec004_sdk_example_logs_and_stitches(tc):
    trace = tc.create_trace(dataset="weather", name="spec", metadata={"task": 7})
    assert isinstance(trace, Trace) and trace.id.startswith("tr_")
    assert trace.name == "spec" and trace.metadata == {"task": 7}
    assert trace.dataset.startswith("ds_")

    message = trace.log_message(
        "user", "what's the weather?", raw={"providerPayload": {"model": "m"}}
    )
    call = trace.log_act(message, "call_1", "get_weather", {"city": "bogotΓ‘"})
    result = trace.log_observe(
        call, "call_1", output={"forecast": "22Β°C cloudy"}, extra={"reward": 1}
    )
    think = trace.log_think(message.id, "decide to show forecast in celsius")

    assert isinstance(message, Block) and message.id.startswith("tb_")
    assert (message.block_type, message.sub_type, message.parent_block_id) == (
        "MESSAGE",
        "MESSAGE",
        None,
    )
    assert message.raw == {"providerPayload": {"model": "m"}}
    assert (call.block_type, call.sub_type, call.parent_block_id) == (
        "ACT",
        "TOOL_CALL",
        message.id,
    )
    assert (result.block_type, result.parent_block_id) == ("OBSERVE", call.id)
    assert result.extra == {"reward": 1}
    assert (think.block_type, think.sub_type, think.parent_block_id) == ("ACT", "THINK", message.id)
    assert call.payload == {
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": {"city": "bogotΓ‘"},
    }

    tree = tc.trace(trace.id).stitched()
    assert tree.trace_id == trace.id
    assert tree.orphans == no_orphans()
    [root] = tree.messages
    assert root.id == message.id
    assert root.payload == {"role": "user", "content": "what's the weather?"}
    assert [(c.sub_type, c.id) for c in root.children] == [
        ("TOOL_CALL", call.id),
        ("THINK", think.id),
    ]
    [observed] = root.children[0].children
    assert observed.id == result.id
    assert observed.payload == {"call_id": "call_1", "output": {"forecast": "22Β°C cloudy"}}
    assert observed.extra == {"reward": 1}
    assert [b.id for b in tree.walk()] == [message.id, call.id, result.id, think.id]

    assert [b.id for b in trace.blocks()] == [message.id, call.id, result.id, think.id]
    assert trace.refresh().block_count == 4
    # the dataset is found by name the second time
    assert tc.create_trace(dataset="weather").dataset == trace.dataset


def test_payload_shapes_of_the_helpers(tc):
    trace = tc.create_trace()
    assistant = trace.log_message("assistant", None)  # an assistant turn with only calls
    call = trace.log_act(assistant, "c1", "search", '{"q": 1, "a": [2]}')
    assert call.payload["arguments"] == {"q": 1, "a": [2]}  # a JSON string, stored parsed
    null_output = trace.log_observe(call, "c1", output=None)
    assert null_output.payload == {"call_id": "c1", "output": None}
    delta = trace.log_observe(call, "c1", delta="chunk", seq=0)
    assert delta.payload == {"call_id": "c1", "delta": "chunk", "seq": 0}
    with pytest.raises(ValueError):
        trace.log_observe(call, "c1", output="x", delta="y")
    [root] = trace.stitched().messages
    # results ordered by seq, nulls last
    assert [r.id for r in root.children[0].children] == [delta.id, null_output.id]


def test_blocks_follows_every_page(tc):
    trace = tc.create_trace()
    written = [trace.log_message("user", f"turn {i}").id for i in range(7)]
    assert [b.id for b in trace.blocks(page_size=3)] == written


# --------------------------------------------------------------------------- annotations


def test_annotate_a_block_and_the_trace(tc):
    trace = tc.create_trace(name="to annotate")
    message = trace.log_message("user", "q")
    call = trace.log_act(message, "c1", "f", {})
    result = trace.log_observe(call, "c1", output="ok", extra={"reward": 0})

    annotated = trace.annotate(result, reward=0.5, note="checked")
    assert annotated is result
    assert result.extra == {"reward": 0.5, "note": "checked"}
    assert result.updated_at > result.created_at
    trace.annotate(result.id, {"note": None, "needs-review": True})  # None deletes a key
    [root] = trace.stitched().messages
    assert root.children[0].children[0].extra == {"reward": 0.5, "needs-review": True}
    assert tc.block(result.id).extra == {"reward": 0.5, "needs-review": True}

    before = trace.updated_at
    assert trace.annotate(trace, reward=1, by="alice") is trace
    assert trace.extra == {"reward": 1, "by": "alice"}
    assert trace.reward == 1.0
    assert trace.updated_at > before
    trace.annotate(trace.id, by=None)
    again = tc.trace(trace.id)
    assert again.extra == {"reward": 1}
    assert again.reward == 1.0
    assert TraceRow.objects.get(pk=trace.id).extra == {"reward": 1}


# --------------------------------------------------------------------------- errors


def test_a_bad_key_is_unauthenticated(live_server, key):
    with TraceClient(live_server.url, "not-a-key", "acme") as bad:
        with pytest.raises(TraceApiError) as caught:
            bad.create_trace()
    assert (caught.value.code, caught.value.http_status) == ("UNAUTHENTICATED", 401)
    assert caught.value.message


def test_another_organization_is_not_found(live_server, key):
    organization_get_or_create(slug="rival")
    with TraceClient(live_server.url, key, "rival") as other:
        with pytest.raises(TraceApiError) as caught:
            other.create_trace()
    assert (caught.value.code, caught.value.http_status) == ("NOT_FOUND", 404)
    assert caught.value.details == {"org": "rival"}


def test_an_unknown_trace_is_not_found(tc):
    with pytest.raises(TraceApiError) as caught:
        tc.trace("tr_00000000000000000000000000")
    error = caught.value
    assert (error.code, error.http_status) == ("NOT_FOUND", 404)
    assert "tr_00000000000000000000000000" in json.dumps(error.details)
    assert str(error).startswith("404 NOT_FOUND: ")


def test_a_tool_result_under_a_message_is_a_parent_subtype_mismatch(tc):
    trace = tc.create_trace()
    message = trace.log_message("user", "q")
    with pytest.raises(TraceApiError) as caught:
        trace.log_observe(message, "c1", output="x")
    error = caught.value
    assert (error.code, error.http_status) == ("PARENT_SUBTYPE_MISMATCH", 409)
    assert error.details == {
        "field": "parent_block_id",
        "sub_type": "TOOL_RESULT",
        "parent_sub_type": "MESSAGE",
        "allowed_parent_sub_type": "TOOL_CALL",
        "parent_block_id": message.id,
    }


def test_a_duplicate_call_id_is_refused(tc):
    trace = tc.create_trace()
    message = trace.log_message("user", "q")
    trace.log_act(message, "call_1", "f", {})
    with pytest.raises(TraceApiError) as caught:
        trace.log_act(message, "call_1", "g", {})
    error = caught.value
    assert (error.code, error.http_status) == ("DUPLICATE_CALL_ID", 409)
    assert error.details["call_id"] == "call_1"
    assert stored_count(trace) == 2


def test_an_oversize_payload_is_refused_with_its_exact_size(tc, settings):
    settings.LIMIT_MSG_BYTES = 10  # settings are process-wide: the server thread sees it
    trace = tc.create_trace()
    content = "hΓ©llo, wΓΆrld"  # 12 characters, 14 UTF-8 bytes
    with pytest.raises(TraceApiError) as caught:
        trace.log_message("user", content)
    error = caught.value
    assert (error.code, error.http_status) == ("PAYLOAD_TOO_LARGE", 413)
    assert error.details == {
        "sub_type": "MESSAGE",
        "field": "content",
        "limit_bytes": 10,
        "actual_bytes": len(content.encode()),
        "trace_id": trace.id,
        "parent_block_id": None,
    }
    assert stored_count(trace) == 0
    assert trace.log_message("user", "short").id  # within the limit


def test_a_validation_error_names_the_field(tc):
    trace = tc.create_trace()
    with pytest.raises(TraceApiError) as caught:
        trace.log_message("robot", "hi")
    assert (caught.value.code, caught.value.http_status) == ("VALIDATION", 422)
    assert caught.value.details["field"] == "payload.role"


def test_a_body_that_is_not_the_envelope_gives_http_status_code(live_server, key):
    # outside /v1/ the server answers with an HTML page, not the API's envelope
    with TraceClient(f"{live_server.url}/elsewhere", key, "acme") as lost:
        with pytest.raises(TraceApiError) as caught:
            lost.create_trace()
    error = caught.value
    assert (error.code, error.http_status, error.details) == ("HTTP_404", 404, {})
    assert error.message


def test_a_refused_connection_is_an_os_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with TraceClient(f"http://127.0.0.1:{port}", "k", "acme", timeout=5) as nowhere:
        with pytest.raises(ConnectionRefusedError):
            nowhere.create_trace()


# --------------------------------------------------------------------------- connections


def test_one_kept_alive_connection_per_thread(tc):
    trace = tc.create_trace()
    ports = set()
    for i in range(5):
        trace.log_message("user", f"m{i}")
        ports.add(tc._local.conn.sock.getsockname()[1])
    assert len(ports) == 1  # every request on the same connection

    seen: dict[int, set[int]] = {}

    def work(n):
        for i in range(5):
            trace.log_message("user", f"thread {n} m{i}")
            seen.setdefault(n, set()).add(tc._local.conn.sock.getsockname()[1])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(len(p) == 1 for p in seen.values())
    assert len(set().union(*seen.values()) | ports) == 5  # one per thread
    assert trace.refresh().block_count == 25


class HangingUpServer:
    """A real HTTP/1.1 server (sockets, no mocks) that answers the first `answered`
    requests of each connection, keeping it alive, then hangs up: after reading the next
    request (`read_next=True`) or right after its answer."""

    def __init__(self, answered: int, read_next: bool):
        self.answered, self.read_next = answered, read_next
        self.connections = 0
        self.requests = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _read_request(self, stream) -> bool:
        line = stream.readline()
        if not line:
            return False
        length = 0
        while (header := stream.readline()) not in (b"\r\n", b""):
            name, _, value = header.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        stream.read(length)
        self.requests += 1
        return True

    def _handle(self, conn):
        with conn, conn.makefile("rb") as stream:
            for _ in range(self.answered):
                if not self._read_request(stream):
                    return
                body = json.dumps({"id": "tr_1", "name": "served"}).encode()
                head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                conn.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
            if self.read_next:
                self._read_request(stream)

    def close(self):
        self.sock.close()


def test_a_connection_dropped_while_idle_is_reopened_before_sending():
    server = HangingUpServer(answered=1, read_next=False)
    try:
        with TraceClient(server.url, "k", "acme") as client:
            assert client.trace("tr_1").name == "served"
            assert client.trace("tr_1").name == "served"
        assert (server.connections, server.requests) == (2, 2)
    finally:
        server.close()


def test_a_request_on_a_dropped_kept_alive_connection_is_sent_again_once():
    server = HangingUpServer(answered=1, read_next=True)
    try:
        with TraceClient(server.url, "k", "acme") as client:
            assert client.trace("tr_1").name == "served"
            # sent on the kept-alive connection, which the server hangs up: sent again
            assert client.trace("tr_1").name == "served"
        assert (server.connections, server.requests) == (2, 3)
    finally:
        server.close()


def test_a_new_connection_dropped_is_not_retried():
    server = HangingUpServer(answered=0, read_next=True)
    try:
        with TraceClient(server.url, "k", "acme") as client:
            with pytest.raises(ConnectionError):
                client.trace("tr_1")
        assert (server.connections, server.requests) == (1, 1)
    finally:
        server.close()


# --------------------------------------------------------------------------- buffered mode


def test_buffered_blocks_are_sent_in_one_batch_on_leaving(tc, requests_seen):
    trace = tc.create_trace(name="buffered")
    with trace.buffered() as buffered:
        assert buffered is trace
        message = trace.log_message("user", "what's the weather?")
        call = trace.log_act(message, "call_1", "get_weather", '{"city": "bogotΓ‘"}')
        result = trace.log_observe(call, "call_1", output="22Β°C", extra={"reward": 1})
        think = trace.log_think(message, "celsius")
        pending = [message, call, result, think]
        assert all(isinstance(b, PendingBlock) and b.id is None for b in pending)
        assert [b.ref for b in pending] == ["r1", "r2", "r3", "r4"]
        assert trace.pending_count == 4
        assert stored_count(trace) == 0
        assert batch_posts(requests_seen) == []
    assert len(batch_posts(requests_seen)) == 1
    assert trace.pending_count == 0
    assert all(b.sent and b.id.startswith("tb_") for b in pending)
    assert call.parent_block_id == message.id and think.parent_block_id == message.id
    assert result.parent_block_id == call.id
    assert call.payload["arguments"] == {"city": "bogotΓ‘"}  # the server's copy
    assert (call.block_type, result.block_type) == ("ACT", "OBSERVE")

    [root] = trace.stitched().messages
    assert [b.id for b in root.walk()] == [message.id, call.id, result.id, think.id]
    assert root.children[0].children[0].extra == {"reward": 1}


def test_buffered_flushes_at_max_blocks_and_names_sent_parents_by_id(tc, requests_seen):
    trace = tc.create_trace()
    with trace.buffered(max_blocks=3):
        message = trace.log_message("user", "q")
        first = trace.log_act(message, "c1", "f", {})
        assert stored_count(trace) == 0
        first_result = trace.log_observe(first, "c1", output=1)  # the third: a flush
        assert stored_count(trace) == 3 and message.sent and first_result.sent
        second = trace.log_act(message, "c2", "f", {})  # parent sent: named by its id
        second_result = trace.log_observe(second, "c2", output=2)  # parent by ref
        assert not second.sent and stored_count(trace) == 3
        flushed = trace.flush()
        assert flushed == [second, second_result] and second.sent
        late = trace.log_think(message, "t")
    assert late.sent
    assert len(batch_posts(requests_seen)) == 3
    assert second.parent_block_id == message.id
    assert second_result.parent_block_id == second.id
    [root] = trace.stitched().messages
    assert [b.id for b in root.walk()] == [
        message.id,
        first.id,
        first_result.id,
        second.id,
        second_result.id,
        late.id,
    ]


def test_buffered_flushes_before_max_bytes(tc, requests_seen):
    trace = tc.create_trace()
    with trace.buffered(max_blocks=1000, max_bytes=300):
        message = trace.log_message("user", "x" * 100)
        calls = [trace.log_act(message, f"c{i}", "f", {"pad": "y" * 100}) for i in range(3)]
    assert len(batch_posts(requests_seen)) >= 2
    assert all(c.parent_block_id == message.id for c in calls)
    assert stored_count(trace) == 4


def test_a_failing_batch_raises_with_its_index_and_writes_nothing(tc):
    trace = tc.create_trace()
    with pytest.raises(TraceApiError) as caught:
        with trace.buffered():
            message = trace.log_message("user", "q")
            trace.log_act(message, "c1", "f", {})
            trace.log_act(message, "c1", "g", {})
    error = caught.value
    assert (error.code, error.http_status) == ("DUPLICATE_CALL_ID", 409)
    assert error.details["index"] == 2
    assert error.details["call_id"] == "c1"
    assert stored_count(trace) == 0
    assert message.failed and message.id is None
    with pytest.raises(ValueError):
        trace.log_think(message, "its parent was never written")

    with pytest.raises(TraceApiError) as caught:
        with trace.buffered():
            message = trace.log_message("user", "q")
            call = trace.log_act(message, "c1", "f", {})
            trace.log_think(call, "a think under a tool call")
    assert (caught.value.code, caught.value.http_status) == ("PARENT_SUBTYPE_MISMATCH", 409)
    assert caught.value.details["index"] == 2
    assert stored_count(trace) == 0


def test_an_exception_in_buffered_mode_still_sends_what_was_logged(tc):
    trace = tc.create_trace()
    with pytest.raises(RuntimeError, match="agent crashed"):
        with trace.buffered():
            message = trace.log_message("user", "q")
            raise RuntimeError("agent crashed")
    assert message.sent and stored_count(trace) == 1


def test_annotating_a_pending_block_sends_it_first(tc):
    trace = tc.create_trace()
    with trace.buffered():
        message = trace.log_message("user", "q")
        trace.annotate(message, reward=1)
        assert message.sent and message.extra == {"reward": 1}
        after = trace.log_think(message, "t")
    assert after.parent_block_id == message.id
    assert tc.block(message.id).extra == {"reward": 1}
