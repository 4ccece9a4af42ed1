// The add-site form: the time zone field starts as the browser's own (it stays editable).
(function () {
  "use strict";
  var field = document.querySelector("[data-local-zone]");
  if (!field || field.value !== "UTC") return;
  try {
    var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (zone) field.value = zone;
  } catch (e) { /* (no Intl: UTC stays) */ }
})();
