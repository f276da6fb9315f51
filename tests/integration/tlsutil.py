"""Certificates for the TLS tests, made with OpenSSL's own command-line tool
in a temporary directory: a CA, a server certificate for 127.0.0.1 and
localhost signed by it, a client certificate signed by it, a second
server certificate (another subject) for the refresh tests, and one that
names another host."""

import os
import shutil
import socket
import ssl
import subprocess
import tempfile


class Certs:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="cellar-tls-")
        self.ca_key, self.ca = self.path("ca.key"), self.path("ca.pem")
        self._openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                      "-subj", "/CN=cellar test CA", "-keyout", self.ca_key, "-out", self.ca)
        self.server, self.server_key = self._signed("server", "/CN=127.0.0.1/OU=first",
                                                    "subjectAltName=IP:127.0.0.1,DNS:localhost")
        self.server2, self.server2_key = self._signed("server2", "/CN=127.0.0.1/OU=second",
                                                      "subjectAltName=IP:127.0.0.1,DNS:localhost")
        self.client, self.client_key = self._signed("client", "/CN=cellar test client", None)
        self.wrong, self.wrong_key = self._signed("wrong", "/CN=other.example",
                                                  "subjectAltName=DNS:other.example")

    def path(self, name):
        return os.path.join(self.dir, name)

    def _openssl(self, *args):
        subprocess.run(["openssl"] + list(args), check=True, capture_output=True, timeout=60)

    def _signed(self, name, subject, san):
        key, csr, crt = self.path(name + ".key"), self.path(name + ".csr"), self.path(name + ".pem")
        self._openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
                      "-keyout", key, "-out", csr)
        ext = self.path(name + ".ext")
        with open(ext, "w") as f:
            f.write((san + "\n") if san else "basicConstraints=CA:FALSE\n")
        self._openssl("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key,
                      "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", crt)
        return crt, key

    def server_args(self, *extra):
        return ["-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s" % (self.server, self.server_key)] + \
            list(extra)

    def context(self, client_cert=False, verify=True):
        ctx = ssl.create_default_context(cafile=self.ca) if verify else \
            ssl._create_unverified_context()
        if client_cert:
            ctx.load_cert_chain(self.client, self.client_key)
        return ctx

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def connect(port, ctx, host="127.0.0.1", timeout=10):
    """A TLS connection to host:port, handshake done."""
    raw = socket.create_connection((host, port), timeout=timeout)
    try:
        return ctx.wrap_socket(raw, server_hostname=host)
    except Exception:
        raw.close()
        raise


def call(sock, data, terminator):
    """Sends data, reads until the answer ends with terminator."""
    sock.sendall(data)
    buf = b""
    while not buf.endswith(terminator):
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise AssertionError("closed after %r" % buf[-200:])
        buf += chunk
    return buf
