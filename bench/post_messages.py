"""POSTs one-subscriber messages to the gateway, as a tenant's backend would (bench/transactional.sh).

usage: post_messages.py GATEWAY_URL TENANT_KEY PREFIX COUNT CONNECTIONS RATE OUT

Message i (1-based) goes `to` subscriber PREFIX + i as 7 digits. CONNECTIONS threads each keep one
HTTP/1.1 connection open; RATE > 0 paces the POSTs to that many per second overall (message i
starts at t0 + (i-1)/RATE), RATE 0 sends as fast as the connections go. OUT gets one line per
message, `<message id> <epoch seconds the 202 arrived>`; stdout one line, `<first POST's start>
<last answer>` (epoch seconds). Any answer other than 202 stops the run.
"""
import http.client
import json
import sys
import threading
import time
import urllib.parse

url, key, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
count, connections, rate, out = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
target = urllib.parse.urlparse(url)
headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
lock = threading.Lock()
state = {"next": 1, "failed": None}
answers = [None] * (count + 1)
t0 = time.time() + 0.2


def worker():
    conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
    while True:
        with lock:
            i = state["next"]
            if i > count or state["failed"]:
                break
            state["next"] = i + 1
        if rate > 0:
            wait = t0 + (i - 1) / rate - time.time()
            if wait > 0:
                time.sleep(wait)
        body = json.dumps({"to": "%s%07d" % (prefix, i), "title": "Your order shipped",
                           "body": "Order %d is on its way" % i, "data": {"order": i}})
        conn.request("POST", "/v1/messages", body=body, headers=headers)
        reply = conn.getresponse()
        data = reply.read()
        answered = time.time()
        if reply.status != 202:
            with lock:
                state["failed"] = "message %d: HTTP %d %s" % (i, reply.status, data[:300])
            break
        answers[i] = (json.loads(data)["data"]["id"], answered)
    conn.close()


time.sleep(max(0, t0 - time.time()))
started = time.time()
threads = [threading.Thread(target=worker) for _ in range(connections)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if state["failed"]:
    sys.exit("post_messages: " + state["failed"])
with open(out, "w") as f:
    for i in range(1, count + 1):
        f.write("%s %.6f\n" % answers[i])
print("%.6f %.6f" % (started, max(a[1] for a in answers[1:])))
