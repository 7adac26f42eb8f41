// Swagger UI on both specs. Every "Try it out" call goes to the origin this page came from (whatever the specs'
// `servers` say), in the session of the bar (X-Mock-Session: it replaces the operation's own field, which Swagger UI
// fills from the spec's examples), with X-Mock-Admin: 1 (a call that changes state needs it, docs/threat-model.md)
// and the admin token of the bar as Authorization: Bearer. Session and token live in this tab's sessionStorage,
// shared with the dashboard. The bar's field is the one place for the token: Swagger UI's own "Authorize" button
// and the padlocks that open it (the admin spec declares its bearer scheme) are left out, so a second token field
// cannot disagree with the first.
(function () {
  "use strict";
  var SESSION_KEY = "pix-mock.session";
  var TOKEN_KEY = "pix-mock.token";
  var sessionField = document.getElementById("session");
  var tokenField = document.getElementById("token");
  // A page under /__session/NAME/ acts in NAME: its URL says so, and a header naming another would be a 400.
  var pathSession = (window.location.pathname.match(/\/__session\/([^/]+)\//) || [])[1] || null;
  sessionField.value = pathSession || sessionStorage.getItem(SESSION_KEY) || "default";
  sessionField.readOnly = pathSession !== null;
  tokenField.value = sessionStorage.getItem(TOKEN_KEY) || "";
  sessionField.addEventListener("input", function () { sessionStorage.setItem(SESSION_KEY, sessionField.value.trim()); });
  tokenField.addEventListener("input", function () { sessionStorage.setItem(TOKEN_KEY, tokenField.value.trim()); });

  // This page is /__mock/docs, or /__session/NAME/__mock/docs: the public spec sits two levels up.
  var here = new URL(".", window.location.href);
  var publicSpec = new URL("../openapi.yaml", here).href;
  var adminSpec = new URL("openapi.yaml", here).href;

  function toThisServer(request) {
    var target = new URL(request.url, window.location.href);
    if (target.origin !== window.location.origin) {
      request.url = window.location.origin + target.pathname + target.search;
    }
    request.headers = request.headers || {};
    Object.keys(request.headers).forEach(function (key) {
      var name = key.toLowerCase();
      if (name === "x-mock-session" || name === "x-mock-admin") delete request.headers[key];
    });
    request.headers["X-Mock-Session"] = sessionField.value.trim() || "default";
    request.headers["X-Mock-Admin"] = "1";
    var token = tokenField.value.trim();
    if (token) request.headers.Authorization = "Bearer " + token;
    return request;
  }

  // Swagger UI's own token entry: the Authorize button above the operations, the padlock on each. Not rendered.
  function noSecondTokenField() {
    function nothing() { return function () { return null; }; }
    return { wrapComponents: { AuthorizeBtnContainer: nothing, authorizeOperationBtn: nothing } };
  }

  window.ui = SwaggerUIBundle({
    urls: [
      { url: publicSpec, name: "Public API (the interface)" },
      { url: adminSpec, name: "Test-control API (/__mock)" }
    ],
    "urls.primaryName": new URLSearchParams(window.location.search).get("spec") === "admin"
      ? "Test-control API (/__mock)" : "Public API (the interface)",
    dom_id: "#swagger-ui",
    deepLinking: true,
    displayRequestDuration: true,
    tryItOutEnabled: true,
    validatorUrl: null,
    requestInterceptor: toThisServer,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl, noSecondTokenField],
    layout: "StandaloneLayout"
  });
})();
