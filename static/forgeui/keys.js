/* forge: the keyboard, and the five seconds to undo a reject.
 *
 * 1. j/k move through the inbox, a approves (or accepts, or continues), r rejects (or
 *    ignores), ? shows the keys; never while typing in a field. A key with nothing to do
 *    on the chosen row says why, in the row and in a live region.
 *    The place of a row a live update takes away passes to its neighbour.
 * 2. Reject (and ignore) waits five seconds with an Undo before it is sent; buttons with
 *    data-confirm ask first.
 */
(function () {
  "use strict";

  // -- confirm, and reject with undo ------------------------------------------------------------
  var UNDO_SECONDS = 5;

  document.addEventListener("click", function (evt) {
    var button = evt.target.closest && evt.target.closest("button[data-confirm], button[data-undo]");
    if (!button) return;
    if (button.hasAttribute("data-confirm")) {
      if (!window.confirm(button.getAttribute("data-confirm"))) {
        evt.preventDefault();
        evt.stopPropagation();
      }
      return;
    }
    if (button.getAttribute("data-undo") === "go") {  // the countdown's own click
      button.setAttribute("data-undo", "");
      return;
    }
    evt.preventDefault();
    evt.stopPropagation();
    startUndo(button);
  }, true);

  function startUndo(button) {
    var form = button.form;
    if (!form || form.classList.contains("undoing")) return;
    var left = UNDO_SECONDS;
    var bar = document.createElement("div");
    bar.className = "undo-bar";
    bar.setAttribute("role", "status");
    var label = document.createElement("span");
    var undo = document.createElement("button");
    undo.type = "button";
    undo.className = "btn btn-sm";
    undo.textContent = "Undo";
    bar.appendChild(label);
    bar.appendChild(undo);
    var what = button.textContent.trim();
    function show() { label.textContent = what + " in " + left + " s… "; }
    show();
    form.classList.add("undoing");
    form.appendChild(bar);
    undo.focus();
    var timer = setInterval(function () {
      left -= 1;
      if (left > 0) { show(); return; }
      clearInterval(timer);
      bar.remove();
      form.classList.remove("undoing");
      button.setAttribute("data-undo", "go");
      button.click();
    }, 1000);
    undo.addEventListener("click", function () {
      clearInterval(timer);
      bar.remove();
      form.classList.remove("undoing");
      button.focus();
    });
  }

  // -- keyboard -------------------------------------------------------------------------------
  function typing(target) {
    return target && (/^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName) || target.isContentEditable);
  }

  function inboxRows() {
    return Array.prototype.filter.call(document.querySelectorAll("#inbox-rows tr.row[id]"),
      function (tr) { return !tr.classList.contains("outcome"); });
  }

  function currentRow() {
    var active = document.activeElement;
    var holder = active && active.closest ? active.closest("#inbox-rows tr.row") : null;
    return holder || document.querySelector("#inbox-rows tr.row.current");
  }

  function makeCurrent(tr, focus) {
    if (!tr) return;
    document.querySelectorAll("#inbox-rows tr.row.current").forEach(function (other) {
      other.classList.remove("current");
    });
    tr.classList.add("current");
    var link = tr.querySelector(".row-link");
    if (link && focus !== false) link.focus();
    if (tr.scrollIntoView) tr.scrollIntoView({ block: "nearest" });
  }

  // A live update (forge.js) may take the current row away, answered or claimed elsewhere:
  // its place passes to the next row still shown, else the one before, with the focus if
  // it held it, so the reader goes on from there rather than from the top or <body>.
  var leaving = null;
  document.addEventListener("forge:rowsSwapping", function () {
    var rows = inboxRows(), tr = currentRow(), at = rows.indexOf(tr);
    leaving = at < 0 ? null : { ids: rows.map(function (r) { return r.id; }), at: at,
                                focused: tr.contains(document.activeElement) };
  });
  document.addEventListener("forge:rowsSwapped", function () {
    var place = leaving;
    leaving = null;
    if (!place || document.getElementById(place.ids[place.at])) return;
    var order = place.ids.slice(place.at + 1).concat(place.ids.slice(0, place.at).reverse());
    makeCurrent(order.map(function (id) { return document.getElementById(id); }).find(Boolean),
                place.focused);
  });

  function move(step) {
    var rows = inboxRows();
    if (!rows.length) return;
    var at = rows.indexOf(currentRow());
    var next = at < 0 ? (step > 0 ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, at + step));
    makeCurrent(rows[next]);
  }

  function press(key) {
    var row = currentRow();
    var forms = document.querySelectorAll(".answer-form");
    // Outside the inbox only a page with one answer form has an obvious target.
    var scope = row || (forms.length === 1 ? forms[0] : null);
    var button = scope && scope.querySelector("button[data-key=" + key + "]");
    if (button) button.click();
    else if (scope || document.getElementById("inbox-rows")) say(unpressed(key, row, scope), row);
  }

  // Why a key did nothing: the key help promises an answer, so its absence is explained.
  function unpressed(key, row, scope) {
    var verb = key === "a" ? "approve" : "reject";
    if (!scope) return "No row is chosen: press j or k to move to one, then " + key + ".";
    if (row && !row.querySelector("form.row-answer")) {
      return "Nothing to " + verb + " here: this row is read-only for you.";
    }
    var holder = row || scope.closest(".answer-panel") || scope;
    if (key === "r" && holder.querySelector(".btn-cancel-run, .cancel-run")) {
      return "A breakpoint has no reject: " + (row ? "open it (Cancel run…) to " : "") +
        "cancel its run with a reason.";
    }
    return "No one-click " + verb + (row ? " on this row: open it to answer." : " here: answer with the form.");
  }

  // A message shown where the reader looks (in the row, else above the inbox) and read out.
  function say(text, row) {
    document.querySelectorAll(".key-note").forEach(function (old) { old.remove(); });
    var note = document.createElement("p");
    note.className = "notice notice-warn key-note";
    note.textContent = text;
    var box = row ? row.querySelector("td.actions") || row.lastElementChild : null;
    if (box) box.insertBefore(note, box.firstChild);
    else document.getElementById("notices").appendChild(note);
    var voice = document.getElementById("announce");
    if (voice) voice.textContent = text;
  }

  // After a row is answered, the next one becomes current, so the flow goes on.
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var form = evt.detail.elt;
    if (!form.classList || !form.classList.contains("row-answer")) return;
    var tr = form.closest("tr");
    if (tr !== currentRow()) return;
    var rows = inboxRows();
    var at = rows.indexOf(tr);
    makeCurrent(rows[at + 1] || rows[at - 1]);
  });

  document.addEventListener("keydown", function (evt) {
    if (evt.ctrlKey || evt.metaKey || evt.altKey || typing(evt.target)) return;
    var help = document.getElementById("keys-help");
    if (help && help.open) return;
    if (evt.key === "?") {
      if (help && help.showModal) { help.showModal(); evt.preventDefault(); }
    } else if (evt.key === "j" || evt.key === "k") {
      move(evt.key === "j" ? 1 : -1);
      evt.preventDefault();
    } else if (evt.key === "a" || evt.key === "r") {
      press(evt.key);
      evt.preventDefault();
    }
  });
})();
