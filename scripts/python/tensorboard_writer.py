"""TensorBoard event files for tracking.tensorboard, written with TensorBoard's own record writer.

A long-lived process of the orchestration worker (activities/tensorboard-writer.ts): one JSON
request per line on stdin, one JSON answer per line on stdout, so the imports are paid once and
not per RL step.

  {"id": 1, "op": "open", "runDir": "/tb/run-1"}                       -> {"id": 1, "ok": true}
  {"id": 2, "op": "write", "runDir": "/tb/run-1",
   "points": [["rl/meanReward", 3, 0.5, 1700000000.0], ...]}            -> {"id": 2, "ok": true, "written": 1, "skipped": 0}
  any failure                                                           -> {"id": n, "ok": false, "error": "..."}

Each run has one event file, appended to. Exactly once: a point is written only when its step is
beyond the highest step the file holds for its tag (the workflow sends a run's points in order, one
write at a time, and every tag's steps increase through a run), so a retried or replayed write adds
nothing. What the file holds is kept beside it in a small state file, replaced atomically after the
appended records are on disk: a write killed between the two leaves records the state does not
count, and the next write cuts the file back to the counted length before it appends. A lock file
(flock, released when a process dies) keeps two writers of one run apart.
"""

import fcntl
import json
import os
import sys

from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.record_writer import RecordWriter

EVENT_FILE = "events.out.tfevents.durable-rl"
STATE_FILE = ".durable-rl-tensorboard.json"
LOCK_FILE = ".durable-rl-tensorboard.lock"


def load_state(run_dir):
    try:
        with open(os.path.join(run_dir, STATE_FILE)) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"bytes": 0, "last": {}}


def save_state(run_dir, state):
    tmp = os.path.join(run_dir, STATE_FILE + ".tmp")
    with open(tmp, "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(run_dir, STATE_FILE))


class Locked:
    def __init__(self, run_dir):
        os.makedirs(run_dir, exist_ok=True)
        self.f = open(os.path.join(run_dir, LOCK_FILE), "a")

    def __enter__(self):
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def open_run(run_dir):
    with Locked(run_dir):
        # Writable, and the state readable: a bad folder fails here, at the run's start.
        load_state(run_dir)
        save_state(run_dir, load_state(run_dir))
    return {}


def write(run_dir, points):
    with Locked(run_dir):
        state = load_state(run_dir)
        last = state["last"]
        path = os.path.join(run_dir, EVENT_FILE)
        with open(path, "r+b" if os.path.exists(path) else "w+b") as f:
            # Records past the counted length were appended by a write killed before its state was saved.
            f.truncate(state["bytes"])
            f.seek(state["bytes"])
            writer = RecordWriter(f)
            if state["bytes"] == 0 and points:
                first = event_pb2.Event(wall_time=points[0][3], file_version="brain.Event:2", source_metadata=event_pb2.SourceMetadata(writer="durable-rl"))
                writer.write(first.SerializeToString())
            written = 0
            for tag, step, value, wall_time in points:
                if tag in last and step <= last[tag]:
                    continue
                event = event_pb2.Event(wall_time=wall_time, step=step, summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)]))
                writer.write(event.SerializeToString())
                last[tag] = step
                written += 1
            f.flush()
            os.fsync(f.fileno())
            state["bytes"] = f.tell()
        save_state(run_dir, state)
    return {"written": written, "skipped": len(points) - written}


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            if req["op"] == "open":
                out = open_run(req["runDir"])
            elif req["op"] == "write":
                out = write(req["runDir"], req["points"])
            else:
                raise ValueError(f"unknown op {req['op']!r}")
            answer = {"id": req["id"], "ok": True, **out}
        except Exception as err:  # noqa: BLE001 - every failure is the request's answer
            answer = {"id": req["id"], "ok": False, "error": f"{type(err).__name__}: {err}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
