"""A TCP proxy in front of an S3 server that fails on demand, as moto cannot.

    python3 faulty_proxy.py UPSTREAM_PORT MODE

MODE is one of:
  refuse       answer every request 503 SlowDown, as S3 does when overloaded
  stall        take the request and never answer
  cut:N        forward, but close each connection after N bytes of the answer
  stall:N      forward N bytes of the answer, then send nothing more, holding the connection

It prints "listening PORT" once it accepts connections, then serves until killed.
"""
import socket
import sys
import threading

upstream_port = int(sys.argv[1])
mode = sys.argv[2]

SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
             b'<Message>Please reduce your request rate.</Message></Error>')


def read_head(client):
    """Reads up to the end of a request's head; the body, if any, is left unread."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(65536)
        if not chunk:
            return None
        data += chunk
    return data


def refuse(client):
    while read_head(client) is not None:
        client.sendall(b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nConnection: close\r\n"
                       + b"Content-Length: %d\r\n\r\n" % len(SLOW_DOWN) + SLOW_DOWN)
        return


def stall(client):
    while client.recv(65536):
        pass


def cut(client, limit, then_stall=False):
    upstream = socket.create_connection(("127.0.0.1", upstream_port))

    def forward_requests():
        try:
            while True:
                chunk = client.recv(65536)
                if not chunk:
                    break
                upstream.sendall(chunk)
        except OSError:
            pass

    threading.Thread(target=forward_requests, daemon=True).start()
    sent = 0
    try:
        while sent < limit:
            chunk = upstream.recv(min(65536, limit - sent))
            if not chunk:
                break
            client.sendall(chunk)
            sent += len(chunk)
        if then_stall:
            stall(client)
    finally:
        upstream.close()


def serve(client):
    try:
        if mode == "refuse":
            refuse(client)
        elif mode == "stall":
            stall(client)
        elif mode.startswith("cut:"):
            cut(client, int(mode[4:]))
        elif mode.startswith("stall:"):
            cut(client, int(mode[6:]), then_stall=True)
    except OSError:
        pass
    finally:
        # shutdown sends the FIN now: close alone waits for the thread still reading from it.
        try:
            client.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        client.close()


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
print("listening", listener.getsockname()[1], flush=True)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
