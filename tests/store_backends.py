"""Where the store tests find each backend: ``sqlite`` is a new file in the test's temp folder, ``postgres`` a new
schema in the database that ``WINDOWFIT_TEST_POSTGRES`` names (``.ci/postgres.sh start DIR`` prints such a URL;
``.ci/run`` starts one and sets it). Without that variable the postgres cases skip, except under ``CI``, where they
fail: a test that needs a service must never skip quietly in CI."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

POSTGRES_ENV = "WINDOWFIT_TEST_POSTGRES"
BACKENDS = ("sqlite", "postgres")


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the store tests against a real PostgreSQL (.ci/run starts one)")
    pytest.skip(f"{reason} (start a throwaway server: export {POSTGRES_ENV}=$(.ci/postgres.sh start /tmp/wf-pg))")


def require_psycopg() -> None:
    """A skip (a failure under ``CI``) when the postgres extra is not installed."""
    try:
        import psycopg  # noqa: F401  (the postgres extra, in the test extra)
    except ImportError:
        _missing("psycopg is not installed (pip install -e '.[test]')")


def postgres_server_url() -> str:
    """The test server's URL, or a skip (a failure under ``CI``) saying why there is none."""
    url = os.environ.get(POSTGRES_ENV, "")
    if not url:
        _missing(f"{POSTGRES_ENV} is not set")
    require_psycopg()
    return url


def with_search_path(url: str, schema: str) -> str:
    """``url`` with its tables in ``schema`` (libpq's ``options`` parameter sets the search path)."""
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


@contextmanager
def postgres_schema(url: str | None = None) -> Iterator[str]:
    """The URL of a new, empty schema on the test server, dropped with everything in it afterwards."""
    import psycopg

    server = url or postgres_server_url()
    schema = f"wf_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_search_path(server, schema)
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@contextmanager
def store_target(backend: str, tmp_path: Path) -> Iterator[str]:
    """What ``open_store`` takes for a new, empty store of ``backend``."""
    if backend == "sqlite":
        yield str(tmp_path / "store.db")
    elif backend == "postgres":
        with postgres_schema() as url:
            yield url
    else:
        raise ValueError(backend)
