#!/usr/bin/env python3
"""Creates or updates ConfigMaps for the production-shaped tree (bench/watch-memory/tree.sh).

create URL NS N SIZE SHARDS: N ConfigMaps `cm-<i>` of about SIZE bytes of JSON, labelled
`shard=<i % SHARDS>`, with `data.ts`; prints the listing's JSON size.
update URL NS N COUNT ROUND: merge-patches `data.ts` of COUNT ConfigMaps (spread over the N) to a
new value; 16 requests in flight.
lists URL NS SHARDS: the floor of the operator's listing: the lists its watches make (one per
shard, by label, and one of all), one after the other, as streaming lists (a watch with
sendInitialEvents, read until the bookmark that ends the initial events) as its watches start;
prints the seconds they took.
Each of the 16 workers keeps one connection. With $CLUSTER_CA and $CLUSTER_TOKEN (a real API
server, bench/real-cluster.sh) requests are made over TLS with that CA and bearer token.
"""
import http.client, json, os, ssl, sys, threading, time, urllib.parse
from concurrent.futures import ThreadPoolExecutor

CONTEXT = ssl.create_default_context(cafile=os.environ["CLUSTER_CA"]) if os.environ.get("CLUSTER_CA") else None
AUTH = {"Authorization": "Bearer " + os.environ["CLUSTER_TOKEN"]} if os.environ.get("CLUSTER_TOKEN") else {}
LOCAL = threading.local()


def connect(url):
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "https":
        return http.client.HTTPSConnection(parsed.netloc, context=CONTEXT, timeout=600)
    return http.client.HTTPConnection(parsed.netloc, timeout=600)


def request(url, method, path, body=None, content_type="application/json", also_ok=()):
    """One request on this thread's connection (made again when the server closed it); a status
    in `also_ok` counts as success."""
    for attempt in (0, 1):
        conn = getattr(LOCAL, "conn", None) or connect(url)
        LOCAL.conn = conn
        try:
            headers = dict(AUTH)
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = content_type
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            out = resp.read()
        except (http.client.HTTPException, OSError):
            conn.close()
            LOCAL.conn = None
            if attempt:
                raise
            continue
        if resp.status >= 300 and resp.status not in also_ok:
            raise SystemExit(f"{method} {path}: {resp.status} {out[:300]!r}")
        return out


def create(url, ns, n, size, shards):
    pad = "x" * max(size - 250, 0)

    def one(i):
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i:05d}", "namespace": ns,
                             "labels": {"shard": str(i % shards)}},
                "data": {"ts": "0", "payload": pad}}
        # a create retried on a new connection may meet the object its first try stored
        request(url, "POST", f"/api/v1/namespaces/{ns}/configmaps", body, also_ok=(409,))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(n)))
    print(len(request(url, "GET", f"/api/v1/namespaces/{ns}/configmaps")))


def update(url, ns, n, count, round_):
    def one(k):
        i = (k * 7919 + round_ * 104729) % n
        body = {"data": {"ts": f"{round_}-{k}"}}
        request(url, "PATCH", f"/api/v1/namespaces/{ns}/configmaps/cm-{i:05d}", body,
                "application/merge-patch+json")

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(count)))


def streamed(url, ns, selector):
    """Reads a streaming list to its end; the number of objects."""
    query = {"watch": "1", "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
             "resourceVersion": "0", "allowWatchBookmarks": "true"}
    if selector:
        query["labelSelector"] = selector
    conn = connect(url)
    conn.request("GET", f"/api/v1/namespaces/{ns}/configmaps?" + urllib.parse.urlencode(query), headers=AUTH)
    resp = conn.getresponse()
    if resp.status != 200:
        raise SystemExit(f"streaming list: {resp.status} {resp.read()[:300]!r}")
    objects = 0
    try:
        for line in resp:
            event = json.loads(line)
            if event["type"] != "BOOKMARK":
                objects += 1
            elif event["object"]["metadata"].get("annotations", {}).get("k8s.io/initial-events-end") == "true":
                return objects
    finally:
        conn.close()
    raise SystemExit("streaming list: the stream ended before its initial events did")


def lists(url, ns, shards):
    started = time.monotonic()
    for shard in range(shards):
        streamed(url, ns, f"shard={shard}")
    streamed(url, ns, "")
    print(f"{time.monotonic() - started:.1f}")


if __name__ == "__main__":
    cmd, url, ns = sys.argv[1], sys.argv[2], sys.argv[3]
    args = [int(a) for a in sys.argv[4:]]
    {"create": create, "update": update, "lists": lists}[cmd](url, ns, *args)
