"""`sqlmem ui` on the command line: its grammar, its refusals, the extra it needs, and a
real server process answering over HTTP."""

from __future__ import annotations

import http.cookiejar
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from ui_demo import fill
from ui_server import running_ui

import sqlmem
from sqlmem.cli import main


def test_help_lists_the_command(capsys):
    assert main(["--help"]) == 0
    assert "ui" in capsys.readouterr().out
    assert main(["ui", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--write" in text and "--port" in text and "127.0.0.1" in text


def test_a_missing_file_is_refused_and_not_created(tmp_path, capsys):
    missing = tmp_path / "typo.db"
    assert main(["ui", str(missing), "--port", "0"]) == 1
    assert "no such file" in capsys.readouterr().err
    assert not missing.exists()


def test_a_postgres_url_needs_an_agent_id(capsys):
    assert main(["ui", "postgresql://u:secret@localhost/db", "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert "--agent-id" in err and "secret" not in err


def test_importing_sqlmem_and_its_cli_loads_no_web_framework():
    code = (
        "import sys, sqlmem, sqlmem.cli, sqlmem.ui\n"
        "from sqlmem.cli.parser import build_parser\n"
        "build_parser().parse_args(['ui', 'x.db'])\n"
        "loaded = [m for m in ('starlette', 'uvicorn', 'jinja2') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_missing_extra_names_itself(tmp_path):
    path = tmp_path / "memory.db"
    sqlmem.open(path).close()
    code = (
        "import sys\n"
        "sys.modules['starlette'] = None\n"  # as if the extra were not installed
        "import sqlmem\n"
        "from sqlmem.cli import main\n"
        "from sqlmem.ui import create_app\n"
        "try:\n"
        "    create_app(sqlmem.open(':memory:'), token='t')\n"
        "except sqlmem.SqlmemError as exc:\n"
        "    print(exc)\n"
        f"sys.exit(main(['ui', {str(path)!r}]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    assert "pip install 'sqlmem[ui]'" in done.stdout
    assert "pip install 'sqlmem[ui]'" in done.stderr and "Traceback" not in done.stderr


def test_the_server_answers_with_the_token_only(tmp_path):
    path = tmp_path / "memory.db"
    with sqlmem.open(path) as db:
        fill(db)
    with running_ui(path) as url:
        assert url.startswith("http://127.0.0.1:")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url.split("?")[0] + "facts", timeout=10)
        assert refused.value.code == 403
        refused.value.close()
        browser = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with browser.open(url, timeout=10) as page:
            assert page.status == 200 and page.url.endswith("/")  # the token left the URL
        with browser.open(url.split("?")[0] + "facts", timeout=10) as page:
            assert "The user is vegetarian." in page.read().decode()


def test_the_server_shows_a_postgres_agent(pg_dsn):
    from pgserver import new_agent_id
    from targets import as_url

    url, agent = as_url(pg_dsn), new_agent_id()
    with sqlmem.open(url, agent_id=agent) as db:
        fill(db)
    with running_ui(url, "--agent-id", agent) as start:
        browser = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        browser.open(start, timeout=10).close()
        with browser.open(start.split("?")[0] + "sessions", timeout=10) as page:
            text = page.read().decode()
        assert "chat:alice" in text and "Alice (Lisbon, vegetarian)" in text


def test_concurrent_requests_all_answer(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "memory.db"
    with sqlmem.open(path) as db:
        fill(db)
    pages = ["", "sessions", "session?id=chat%3Aalice", "facts", "search?q=vegetarian", "pack?q=x"]
    with running_ui(path) as start:
        jar = http.cookiejar.CookieJar()
        urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar)).open(start).close()
        base = start.split("?")[0]

        def fetch(n: int) -> int:
            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
            with opener.open(base + pages[n % len(pages)], timeout=30) as page:
                page.read()
                return int(page.status)

        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(fetch, range(48))) == [200] * 48
