// Following a site's live stream (config/asgi.py: server-sent events, one message a tick of
// ingest, a count of the last five minutes' visitors), for the dashboard's counter and the
// realtime view alike: polling every POLL ms when the stream fails three times or the
// browser has none; closed while the tab is hidden; ended for good when the stream says
// access was revoked.
(function () {
  "use strict";
  var POLL = 10000;
  window.tallyLive = function (live, handlers) {
    // handlers.tick(count): a count came over the stream; handlers.poll(): instead of it.
    var source = null, poller = null, failures = 0, ended = false;
    function stop() {
      if (source) { source.close(); source = null; }
      if (poller) { clearInterval(poller); poller = null; }
      live.classList.remove("on");
    }
    function startPolling() { if (!poller) { handlers.poll(); poller = setInterval(handlers.poll, POLL); } }
    function start() {
      if (ended) return;
      if (!window.EventSource || failures >= 3) { startPolling(); return; }
      source = new EventSource(live.getAttribute("data-live-url"), { withCredentials: true });
      source.onmessage = function (e) { failures = 0; handlers.tick(JSON.parse(e.data).visitors); };
      source.addEventListener("closed", function () { ended = true; stop(); });  // access revoked
      source.onerror = function () {
        failures += 1;
        if (failures >= 3) { source.close(); source = null; startPolling(); }
      };
    }
    document.addEventListener("visibilitychange", function () { if (document.hidden) stop(); else start(); });
    start();
  };
})();
