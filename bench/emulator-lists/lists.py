#!/usr/bin/env python3
"""The emulator-lists bench's client. `create URL NS FROM TO SIZE` creates ConfigMaps cm-FROM..TO
of about SIZE bytes (16 requests in flight). `measure URL NS ROUNDS RATE PID` times, ROUNDS times
each, a full paged list (limit=500, as client-go's reflector pages) without and with a label
selector (one that every object matches, so both lists return the same objects) and a watch's
initial events (sendInitialEvents, up to its initial-events-end BOOKMARK): once alone, then while
a child process merge-patches one ConfigMap of another namespace RATE times a second; prints both
times, the CPU time the emulator (process PID) spent on the first (a figure the load of other
processes on the machine changes far less than wall time) and the latency of the writes made
during the second, after that of the writes alone."""
import http.client, json, multiprocessing, os, re, sys, time, urllib.parse
from concurrent.futures import ThreadPoolExecutor

WRITES_NS = "bench-writes"


def connect(url):
    return http.client.HTTPConnection(urllib.parse.urlparse(url).netloc, timeout=600)


def send(conn, method, path, body=None, ctype="application/json", also=()):
    headers = {"Content-Type": ctype} if body is not None else {}
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    if resp.status >= 300 and resp.status not in also:
        raise SystemExit(f"{method} {path}: {resp.status} {data[:300]!r}")
    return data


def create(url, ns, first, last, size):
    pad = "x" * max(size - 200, 0)

    def batch(ids):
        conn = connect(url)
        for i in ids:
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": f"cm-{i:06d}", "labels": {"bench": "lists"}},
                    "data": {"payload": pad}}
            send(conn, "POST", f"/api/v1/namespaces/{ns}/configmaps", json.dumps(body))

    ids = list(range(first, last))
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(batch, [ids[k::16] for k in range(16)]))


def writer(url, rate, stop, out):
    """Merge-patches one ConfigMap `rate` times a second until `stop` is set; sends (start,
    seconds) of each write (time.monotonic is the system's clock, the same in every process)."""
    conn, writes, n = connect(url), [], 0
    path = f"/api/v1/namespaces/{WRITES_NS}/configmaps/written"
    due = time.monotonic()
    while not stop.is_set():
        n += 1
        due += 1 / rate
        time.sleep(max(0.0, due - time.monotonic()))
        start = time.monotonic()
        send(conn, "PATCH", path, json.dumps({"data": {"n": str(n)}}), "application/merge-patch+json")
        writes.append((start, time.monotonic() - start))
    out.send(writes)


def with_writes(url, rate, work):
    """Runs `work()` while the writer runs; returns (seconds, work's result, the latencies of
    the writes that started while it ran)."""
    stop, (receive, send_end) = multiprocessing.Event(), multiprocessing.Pipe(False)
    child = multiprocessing.Process(target=writer, args=(url, rate, stop, send_end))
    child.start()
    time.sleep(0.2)  # the writer's first requests are under way
    start = time.monotonic()
    result = work()
    end = time.monotonic()
    stop.set()
    writes = receive.recv()
    child.join()
    return end - start, result, [s for t, s in writes if start <= t < end]


def paged_list(url, ns, selector):
    """Every page of a list; returns (pages, items, bytes)."""
    conn, token, pages, items, size = connect(url), "", 0, 0, 0
    query = {"limit": "500"}
    if selector:
        query["labelSelector"] = selector
    while True:
        if token:
            query["continue"] = token
        body = send(conn, "GET", f"/api/v1/namespaces/{ns}/configmaps?{urllib.parse.urlencode(query)}")
        pages, size = pages + 1, size + len(body)
        head = body[:body.find(b'"items"')]
        items += body.count(b'"uid":')
        found = re.search(rb'"continue":"([^"]*)"', head)
        if not found:
            return pages, items, size
        token = found.group(1).decode()


def watch_initial(url, ns):
    """A watch's initial events up to its initial-events-end BOOKMARK; returns the events."""
    conn = connect(url)
    query = "watch=1&sendInitialEvents=true&allowWatchBookmarks=true" \
            "&resourceVersionMatch=NotOlderThan&timeoutSeconds=600"
    conn.request("GET", f"/api/v1/namespaces/{ns}/configmaps?{query}")
    resp, events = conn.getresponse(), 0
    for line in resp:
        if line.startswith(b'{"type":"BOOKMARK"') and b"initial-events-end" in line:
            break
        events += 1
    conn.close()
    return events


def ms(seconds):
    return f"{seconds * 1000:.2f} ms"


def stats(latencies):
    s = sorted(latencies)
    if not s:
        return "no write finished"
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))]
    return f"p50 {ms(pick(0.5))}, p99 {ms(pick(0.99))}, max {ms(s[-1])} ({len(s)} writes)"


def cpu_seconds(pid):
    """User + system CPU time of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(pid, work):
    """Runs `work()`; returns (seconds, the emulator's CPU seconds meanwhile, work's result)."""
    cpu, start = cpu_seconds(pid), time.monotonic()
    result = work()
    return time.monotonic() - start, cpu_seconds(pid) - cpu, result


def measure(url, ns, rounds, rate, pid):
    conn = connect(url)
    send(conn, "POST", "/api/v1/namespaces", json.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WRITES_NS}}), also=(409,))
    send(conn, "POST", f"/api/v1/namespaces/{WRITES_NS}/configmaps", json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "written"}}), also=(409,))
    _, _, alone = with_writes(url, rate, lambda: time.sleep(2))
    print(f"  writes alone ({rate:g}/s for 2 s): {stats(alone)}", flush=True)
    for _ in range(rounds):
        for label, selector in (("no selector", ""), ("labelSelector=bench=lists", "bench=lists")):
            work = lambda: paged_list(url, ns, selector)
            seconds, cpu, (pages, items, size) = timed(pid, work)
            busy, _, lat = with_writes(url, rate, work)
            print(f"  paged list, {label}: {seconds:.3f} s alone (emulator CPU {cpu:.2f} s; "
                  f"{pages} pages, {items} items, {size / 1e6:.1f} MB), {busy:.3f} s with writes; "
                  f"writes meanwhile: {stats(lat)}", flush=True)
        seconds, cpu, events = timed(pid, lambda: watch_initial(url, ns))
        busy, _, lat = with_writes(url, rate, lambda: watch_initial(url, ns))
        print(f"  watch, initial events: {seconds:.3f} s alone (emulator CPU {cpu:.2f} s; "
              f"{events} events), {busy:.3f} s with writes; writes meanwhile: {stats(lat)}",
              flush=True)


if __name__ == "__main__":
    cmd, url, ns = sys.argv[1], sys.argv[2], sys.argv[3]
    if cmd == "create":
        create(url, ns, int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    else:
        measure(url, ns, int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]))
