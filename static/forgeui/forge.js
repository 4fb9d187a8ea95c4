/* forge: the few behaviours htmx does not cover.
 *
 * 1. Catch-up after (re)connecting: the page knows the last event id it has seen
 *    (an element with data-event-id inside the ws-connect element, updated by every
 *    fragment the server pushes); on open we send it, and the server replays what
 *    changed after it, so a dropped connection never loses an interrupt.
 * 2. The live indicator in the top bar.
 * 3. On a run page, "this tree changed" reloads the tree, unless someone is typing.
 * 4. Ages ("3 minutes") and time left before a deadline stay current without reloading.
 * 5. Run-tree nodes nested deeper than forge.css spells out get their indent here
 *    (through the CSSOM, which the Content-Security-Policy allows; inline styles it does not).
 */
(function () {
  "use strict";

  function cursorOf(socketElt) {
    var el = socketElt.querySelector("[data-event-id]");
    var id = el ? parseInt(el.getAttribute("data-event-id"), 10) : 0;
    return isNaN(id) ? 0 : id;
  }

  function setLive(state, label) {
    var el = document.getElementById("live-status");
    if (!el) return;
    el.setAttribute("data-state", state);
    el.querySelector(".live-label").textContent = label;
  }

  document.addEventListener("htmx:wsOpen", function (evt) {
    evt.detail.socketWrapper.send(JSON.stringify({ after: cursorOf(evt.target) }));
    setLive("on", " live");
  });

  // The server pushes out-of-band fragments; rows travel inside <template> (a <tr> cannot
  // stand alone in HTML), which htmx.swap handles and the ws extension's own loop does not.
  // Before swapping: an inserted row replaces an older copy of itself (replays), and a
  // delete or in-place refresh of a row this page does not show is dropped (htmx would
  // log it as an error).
  document.addEventListener("htmx:wsBeforeMessage", function (evt) {
    var holder = document.createElement("template");
    holder.innerHTML = evt.detail.message;
    holder.content.querySelectorAll("template").forEach(function (inner) {
      inner.content.querySelectorAll("tr[id]").forEach(function (row) {
        var shown = document.getElementById(row.id);
        var mode = row.getAttribute("hx-swap-oob");  // delete, true (replace) or none (insert)
        if (mode === "delete" || mode === "true") {
          if (!shown) row.remove();
        } else {
          if (shown) shown.remove();
          row.classList.add("arrived");  // a brief highlight (forge.css)
        }
      });
    });
    evt.preventDefault();
    var before = shownRows();
    htmx.swap(evt.target, holder.innerHTML, { swapStyle: "none" });
    adjustCount(shownRows() - before);
    refreshAges(evt.target);
  });

  // The "N pending" figure follows the rows that arrive and leave.
  function shownRows() {
    return document.querySelectorAll("table.inbox tbody tr[id]").length;
  }

  function adjustCount(delta) {
    var el = document.getElementById("pending-count");
    var n = el ? parseInt(el.textContent, 10) : NaN;
    if (delta && !isNaN(n)) el.textContent = String(Math.max(0, n + delta));
  }

  document.addEventListener("htmx:wsClose", function (evt) {
    var code = evt.detail.event.code;
    // 4401 logged out, 4403 role lost: the server will not take us back; say so.
    if (code === 4401 || code === 4403) {
      setLive("off", code === 4401 ? " signed out" : " no access");
    } else if (code === 4409) {
      // Too far behind to replay: the page itself is the up-to-date view.
      setLive("off", " reload to catch up");
      if (!document.querySelector("form textarea:focus, form input:focus")) location.reload();
    } else if (document.body.contains(evt.target)) {
      setLive("retry", " reconnecting…");
    }
  });

  // -- run page: reload the tree when the server says it changed ------------------------
  var pendingRefresh = null;

  function busyTyping(tree) {
    var active = document.activeElement;
    if (active && tree.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)) {
      return true;
    }
    return Array.prototype.some.call(tree.querySelectorAll("textarea, input[type=text]"),
      function (field) { return field.value.trim() !== "" && field.defaultValue !== field.value; });
  }

  function refreshTree() {
    var tree = document.getElementById("run-tree");
    if (!tree) return;
    if (busyTyping(tree)) {
      clearTimeout(pendingRefresh);
      pendingRefresh = setTimeout(refreshTree, 2000);
      return;
    }
    htmx.trigger(tree, "tree-changed");
  }

  // htmx:load fires for the page and for every swapped-in fragment.
  document.addEventListener("htmx:load", function (evt) {
    evt.detail.elt.querySelectorAll(".tree-node[data-depth]").forEach(function (node) {
      var depth = parseInt(node.getAttribute("data-depth"), 10);
      if (depth > 8) node.style.setProperty("--depth", String(depth));
    });
  });

  document.addEventListener("htmx:oobAfterSwap", function (evt) {
    var target = evt.detail.target;
    if (target && target.id === "tree-changed") refreshTree();
  });

  // -- ages -----------------------------------------------------------------------------
  function age(seconds) {
    if (seconds < 45) return "just now";
    var minutes = Math.round(seconds / 60);
    if (minutes < 60) return minutes + (minutes === 1 ? " minute" : " minutes");
    var hours = Math.floor(minutes / 60);
    if (hours < 24) return hours + (hours === 1 ? " hour" : " hours") + ", " + (minutes % 60) + " min";
    var days = Math.floor(hours / 24);
    return days + (days === 1 ? " day" : " days") + ", " + (hours % 24) + " h";
  }

  function refreshAges(root) {
    var now = Date.now();
    (root || document).querySelectorAll("time[data-due]").forEach(function (el) {
      var due = Date.parse(el.getAttribute("datetime"));
      if (isNaN(due)) return;
      var left = (due - now) / 1000;
      el.textContent = left > 0 ? "due in " + age(Math.max(left, 45)) : "due now";
    });
    (root || document).querySelectorAll("time[data-age]").forEach(function (el) {
      var then = Date.parse(el.getAttribute("datetime"));
      if (!isNaN(then)) el.textContent = age(Math.max(0, (now - then) / 1000));
    });
  }

  document.addEventListener("DOMContentLoaded", function () { refreshAges(); });
  document.addEventListener("htmx:afterSettle", function () { refreshAges(); });
  setInterval(refreshAges, 15000);
})();
