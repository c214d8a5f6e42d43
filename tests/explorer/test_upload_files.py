"""explorer/upload_files.py: every file of a request in one anonymous temporary file."""

import io
import os

import pytest
from django.core.handlers.wsgi import WSGIRequest
from django.test import RequestFactory
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from explorer.upload_files import RangeUploadedFile
from tests.killed import killed_midway


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def multipart_request(files: dict[str, bytes], stream=None) -> WSGIRequest:
    """A POST of `files` (name -> content) in the field `files`, read from `stream` if
    given (else from the whole body)."""
    uploads = []
    for name, content in files.items():
        f = io.BytesIO(content)
        f.name = name
        uploads.append(f)
    body = encode_multipart(BOUNDARY, {"files": uploads})
    environ = RequestFactory()._base_environ(
        REQUEST_METHOD="POST",
        PATH_INFO="/upload/",
        CONTENT_TYPE=MULTIPART_CONTENT,
        CONTENT_LENGTH=str(len(body)),
    )
    environ["wsgi.input"] = stream(body) if stream else io.BytesIO(body)
    return WSGIRequest(environ)


def test_each_file_reads_its_own_bytes_line_by_line_and_after_a_seek():
    contents = {
        f"{n}.jsonl": b"".join(b"line %d of %d\n" % (i, n) for i in range(n)) for n in (3, 1, 5)
    }
    request = multipart_request(contents)
    uploaded = request.FILES.getlist("files")
    assert all(isinstance(f, RangeUploadedFile) for f in uploaded)
    assert [f.name for f in uploaded] == list(contents)
    assert [f.size for f in uploaded] == [len(c) for c in contents.values()]
    assert [list(f.file) for f in uploaded] == [c.splitlines(True) for c in contents.values()]
    last = uploaded[-1]
    last.file.seek(5)
    assert last.file.tell() == 5 and last.read() == contents["5.jsonl"][5:]
    assert b"".join(last.chunks()) == contents["5.jsonl"]
    request.close()
    assert all(f.closed for f in uploaded)
    with pytest.raises(ValueError):
        uploaded[0].read()


@pytest.mark.slow
def test_a_request_holds_one_descriptor_whatever_its_number_of_files():
    contents = {f"run-{n}.jsonl": b"x" * n + b"\n" for n in range(2000)}
    before = open_descriptors()
    request = multipart_request(contents)
    uploaded = request.FILES.getlist("files")
    assert open_descriptors() == before + 1
    assert [f.read() for f in uploaded] == list(contents.values())
    assert open_descriptors() == before + 1
    request.close()
    assert open_descriptors() == before


def test_no_uploaded_file_has_a_name_on_disk(tmp_path, settings):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0  # Django's own handlers: every file to disk
    request = multipart_request({"a.jsonl": b"[]\n" * 1000, "b.jsonl": b"{}\n"})
    uploaded = request.FILES.getlist("files")
    assert [f.read()[:3] for f in uploaded] == [b"[]\n", b"{}\n"]
    assert list(tmp_path.iterdir()) == []
    request.close()


def test_a_killed_upload_leaves_no_file(tmp_path, settings):
    """A worker killed mid-upload (a timeout, out of memory) runs no cleanup: only a file
    without a name is sure to go."""
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0  # Django's own handlers: every file to disk

    def work(stall):
        class StallsHalfway(io.RawIOBase):
            """The body up to its middle, then a client that stops sending."""

            def __init__(self, body: bytes) -> None:
                self.body, self.pos = body, 0

            def readable(self) -> bool:
                return True

            def read(self, size: int = -1) -> bytes:
                half = len(self.body) // 2
                if self.pos >= half:
                    stall()
                end = half if size < 0 else min(half, self.pos + size)
                chunk, self.pos = self.body[self.pos : end], end
                return chunk

        return multipart_request({"big.jsonl": b"[]\n" * 200_000}, StallsHalfway).FILES

    killed_midway(work)
    assert list(tmp_path.iterdir()) == []
