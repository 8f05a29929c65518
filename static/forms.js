// streamviz: the paste form (Ctrl+Enter submits, file drops, a note when the box holds text
// and a file is chosen) and the playground's form (typing into an unticked key ticks it).
// Both forms work without it; loaded by home.html and play.html.
(function () {
  "use strict";

  function el(id) { return document.getElementById(id); }

  function button(label, onClick) {
    var made = document.createElement("button");
    made.type = "button";
    made.textContent = label;
    made.addEventListener("click", onClick);
    return made;
  }

  // ---- the paste form (templates/_form.html)

  function pasteForm() {
    var form = el("submit-form");
    var text = el("text");
    var input = el("file");
    var submit = el("submit-button");
    if (!form || !text || !input || !submit) return;

    // Ctrl+Enter (Cmd+Enter on a Mac) in the box presses the button; the hint says so.
    var hint = el("submit-hint");
    if (hint) {
      if (/Mac|iPhone|iPad|iPod/.test(navigator.platform || "")) {
        hint.querySelector("kbd").textContent = "Cmd";
      }
      hint.hidden = false;
      text.setAttribute("aria-describedby", "submit-hint");
      submit.setAttribute("aria-keyshortcuts", "Control+Enter Meta+Enter");
    }
    text.addEventListener("keydown", function (event) {
      if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey) || event.isComposing) return;
      event.preventDefault();
      submit.click();
    });

    // A file chosen while the box holds text: the server refuses the pair (one stream at a
    // time, routes/home.py), so the note says so before submitting and offers to clear one.
    var note = el("pair-note");
    var said = "";  // the file the note names, "" when it is empty

    function chosen() { return input.files && input.files.length ? input.files[0].name : ""; }

    function both() { return chosen() !== "" && text.value.trim() !== ""; }

    function useOnly(clear) {
      clear();
      check();
      submit.focus();
    }

    function check() {
      if (!note) return;
      var name = both() ? chosen() : "";
      if (name === said) return;  // said already: typing on does not repeat it
      said = name;
      note.textContent = "";
      form.classList.toggle("both", name !== "");
      if (!name) return;
      var words = document.createElement("p");
      words.textContent = "The box holds pasted text and you chose the file \u201c" + name +
        "\u201d: streamviz reads one stream at a time, so the pair would be refused.";
      note.appendChild(words);
      note.appendChild(button("Use the file (clear the box)", function () {
        useOnly(function () { text.value = ""; });
      }));
      note.appendChild(button("Use the pasted text (clear the file)", function () {
        useOnly(function () { input.value = ""; });
      }));
    }

    input.addEventListener("change", check);
    text.addEventListener("input", check);
    window.addEventListener("pageshow", check);  // a form restored by Back
    form.addEventListener("submit", function (event) {
      if (!both()) return;
      event.preventDefault();  // the server would refuse it, and drop the chosen file
      check();
      var first = note && note.querySelector("button");
      if (first) first.focus();
    });
    check();

    // A file dropped on the box or the drop zone is the chosen file.
    var zone = el("dropzone");
    if (!zone) return;
    function over(event) { event.preventDefault(); zone.classList.add("over"); }
    function leave() { zone.classList.remove("over"); }
    function drop(event) {
      event.preventDefault();
      leave();
      if (event.dataTransfer && event.dataTransfer.files.length) {
        input.files = event.dataTransfer.files;
        check();
      }
    }
    [zone, text].forEach(function (element) {
      element.addEventListener("dragover", over);
      element.addEventListener("dragleave", leave);
      element.addEventListener("drop", drop);
    });
  }

  // ---- the playground (templates/play.html)

  // Typing into a key whose box is unticked ticks it: the edit is what the user meant (an
  // unticked key's text is not sent as part of the fragment). The first time, a note after
  // that fragment says so, and the status line tells a screen reader.
  function playground() {
    var form = el("play-form");
    if (!form) return;
    var hint = el("play-ticks-hint");
    if (hint) hint.hidden = false;
    var told = false;
    // capture: ticked before htmx (listening on the form) reads it
    form.addEventListener("input", function (event) {
      var field = event.target;
      var key = field && field.type === "text" && field.closest(".play-key");
      var box = key && key.querySelector("input[type=checkbox]");
      if (!box || box.checked) return;
      box.checked = true;
      if (told) return;
      told = true;
      var name = key.querySelector(".key-name");
      var words = (name ? name.textContent : "That key") + " is ticked: typing into a key puts " +
        "it in the fragment (untick it to take it out again).";
      var shown = document.createElement("p");
      shown.className = "play-ticked";
      shown.id = "play-ticked";
      shown.textContent = words;
      var fragment = key.closest(".play-frag");
      if (fragment) fragment.appendChild(shown);
      var status = el("play-status");
      if (status) status.textContent = words;
    }, true);
  }

  function ready() {
    pasteForm();
    playground();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", ready);
  } else {
    ready();
  }
})();
