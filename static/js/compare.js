// The trace comparison: open at the first divergence; a trial picked fills run B's field.
(function () {
  "use strict";
  function start() {
    var first = document.getElementById("first-divergence");
    if (first && !window.location.hash) {
      first.scrollIntoView({ block: "center" });
    }
    document.querySelectorAll("select[data-fills]").forEach(function (select) {
      select.addEventListener("change", function () {
        var field = document.getElementById(select.getAttribute("data-fills"));
        if (field && select.value) { field.value = select.value; }
      });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
