#!/usr/bin/env python3
"""Creates N ConfigMaps of about SIZE bytes of JSON each in NAMESPACE, 16 requests in flight."""
import json, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor

url, ns, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pad = "x" * max(size - 200, 0)

def create(i):
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i:05d}", "namespace": ns, "labels": {"bench": "watch-memory"}},
            "data": {"payload": pad}}
    req = urllib.request.Request(f"{url}/api/v1/namespaces/{ns}/configmaps", method="POST",
                                 data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req).read()

with ThreadPoolExecutor(16) as pool:
    list(pool.map(create, range(n)))
with urllib.request.urlopen(f"{url}/api/v1/namespaces/{ns}/configmaps") as r:
    print(len(r.read()))
