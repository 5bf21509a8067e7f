#!/usr/bin/env python3
"""Creates or updates ConfigMaps for the production-shaped tree (bench/watch-memory/tree.sh).

create URL NS N SIZE SHARDS: N ConfigMaps `cm-<i>` of about SIZE bytes of JSON, labelled
`shard=<i % SHARDS>`, with `data.ts`; prints the listing's JSON size.
update URL NS N COUNT ROUND: merge-patches `data.ts` of COUNT ConfigMaps (spread over the N) to a
new value; 16 requests in flight.
With $CLUSTER_CA and $CLUSTER_TOKEN (a real API server, bench/real-cluster.sh) requests are made
over TLS with that CA and bearer token.
"""
import json, os, ssl, sys, urllib.error, urllib.request
from concurrent.futures import ThreadPoolExecutor

CONTEXT = ssl.create_default_context(cafile=os.environ["CLUSTER_CA"]) if os.environ.get("CLUSTER_CA") else None
AUTH = {"Authorization": "Bearer " + os.environ["CLUSTER_TOKEN"]} if os.environ.get("CLUSTER_TOKEN") else {}


def open_url(req):
    try:
        return urllib.request.urlopen(req, context=CONTEXT)
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{req.get_method()} {req.full_url}: {e.code} {e.read().decode(errors='replace')[:500]}") from None


def request(url, method, body, content_type):
    req = urllib.request.Request(url, method=method, data=json.dumps(body).encode(),
                                 headers={"Content-Type": content_type, **AUTH})
    open_url(req).read()


def create(url, ns, n, size, shards):
    pad = "x" * max(size - 250, 0)

    def one(i):
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i:05d}", "namespace": ns,
                             "labels": {"shard": str(i % shards)}},
                "data": {"ts": "0", "payload": pad}}
        try:
            request(f"{url}/api/v1/namespaces/{ns}/configmaps", "POST", body, "application/json")
        except RuntimeError as e:
            # a loaded API server may store a create and still fail the answer: a retry of it
            # (by the server's own handling) then meets the object; it is there, which is the point
            if ": 409 " not in str(e):
                raise

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(n)))
    with open_url(urllib.request.Request(f"{url}/api/v1/namespaces/{ns}/configmaps", headers=AUTH)) as r:
        print(len(r.read()))


def update(url, ns, n, count, round_):
    def one(k):
        i = (k * 7919 + round_ * 104729) % n
        body = {"data": {"ts": f"{round_}-{k}"}}
        request(f"{url}/api/v1/namespaces/{ns}/configmaps/cm-{i:05d}", "PATCH", body,
                "application/merge-patch+json")

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(count)))


if __name__ == "__main__":
    cmd, url, ns = sys.argv[1], sys.argv[2], sys.argv[3]
    args = [int(a) for a in sys.argv[4:]]
    if cmd == "create":
        create(url, ns, *args)
    else:
        update(url, ns, *args)
