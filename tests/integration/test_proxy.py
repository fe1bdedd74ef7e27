"""docker-compose's reverse proxy, run outside Docker: the compose file publishes nginx's ports only and tells
Django to believe nginx's address alone; the shipped nginx configuration passes ``nginx -t`` (TLS included)
and, in front of the app, replaces a spoofed X-Forwarded-For and refuses an anonymous 200 MB body itself.
Skipped without nginx (Debian: ``apt-get install nginx-light``)."""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from django.core.cache import cache

from annotate.infra import throttle
from tests.conftest import require_tool

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "nginx"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_only_the_proxy_publishes_a_port_and_django_trusts_only_it():
    services = compose()["services"]
    published = {name for name, service in services.items() if service.get("ports")}
    assert published == {"proxy"}
    proxy = services["proxy"]
    assert proxy["image"].startswith("nginx:") and proxy["image"].endswith("-bookworm")
    address = proxy["networks"]["edge"]["ipv4_address"]
    web = services["web"]
    assert web["environment"]["DJANGO_TRUSTED_PROXIES"] == address
    assert web["environment"]["DJANGO_BEHIND_TLS_PROXY"] == "true"
    assert "edge" in web["networks"] and "8000" in web["expose"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_prefix(tmp_path: Path, upstream: str, mode: str, port: int) -> Path:
    """A runnable copy of the shipped configuration (mode ``http`` or ``https``) on ``port``, in front of
    ``upstream``; returns its main file."""
    require_tool(Path(NGINX).exists(), "nginx is not installed (apt-get install nginx-light)")
    conf = tmp_path / "hatlab"
    conf.mkdir()
    for name in ("upstream.conf", "locations.conf", f"{mode}.conf"):
        text = (DEPLOY / name).read_text().replace("/etc/nginx/hatlab/", f"{conf}/")
        text = text.replace("web:8000", upstream).replace("/etc/nginx/tls/", f"{tmp_path}/")
        text = text.replace("listen 80;", f"listen 127.0.0.1:{port};").replace("listen [::]:80;", "")
        text = text.replace("listen 443 ssl;", f"listen 127.0.0.1:{free_port()} ssl;")
        (conf / name).write_text(text.replace("listen [::]:443 ssl;", ""))
    user = "user root;" if os.geteuid() == 0 else ""
    temp = " ".join(
        f"{kind}_temp_path {tmp_path}/{kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    main = tmp_path / "nginx.conf"
    main.write_text(
        f"{user} pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log; events {{}}\n"
        f"http {{ access_log off; {temp} include {conf}/{mode}.conf; }}\n"
    )
    return main


def test_the_tls_configuration_passes_nginx_t(tmp_path):
    main = nginx_prefix(tmp_path, "127.0.0.1:9", "https", free_port())
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-days", "1",
         "-keyout", str(tmp_path / "privkey.pem"), "-out", str(tmp_path / "fullchain.pem")],
        check=True, capture_output=True,
    )  # fmt: skip
    checked = subprocess.run(
        [NGINX, "-t", "-p", str(tmp_path), "-c", str(main)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


@pytest.fixture(autouse=True)
def _fresh_throttles():
    """Each test counts its own requests: the throttles' counters live in the cache, which outlives a test, and a
    test elsewhere may have failed a sign-in from this same address."""
    cache.clear()
    throttle.forget_leases()  # what this process leased from those counters


@pytest.fixture
def proxy(live_server, tmp_path):
    port = free_port()
    upstream = live_server.url.removeprefix("http://")
    main = nginx_prefix(tmp_path, upstream, "http", port)
    process = subprocess.Popen([NGINX, "-p", str(tmp_path), "-c", str(main), "-g", "daemon off;"])
    try:
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def status_of(request: urllib.request.Request) -> int:
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.django_db(transaction=True)
def test_a_spoofed_forwarded_address_does_not_pass_the_proxy(proxy, settings):
    """The attack: a new X-Forwarded-For on every wrong password. Behind nginx each one counts for the real
    address, and the fourth is refused."""
    settings.BEHIND_TLS_PROXY = True
    settings.TRUSTED_PROXIES = ["127.0.0.1"]
    settings.HATLAB_THROTTLE_LOGIN_IP = (3, 300)
    token = base64.b64encode(b"nobody:wrong").decode()
    statuses = [
        status_of(
            urllib.request.Request(
                f"{proxy}/api/studies/",
                headers={"Authorization": f"Basic {token}", "X-Forwarded-For": f"203.0.113.{n}"},
            )
        )
        for n in range(5)
    ]
    assert statuses[:3] == [403, 403, 403] and statuses[3:] == [429, 429]


def declared_body(proxy: str, path: str, length: int) -> str:
    """The status line nginx answers to a POST declaring ``length`` bytes, before any of them is sent."""
    host, port = proxy.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(
            f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\nConnection: close\r\n\r\n".encode()
        )
        return conn.recv(200).decode("latin-1").split("\r\n")[0]


@pytest.mark.django_db(transaction=True)
def test_the_proxy_refuses_large_bodies_itself(proxy):
    assert " 413 " in declared_body(proxy, "/login/", 200 * 1024 * 1024)
    assert " 413 " in declared_body(proxy, "/api/work/studies/x/next/", 3 * 1024 * 1024)
