"""The owner's connection on AWS refuses a server that cannot prove it is the database, before the password
leaves: an impostor on the writer's address (TLS with a certificate of its own) asks for the password in
clear text, as PostgreSQL may, and must never receive it."""

import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from migrations.runner import owner_url
from tests.certificates import self_signed_certificate

PASSWORD = "the-owner's-password"
_SSL_REQUEST = struct.pack("!ii", 8, 80877103)
_CLEARTEXT_PASSWORD_REQUEST = b"R" + struct.pack("!ii", 8, 3)


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
    server = Impostor(*self_signed_certificate(tmp_path, "localhost", stem="impostor"))
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
