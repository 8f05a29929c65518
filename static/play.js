// streamviz: play/pause through the steps (space), on the timeline and on compare;
// compare also steps with the keyboard, and its step panel follows the selected row.
// Loaded only by those two pages (see _player.html).
(function () {
  "use strict";

  var playing = false;
  var timer = null;
  var waitingFrom = null;  // the timeline step a "next" request left from, while it is on its way

  function typing(target) {
    if (!target || !target.closest) return false;
    return !!target.closest("input, textarea, select, [contenteditable]");
  }

  function el(id) { return document.getElementById(id); }

  function delay() {
    var speed = el("play-speed");
    var ms = speed ? Number(speed.value) : 1000;
    return ms > 0 ? ms : 1000;
  }

  function stopAtAnomalies() {
    var box = el("play-stop");
    return !!(box && box.checked);
  }

  function show() {
    var button = el("play");
    if (!button) return;
    button.setAttribute("aria-pressed", playing ? "true" : "false");
    button.textContent = playing ? "❚❚ pause" : "▶ play";
  }

  function schedule() {
    clearTimeout(timer);
    if (playing) timer = setTimeout(tick, delay());
  }

  function pause() {
    playing = false;
    waitingFrom = null;
    clearTimeout(timer);
    show();
  }

  function play() {
    playing = true;
    show();
    if (atEnd()) {
      restart();
    } else {
      schedule();
    }
  }

  function toggle() { if (playing) { pause(); } else { play(); } }

  // ---- the timeline page: reuse the stage's own "next" link (an htmx swap, URL pushed)

  function stage() { return el("stage"); }

  function timelineAtEnd() {
    var next = el("next");
    return !next || next.tagName !== "A";
  }

  function timelineTick() {
    var next = el("next");
    if (!next || next.tagName !== "A") { pause(); return; }
    waitingFrom = stage().getAttribute("data-step");
    next.click();
  }

  function stepHasAnomaly() {
    return !!document.querySelector("#detail .problem[class*='sev-']");
  }

  function afterSwap() {
    if (onCompare()) { loadPanel(); return; }
    markTold(stage() ? stage().getAttribute("data-step") : null);
    if (!playing || waitingFrom === null || !stage()) return;
    if (stage().getAttribute("data-step") === waitingFrom) return;  // another swap
    waitingFrom = null;
    if (stopAtAnomalies() && stepHasAnomaly()) { pause(); return; }
    if (timelineAtEnd()) { pause(); return; }
    schedule();
  }

  // ---- the compare page: a selected row, moved by keys and by play

  function rows() { return document.querySelectorAll("#compare-rows .crow"); }

  function selectedRow() { return document.querySelector("#compare-rows .crow[aria-current]"); }

  // `replaceUrl` is false when the page has just opened: an example's page is then left at
  // its top, its story in view (the story marks the step); any other scrolls to the row.
  function select(row, replaceUrl) {
    if (!row) return;
    var old = selectedRow();
    if (old && old !== row) old.removeAttribute("aria-current");
    row.setAttribute("aria-current", "step");
    var step = row.id.replace("crow-", "");
    var box = row.getBoundingClientRect();
    var move = replaceUrl || !el("story");
    if (move && (box.top < 0 || box.bottom > window.innerHeight)) {
      row.scrollIntoView({ block: "center" });
    }
    markTold(step);
    if (replaceUrl) {
      var url = new URL(window.location.href);
      url.searchParams.set("step", step);
      history.replaceState(history.state, "", url.toString());
    }
    loadPanel();
  }

  // The selected step's panel (its input, both sides' blocks as of it) follows the selection:
  // fetched (htmx) when it shows another step; a late answer for an older step is fetched again.
  function loadPanel() {
    var row = selectedRow();
    var panel = el("compare-step");
    var link = row && row.querySelector("a.pick");
    if (!row || !panel || !link || !window.htmx) return;
    if (panel.getAttribute("data-step") === row.id.replace("crow-", "")) return;
    // into a slot that stays in place, its hx-sync="replace" dropping an older request
    var slot = el("compare-step-slot");
    window.htmx.ajax("GET", link.getAttribute("data-panel"), { source: slot, target: slot, swap: "innerHTML" });
  }

  function move(offset) {
    var all = rows();
    if (!all.length) return;
    var at = Array.prototype.indexOf.call(all, selectedRow());
    var to = at < 0 ? 0 : Math.max(0, Math.min(all.length - 1, at + offset));
    select(all[to], true);
  }

  function compareAtEnd() {
    var all = rows();
    return !all.length || selectedRow() === all[all.length - 1];
  }

  function compareTick() {
    if (compareAtEnd()) { pause(); return; }
    move(1);
    var row = selectedRow();
    if (stopAtAnomalies() && row && row.querySelector(".anomaly-flag")) { pause(); return; }
    if (compareAtEnd()) { pause(); return; }
    schedule();
  }

  // ---- both pages

  function onCompare() { return !stage() && !!el("compare-rows"); }

  function atEnd() { return onCompare() ? compareAtEnd() : timelineAtEnd(); }

  function tick() { if (onCompare()) { compareTick(); } else { timelineTick(); } }

  function restart() {
    if (onCompare()) {
      select(rows()[0], true);
      schedule();
      return;
    }
    var first = el("first");
    if (first && first.tagName === "A") {
      waitingFrom = stage().getAttribute("data-step");
      first.click();
    }
  }

  // The story's narration follows the selected step: its list item is marked, and on
  // compare (where no detail panel exists) its text is shown in the narration box.
  function markTold(step) {
    var items = document.querySelectorAll("#story .told li");
    var said = null;
    for (var i = 0; i < items.length; i++) {
      var here = items[i].getAttribute("data-step") === step;
      items[i].classList.toggle("now", here);
      if (here) said = items[i].querySelector(".told-text");
    }
    var box = el("narration");
    if (box && onCompare()) {
      box.textContent = said ? "Step " + step + ": " + said.textContent : "";
      box.hidden = !said;
    }
  }

  var COMPARE_KEYS = { ArrowRight: 1, j: 1, ArrowLeft: -1, k: -1 };

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (event.key === " ") {
      if (event.target && event.target.id === "play") return;  // the button's own click
      if (!el("play")) return;
      event.preventDefault();
      toggle();
      return;
    }
    if (!onCompare()) return;  // the timeline's keys are app.js's
    if (COMPARE_KEYS[event.key]) {
      event.preventDefault();
      move(COMPARE_KEYS[event.key]);
    } else if (event.key === "Home" || event.key === "End") {
      event.preventDefault();
      var all = rows();
      select(all[event.key === "Home" ? 0 : all.length - 1], true);
    }
  });

  document.addEventListener("htmx:after:swap", afterSwap);
  document.addEventListener("htmx:after:history:restore", function () {
    pause();
    markTold(stage() ? stage().getAttribute("data-step") : null);
  });

  function ready() {
    var player = el("player");
    var button = el("play");
    if (!player || !button) return;
    player.hidden = false;
    button.addEventListener("click", toggle);
    if (onCompare()) {
      // the step the URL names, else the one an example's story opens at
      var step = new URL(window.location.href).searchParams.get("step");
      var story = el("story");
      if (step === null && story) step = story.getAttribute("data-start-step");
      var row = step !== null ? el("crow-" + step) : null;
      if (row) select(row, false);
      document.addEventListener("click", function (event) {
        if (event.ctrlKey || event.metaKey || event.shiftKey || event.button) return;  // a new tab
        var pick = event.target.closest && event.target.closest("#compare-rows a.pick");
        if (pick) {
          event.preventDefault();
          select(pick.closest(".crow"), true);
          return;
        }
        var link = event.target.closest && event.target.closest("#story .told-step");
        if (!link) return;
        var target = el("crow-" + new URL(link.href).searchParams.get("step"));
        if (!target) return;
        event.preventDefault();
        select(target, true);
      });
    } else if (stage()) {
      markTold(stage().getAttribute("data-step"));
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", ready);
  } else {
    ready();
  }
})();
