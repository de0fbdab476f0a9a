"""The fake image API and its key, shared by the API test modules (import the fixtures by name)."""

import pytest

from openai_images_server import FakeImagesServer

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


def api_model(server, key, *, max_retries: int, **options):
    """openai:dall-e-2 on the fake server, with short back-off so retries take milliseconds."""
    from benchmark.models.text_to_image import load_text_to_image

    opts = {"api_base": server.api_base, "api_key_env": key, "backoff": 0.05, "max_retries": max_retries,
            "timeout": 5, "rpm": 6000, "size": "256x256", **options}
    return load_text_to_image("openai:dall-e-2", **opts)


def probe_rows(*prompts):
    """Manifest-like rows of ``prompts``, one seed each."""
    return [{"probe_id": f"p/{i:02d}", "prompt": p, "seed": i} for i, p in enumerate(prompts)]
