"""Drives the operator console of `monty serve` (/ui) in a real browser.

Run by session/httpapi's TestConsoleInBrowser, which starts the server with
an MCP server whose echo tool waits for approval and, through POST /exec,
pauses the sessions "approve-me", "deny-me" and "forge-me" at a call of it
and leaves a global holding a script tag in the session "hostile".

    browser.py URL API_KEY [MONTY_V1_SESSION]

With MONTY_V1_SESSION, a monty.v1 client's feed in that session waits on a
call of the echo tool too: the script approves it and sees it handed to the
feed.

Chromium is the system's (MONTY_TEST_CHROMIUM, Debian's package), driven by
Playwright for Python (scripts/browser.sh installs both): no browser build
is downloaded. The script exits non-zero, saying what failed, at the first
check that does not hold.
"""

import os
import sys

from playwright.sync_api import expect, sync_playwright

TIMEOUT_MS = 10_000


def main(base, key, v1_session=None):
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ["MONTY_TEST_CHROMIUM"],
            headless=True,
            chromium_sandbox=False,  # the tests may run as root
        )
        try:
            run(browser, base, key, v1_session)
        finally:
            browser.close()


def run(browser, base, key, v1_session):
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    problems = []
    # A script from session data would run here; so would a blocked inline
    # script or style be reported on the console.
    page.on("dialog", lambda d: problems.append("a dialog opened: " + d.message))
    page.on(
        "console",
        lambda m: problems.append("console " + m.type + ": " + m.text)
        if m.type in ("error", "warning")
        else None,
    )
    page.on("pageerror", lambda e: problems.append("page error: " + str(e)))
    page.on(
        "response",
        lambda r: problems.append("status of %d: %s" % (r.status, r.url))
        if r.status >= 400
        else None,
    )

    # Signed out: the console sends us to the sign-in page.
    page.goto(base + "/ui/")
    expect(page).to_have_url(base + "/ui/signin")
    page.fill("#key", "not-the-key")
    page.click("#signin")
    expect(page.locator("#error")).to_contain_text("not accepted")
    page.fill("#key", key)
    page.click("#signin")
    expect(page).to_have_url(base + "/ui/")
    expect(page.locator("#sessions")).to_contain_text("approve-me")

    # The approvals created through POST /exec: approve one.
    page.click("text=Approvals")
    row = page.locator('tr.approval[data-session="approve-me"]')
    expect(row.locator("code.tool")).to_have_text("everything.echo")
    expect(row.locator("code.args")).to_contain_text('"message":"hello <b>console</b>"')
    row.locator("button.approve").click()
    expect(page.locator("#status")).to_have_text("The run completed.")
    expect(page.locator("#result")).to_have_text("'echo: hello <b>console</b>'")
    expect(page.locator("#result b")).to_have_count(0)

    # A monty.v1 client's feed waits on its call: approved here, the
    # decision is handed to the feed, which makes the call and goes on.
    if v1_session:
        page.goto(base + "/ui/approvals")
        row = page.locator('tr.approval[data-session="%s"]' % v1_session)
        expect(row.locator("code.tool")).to_have_text("everything.echo")
        expect(row.locator("code.args")).to_contain_text('"message":"from monty.v1"')
        row.locator("button.approve").click()
        expect(page.locator("#status")).to_contain_text("handed to the monty.v1 client's feed")
        page.goto(base + "/ui/approvals")
        expect(page.locator('tr.approval[data-session="%s"]' % v1_session)).to_have_count(0)

    # Deny another: PermissionError in the code.
    page.goto(base + "/ui/approvals")
    expect(page.locator('tr.approval[data-session="approve-me"]')).to_have_count(0)
    page.locator('tr.approval[data-session="deny-me"] button.deny').click()
    expect(page.locator("#exception")).to_contain_text("PermissionError: everything.echo was not approved")

    # A forged CSRF token is refused, and the approval stays.
    page.goto(base + "/ui/approvals")
    forged = page.locator('tr.approval[data-session="forge-me"]')
    forged.locator('input[name="csrf"]').evaluate("e => e.value = 'forged' + e.value")
    with page.expect_response(lambda r: "/decide" in r.url) as answer:
        forged.locator("button.approve").click()
    if answer.value.status != 403:
        sys.exit("a forged CSRF token got %d, want 403" % answer.value.status)
    expect(page.locator("#error")).to_contain_text("CSRF token")
    page.goto(base + "/ui/approvals")
    expect(page.locator('tr.approval[data-session="forge-me"]')).to_have_count(1)

    # A script tag in a global stays text.
    page.goto(base + "/ui/s/hostile")
    expect(page.locator("#globals")).to_contain_text("<script>document.title = 'pwned'</script>")
    expect(page.locator("#globals script")).to_have_count(0)
    if page.title() == "pwned":
        sys.exit("a global's script ran")

    # The run box streams a run's output, as text.
    page.fill("#code", "print('<i>one</i>')\nprint('two')\nx = '<b>' + 'bold'\nx")
    page.click("#run")
    expect(page.locator("#run-status")).to_contain_text("completed: '<b>bold'")
    expect(page.locator("#run-output")).to_have_text("<i>one</i>\ntwo\n")
    expect(page.locator("#run-output i")).to_have_count(0)
    expect(page.locator("#run-session")).to_have_text("hostile")
    page.fill("#code", "raise ValueError('<img src=x onerror=alert(1)>')")
    page.click("#run")
    expect(page.locator("#run-status")).to_contain_text("ValueError: <img src=x onerror=alert(1)>")
    expect(page.locator("#run-status img")).to_have_count(0)

    # Signing out ends the sign-in.
    page.click("#signout")
    expect(page).to_have_url(base + "/ui/signin")
    page.goto(base + "/ui/approvals")
    expect(page).to_have_url(base + "/ui/signin")

    # The 401 of the wrong key and the 403 of the forged token are reported
    # as failed loads: those two are expected.
    unexpected = [
        p for p in problems
        if "status of 401" not in p and "status of 403" not in p
    ]
    if unexpected:
        sys.exit("unexpected in the browser:\n" + "\n".join(unexpected))
    print("ok")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: browser.py URL API_KEY [MONTY_V1_SESSION]")
    main(*sys.argv[1:])
