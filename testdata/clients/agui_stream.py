"""An AG-UI client of `monty serve`'s event streams, checked with the models
of the ag-ui-protocol package (ag_ui.core, AG-UI 1.0).

    python agui_stream.py BASE_URL      (MONTY_API_KEY: the x-api-key, if any)

It streams, with `Accept: text/event-stream`:
  1. a plain execution, which must end with RUN_FINISHED and a success outcome;
  2. an execution that pauses at a client tool, which must end with an
     interrupt outcome: one interrupt per call the run waits on, whose
     toolCallId is a tool call of the stream and the id the resume answers,
     and whose expiresAt is the run's expiry;
  3. its resume, answered from the interrupts, which pauses again at two
     gathered calls;
  4. a resume of the first run again, which is no longer paused: it must get
     the same 4xx status and JSON body as without the Accept header, and no
     frame;
  5. the last resume, answered from the interrupts and the streamed
     arguments, which completes.
Every frame is validated with ag_ui.core's Event union (no field the
protocol does not name) and the stream against AG-UI's ordering rules.
Exits 0 when everything holds, else prints what failed and exits 1.
"""

import http.client
import json
import os
import sys
import urllib.parse
from datetime import datetime, timezone

from ag_ui.core import (
    PROTOCOL_VERSION,
    Event,
    EventType,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
)
from pydantic import BaseModel, TypeAdapter, ValidationError

EVENTS = TypeAdapter(Event)


class Failure(Exception):
    """A check that did not hold."""


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def no_extras(model, where):
    """Fails when model, or a model inside it, has a field its class does
    not declare (the models keep unknown fields rather than refuse them)."""
    check(not model.model_extra, f"{where}: fields AG-UI does not name: {model.model_extra}")
    for name in type(model).model_fields:
        value = getattr(model, name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, BaseModel):
                no_extras(item, f"{where}.{name}")


class Order:
    """AG-UI's ordering rules for the events of one run."""

    def __init__(self):
        self.events = []
        self.ended = False
        self.text, self.calls, self.steps = set(), set(), set()
        self.started_calls = set()

    def add(self, ev):
        n = len(self.events) + 1
        where = f"event {n} ({ev.type.value})"
        check(not self.ended, f"{where} follows the run's last event")
        t = ev.type
        if not self.events:
            check(t == EventType.RUN_STARTED, f"{where}: the first event must be RUN_STARTED")
        self.events.append(ev)
        if t == EventType.RUN_STARTED:
            check(n == 1, f"{where}: RUN_STARTED again")
            # AG-UI 1.0: the event that opens a run MUST declare the version.
            check(ev.protocol_version == PROTOCOL_VERSION,
                  f"{where}: RUN_STARTED declares protocolVersion {ev.protocol_version!r}, not {PROTOCOL_VERSION!r}")
        elif t == EventType.RUN_FINISHED:
            first = self.events[0]
            check((ev.thread_id, ev.run_id) == (first.thread_id, first.run_id),
                  f"{where}: threadId/runId {ev.thread_id}/{ev.run_id} differ from RUN_STARTED's")
            check(not (self.text or self.calls or self.steps),
                  f"{where}: still open: text {self.text}, tool calls {self.calls}, steps {self.steps}")
            self.ended = True
        elif t == EventType.RUN_ERROR:
            self.ended = True
        elif t == EventType.TEXT_MESSAGE_START:
            check(ev.message_id not in self.text, f"{where}: message {ev.message_id} is already open")
            self.text.add(ev.message_id)
        elif t == EventType.TEXT_MESSAGE_CONTENT:
            check(ev.message_id in self.text, f"{where}: message {ev.message_id} is not open")
        elif t == EventType.TEXT_MESSAGE_END:
            check(ev.message_id in self.text, f"{where}: message {ev.message_id} is not open")
            self.text.discard(ev.message_id)
        elif t == EventType.TOOL_CALL_START:
            check(ev.tool_call_id not in self.started_calls, f"{where}: tool call {ev.tool_call_id} started twice")
            self.calls.add(ev.tool_call_id)
            self.started_calls.add(ev.tool_call_id)
        elif t == EventType.TOOL_CALL_ARGS:
            check(ev.tool_call_id in self.calls, f"{where}: tool call {ev.tool_call_id} is not open")
        elif t == EventType.TOOL_CALL_END:
            check(ev.tool_call_id in self.calls, f"{where}: tool call {ev.tool_call_id} is not open")
            self.calls.discard(ev.tool_call_id)
        elif t == EventType.TOOL_CALL_RESULT:
            check(ev.tool_call_id in self.started_calls, f"{where}: result of tool call {ev.tool_call_id}, never started")
        elif t == EventType.STEP_STARTED:
            check(ev.step_name not in self.steps, f"{where}: step {ev.step_name} is already open")
            self.steps.add(ev.step_name)
        elif t == EventType.STEP_FINISHED:
            check(ev.step_name in self.steps, f"{where}: step {ev.step_name} is not open")
            self.steps.discard(ev.step_name)
        else:
            raise Failure(f"{where}: an event type monty does not emit")

    def end(self):
        check(self.ended, f"the stream ended after {len(self.events)} events without RUN_FINISHED or RUN_ERROR")
        return self.events


class Client:
    def __init__(self, base, key):
        u = urllib.parse.urlsplit(base)
        check(u.scheme == "http", f"{base}: an http:// URL is expected")
        self.host, self.port, self.key = u.hostname, u.port, key

    def post(self, path, body, accept=None):
        """POSTs body as JSON and returns the connection and the response."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["x-api-key"] = self.key
        if accept:
            headers["Accept"] = accept
        conn.request("POST", path, json.dumps(body), headers)
        return conn, conn.getresponse()

    def json(self, path, body, accept=None):
        """POSTs body and returns the status, the Content-Type and the body,
        which must be JSON."""
        conn, resp = self.post(path, body, accept)
        try:
            data = resp.read()
            try:
                decoded = json.loads(data)
            except ValueError:
                raise Failure(f"POST {path}: {resp.status} with a body that is not JSON: {data[:500]!r}")
            return resp.status, resp.getheader("Content-Type"), decoded
        finally:
            conn.close()

    def stream(self, path, body):
        """POSTs body asking for events, validates every frame and the order
        of the run's events, and returns the events."""
        conn, resp = self.post(path, body, "text/event-stream")
        try:
            if resp.status != 200:
                raise Failure(f"POST {path}: status {resp.status}: {resp.read()[:500]!r}")
            check(resp.getheader("Content-Type") == "text/event-stream",
                  f"POST {path}: Content-Type {resp.getheader('Content-Type')}")
            order, data = Order(), []
            while True:
                line = resp.readline().decode()
                if line == "":
                    check(not data, f"POST {path}: the stream ended inside a frame")
                    return order.end()
                line = line.rstrip("\r\n")
                if line:
                    check(line.startswith("data: "), f"POST {path}: a line that is not data: {line!r}")
                    data.append(line[len("data: "):])
                    continue
                payload, data = "\n".join(data), []
                try:
                    ev = EVENTS.validate_json(payload)
                except ValidationError as e:
                    raise Failure(f"POST {path}: a frame ag_ui.core refuses: {e}\n{payload}")
                no_extras(ev, f"POST {path}: {ev.type.value}")
                order.add(ev)
        finally:
            conn.close()


def finished(events, path):
    last = events[-1]
    check(isinstance(last, RunFinishedEvent), f"POST {path}: the run ended with {last.type.value}: {last}")
    return last


def text_of(events):
    return "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT)


def interrupts_of(events, path):
    """Checks the interrupt outcome of a paused run's stream against its
    answer, and returns the interrupts with each call's streamed
    arguments: [(interrupt, {"args": [...], "kwargs": {...}})]."""
    last = finished(events, path)
    answer = last.result
    check(answer["status"] == "paused", f"POST {path}: answer {answer}")
    outcome = last.outcome
    check(isinstance(outcome, RunFinishedInterruptOutcome),
          f"POST {path}: a paused run ends with outcome {outcome!r}, not an interrupt (a client reads it as success)")
    starts = {e.tool_call_id: e for e in events if e.type == EventType.TOOL_CALL_START}
    args = {}
    for e in events:
        if e.type == EventType.TOOL_CALL_ARGS:
            args[e.tool_call_id] = args.get(e.tool_call_id, "") + e.delta
    calls = {c["id"]: c for c in answer["calls"]}
    ids = [i.tool_call_id for i in outcome.interrupts]
    check(sorted(ids) == sorted(calls), f"POST {path}: interrupts for calls {ids}, the run waits on {sorted(calls)}")
    check(len({i.id for i in outcome.interrupts}) == len(ids), f"POST {path}: interrupt ids repeat")
    expires = datetime.fromisoformat(answer["run_expires"])
    out = []
    for i in outcome.interrupts:
        where = f"POST {path}: interrupt {i.id}"
        check(i.tool_call_id in starts, f"{where}: tool call {i.tool_call_id} is not one of the stream's")
        check(starts[i.tool_call_id].tool_call_name == calls[i.tool_call_id]["name"], f"{where}: the stream's tool is another")
        check(i.expires_at is not None, f"{where}: no expiresAt")
        at = datetime.fromisoformat(i.expires_at)
        check(at == expires, f"{where}: expiresAt {i.expires_at}, the run expires at {answer['run_expires']}")
        check(at > datetime.now(timezone.utc), f"{where}: expired already at {i.expires_at}")
        call_args = json.loads(args[i.tool_call_id])
        check(call_args["args"] == calls[i.tool_call_id]["args"], f"{where}: streamed arguments {call_args}, answer's {calls[i.tool_call_id]}")
        out.append((i, call_args))
    return answer, out


def main():
    if len(sys.argv) != 2:
        raise Failure("usage: agui_stream.py BASE_URL (MONTY_API_KEY in the environment)")
    c = Client(sys.argv[1], os.environ.get("MONTY_API_KEY", ""))

    # 1. A plain execution.
    events = c.stream("/exec", {"code": "print('hello')\nprint('world')\n6 * 7"})
    last = finished(events, "/exec")
    check(isinstance(last.outcome, RunFinishedSuccessOutcome), f"plain run: outcome {last.outcome!r}, want success")
    check(last.result["status"] == "completed" and last.result["result"] == 42, f"plain run: answer {last.result}")
    check(text_of(events) == "hello\nworld\n" == last.result["stdout"], f"plain run: text {text_of(events)!r}")
    check(last.thread_id == last.result["session_id"], "plain run: threadId is not the session id")
    print(f"ok: a plain run streamed in {len(events)} frames, ending with a success outcome")

    # 2. A run that pauses at a client tool.
    code = ("import asyncio\nprint('planning')\nplan = ask('what first?')\n"
            "a, b = await asyncio.gather(fetch('x'), fetch('y'))\nprint('got', plan, a, b)\n[plan, a, b]")
    tools = [{"name": "ask", "description": "asks the user"}, {"name": "fetch", "async": True}]
    events = c.stream("/exec", {"code": code, "tools": tools})
    first, interrupts = interrupts_of(events, "/exec")
    check(len(interrupts) == 1, f"paused run: {len(interrupts)} interrupts for the one sync call")
    print(f"ok: a run paused at {first['calls'][0]['name']} ended its stream with an interrupt for call {interrupts[0][0].tool_call_id}")

    # 3. Its resume, answered from the interrupt: it pauses again, at two calls.
    path = f"/runs/{first['run_id']}/resume"
    results = [{"id": i.tool_call_id, "value": "tea"} for i, _ in interrupts]
    events = c.stream(path, {"results": results})
    second, interrupts = interrupts_of(events, path)
    check(len(interrupts) == 2 and second["run_id"] != first["run_id"], f"second pause: {second}")
    print(f"ok: the resume paused again with {len(interrupts)} interrupts")

    # 4. The first run is not paused any more: a 4xx, streamed or not, and no frame.
    status, ctype, body = c.json(path, {"results": results})
    check(400 <= status < 500 and body["error"] == "run_not_paused", f"resuming a resumed run: {status} {body}")
    s_status, s_ctype, s_body = c.json(path, {"results": results}, accept="text/event-stream")
    check((s_status, s_ctype, s_body) == (status, ctype, body),
          f"streamed resume of a resumed run: {s_status} {s_ctype} {s_body}, as JSON: {status} {ctype} {body}")
    print(f"ok: resuming a resumed run is {status} {body['error']}, streamed or not")

    # 5. The last resume, each call answered with its argument in capitals.
    path = f"/runs/{second['run_id']}/resume"
    results = [{"id": i.tool_call_id, "value": a["args"][0].upper()} for i, a in interrupts]
    events = c.stream(path, {"results": results})
    last = finished(events, path)
    check(isinstance(last.outcome, RunFinishedSuccessOutcome), f"completed resume: outcome {last.outcome!r}, want success")
    check(last.result["status"] == "completed" and last.result["result"] == ["tea", "X", "Y"], f"completed resume: {last.result}")
    check(text_of(events) == "got tea X Y\n", f"completed resume: text {text_of(events)!r}")
    print("ok: the resume answered from the interrupts completed with a success outcome")


if __name__ == "__main__":
    try:
        main()
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
