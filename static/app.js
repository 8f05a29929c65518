// streamviz: keyboard stepping, keeping the timeline in step with the stage, file drops.
// Everything here enhances pages that already work without JavaScript.
(function () {
  "use strict";

  var KEYS = {
    ArrowLeft: "prev", k: "prev",
    ArrowRight: "next", j: "next",
    Home: "first", End: "last",
    n: "next-anomaly", N: "prev-anomaly"
  };

  function typing(target) {
    if (!target || !target.closest) return false;
    return !!target.closest("input, textarea, select, [contenteditable]");
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var keys = document.getElementById("keys");
    if (event.key === "?") {
      if (keys) { keys.open = !keys.open; event.preventDefault(); }
      return;
    }
    if (event.key === "Escape" && keys && keys.open) { keys.open = false; return; }
    var id = KEYS[event.key];
    if (!id) return;
    var link = document.getElementById(id);
    if (!link || link.tagName !== "A") return;
    event.preventDefault();
    link.click();
  });

  // The timeline shows a window of rows; mark the stage's step and bring it into view,
  // loading the window around it when the step is outside the rows on the page.
  var requested = null;  // the step whose timeline window was last asked for

  function syncTimeline(center, boxOnly) {
    var stage = document.getElementById("stage");
    var timeline = document.getElementById("timeline");
    if (!stage || !timeline) return;
    var step = stage.getAttribute("data-step");
    var row = document.getElementById("row-" + step);
    if (!row) {
      var url = stage.getAttribute("data-timeline-url");
      if (url && window.htmx && requested !== step) {
        requested = step;
        window.htmx.ajax("GET", url, { target: "#timeline", swap: "outerHTML" });
      }
      return;
    }
    var current = timeline.querySelectorAll(".row[aria-current]");
    for (var i = 0; i < current.length; i++) {
      if (current[i] !== row) current[i].removeAttribute("aria-current");
    }
    row.setAttribute("aria-current", "step");
    reveal(timeline.querySelector(".rows"), row, center, boxOnly);
  }

  // Scroll the rows' own box to the row; then, only if the row is still off screen (the
  // box reaches below the window's edge, or a pinned bar covers it), the page as little as needed.
  function reveal(box, row, center, boxOnly) {
    if (!box) return;
    var outer = box.getBoundingClientRect();
    var inner = row.getBoundingClientRect();
    if (center) {
      box.scrollTop += inner.top - outer.top - (outer.height - inner.height) / 2;
    } else if (inner.top < outer.top) {
      box.scrollTop += inner.top - outer.top;
    } else if (inner.bottom > outer.bottom) {
      box.scrollTop += inner.bottom - outer.bottom;
    }
    if (boxOnly) return;
    var shown = row.getBoundingClientRect();
    var bar = document.querySelector(".step-buttons");
    var bottom = window.innerHeight;
    if (bar && getComputedStyle(bar).position === "fixed") {
      bottom = Math.min(bottom, bar.getBoundingClientRect().top);
    }
    if (shown.top < 0 || shown.bottom > bottom) {
      row.scrollIntoView({ block: "nearest" });
    }
  }

  // htmx 4 fires this on the element that made the request (a row, a step link, a
  // "more rows" sentinel), or on the document when that element was swapped away.
  document.addEventListener("htmx:after:swap", function (event) {
    var source = event.target;
    if (source && source.classList && source.classList.contains("more")) return;
    // a live page's poll grew it in place: follow in the rows' box, never scroll the page
    if (source && source.id === "live-view") { syncTimeline(false, true); return; }
    syncTimeline(!!(source && source.id === "timeline"));
  });

  document.addEventListener("htmx:after:history:restore", function () { syncTimeline(true); });

  // The overview strip outlines the column that holds the stage's step (columns are equal
  // buckets of steps: column i starts at floor(i * steps / columns), see overview.py).
  function markOverview() {
    var stage = document.getElementById("stage");
    var strip = document.querySelector(".ov-strip");
    if (!stage || !strip) return;
    var step = Number(stage.getAttribute("data-step"));
    var steps = Number(strip.getAttribute("data-steps"));
    var cells = strip.children;
    var at = Math.ceil((step + 1) * cells.length / steps) - 1;
    var old = strip.querySelector(".cur");
    if (old && old !== cells[at]) old.classList.remove("cur");
    if (cells[at]) cells[at].classList.add("cur");
  }
  document.addEventListener("htmx:after:swap", markOverview);
  document.addEventListener("htmx:after:history:restore", markOverview);

  // The tab title names the step the stage shows ("title · step N · streamviz").
  function titleStep() {
    var stage = document.getElementById("stage");
    if (!stage) return;
    document.title = document.title.replace(/ · step \d+ · /, " · step " + stage.getAttribute("data-step") + " · ");
  }
  document.addEventListener("htmx:after:swap", titleStep);
  document.addEventListener("htmx:after:history:restore", titleStep);

  // "Link to step N" copies its absolute URL; without a clipboard it stays a plain link.
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("[data-copy-link]") : null;
    if (!link || !navigator.clipboard || !window.isSecureContext) return;
    event.preventDefault();
    navigator.clipboard.writeText(link.href).then(function () {
      link.setAttribute("data-copied", "true");
      link.textContent = "Link copied";
    }, function () { window.location.href = link.href; });
  });

  function ready() {
    syncTimeline(true);
    var zone = document.getElementById("dropzone");
    var input = document.getElementById("file");
    var text = document.getElementById("text");
    if (!zone || !input) return;
    function over(event) { event.preventDefault(); zone.classList.add("over"); }
    function leave() { zone.classList.remove("over"); }
    function drop(event) {
      event.preventDefault();
      leave();
      if (event.dataTransfer && event.dataTransfer.files.length) {
        input.files = event.dataTransfer.files;
      }
    }
    [zone, text].forEach(function (element) {
      if (!element) return;
      element.addEventListener("dragover", over);
      element.addEventListener("dragleave", leave);
      element.addEventListener("drop", drop);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", ready);
  } else {
    ready();
  }
})();
