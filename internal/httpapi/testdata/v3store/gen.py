import json, random, sys
random.seed(int(sys.argv[1]))
part = sys.argv[2]
kinds = ["tutor_me","test","flashcard","material","live_lecture","main"]
out = []
def ev(i, g, s, t, name=None):
    e = {"id": f"{part}-{i:05d}", "groupId": g, "studentId": s, "occurredAt": t}
    if random.random() < 0.2:
        e["kind"] = "live_lecture.session_created"
    else:
        e["kind"] = "chat.message_sent"; e["chatType"] = random.choice(kinds)
    if name: e["studentName"] = name
    return e
import datetime
base = datetime.datetime(2026, 1, 20, tzinfo=datetime.timezone.utc)
n = 1500 if part == "a" else 500
for i in range(n):
    g = random.choice(["north", "north", "lake"])
    s = "s%02d" % random.randint(0, 39)
    t = base + datetime.timedelta(minutes=random.randint(0, 75*24*60))
    name = f"Student {s.upper()}" if random.random() < 0.1 else None
    if part == "b" and random.random() < 0.05: s = "s07"  # the erased student comes back
    out.append(ev(i, g, s, t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % random.randint(0,999), name))
for e in out: print(json.dumps(e))
