"""Drives `monty mcp` through the official MCP Python SDK (`mcp` on PyPI).

usage: mcp_stdio.py MONTY_BINARY STORE_DIR

Checks, as a client that nobody on this project wrote meets them:
  1. a paused execute_python result shows one run id and the caller's own
     session_id, both exactly what resume_python takes; the tools declare
     an outputSchema that the SDK validates every result against;
  2. errors of resume_python name resume_python, and the caller's ids only;
  3. a one-shot client that writes its requests and closes stdin gets every
     answer, and the server exits 0.
Exits non-zero with the reason on the first failure.
"""

import json
import subprocess
import sys

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from pydantic import TypeAdapter

BINARY, STORE = sys.argv[1], sys.argv[2]


def check(cond, what, detail=None):
    if not cond:
        raise SystemExit(f"FAIL: {what}" + (f"\n{detail}" if detail is not None else ""))


def text_of(result):
    return "".join(c.text for c in result.content if c.type == "text")


async def conversation():
    params = StdioServerParameters(command=BINARY, args=["mcp", "--store", STORE, "--thread", "mcp"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            for name in ("execute_python", "resume_python"):
                schema = tools[name].output_schema
                check(schema is not None, f"{name} declares an outputSchema")
                props = schema["properties"]
                check("resume_python" in props["run_id"]["description"], f"{name}'s outputSchema says run_id is what resume_python takes", props["run_id"])
                check("session_id" in props and "paused" in props, f"{name}'s outputSchema has session_id and paused")

            # 1. A named session: the ids shown are the ids resume_python takes.
            # (call_tool validates structured content against the outputSchema.)
            res = await s.call_tool("execute_python", {
                "code": "x = ask('q')\nprint('got', x)\nx",
                "session_id": "ct",
                "client_tools": [{"name": "ask"}],
            })
            check(not res.is_error, "the pausing call is no tool error", text_of(res))
            sc = res.structured_content
            check(sc["session_id"] == "ct", "structuredContent.session_id is the caller's own", sc)
            check(sc["run_id"] == sc["paused"]["run_id"], "one paused run has one run id", sc)
            check(sc["paused"]["session_id"] == "ct", "paused.session_id is the caller's own", sc)
            check(f'run_id "{sc["run_id"]}"' in text_of(res), "the text names the same run id", text_of(res))
            call = sc["paused"]["calls"][0]
            res = await s.call_tool("resume_python", {
                "run_id": sc["run_id"], "session_id": sc["session_id"],
                "results": [{"id": call["id"], "value": "tea"}],
            })
            check(not res.is_error, "resume_python with the top-level ids continues the run", text_of(res))
            check(text_of(res) == "got tea\n'tea'", "the resumed run finished", text_of(res))
            check("run_id" not in res.structured_content, "a completed run shows no run_id", res.structured_content)
            check(res.structured_content.get("session_id") == "ct", "the resumed result names the caller's session", res.structured_content)

            # The default session: no session_id is shown, and none is needed.
            res = await s.call_tool("execute_python", {"code": "await ask('a')", "client_tools": [{"name": "ask", "async": True}]})
            sc = res.structured_content
            check("session_id" not in sc and "session_id" not in sc["paused"], "the default session shows no session_id", sc)
            args = {"results": [{"id": sc["paused"]["calls"][0]["id"], "value": 5}]}
            if "session_id" in sc:
                args["session_id"] = sc["session_id"]
            res = await s.call_tool("resume_python", {"run_id": sc["run_id"], **args})
            check(not res.is_error and text_of(res) == "5", "the default session's run resumes with the ids shown", text_of(res))

            # 2. resume_python's errors name resume_python and the caller's ids.
            res = await s.call_tool("resume_python", {"run_id": "0123456789abcdef01234567", "session_id": "ct", "results": [{"id": "0", "value": 1}]})
            t = text_of(res)
            check(res.is_error, "resuming a run that is not paused is a tool error", t)
            check(t.startswith("agent: bad resume_python arguments:"), "the error names resume_python", t)
            check("execute_python arguments" not in t, "the error does not name execute_python", t)
            check('run_id "0123456789abcdef01234567"' in t and 'session_id "ct"' in t, "the error uses the caller's ids", t)
            check("mcp/ct" not in t, "the error does not show the store id", t)
            res = await s.call_tool("resume_python", {"results": []})
            check(res.is_error and text_of(res).startswith("agent: bad resume_python arguments:"), "a resume without run_id names resume_python", text_of(res))
            res = await s.call_tool("execute_python", {"cod": "1"})
            check(res.is_error and text_of(res).startswith("agent: bad execute_python arguments:"), "execute_python's errors still name it", text_of(res))


def one_shot():
    """3. Every answer reaches a client that closes stdin right after writing."""
    init = types.JSONRPCRequest(jsonrpc="2.0", id=1, method="initialize", params={
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "one-shot", "version": "1"}})
    initialized = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
    # The loop takes long enough that stdin is closed while it runs.
    calls = [types.JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/call", params={
        "name": "execute_python", "arguments": {"code": "n = 0\nfor i in range(200000):\n    n += i\nn"}})]
    calls.append(types.JSONRPCRequest(jsonrpc="2.0", id="three", method="tools/call", params={
        "name": "execute_python", "arguments": {"code": "print('hi')", "session_id": "s"}}))
    lines = [m.model_dump_json(by_alias=True, exclude_none=True) for m in [init, initialized, *calls]]
    proc = subprocess.run([BINARY, "mcp", "--store", STORE], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, timeout=120)
    check(proc.returncode == 0, "monty mcp exits 0 at the end of its input", proc.stderr)
    adapter = TypeAdapter(types.JSONRPCMessage)
    answers = {}
    for line in proc.stdout.splitlines():
        msg = adapter.validate_json(line)
        if isinstance(msg, types.JSONRPCResponse):
            answers[msg.id] = msg.result
    check(set(answers) == {1, 2, "three"}, "every request is answered (got ids %s)" % sorted(map(str, answers)), proc.stdout + proc.stderr)
    types.InitializeResult.model_validate(answers[1])
    r2 = types.CallToolResult.model_validate(answers[2])
    check(text_of(r2) == "19999900000", "the long call's answer is complete", answers[2])
    r3 = types.CallToolResult.model_validate(answers["three"])
    check(text_of(r3) == "hi", "the last call's answer is complete", answers["three"])


anyio.run(conversation)
one_shot()
print("ok")
