// streamviz: keyboard stepping, keeping the timeline in step with the stage, copy buttons
// (the paste form's and the playground's enhancements are forms.js's).
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
  var forStep = false;  // whether the stepping links asked for it (see revealStep)

  function syncTimeline(center, still) {
    var stage = document.getElementById("stage");
    var timeline = document.getElementById("timeline");
    if (!stage || !timeline) return;
    var step = stage.getAttribute("data-step");
    var row = document.getElementById("row-" + step);
    if (!row) {
      var url = stage.getAttribute("data-timeline-url");
      if (url && window.htmx && requested !== step) {
        requested = step;
        forStep = still === "step";
        window.htmx.ajax("GET", url, { target: "#timeline", swap: "outerHTML" });
      }
      return;
    }
    var current = timeline.querySelectorAll(".row[aria-current]");
    for (var i = 0; i < current.length; i++) {
      if (current[i] !== row) current[i].removeAttribute("aria-current");
    }
    row.setAttribute("aria-current", "step");
    reveal(timeline.querySelector(".rows"), row, center, still);
  }

  // Scroll the rows' own box to the row; then, only if the row is still off screen (the
  // box reaches below the window's edge, or a pinned bar covers it), the page as little as
  // needed; `still` leaves the page where it is (an example just opened: its story in view;
  // "step": revealStep decides).
  function reveal(box, row, center, still) {
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
    if (still) return;
    var shown = row.getBoundingClientRect();
    if (shown.top < 0 || shown.bottom > visibleBottom()) {
      row.scrollIntoView({ block: "nearest" });
    }
  }

  // The bottom of what is seen of the window: its edge, or a pinned stepping bar (phones).
  function visibleBottom() {
    var bar = document.querySelector(".step-buttons");
    var bottom = window.innerHeight;
    if (bar && getComputedStyle(bar).position === "fixed") {
      bottom = Math.min(bottom, bar.getBoundingClientRect().top);
    }
    return bottom;
  }

  // The requests made by the stage's stepping links (first, prev, next, last, the anomalies',
  // the rules'; the keys and play press them too) and by the overview's columns, known by
  // their request's context: by the time of the swap htmx names the new stage as its source.
  var stepping = new WeakSet();
  document.addEventListener("htmx:before:request", function (event) {
    var ctx = event.detail && event.detail.ctx;
    var source = event.target;
    if (ctx && source && source.closest && source.closest(".stepper, .ov-strip")) {
      stepping.add(ctx);
    }
  });

  // After a step from the stepping links, the new step's detail comes first: when its
  // heading is off screen it is brought into view (on a phone the stage is below the
  // timeline: "next" would otherwise change only a row's highlight), smoothly unless the
  // user asks for reduced motion; else the page moves to show the row only if the heading
  // stays in view (a laptop, the timeline beside the stage).
  function revealStep() {
    var heading = document.getElementById("detail-title");
    var detail = document.getElementById("detail");
    var stage = document.getElementById("stage");
    if (!heading || !detail || !stage) return;
    var bottom = visibleBottom();
    var box = heading.getBoundingClientRect();
    if (box.top < 0 || box.bottom > bottom) {
      var reduced = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
      detail.scrollIntoView({ block: "start", behavior: reduced ? "auto" : "smooth" });
      return;
    }
    var row = document.getElementById("row-" + stage.getAttribute("data-step"));
    if (!row) return;
    var shown = row.getBoundingClientRect();
    var by = shown.top < 0 ? shown.top : Math.max(0, shown.bottom - bottom);
    if (by && box.top - by >= 0 && box.bottom - by <= bottom) window.scrollBy(0, by);
  }

  // htmx 4 fires this on the element that made the request (a row, a "more rows" sentinel),
  // or on the document when that element was swapped away.
  document.addEventListener("htmx:after:swap", function (event) {
    var source = event.target;
    var ctx = event.detail && event.detail.ctx;
    if (source && source.classList && source.classList.contains("more")) return;
    // a live page's poll grew it in place: follow in the rows' box, never scroll the page
    if (source && source.id === "live-view") { syncTimeline(false, true); return; }
    if (ctx && stepping.has(ctx)) { syncTimeline(false, "step"); revealStep(); return; }
    // a window of rows asked for above (htmx names the body as the source of that request;
    // its target is the timeline)
    if (ctx && ctx.target && ctx.target.id === "timeline") {
      if (forStep) { syncTimeline(true, "step"); revealStep(); } else { syncTimeline(true); }
      return;
    }
    syncTimeline(false);
    revealClicked(source);
  });

  // What a click asked to see is brought into view once its swap is in: an anomaly of the
  // list, its box in the step's detail panel (the reason it fired), else the detail itself.
  // Without JavaScript the link's own anchor (`#why-CODE`) does this.
  function revealClicked(source) {
    var id = source && source.getAttribute ? source.getAttribute("data-reveal") : null;
    if (!id) return;
    var target = document.getElementById(id) || document.getElementById("detail");
    if (!target) return;
    var box = target.getBoundingClientRect();
    if (box.top < 0 || box.bottom > window.innerHeight) {
      target.scrollIntoView({ block: box.height < window.innerHeight / 2 ? "center" : "start" });
    }
  }

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

  // "Copy snippet" copies its field's text (the embed's iframe); without a clipboard the
  // field stays there to select and copy by hand, and the button stays hidden.
  function copyButtons() {
    if (!navigator.clipboard || !window.isSecureContext) return;
    var buttons = document.querySelectorAll("[data-copy-from][hidden]");
    for (var i = 0; i < buttons.length; i++) buttons[i].hidden = false;
  }
  document.addEventListener("htmx:after:swap", copyButtons);
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-copy-from]") : null;
    if (!button) return;
    var field = document.getElementById(button.getAttribute("data-copy-from"));
    if (!field || !navigator.clipboard) return;
    navigator.clipboard.writeText(field.value).then(function () {
      button.setAttribute("data-copied", "true");
      button.textContent = button.getAttribute("data-copied-label") || "Snippet copied";
    });
  });

  // The Share buttons at the top of a page open the stage's Share menu (which follows the
  // step) and put its link in view, selected; without JavaScript they lead to it by its anchor.
  document.addEventListener("click", function (event) {
    var jump = event.target.closest ? event.target.closest("[data-open-share]") : null;
    var menu = document.getElementById("share");
    if (!jump || !menu) return;
    event.preventDefault();
    menu.open = true;
    var body = menu.querySelector(".share-body");
    if (body) body.scrollIntoView({ block: "nearest" });
    var field = document.getElementById("share-link");
    if (field) { field.focus({ preventScroll: true }); field.select(); }
  });
  // An opened menu is brought into view whole (it may open near the bottom of the window).
  document.addEventListener("toggle", function (event) {
    var menu = event.target;
    if (!menu || menu.id !== "share" || !menu.open) return;
    var body = menu.querySelector(".share-body");
    if (body) body.scrollIntoView({ block: "nearest" });
  }, true);

  // In an embed (a frame of fixed size) the panels scroll inside: the state's scrolls to the
  // first block the step touched, so the block that changed is in view at every step.
  function keepTouched() {
    if (!document.body || !document.body.classList.contains("embed-page")) return;
    ["state", "compare-step"].forEach(function (id) {
      var panel = document.getElementById(id);
      var touched = panel && panel.querySelector(".block.touched, .step-blocks li.touched");
      if (!touched) return;
      var outer = panel.getBoundingClientRect();
      var inner = touched.getBoundingClientRect();
      if (inner.bottom > outer.bottom) {
        panel.scrollTop += Math.min(inner.bottom - outer.bottom, inner.top - outer.top);
      } else if (inner.top < outer.top) {
        panel.scrollTop += inner.top - outer.top;
      }
    });
  }
  document.addEventListener("htmx:after:swap", keepTouched);

  function ready() {
    keepTouched();
    copyButtons();
    // an example's story, a live capture's banner, the note saying which HAR entry the page
    // opened on and why, a page opened on its findings (no step named: a paste lands there)
    // stay in view (the rows' box still follows)
    var still = document.getElementById("story") || document.getElementById("live-view") ||
      document.getElementById("entry-opened") ||
      document.querySelector("#shell[data-findings-first]");
    syncTimeline(true, !!still);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", ready);
  } else {
    ready();
  }
})();
