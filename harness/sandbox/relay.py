"""Runs INSIDE a sandbox, not in the harness: python3, standard library only.

A network-less container cannot reach the harness's metering proxy on the host's loopback.
The harness mounts a directory holding the proxy's unix socket read-only into the container;
this script listens on 127.0.0.1 (a free port of the container's own loopback), relays every
connection byte for byte to that socket, and runs the agent program with ``OPENAI_BASE_URL``
and ``ANTHROPIC_BASE_URL`` pointing at the relay (streams pass through as they come). The container keeps no network: the socket is the one way out, and
the proxy behind it answers only the trial's token.

Usage: python3 -c "<this file>" SOCKET_PATH COMMAND   (exits with the program's status)
"""

import contextlib
import os
import socket
import subprocess
import sys
import threading


def _pump(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def _relay(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_relay, args=(client, path), daemon=True).start()


def listen(path: str) -> str:
    """Relay a free port of 127.0.0.1 to the unix socket ``path`` from daemon threads (also
    used by a ``module:Class`` agent's jailed process); returns its origin."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}"


def main() -> int:
    path, command = sys.argv[1], sys.argv[2]
    origin = listen(path)
    env = dict(
        os.environ,
        OPENAI_BASE_URL=origin + "/v1",
        OPENAI_API_BASE=origin + "/v1",
        ANTHROPIC_BASE_URL=origin,
    )
    code = subprocess.call(["bash", "-c", command], env=env)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
