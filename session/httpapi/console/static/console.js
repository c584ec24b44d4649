// The run box of the monty console: it sends the code to the console's
// run endpoint (the same code path as POST /exec) and shows the
// server-sent events of the run as they come. Everything from the server
// is set as text (textContent), never as HTML.
"use strict";

document.addEventListener("DOMContentLoaded", function () {
  var form = document.getElementById("run-form");
  if (!form) {
    return;
  }
  var meta = document.querySelector('meta[name="csrf-token"]');
  var out = document.getElementById("run-output");
  var status = document.getElementById("run-status");
  var button = document.getElementById("run");

  function say(text) {
    status.textContent = text;
  }

  // finished shows the answer of the run: its status, value or exception,
  // and a link to its session.
  function finished(result) {
    status.textContent = "";
    var line = result.status;
    if (result.error) {
      line += " with " + result.error.type + ": " + result.error.message;
    } else if (result.status === "completed") {
      line += ": " + result.result_repr;
    } else if (result.status === "paused") {
      line += " (run " + result.run_id + "): see Approvals";
    }
    status.appendChild(document.createTextNode(line + " · session "));
    var a = document.createElement("a");
    a.href = "/ui/s/" + encodeURIComponent(result.session_id);
    a.textContent = result.session_id;
    a.id = "run-session";
    status.appendChild(a);
    if (result.error && result.stderr) {
      out.textContent += result.stderr;
    }
  }

  // frame handles one event of the stream.
  function frame(ev) {
    switch (ev.type) {
      case "TEXT_MESSAGE_CONTENT":
        out.textContent += ev.delta;
        break;
      case "RUN_FINISHED":
        finished(ev.result || {});
        break;
      case "RUN_ERROR":
        say("failed: " + (ev.code ? ev.code + ": " : "") + ev.message);
        break;
    }
  }

  async function run(code) {
    out.textContent = "";
    say("running…");
    button.disabled = true;
    try {
      var resp = await fetch(form.dataset.action, {
        method: "POST",
        credentials: "same-origin",
        headers: {
          "Content-Type": "application/json",
          "Accept": "text/event-stream",
          "X-CSRF-Token": meta ? meta.content : ""
        },
        body: JSON.stringify({ code: code })
      });
      var type = resp.headers.get("Content-Type") || "";
      if (!type.startsWith("text/event-stream")) {
        var text = await resp.text();
        try {
          var body = JSON.parse(text);
          say("refused (" + resp.status + "): " + body.error + ": " + body.message);
        } catch (e) {
          say("refused (" + resp.status + "): " + text.slice(0, 500));
        }
        return;
      }
      var reader = resp.body.getReader();
      var decoder = new TextDecoder();
      var buf = "";
      for (;;) {
        var chunk = await reader.read();
        if (chunk.done) {
          break;
        }
        buf += decoder.decode(chunk.value, { stream: true });
        var end;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          var block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          block.split("\n").forEach(function (line) {
            if (line.startsWith("data: ")) {
              frame(JSON.parse(line.slice(6)));
            }
          });
        }
      }
    } catch (e) {
      say("failed: " + e);
    } finally {
      button.disabled = false;
    }
  }

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    run(document.getElementById("code").value);
  });
});
