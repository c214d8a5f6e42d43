"""explorer/upload_limits.py: what an upload route reads before it answers. Nobody signed
in is refused before the body is read (harden F10c: a big anonymous multipart POST was
read, and spooled to disk, before the sign-in redirect)."""

import io

import pytest
from django.test import RequestFactory
from django.test.client import ClientHandler

from traces.models import Dataset

pytestmark = pytest.mark.django_db

BODY_BYTES = 20 * 1024 * 1024


class CountingInput:
    """A request body that counts what the server reads of it."""

    def __init__(self, data: bytes):
        self.stream = io.BytesIO(data)
        self.read_bytes = 0

    def read(self, size: int = -1) -> bytes:
        chunk = self.stream.read(size)
        self.read_bytes += len(chunk)
        return chunk

    def readline(self, size: int = -1) -> bytes:
        line = self.stream.readline(size)
        self.read_bytes += len(line)
        return line


def multipart(size: int) -> tuple[bytes, str]:
    boundary = "harden-boundary"
    head = (
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nbig\r\n"
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; "
        f'filename="big.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n'
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    body = head + b"x" * (size - len(head) - len(tail)) + tail
    return body, f"multipart/form-data; boundary={boundary}"


def serve(path: str, body: bytes, content_type: str, **extra) -> tuple[int, dict, int]:
    """Send a POST through Django's handler, every middleware included (the test client's
    handler: it keeps the test database open), with the CSRF check on; (status, headers,
    bytes of the body the application read)."""
    environ = RequestFactory().post(path, **extra).environ
    stream = CountingInput(body)
    environ.update(
        {"wsgi.input": stream, "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": content_type}
    )
    response = ClientHandler(enforce_csrf_checks=True)(environ)
    return response.status_code, response.headers, stream.read_bytes


@pytest.mark.parametrize("path", ["/upload/", "/admin/traces/dataset/add/"])
def test_an_anonymous_multipart_post_is_refused_before_its_body_is_read(path):
    body, content_type = multipart(BODY_BYTES)
    status, headers, read = serve(path, body, content_type, HTTP_COOKIE="csrftoken=" + "a" * 32)
    assert status == 302 and headers["Location"].startswith("/accounts/login/")
    assert read == 0
    assert not Dataset.objects.exists()


def test_a_signed_in_upload_is_read(admin_user):
    """The same request signed in is read (and refused by CSRF here: no token)."""
    from django.test import Client

    client = Client()
    client.force_login(admin_user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    body, content_type = multipart(1024 * 1024)
    status, _, read = serve("/upload/", body, content_type, HTTP_COOKIE=cookie)
    assert status == 403 and read > 0


def test_signing_in_with_a_multipart_form_still_works(admin_user):
    body = (
        b"--b\r\nContent-Disposition: form-data; name=\"username\"\r\n\r\nadmin\r\n"
        b"--b\r\nContent-Disposition: form-data; name=\"password\"\r\n\r\npassword\r\n--b--\r\n"
    )
    status, headers, read = serve(
        "/accounts/login/", body, "multipart/form-data; boundary=b", REMOTE_ADDR="10.0.0.9"
    )
    assert status == 403 and read == len(body)  # read, then refused by CSRF (no token)


def test_a_big_multipart_sign_in_is_not_read():
    body, content_type = multipart(BODY_BYTES)
    status, headers, read = serve("/accounts/login/", body, content_type)
    assert status == 302 and read == 0
