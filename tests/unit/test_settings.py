import pytest
from pydantic import ValidationError

from shared.config import Settings


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUIRE_RUNTIME", "aws")
    monkeypatch.setenv("QUIRE_DATABASE_URL", "postgresql://quire_app:s3cret@db:5432/quire")
    monkeypatch.setenv("QUIRE_EMBEDDING_DIMENSION", "1024")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    settings = Settings()
    assert (settings.runtime, settings.embedding_dimension, settings.region) == ("aws", 1024, "eu-west-1")
    # The password never shows up in a repr, a log line or an error.
    assert "s3cret" not in repr(settings)


@pytest.mark.parametrize("dimension", ["0", "2001", "many"])
def test_an_embedding_dimension_pgvector_cannot_index_is_refused(
    monkeypatch: pytest.MonkeyPatch, dimension: str
) -> None:
    monkeypatch.setenv("QUIRE_EMBEDDING_DIMENSION", dimension)
    with pytest.raises(ValidationError, match="embedding_dimension"):
        Settings()


def test_an_unknown_runtime_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUIRE_RUNTIME", "azure")
    with pytest.raises(ValidationError, match="runtime"):
        Settings()


def test_on_aws_presigned_urls_name_the_buckets_regional_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import timedelta

    from shared.bootstrap import Container

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    monkeypatch.setenv("QUIRE_REGION", "eu-west-3")
    container = Container(Settings(runtime="aws", bucket="quire-prod-originals"))
    upload = container.content.signed_upload(
        "tenants/acme/files/x/versions/y", content_type="application/pdf", max_bytes=10, lifetime=timedelta(minutes=5)
    )
    read = container.content.signed_read(
        "tenants/acme/files/x/versions/y", version_id=None, filename="a.pdf", lifetime=timedelta(minutes=5)
    )
    assert upload.url == "https://quire-prod-originals.s3.eu-west-3.amazonaws.com/"
    assert read is not None and read.url.startswith("https://quire-prod-originals.s3.eu-west-3.amazonaws.com/tenants/")
