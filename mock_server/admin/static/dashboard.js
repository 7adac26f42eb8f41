// The dashboard: plain DOM, no framework, and no call but the admin API's (/__mock/...) and the public spec it lists.
//
// Every call is relative to this page (/__mock/ui, or /__session/NAME/__mock/ui), carries the chosen session as
// X-Mock-Session (not on a /__session/NAME/ page, whose URL names it), X-Mock-Admin (a call that changes state needs
// it: a page on another origin cannot send it, docs/threat-model.md) and, once typed, the admin token as
// Authorization: Bearer. Session and token are kept in this tab's sessionStorage (shared with /__mock/docs).
(function () {
  "use strict";

  var SESSION_KEY = "pix-mock.session";
  var TOKEN_KEY = "pix-mock.token";
  var KNOWN_KEY = "pix-mock.sessions";
  var POLL_MS = 1000;
  var LOCAL_OFFSET_MIN = -180; // the interface's -03:00
  var DAY_MIN = 1440;
  var TERMINAL = { paid: true, canceled: true };

  var adminRoot = new URL(".", window.location.href); // .../__mock/
  var pathSession = (window.location.pathname.match(/\/__session\/([^/]+)\//) || [])[1] || null;
  var shown = {}; // panel -> the JSON last drawn: redraw only on change, so typing is never interrupted
  var clockNow = null; // the session clock's last reading, as the server wrote it (-03:00)

  function $(id) { return document.getElementById(id); }

  function el(tag, attributes, children) {
    var node = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (name) {
      var value = attributes[name];
      if (value === null || value === undefined || value === false) return;
      if (name === "text") node.textContent = value;
      else if (name.slice(0, 2) === "on") node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : value);
    });
    (children || []).forEach(function (child) {
      if (child !== null && child !== undefined) node.append(child);
    });
    return node;
  }

  function session() { return pathSession || sessionStorage.getItem(SESSION_KEY) || "default"; }
  function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

  function say(text, kind) {
    var box = $("message");
    box.textContent = text;
    box.className = kind || "info";
    box.hidden = !text;
  }

  // One admin call. Resolves to the parsed body (null for 204); rejects with {status, code, message}.
  function api(method, path, body) {
    var headers = { Accept: "application/json", "X-Mock-Admin": "1" };
    if (!pathSession) headers["X-Mock-Session"] = session();
    if (token()) headers.Authorization = "Bearer " + token();
    var init = { method: method, headers: headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(new URL(path, adminRoot), init).then(function (response) {
      if (response.status === 204) return null;
      return response.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (ignored) { data = { message: text }; }
        if (response.ok) return data;
        var error = { status: response.status, code: (data && data.code) || "", message: (data && data.message) || text };
        if (data && data.details) {
          error.message += " " + data.details.map(function (d) { return d.field + ": " + d.message; }).join("; ");
        }
        throw error;
      });
    });
  }

  function failed(error) {
    if (error && error.status === 401) {
      say("This server runs with --admin-token: type the token in the bar.", "error");
      $("token").focus();
      return;
    }
    var text = error && error.status ? error.status + " " + error.code + ": " + error.message : String(error);
    say(text, "error");
  }

  // ---- money and time: Brazil's way (R$ 5.000,00; 21/11/2026 21:30:00), whatever the browser's own locale -------
  // Native date and time pickers follow the browser's locale (12-hour, month first in en-US): the fields are text
  // in dd/mm/aaaa hh:mm:ss and hh:mm instead, read here.
  var BRL = new Intl.NumberFormat("pt-BR", { style: "currency", currency: "BRL" });
  function reais(value) { return BRL.format(Number(value)); }
  function cents(value) { return BRL.format(Number(value) / 100); }

  // An amount as typed: "1.234,56", "1234,56", "100" (pt-BR: '.' groups thousands, ',' is the decimal comma), or
  // "100.50" (a numeric pad's decimal point: a '.' followed by one or two digits). NaN for anything else.
  function parseReais(text) {
    var typed = String(text).replace(/^\s*R\$/, "").replace(/\s/g, "");
    if (/^\d{1,3}(\.\d{3})+(,\d{1,2})?$/.test(typed) || /^\d+(,\d{1,2})?$/.test(typed)) {
      return Number(typed.replace(/\./g, "").replace(",", "."));
    }
    return /^\d+\.\d{1,2}$/.test(typed) ? Number(typed) : NaN;
  }
  var AMOUNT_HINT = "an amount in reais, such as 1.500,00 or 100,50";

  // "2026-11-21T10:00:00.000-03:00" (the clock as the server writes it, in -03:00) -> "21/11/2026 10:00:00".
  function brDateTime(iso) {
    return iso.slice(8, 10) + "/" + iso.slice(5, 7) + "/" + iso.slice(0, 4) + " " + iso.slice(11, 19);
  }

  // "21/11/2026 10:00:00" or "21/11/2026 10:00" -> "2026-11-21T10:00:00-03:00", or null when it is not that.
  function isoFromBr(text) {
    var m = /^\s*(\d{2})\/(\d{2})\/(\d{4})\s+(\d{2}):(\d{2})(?::(\d{2}))?\s*$/.exec(text);
    if (!m) return null;
    return m[3] + "-" + m[2] + "-" + m[1] + "T" + m[4] + ":" + m[5] + ":" + (m[6] || "00") + "-03:00";
  }

  // "06:00:00-03:00" or "09:00:00Z" -> minutes after midnight in -03:00.
  function localMinutes(startTime) {
    var m = /^(\d\d):(\d\d):(\d\d)(?:\.\d+)?(Z|([+-])(\d\d):(\d\d))$/.exec(startTime);
    if (!m) return 0;
    var minutes = Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) / 60;
    var offset = m[4] === "Z" ? 0 : (m[5] === "-" ? -1 : 1) * (Number(m[6]) * 60 + Number(m[7]));
    return (((minutes - offset + LOCAL_OFFSET_MIN) % DAY_MIN) + DAY_MIN) % DAY_MIN;
  }

  function hhmm(minutes) {
    var whole = Math.round(minutes) % DAY_MIN;
    return String(Math.floor(whole / 60)).padStart(2, "0") + ":" + String(whole % 60).padStart(2, "0");
  }

  // Windows -> segments [from, to) over one day: each runs until the next start, the last wraps past midnight.
  function segments(windows) {
    var sorted = windows.map(function (w) { return { from: localMinutes(w.start_time), window: w }; })
      .sort(function (a, b) { return a.from - b.from; });
    var out = [];
    sorted.forEach(function (item, index) {
      var next = index + 1 < sorted.length ? sorted[index + 1].from : sorted[0].from + DAY_MIN;
      if (next <= DAY_MIN) {
        out.push({ from: item.from, to: next, window: item.window, index: index });
      } else {
        out.push({ from: item.from, to: DAY_MIN, window: item.window, index: index });
        if (next - DAY_MIN > 0) out.push({ from: 0, to: next - DAY_MIN, window: item.window, index: index });
      }
    });
    return out;
  }

  // ---- session, token, scenarios --------------------------------------------------------------------------------
  function rememberSession(name) {
    var known = JSON.parse(sessionStorage.getItem(KNOWN_KEY) || "[\"default\"]");
    if (known.indexOf(name) < 0) known.push(name);
    sessionStorage.setItem(KNOWN_KEY, JSON.stringify(known));
    return known;
  }

  function drawKnownSessions(extra) {
    var names = rememberSession(session()).concat(extra || []);
    var list = $("known-sessions");
    list.replaceChildren.apply(list, Array.from(new Set(names)).sort().map(function (n) {
      return el("option", { value: n });
    }));
  }

  function loadSessions() {
    // GET /__mock/sessions lists the server's sessions where the server has it; otherwise this tab's own list.
    return api("GET", "sessions").then(function (data) {
      drawKnownSessions(((data && data.sessions) || []).map(function (s) { return s.name; }));
    }, function () { drawKnownSessions([]); });
  }

  function switchSession(name) {
    if (pathSession) {
      window.location.href = window.location.href.replace("/__session/" + pathSession + "/", "/__session/" + name + "/");
      return;
    }
    sessionStorage.setItem(SESSION_KEY, name);
    shown = {};
    drawKnownSessions([]);
    say("Session " + name + ".", "info");
    refreshAll();
  }

  function loadScenarios() {
    return api("GET", "scenarios").then(function (data) {
      var select = $("scenario");
      select.replaceChildren.apply(select, data.scenarios.map(function (s) {
        return el("option", { value: s.name, text: s.name, title: s.description, selected: s.name === data.active });
      }));
    });
  }

  // ---- clock ----------------------------------------------------------------------------------------------------
  function drawClock(clock) {
    clockNow = clock.now;
    $("clock-now").textContent = clock.now;
    var mode = $("clock-mode");
    mode.textContent = clock.frozen ? "frozen" : "running";
    mode.className = "badge " + (clock.frozen ? "frozen" : "running");
    var field = $("clock-at");
    if (document.activeElement !== field) field.value = brDateTime(clock.now);
  }

  function loadClock() { return api("GET", "clock").then(drawClock); }

  function setClock(now) {
    return api("PUT", "clock", { now: now }).then(function (clock) {
      drawClock(clock);
      shown.accounts = null; // the evaluation boxes use the clock's date
      say(clock.frozen ? "Clock frozen at " + clock.now + "." : "Clock back to real time.", "info");
    }, failed);
  }

  function shiftClock(seconds) {
    if (!clockNow) return;
    var at = new Date(Date.parse(clockNow) + seconds * 1000 + LOCAL_OFFSET_MIN * 60000);
    setClock(at.toISOString().slice(0, 19) + "-03:00");
  }

  // ---- events ---------------------------------------------------------------------------------------------------
  function statusBadge(event) {
    var partial = event.status === "pending_conciliation" && Number(event.total_paid_amount) > 0;
    return el("span", { "class": "badge " + event.status + (partial ? " partial" : ""),
      text: partial ? "partially paid" : event.status.replace("_", " ") });
  }

  function eventAction(event, action, body) {
    return api("POST", "events/" + event.extraordinary_event_conciliation_key + "/" + action, body).then(function (e) {
      say("Event " + e.extraordinary_event_conciliation_key.slice(0, 8) + " is " + e.status.replace("_", " ") +
        " (paid " + reais(e.total_paid_amount) + " of " + reais(e.total_expected_amount) + ").", "info");
      return loadState();
    }, failed);
  }

  function eventRow(event) {
    var terminal = TERMINAL[event.status] === true;
    var amount = el("input", { type: "text", inputmode: "decimal", placeholder: "0,00", "class": "amount",
      "aria-label": "partial amount in R$", title: AMOUNT_HINT, disabled: terminal });
    var key = event.extraordinary_event_conciliation_key;
    return el("tr", { "data-key": key, "data-status": event.status }, [
      el("td", { "class": "key", title: key, text: key.slice(0, 8) }),
      el("td", { text: event.amortization_type }),
      el("td", { "class": "num", text: reais(event.total_expected_amount) }),
      el("td", { "class": "num", text: reais(event.total_discount_amount || 0) }),
      el("td", { "class": "num", text: reais(event.total_paid_amount || 0) }),
      el("td", {}, [statusBadge(event)]),
      el("td", { "class": "actions" }, [
        el("button", { type: "button", "class": "pay", text: "Pay", disabled: terminal,
          title: "Pay the open balance", onclick: function () { eventAction(event, "pay"); } }),
        amount,
        el("button", { type: "button", "class": "pay-part", text: "Pay part", disabled: terminal,
          onclick: function () {
            if (!amount.value) { say("Type the amount to pay first.", "error"); amount.focus(); return; }
            var value = parseReais(amount.value);
            if (!(value > 0)) { say("Type " + AMOUNT_HINT + ".", "error"); amount.focus(); return; }
            eventAction(event, "pay", { amount: value });
          } }),
        el("button", { type: "button", "class": "cancel", text: "Cancel", disabled: terminal,
          onclick: function () { eventAction(event, "cancel"); } })
      ])
    ]);
  }

  function drawEvents(events) {
    var body = $("events").tBodies[0];
    if (!events.length) {
      body.replaceChildren(el("tr", {}, [el("td", { colspan: "7", "class": "muted", text: "No events in this session." })]));
      return;
    }
    body.replaceChildren.apply(body, events.map(eventRow));
  }

  // ---- accounts: timelines and the window rule ------------------------------------------------------------------
  function timeline(label, windows, source) {
    var track = el("div", { "class": "track" });
    for (var hour = 0; hour <= 24; hour += 3) {
      track.append(el("span", { "class": "tick", style: "left:" + (hour / 24 * 100) + "%", text: hour === 24 ? "" : String(hour).padStart(2, "0") }));
    }
    segments(windows).forEach(function (s) {
      track.append(el("div", {
        "class": "segment shade" + (s.index % 4),
        style: "left:" + (s.from / DAY_MIN * 100) + "%;width:" + ((s.to - s.from) / DAY_MIN * 100) + "%",
        title: "from " + hhmm(localMinutes(s.window.start_time)) + " (" + s.window.start_time + "): " + cents(s.window.amount),
        "data-start": s.window.start_time
      }, [el("span", { text: cents(s.window.amount) })]));
    });
    track.append(el("div", { "class": "marker", hidden: true }));
    return el("div", { "class": "timeline", "data-mode": label, "data-source": source }, [
      el("span", { "class": "mode", text: (source === "recipient_list" ? "list · " : "") + label }), track
    ]);
  }

  function evaluateBox(account, card) {
    var modes = Object.keys(account.limit.pix);
    var mode = el("select", { name: "mode", "aria-label": "mode" }, modes.map(function (m) { return el("option", { value: m, text: m }); }));
    var amount = el("input", { name: "amount", type: "text", inputmode: "decimal", value: "1.000,00", required: true,
      "aria-label": "amount in R$", title: AMOUNT_HINT, size: "10" });
    var time = el("input", { name: "time", type: "text", inputmode: "numeric", value: "21:30", required: true,
      pattern: "([01][0-9]|2[0-3]):[0-5][0-9]", placeholder: "hh:mm", size: "5", "aria-label": "time of day",
      title: "a time of day in 24 hours, -03:00, such as 21:30" });
    var document_ = el("input", { name: "document_number", placeholder: "recipient CPF/CNPJ (optional)", size: "22", "aria-label": "recipient document" });
    var verdict = el("output", { "class": "verdict" });
    var form = el("form", { "class": "evaluate row" }, [
      el("span", { text: "What would this PIX be capped at?" }), mode, amount,
      el("span", { text: "at" }), time, document_, el("button", { type: "submit", text: "Evaluate" }), verdict
    ]);
    form.addEventListener("submit", function (submitted) {
      submitted.preventDefault();
      var day = (clockNow || new Date().toISOString()).slice(0, 10);
      var reaisTyped = parseReais(amount.value);
      if (isNaN(reaisTyped)) {
        verdict.className = "verdict blocked";
        verdict.textContent = "type " + AMOUNT_HINT;
        return;
      }
      var body = { mode: mode.value, amount: Math.round(reaisTyped * 100), at: day + "T" + time.value + ":00-03:00" };
      if (document_.value.trim()) body.document_number = document_.value.trim();
      api("POST", "accounts/" + encodeURIComponent(account.account_id) + "/limits/evaluate", body).then(function (v) {
        verdict.className = "verdict " + (v.allowed ? "allowed" : "blocked");
        verdict.textContent = "capped at " + cents(v.limit_amount) + " (window from " + hhmm(localMinutes(v.window.start_time)) +
          ", " + v.source.replace("_", " ") + "): " + cents(body.amount) + (v.allowed ? " allowed" : " blocked");
        card.querySelectorAll(".marker").forEach(function (marker) { marker.hidden = true; });
        card.querySelectorAll(".timeline").forEach(function (line) {
          if (line.dataset.mode === body.mode && line.dataset.source === v.source) {
            var marker = line.querySelector(".marker");
            marker.style.left = (localMinutes(time.value + ":00-03:00") / DAY_MIN * 100) + "%";
            marker.hidden = false;
          }
        });
      }, function (error) {
        verdict.className = "verdict blocked";
        verdict.textContent = error.status ? error.code + ": " + error.message : String(error);
      });
    });
    return form;
  }

  function accountCard(account) {
    var card = el("article", { "class": "account", "data-account": account.account_id }, [
      el("h3", {}, [account.account_id, el("span", { "class": "muted", text: " registered " + account.registration_date })])
    ]);
    Object.keys(account.limit.pix).forEach(function (mode) { card.append(timeline(mode, account.limit.pix[mode], "account")); });
    var list = account.recipient_list;
    if (list) {
      Object.keys(list.limit.pix).forEach(function (mode) { card.append(timeline(mode, list.limit.pix[mode], "recipient_list")); });
      var recipients = (list.recipients || []).map(function (r) { return r.document_number; });
      card.append(el("p", { "class": "muted", text: "Recipient list: " + (recipients.length ? recipients.join(", ") : "empty") }));
    }
    card.append(evaluateBox(account, card));
    return card;
  }

  function drawAccounts(accounts) {
    var box = $("accounts");
    if (!accounts.length) { box.replaceChildren(el("p", { "class": "muted", text: "No accounts in this session." })); return; }
    box.replaceChildren.apply(box, accounts.map(accountCard));
  }

  function loadState() {
    return api("GET", "state").then(function (state) {
      var events = JSON.stringify(state.events);
      if (shown.events !== events) { shown.events = events; drawEvents(state.events); }
      var accounts = JSON.stringify(state.accounts.map(function (a) { return [a.account_id, a.limit, a.recipient_list]; }));
      if (shown.accounts !== accounts) { shown.accounts = accounts; drawAccounts(state.accounts); }
    });
  }

  // ---- journal --------------------------------------------------------------------------------------------------
  function drawJournal(entries) {
    $("journal-count").textContent = entries.length + (entries.length === 1 ? " request" : " requests");
    var body = $("journal").tBodies[0];
    var rows = entries.slice().reverse().slice(0, 200).map(function (e) {
      return el("tr", { "class": e.status === null || e.status >= 400 ? "failed" : "",
        title: "request: " + JSON.stringify(e.request_body) + "\nresponse: " + JSON.stringify(e.response_body) }, [
        el("td", { text: e.received_at.slice(11, 23) }), el("td", { text: e.method }),
        el("td", { "class": "path", text: e.path }), el("td", { text: e.operation_id }),
        el("td", { "class": "num", text: e.status === null ? "reset" : String(e.status) }),  // null: no answer
        clientCell(e.client_certificate), traceCell(e.trace_id, e.span_id)
      ]);
    });
    if (!rows.length) rows = [el("tr", {}, [el("td", { colspan: "7", "class": "muted", text: "No public API calls in this session yet." })])];
    body.replaceChildren.apply(body, rows);
  }

  // The call's trace (its traceparent's, or the mock's span's): the first 8 digits shown, the whole ids on hover,
  // to look the trace up in a tracing UI or filter the journal with ?trace_id=.
  function traceCell(traceId, spanId) {
    if (!traceId) return el("td", { "class": "trace muted", text: "none" });
    return el("td", { "class": "trace", title: "trace " + traceId + (spanId ? "\nmock's span " + spanId : ""),
      text: traceId.slice(0, 8) });
  }

  // The TLS client certificate a call came with (mutual TLS, or a proxy's header): its CNPJ, the rest on hover.
  function clientCell(cert) {
    if (!cert) return el("td", { "class": "client muted", text: "none" });
    return el("td", { "class": "client",
      title: cert.subject + "\nissuer: " + cert.issuer + "\nserial: " + cert.serial_number +
        "\nSHA-256: " + cert.fingerprint_sha256 + "\nvalid: " + cert.not_before + " to " + cert.not_after,
      text: cert.cnpj ? "CNPJ " + cert.cnpj : (cert.organization || "no CNPJ") });
  }

  function loadJournal() {
    return api("GET", "requests").then(function (data) {
      var text = JSON.stringify(data.requests);
      if (shown.journal !== text) { shown.journal = text; drawJournal(data.requests); }
    });
  }

  // ---- shadow mode: where the backend and the mock answered differently -----------------------------------------
  function drawDivergences(data) {
    $("divergences-panel").hidden = data.backend === null;  // not in shadow mode: nothing to show
    $("divergences-backend").textContent = data.backend === null ? "" :
      "backend " + data.backend + ", " + data.divergences.length +
      (data.divergences.length === 1 ? " divergence" : " divergences");
    var body = $("divergences").tBodies[0];
    var rows = data.divergences.slice().reverse().slice(0, 200).map(function (d) {
      return el("tr", { "class": "failed", title: "request: " + JSON.stringify(d.request_body) +
        "\nmock: " + JSON.stringify(d.mock.body) + "\nbackend: " + JSON.stringify(d.backend.body) }, [
        el("td", { text: d.received_at.slice(11, 23) }), el("td", { text: d.operation_id }),
        el("td", { "class": "path", text: d.method + " " + d.path }),
        el("td", { "class": "num", text: String(d.mock.status) }),
        el("td", { "class": "num", text: d.backend.status === null ? "none" : String(d.backend.status) }),
        el("td", { text: d.differences.join("; ") })
      ]);
    });
    if (!rows.length) rows = [el("tr", {}, [el("td", { colspan: "6", "class": "muted", text: "No divergence so far." })])];
    body.replaceChildren.apply(body, rows);
  }

  function loadDivergences() {
    return api("GET", "divergences").then(function (data) {
      var text = JSON.stringify(data);
      if (shown.divergences !== text) { shown.divergences = text; drawDivergences(data); }
    });
  }

  // ---- faults ---------------------------------------------------------------------------------------------------
  // What a fault answers, by kind (admin spec, POST /__mock/faults).
  function faultAnswer(f) {
    if (f.kind === "reset") return "reset (no answer)";
    if (f.kind === "malformed") return f.status + " malformed";
    if (f.kind === "slow_body") return (f.status === null ? "real answer" : String(f.status)) + ", slow body";
    if (f.kind === "quota") return "429 past " + f.limit + " per " + f.window_s + " s (" + f.window_calls + " this window)";
    return f.status === null ? "(delay only)" : String(f.status);
  }

  // A fault that fires by chance, or a quota: its odds, its seed (to replay a run) and what it did so far.
  function faultChance(f) {
    if (f.seed === undefined) return "always";
    var odds = "p " + f.probability + ", seed " + f.seed + (f.jitter_ms ? ", jitter " + f.jitter_ms + " ms" : "");
    return odds + ": fired " + f.firings + " of " + f.matches;
  }

  function drawFaults(faults) {
    var body = $("faults").tBodies[0];
    var rows = faults.map(function (f) {
      return el("tr", f.match ? { title: "only calls matching " + JSON.stringify(f.match) } : {}, [
        el("td", { text: f.fault_id + (f.match ? " (match)" : "") }), el("td", { text: f.operation_id }),
        el("td", { text: faultAnswer(f) }),
        el("td", { text: f.delay_ms + " ms" }), el("td", { text: f.times === null ? "∞" : String(f.times) }),
        el("td", { text: faultChance(f) })]);
    });
    if (!rows.length) rows = [el("tr", {}, [el("td", { colspan: "6", "class": "muted", text: "No faults armed." })])];
    body.replaceChildren.apply(body, rows);
  }

  function loadFaults() {
    return api("GET", "faults").then(function (data) {
      var text = JSON.stringify(data.faults);
      if (shown.faults !== text) { shown.faults = text; drawFaults(data.faults); }
    });
  }

  function loadOperations() {
    // The public spec (GET /openapi.json, listed in the admin spec) names the operations a fault can hit.
    return fetch(new URL("../openapi.json", adminRoot)).then(function (r) { return r.json(); }).then(function (spec) {
      var ids = [];
      Object.keys(spec.paths).forEach(function (path) {
        Object.keys(spec.paths[path]).forEach(function (method) {
          var op = spec.paths[path][method];
          if (op && op.operationId) ids.push(op.operationId);
        });
      });
      var select = $("fault-operation");
      select.replaceChildren.apply(select, ids.map(function (id) { return el("option", { value: id, text: id }); }));
    });
  }

  // ---- wiring ---------------------------------------------------------------------------------------------------
  function refreshAll() {
    return Promise.all([loadClock(), loadState(), loadJournal(), loadFaults(), loadScenarios(), loadDivergences()]).then(function () {
      if ($("message").className === "error" && /admin-token/.test($("message").textContent)) say("");
    }, failed);
  }

  function poll() {
    var work = [loadClock(), loadFaults(), loadState(), loadDivergences()];
    if ($("journal-live").checked) work.push(loadJournal());
    Promise.all(work).catch(function (error) { if (error && error.status === 401) failed(error); })
      .then(function () { window.setTimeout(poll, POLL_MS); });
  }

  $("session").value = pathSession || (sessionStorage.getItem(SESSION_KEY) || "");
  if (pathSession) { $("session").title = "This page's URL names the session (/__session/" + pathSession + "/)"; }
  $("token").value = token();

  $("session-form").addEventListener("submit", function (e) {
    e.preventDefault();
    var name = $("session").value.trim() || "default";
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) { say("A session name is 1-64 of A-Za-z0-9._-", "error"); return; }
    switchSession(name);
  });
  $("token-form").addEventListener("submit", function (e) {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    say("");
    shown = {};
    refreshAll();
  });
  $("reset-form").addEventListener("submit", function (e) {
    e.preventDefault();
    api("POST", "reset", { scenario: $("scenario").value }).then(function (status) {
      shown = {};
      say("Session " + session() + " reset to scenario " + status.scenario + ".", "info");
      return refreshAll();
    }, failed);
  });
  $("clock-form").addEventListener("submit", function (e) {
    e.preventDefault();
    var at = isoFromBr($("clock-at").value);
    if (at === null) { say("Type the time as dd/mm/aaaa hh:mm:ss, e.g. 21/11/2026 21:30:00 (-03:00).", "error"); return; }
    setClock(at);
  });
  document.querySelectorAll("#clock-form [data-shift]").forEach(function (button) {
    button.addEventListener("click", function () { shiftClock(Number(button.dataset.shift)); });
  });
  $("clock-real").addEventListener("click", function () { setClock(null); });
  $("fault-form").addEventListener("submit", function (e) {
    e.preventDefault();
    var body = { operation_id: $("fault-operation").value, delay_ms: Number($("fault-delay").value || 0),
      times: $("fault-times").value ? Number($("fault-times").value) : null };
    if ($("fault-status").value) body.status = Number($("fault-status").value);
    if ($("fault-probability").value) body.probability = Number($("fault-probability").value);
    if ($("fault-seed").value) body.seed = Number($("fault-seed").value);
    api("POST", "faults", body).then(function (fault) {
      say("Fault " + fault.fault_id + " armed on " + fault.operation_id + ".", "info");
      return loadFaults();
    }, failed);
  });
  $("faults-clear").addEventListener("click", function () {
    api("DELETE", "faults").then(function () { say("Faults cleared.", "info"); return loadFaults(); }, failed);
  });
  $("journal-clear").addEventListener("click", function () {
    api("DELETE", "requests").then(function () { return loadJournal(); }, failed);
  });

  $("divergences-clear").addEventListener("click", function () {
    api("DELETE", "divergences").then(function () { return loadDivergences(); }, failed);
  });

  loadOperations().catch(failed);
  loadSessions();
  refreshAll().then(function () { window.setTimeout(poll, POLL_MS); });
})();
