"""Drives `monty mcp --connect … --approve …` over stdio through the official
MCP Python SDK (`mcp` on PyPI), whose elicitation_callback is the user.

usage: mcp_elicit.py MONTY_BINARY STORE_DIR EVERYTHING_COMMAND

The reference server-everything is connected as `everything`, its echo tool
waiting for approval. Checks:
  1. the user is asked (one question naming the call as the code makes it),
     approves, and the code goes on with the tool's real result;
  2. the user declines: the code gets PermissionError;
  3. resume_python cannot approve for the user: a run paused at an approval
     (the user did not answer within the time limit) refuses an approve
     answer, and naming the call alone asks the user again.
Prints "ok" when every check passed; exits non-zero with the reason on the
first failure.
"""

import sys

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BINARY, STORE, EVERYTHING = sys.argv[1], sys.argv[2], sys.argv[3]

CODE = """try:
    r = await everything.echo(message="approved")
except PermissionError as e:
    r = "refused: " + str(e)
print(r)"""

questions = []
answers = []


def check(cond, what, detail=None):
    if not cond:
        raise SystemExit(f"FAIL: {what}" + (f"\n{detail}" if detail is not None else ""))


def text_of(result):
    return "".join(c.text for c in result.content if c.type == "text")


async def elicit(context, params):
    questions.append(params.message)
    answer = answers.pop(0)
    if answer is None:  # the user looks away
        await anyio.sleep_forever()
    return answer


async def main():
    params = StdioServerParameters(command=BINARY, args=[
        "mcp", "--store", STORE, "--max-duration", "3s",
        "--connect", "everything=" + EVERYTHING, "--approve", "everything=echo"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit) as s:
            await s.initialize()

            # 1. Approved by the user.
            answers.append(types.ElicitResult(action="accept", content={"approve": True}))
            text = text_of(await s.call_tool("execute_python", {"code": CODE}))
            check("Echo: approved" in text, "the approved call ran", text)
            check(len(questions) == 1 and "everything.echo(message='approved')" in questions[0],
                  "the user was asked about the call as the code makes it", questions)

            # 2. Declined.
            answers.append(types.ElicitResult(action="decline"))
            text = text_of(await s.call_tool("execute_python", {"code": CODE}))
            check("refused: everything.echo was not approved" in text, "the declined call raised PermissionError", text)

            # 3. Not answered in time: paused; the model cannot approve.
            answers.append(None)
            res = await s.call_tool("execute_python", {"code": CODE})
            paused = res.structured_content
            check(paused and paused.get("paused"), "a run not answered in time stays paused", text_of(res))
            run_id, call = paused["run_id"], paused["paused"]["calls"][0]["id"]
            res = await s.call_tool("resume_python", {"run_id": run_id, "results": [{"id": call, "approve": True}]})
            check(res.is_error and "resume_python cannot answer it" in text_of(res), "resume_python cannot approve", text_of(res))
            answers.append(types.ElicitResult(action="accept", content={"approve": True}))
            text = text_of(await s.call_tool("resume_python", {"run_id": run_id, "results": [{"id": call}]}))
            check("Echo: approved" in text, "asked again, the user approved", text)
            check(len(questions) == 4, "four questions in all", questions)
    print("ok")


anyio.run(main)
