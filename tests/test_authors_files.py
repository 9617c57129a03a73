"""The authors' files (protocols/authors.py): found in a checkout, a mirror, the cache or GitHub, always checked by
sha256, and one clear error when none has them."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from critic_tasks.core.errors import DataError
from critic_tasks.protocols import authors

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "judgebench"
COMMIT = "0" * 40


def _spec(root: Path, relpath: str, sha: str | None = None) -> authors.AuthorsFile:
    payload = (root / relpath).read_bytes()
    return authors.AuthorsFile("someone/bench", COMMIT, relpath, sha or hashlib.sha256(payload).hexdigest(),
                               "JUDGEBENCH_DATA_DIR")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("JUDGEBENCH_DATA_DIR", raising=False)
    monkeypatch.delenv(authors.MIRROR_ENV, raising=False)
    authors._text.cache_clear()
    yield
    authors._text.cache_clear()


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "templates").mkdir(parents=True)
    (root / "templates" / "judge.txt").write_bytes("Judge {x}\nwith ünïcode\n".encode())
    return root


def test_a_checkout_named_by_the_data_setting_is_read_and_checked(tmp_path, monkeypatch):
    root = _checkout(tmp_path)
    spec = _spec(root, "templates/judge.txt")
    assert spec.text(root) == "Judge {x}\nwith ünïcode\n"
    monkeypatch.setenv("JUDGEBENCH_DATA_DIR", str(root))
    authors._text.cache_clear()
    assert spec.text() == "Judge {x}\nwith ünïcode\n"


def test_another_version_in_the_checkout_is_one_error_naming_the_file(tmp_path):
    root = _checkout(tmp_path)
    spec = _spec(root, "templates/judge.txt", sha="f" * 64)
    with pytest.raises(DataError) as err:
        spec.text(root)
    message = str(err.value)
    assert str(root / "templates" / "judge.txt") in message and "pinned" in message and "prompt: ours" in message
    assert "\n" not in message


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/judgebench is not beside the checkout")
def test_the_authors_real_checkout_gives_its_bytes(tmp_path):
    relpath = "utils/templates/arena_hard_judge_system.jinja2"
    spec = _spec(SHARED, relpath)
    assert spec.text(SHARED).encode() == (SHARED / relpath).read_bytes()


def test_a_mirror_folder_is_read_once_then_the_cache_serves(tmp_path, monkeypatch):
    root = _checkout(tmp_path)
    spec = _spec(root, "templates/judge.txt")
    mirror = tmp_path / "mirror"
    target = mirror / "someone" / "bench" / COMMIT / "templates" / "judge.txt"
    target.parent.mkdir(parents=True)
    target.write_bytes((root / "templates" / "judge.txt").read_bytes())
    monkeypatch.setenv(authors.MIRROR_ENV, str(mirror))
    assert spec.text() == "Judge {x}\nwith ünïcode\n"
    cached = tmp_path / "cache" / "critic_tasks" / "authors" / "someone" / "bench" / COMMIT / "templates" / "judge.txt"
    assert cached.read_bytes() == target.read_bytes()
    assert not list(cached.parent.glob("*.part"))
    target.unlink()
    authors._text.cache_clear()
    assert spec.text() == "Judge {x}\nwith ünïcode\n"  # from the cache, the mirror gone


class _Files(http.server.BaseHTTPRequestHandler):
    served: dict[str, bytes] = {}

    def do_GET(self):  # noqa: N802 (http.server's name)
        body = self.served.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.end_headers()
        self.wfile.write(body if body is not None else b"not found")

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", _Files.served
    httpd.shutdown()
    _Files.served.clear()


def test_a_download_is_checked_before_it_is_cached(tmp_path, monkeypatch, server):
    base, served = server
    root = _checkout(tmp_path)
    spec = _spec(root, "templates/judge.txt")
    monkeypatch.setenv(authors.MIRROR_ENV, base)
    served[f"/someone/bench/{COMMIT}/templates/judge.txt"] = b"<html>a proxy's login page</html>"
    with pytest.raises(DataError, match="is not the pinned"):
        spec.text()
    assert not (tmp_path / "cache" / "critic_tasks" / "authors").exists()
    served[f"/someone/bench/{COMMIT}/templates/judge.txt"] = (root / "templates" / "judge.txt").read_bytes()
    authors._text.cache_clear()
    assert spec.text() == "Judge {x}\nwith ünïcode\n"


def test_nothing_reachable_is_one_line_naming_the_settings(tmp_path, monkeypatch, server):
    base, _ = server
    spec = _spec(_checkout(tmp_path), "templates/judge.txt")
    monkeypatch.setenv(authors.MIRROR_ENV, base)  # answers 404 for everything
    with pytest.raises(DataError) as err:
        spec.text()
    message = str(err.value)
    assert "\n" not in message
    for needed in ("JUDGEBENCH_DATA_DIR", authors.MIRROR_ENV, "prompt: ours", "templates/judge.txt"):
        assert needed in message
