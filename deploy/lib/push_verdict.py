"""Whether a send reached every device once, from what "Apple" accepted and what the ledger says.

Three figures, each 0 when all went well, counted from the APNs simulator's record of accepted
pushes and the deliveries table (never from the services' own statistics):
- missing: devices with no accepted push;
- doubled: devices with two or more accepted pushes under different collapse ids, or without one
  (the phone would show them twice; the same push twice under one collapse id shows once);
- disagree: deliveries whose ledger row contradicts the simulator: `sent` but not accepted under
  its apns-id, or accepted but not `sent`.
Used by the container tests (Tests/Containers) and bench/containers_scale.sh.
  python3 deploy/lib/push_verdict.py DEVICES.txt PUSHES.json LEDGER.tsv   prints the figures as JSON
(LEDGER.tsv: token, status, apns-id per line, tab-separated.)
"""
import collections
import json
import sys


def judge(tokens, pushes, ledger):
    """tokens: device tokens sent to; pushes: the simulator's /control/pushes records;
    ledger: (token, status, apns_id) per delivery."""
    accepted = collections.defaultdict(list)
    for push in pushes:
        accepted[push["token"].lower()].append((push.get("collapseId") or None, push["apnsId"].lower()))
    missing = sum(1 for token in tokens if token.lower() not in accepted)
    doubled = same = 0
    for got in accepted.values():
        if len(got) > 1:
            collapse_ids = {c for c, _ in got}
            if None in collapse_ids or len(collapse_ids) > 1:
                doubled += 1
            else:
                same += 1
    disagree = 0
    statuses = collections.Counter()
    for token, status, apns_id in ledger:
        statuses[status] += 1
        got = accepted.get(token.lower(), [])
        if status == "sent":
            disagree += 0 if any(a == apns_id.lower() for _, a in got) else 1
        elif got:
            disagree += 1
    return {"missing": missing, "doubled": doubled, "disagree": disagree, "sameCollapseIdTwice": same,
            "deliveries": sum(statuses.values()), "statuses": dict(statuses)}


if __name__ == "__main__":
    devices_file, pushes_file, ledger_file = sys.argv[1:4]
    tokens = [line.strip() for line in open(devices_file) if line.strip()]
    pushes = json.load(open(pushes_file))
    ledger = [line.rstrip("\n").split("\t")[:3] for line in open(ledger_file) if line.strip()]
    print(json.dumps(judge(tokens, pushes, ledger)))
