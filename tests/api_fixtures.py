"""The fake image API and its key, shared by the API test modules (import the fixtures by name)."""

import pytest

from tests.openai_images_server import FakeImagesServer

#: the API key the tests hand the client; no output or file may contain it, in any form
KEY = "sk-test-DO-NOT-LEAK-0123456789abcdef"


@pytest.fixture
def server():
    with FakeImagesServer() as srv:
        yield srv


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("T2IBENCH_TEST_KEY", KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return "T2IBENCH_TEST_KEY"
