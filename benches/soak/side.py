#!/usr/bin/env python3
"""The soak's side process (benches/soak.sh): why it exists: wrk cannot
edit files or judge freshness. While wrk loads the server it

- edits sources and stylesheets in turn (a new marker in the file), polls
  the page until the new marker shows, then keeps requesting it: any later
  response still carrying the old marker is *stale*;
- keeps a few slow clients sending a request head one byte at a time;
- sends HEADs (wrk stalls on them), each checked for a 200 with no body;
- writes a JSON summary to argv[3] at the end.

Usage: side.py BASE_URL ROOT OUT_JSON SECONDS. Traffic goes to 127.0.0.1 only.
"""
import json
import os
import random
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

base, root, out, secs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
assert base.startswith("http://127.0.0.1:"), base
host, port = base[len("http://"):].rstrip("/").split(":")
port = int(port)
deadline = time.time() + secs
stats = {"edits": 0, "edit_polls": 0, "visible_first": 0, "never_visible": 0,
         "stale": 0, "checks": 0, "unexpected": 0, "unexpected_samples": [],
         "slow_done": 0, "slow_closed": 0, "slow_other": 0, "heads": 0}
lock = threading.Lock()


def bump(key, n=1):
    with lock:
        stats[key] += n


def fetch(path):
    try:
        with urllib.request.urlopen(base + path, timeout=30) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except Exception as e:  # a socket error is unexpected
        return None, repr(e)


def unexpected(what):
    with lock:
        stats["unexpected"] += 1
        if len(stats["unexpected_samples"]) < 10:
            stats["unexpected_samples"].append(what)


def write(path, text):
    # Half the edits in place, half an editor's atomic save.
    if random.random() < 0.5:
        with open(path, "w") as f:
            f.write(text)
    else:
        tmp = path + ".tmp-soak"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)


def edit_loop():
    gen = 0
    ndocs = len([n for n in os.listdir(os.path.join(root, "docs")) if n.endswith(".xml")])
    while time.time() < deadline - 5:
        gen += 1
        k = random.randrange(ndocs)
        page = "/docs/d%03d.xml" % k
        if gen % 3 == 0:
            # A stylesheet every third edit (one of the imported ones).
            n = random.randrange(4)
            path = os.path.join(root, "s", "part%d.xsl" % n)
            old = open(path).read()
            old_mark = old.split("XSLMARK-")[1].split("<")[0]
            new_mark = "p%d-g%d" % (n, gen)
            new = old.replace("XSLMARK-" + old_mark, "XSLMARK-" + new_mark)
            old_s, new_s = "XSLMARK-" + old_mark + "<", "XSLMARK-" + new_mark + "<"
        else:
            path = os.path.join(root, "docs", "d%03d.xml" % k)
            old = open(path).read()
            old_mark = old.split("SRCMARK-")[1].split("<")[0]
            new_mark = "d%d-g%d" % (k, gen)
            new = old.replace("SRCMARK-" + old_mark, "SRCMARK-" + new_mark)
            old_s, new_s = "SRCMARK-" + old_mark + "<", "SRCMARK-" + new_mark + "<"
        write(path, new)
        bump("edits")
        seen = False
        for i in range(200):
            status, body = fetch(page)
            bump("edit_polls")
            if status != 200:
                unexpected("%s after an edit: %s %s" % (page, status, body[:120]))
                break
            if new_s in body:
                seen = True
                if i == 0:
                    bump("visible_first")
                break
            time.sleep(0.05)
        if not seen:
            bump("never_visible")
            continue
        # After the new marker was seen: no response may carry the old one.
        for _ in range(10):
            status, body = fetch(page)
            bump("checks")
            if status == 200 and old_s in body:
                bump("stale")
            elif status != 200:
                unexpected("%s check: %s" % (page, status))
        time.sleep(0.5)


def slow_client():
    head = ("GET /docs/d000.xml HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "X-Slow: %s\r\nConnection: close\r\n\r\n" % ("s" * 20)).encode()
    while time.time() < deadline - 2:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
        except OSError as e:
            unexpected("slow client connect: %r" % e)
            time.sleep(1)
            continue
        closed = False
        try:
            for b in head:
                s.sendall(bytes([b]))
                time.sleep(0.1)
        except OSError:
            closed = True  # the server gave up on us: a header timeout
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        s.close()
        if closed or not data:
            bump("slow_closed")
        elif data.startswith(b"HTTP/1.1 200") or data.startswith(b"HTTP/1.1 408"):
            bump("slow_done")
        else:
            bump("slow_other")
            unexpected("slow client got %r" % data[:80])


def head_loop():
    ndocs = len([n for n in os.listdir(os.path.join(root, "docs")) if n.endswith(".xml")])
    while time.time() < deadline - 2:
        req = urllib.request.Request(
            base + "/docs/d%03d.xml" % random.randrange(ndocs), method="HEAD")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                body = r.read()
                if r.status != 200 or body:
                    unexpected("HEAD: %s with %d body bytes" % (r.status, len(body)))
        except Exception as e:
            unexpected("HEAD: %r" % e)
        bump("heads")


threads = [threading.Thread(target=edit_loop), threading.Thread(target=head_loop)] + [
    threading.Thread(target=slow_client) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with open(out, "w") as f:
    json.dump(stats, f, indent=1)
