"""The owner's connection on AWS refuses a server that cannot prove it is the database, before the password
leaves: an impostor on the writer's address (TLS with a certificate of its own) asks for the password in
clear text, as PostgreSQL may, and must never receive it."""

import datetime
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from migrations.runner import owner_url

PASSWORD = "the-owner's-password"
_SSL_REQUEST = struct.pack("!ii", 8, 80877103)
_CLEARTEXT_PASSWORD_REQUEST = b"R" + struct.pack("!ii", 8, 3)


def self_signed_certificate(directory: Path, hostname: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "impostor.crt", directory / "impostor.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


class Impostor:
    """Speaks just enough of PostgreSQL's protocol: accepts TLS, then asks for the password in clear text."""

    def __init__(self, certificate: Path, key: Path) -> None:
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._tls.load_cert_chain(certificate, key)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.received: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        connection, _ = self._listener.accept()
        with connection:
            connection.settimeout(10)
            if connection.recv(8) != _SSL_REQUEST:
                return
            connection.sendall(b"S")
            try:
                with self._tls.wrap_socket(connection, server_side=True) as tls:
                    tls.recv(65536)  # the startup message
                    tls.sendall(_CLEARTEXT_PASSWORD_REQUEST)
                    self.received.append(tls.recv(65536))  # the password message, if the client sends it
            except (ssl.SSLError, OSError):
                return  # the client refused the handshake: nothing was sent

    def close(self) -> None:
        self._listener.close()
        self._thread.join(timeout=10)


@pytest.fixture
def impostor(tmp_path: Path) -> Iterator[Impostor]:
    server = Impostor(*self_signed_certificate(tmp_path, "localhost"))
    try:
        yield server
    finally:
        server.close()


def test_the_owner_never_sends_its_password_to_a_server_it_cannot_verify(impostor: Impostor) -> None:
    url = owner_url(host="localhost", port=impostor.port, dbname="quire", user="quire_owner", password=PASSWORD)
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect(url, connect_timeout=10).close()
    assert not any(PASSWORD.encode() in message for message in impostor.received)
    assert "certificate verify failed" in str(refused.value)
