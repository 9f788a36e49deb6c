#!/usr/bin/env python3
"""Connection-level attacks from issue #23, measured against a running
`axle serve` on 127.0.0.1 (nothing else is ever contacted):

1. slowloris: N connections each sending a request head one byte every
   second; how long until the server closes them, and whether a normal
   request is answered meanwhile;
2. idle flood: M idle connections (more than a 1,024-descriptor soft limit
   would allow), then a normal request: its status and latency;
3. a runaway render abandoned by its client: the time a following
   uncached request waits (with one transform thread).

    python3 benches/attacks/connections.py PORT [SLOW_N] [IDLE_M]

Prints one line per measurement. Why it exists: the closing note of
issue #23 quotes "before and after" for each attack; these are the "after"
numbers, measured, not assumed.
"""
import socket
import sys
import time


def normal(port, path="/index.xml"):
    started = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    status = data[9:12].decode() if len(data) > 12 else "none"
    return status, time.monotonic() - started


def slowloris(port, n):
    conns = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.setblocking(False)
            conns.append(s)
        except OSError as e:
            print(f"slowloris: connect failed after {len(conns)}: {e}")
            break
    head = b"GET /index.xml HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000
    started = time.monotonic()
    open_ = set(range(len(conns)))
    i = 0
    answered = None
    while open_ and time.monotonic() - started < 90:
        for k in list(open_):
            try:
                conns[k].send(head[i % len(head):i % len(head) + 1])
                try:
                    if conns[k].recv(1) == b"":
                        open_.discard(k)
                except BlockingIOError:
                    pass
            except OSError:
                open_.discard(k)
        if answered is None and time.monotonic() - started > 2:
            answered = normal(port)
        i += 1
        time.sleep(1)
    took = time.monotonic() - started
    print(f"slowloris: {len(conns)} connections, {len(conns) - len(open_)} closed by the server "
          f"within {took:.1f} s; a normal request meanwhile: {answered}")
    for s in conns:
        s.close()


def idle_flood(port, m):
    conns = []
    for _ in range(m):
        try:
            conns.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError as e:
            print(f"idle: connect failed after {len(conns)}: {e}")
            break
    time.sleep(1)
    status, took = normal(port)
    print(f"idle: {len(conns)} idle connections open; a normal request: {status} in {took * 1000:.1f} ms")
    for s in conns:
        s.close()


def abandoned(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /cubic.xml?x=abandoned HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.3)
    s.close()
    status, took = normal(port, "/index.xml?x=after-abandoned")
    print(f"abandoned: a runaway render's client left; the next uncached request: {status} in {took:.2f} s")


if __name__ == "__main__":
    port = int(sys.argv[1])
    slow_n = int(sys.argv[2]) if len(sys.argv) > 2 else 350
    idle_m = int(sys.argv[3]) if len(sys.argv) > 3 else 1100
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    idle_flood(port, idle_m)
    slowloris(port, slow_n)
    abandoned(port)
