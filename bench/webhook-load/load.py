"""The webhook load bench's client: big reviews at once, then idle TCP connections.

Usage: load.py PORT CA PID CLIENTS MIB IDLE
Prints the time until CLIENTS concurrent POSTs of a MIB-MiB AdmissionReview were all answered
(with their status codes) and the operator's peak RSS (VmHWM) after them; then holds IDLE idle
TCP connections and prints whether /healthz still answers, how fast, and the operator's open
descriptors meanwhile.
"""
import asyncio, json, os, ssl, sys, time

port, ca, pid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
clients, mib, idle = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
context = ssl.create_default_context(cafile=ca)


def review(size):
    pad = "x" * (size - 600)
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "big", "namespace": "default"}, "data": {"pad": pad}}
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": "u1", "operation": "CREATE", "name": "big",
                                   "namespace": "default",
                                   "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                                   "object": obj}}).encode()


async def call(method, path, body=b""):
    """The HTTP status, or the name of the error that ended the exchange."""
    try:
        return await exchange(method, path, body)
    except (OSError, ValueError, IndexError) as error:
        return type(error).__name__


async def exchange(method, path, body):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context,
                                                   server_hostname="localhost")
    head = (f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    writer.write(head + body)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    return int(answer.split(b" ", 2)[1])


def status_line(key):
    with open(f"/proc/{pid}/status") as f:
        return next(l.split()[1] for l in f if l.startswith(key + ":"))


async def main():
    body = review(mib << 20)
    started = time.monotonic()
    codes = await asyncio.gather(*(call("POST", "/hooks/big-example-com", body)
                                   for _ in range(clients)))
    took = time.monotonic() - started
    counts = {c: codes.count(c) for c in sorted(set(codes), key=str)}
    print(f"{clients} clients x {mib} MiB reviews: all answered in {took:.1f} s {counts}; "
          f"operator peak RSS {int(status_line('VmHWM')) / 1024:.1f} MB")
    held = []
    for _ in range(idle):
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        held.append(writer)
    await asyncio.sleep(1)
    started = time.monotonic()
    try:
        code = await asyncio.wait_for(call("GET", "/healthz"), 30)
    except asyncio.TimeoutError:
        code = "no answer within 30 s"
    took = (time.monotonic() - started) * 1000
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    print(f"{idle} idle TCP connections held: /healthz answered {code} in {took:.0f} ms; "
          f"operator descriptors open: {fds}")
    for writer in held:
        writer.close()


asyncio.run(main())
