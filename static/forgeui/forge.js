/* forge: the few behaviours htmx does not cover.
 *
 * 1. Catch-up after (re)connecting: the page knows the last event id it has seen
 *    (an element with data-event-id inside the ws-connect element, updated by every
 *    fragment the server pushes); on open we send it, and the server replays what
 *    changed after it, so a dropped connection never loses an interrupt.
 * 2. The live indicator in the top bar.
 * 3. Live pages (run tree, timeline, interrupt): "this changed" from the socket morphs
 *    their live parts into the new version, keeping focus, typed text and open details;
 *    inbox rows sent again, being typed into or counting down to a reject are morphed
 *    too, where they stand; only a row whose run moved on is replaced, in place. Either
 *    way it keeps its position, the keyboard's place and the focus (and keys.js passes
 *    the place of a row taken away to its neighbour).
 * 4. Ages ("3 minutes") and time left before a deadline stay current without reloading.
 * 5. Run-tree nodes nested deeper than forge.css spells out get their indent here
 *    (through the CSSOM, which the Content-Security-Policy allows; inline styles it does not).
 * 6. Times: one format everywhere, in UTC or the browser's zone (the reader's choice,
 *    kept in localStorage); relative ones show the exact time on hover.
 * 7. Scrollable boxes get a tab stop, so a keyboard can scroll them too.
 * 8. After a refused form (422) focus goes to the first error, not to <body>, where the
 *    swap that replaced the focused button would leave it.
 * The keyboard and the undo of a reject are in keys.js.
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
    var refocus = [];
    holder.content.querySelectorAll("template").forEach(function (inner) {
      inner.content.querySelectorAll("tr[id]").forEach(function (row) {
        var shown = document.getElementById(row.id);
        var mode = row.getAttribute("hx-swap-oob");  // delete, true (replace) or none (insert)
        if (mode === "delete") {
          if (!shown) {
            row.remove();
          } else if (holdsInput(shown)) {  // being typed into: it stays
            row.remove();
            keep(shown);
          }
        } else if (!shown) {
          if (mode === "true") row.remove();
          else row.classList.add("arrived");  // a brief highlight (forge.css)
        } else {  // a new copy of a row shown: the reader's place in it stays
          row.classList.toggle("current", shown.classList.contains("current"));
          // A replay morphs the row where it is: inserted again, it would move to an end of
          // the list under a reader stepping through it with j and k.
          if (mode !== "true" || touched(shown) || counting(shown)) {  // morphed in place
            row.remove();
            row.removeAttribute("hx-swap-oob");
            Idiomorph.morph(shown, row.outerHTML, { morphStyle: "outerHTML" });
            htmx.process(shown);
          } else {  // replaced in place: its run moved on
            if (shown.contains(document.activeElement)) refocus.push(row.id);
          }
        }
      });
    });
    evt.preventDefault();
    var before = shownRows();
    document.dispatchEvent(new CustomEvent("forge:rowsSwapping"));  // keys.js notes its place
    htmx.swap(evt.target, holder.innerHTML, { swapStyle: "none" });
    refocus.forEach(function (id) {
      var link = document.getElementById(id).querySelector(".row-link");
      if (link) link.focus();
    });
    document.dispatchEvent(new CustomEvent("forge:rowsSwapped"));
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
      if (document.querySelector("[data-live][id]")) liveRefresh();
      else if (!holdsInput(document.body)) location.reload();
    } else if (document.body.contains(evt.target)) {
      setLive("retry", " reconnecting…");
    }
  });

  // -- live pages: morph in what changed, never what the reader is doing ----------------
  // A page's live parts carry data-live and an id. When its socket says something changed
  // (or, while data-live-busy is shown, now and then: a working run's steps send no word),
  // the page is read again and each live part is morphed into its new version (idiomorph),
  // so a field with focus or typed text, and an opened <details>, stay as they are. htmx's
  // "morph" swaps (form responses) go through the same rules.
  var BUSY_POLL_MS = 3000;

  function isField(el) {
    return el.nodeType === 1 && /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName);
  }

  function edited(el) {
    if (el.tagName === "TEXTAREA") return el.value !== el.defaultValue;
    if (el.tagName === "SELECT") {
      return Array.prototype.some.call(el.options, function (o) { return o.selected !== o.defaultSelected; });
    }
    if (el.tagName !== "INPUT" || /^(hidden|submit|button|reset|image|file)$/.test(el.type)) return false;
    if (el.type === "checkbox" || el.type === "radio") return el.checked !== el.defaultChecked;
    return el.value !== el.defaultValue;
  }

  function inUse(field) {
    return field === document.activeElement || edited(field);
  }

  // Focus or typed text: what a swap must never take away (a ticked box may go with its
  // row, once what it was ticked for is done).
  function writing(field) {
    var text = field.tagName === "TEXTAREA" ||
      (field.tagName === "INPUT" && !/^(checkbox|radio)$/.test(field.type));
    return field === document.activeElement || (text && edited(field));
  }

  function fieldsOf(node) {
    if (node.nodeType !== 1) return [];
    return isField(node) ? [node] : Array.prototype.slice.call(node.querySelectorAll("input, textarea, select"));
  }

  // Whether a node a swap would remove holds the reader's work: a field being typed in, one
  // the server refused (marked invalid), whose message the reader may not have read yet, or
  // one holding what the reader typed that the server handed back unsent (data-typed).
  function holdsInput(node) {
    return fieldsOf(node).some(function (field) {
      return writing(field) || field.getAttribute("aria-invalid") === "true" ||
        field.hasAttribute("data-typed");
    });
  }

  // Whether a node a swap would replace holds anything the reader changed.
  function touched(node) {
    return fieldsOf(node).some(inUse);
  }

  function keep(node) {
    // Kept although the page has moved on: say so once, inside it (in a row, in the cell
    // holding the field).
    if (isField(node) || node.querySelector(".kept-note")) return;
    var field = fieldsOf(node).find(writing);
    var box = node.tagName === "TR" && field ? field.closest("td") : node;
    var note = document.createElement("p");
    note.className = "notice notice-warn kept-note";
    note.setAttribute("role", "status");
    note.textContent = "This has changed since you started typing; what you typed is kept here.";
    box.insertBefore(note, box.firstChild);
  }

  Idiomorph.defaults.ignoreActiveValue = true;
  // A reject or ignore counting down to being sent (its Undo bar) is work in hand too.
  function counting(node) {
    return node.nodeType === 1 &&
      (node.matches(".undoing, .undo-bar") || node.querySelector(".undoing") !== null);
  }

  Idiomorph.defaults.callbacks.beforeAttributeUpdated = function (name, el) {
    if (name === "open" && el.tagName === "DETAILS") return false;
    if (name === "class" && el.classList.contains("undoing")) return false;
    var field = el.tagName === "OPTION" ? el.closest("select") : el;
    if (/^(value|checked|selected)$/.test(name) && field && isField(field) && inUse(field)) return false;
    return true;
  };
  Idiomorph.defaults.callbacks.beforeNodeRemoved = function (node) {
    if (counting(node)) return false;
    // What an action said it did (a note saved) outlives the redraw that action causes.
    if (node.nodeType === 1 && node.hasAttribute("data-stays")) return false;
    if (!holdsInput(node)) return true;
    keep(node);
    return false;
  };

  // A form that was sent starts empty again once its answer arrives (the morph would
  // otherwise keep its typed text).
  document.addEventListener("htmx:beforeSwap", function (evt) {
    var form = evt.detail.requestConfig && evt.detail.requestConfig.elt;
    if (form && form.tagName === "FORM" && form.closest("[data-live]") &&
        evt.detail.xhr.status < 300) form.reset();
  });

  var refreshing = false;
  var refreshAgain = false;

  function liveRefresh() {
    if (!document.querySelector("[data-live][id]")) return;
    if (refreshing) { refreshAgain = true; return; }
    refreshing = true;
    fetch(location.href, { credentials: "same-origin",
                           headers: { Accept: "text/html", "X-Forge-Live": "1" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) { if (html) morphLive(html); })
      .catch(function () { /* the next signal or poll tries again */ })
      .then(function () {
        refreshing = false;
        if (refreshAgain) { refreshAgain = false; liveRefresh(); }
      });
  }

  // A refused form waits for the reader's fix: a live redraw leaves it, its errors and what
  // was typed as they are, until it is sent again.
  function notRefused(node) {
    return !(node.nodeType === 1 && node.tagName === "FORM" && node.querySelector(ERROR_FIELDS));
  }

  function morphLive(html) {
    var fresh = new DOMParser().parseFromString(html, "text/html");
    document.querySelectorAll("[data-live][id]").forEach(function (part) {
      var next = fresh.getElementById(part.id);
      if (!next) return;
      Idiomorph.morph(part, next.outerHTML,
                      { morphStyle: "outerHTML", callbacks: { beforeNodeMorphed: notRefused } });
      htmx.process(part);
      indent(part);
      part.dispatchEvent(new CustomEvent("forge:refreshed", { bubbles: true }));
    });
    // The page read is as new as its cursor: a reconnect need not replay what it shows.
    fresh.querySelectorAll("[id][data-event-id]").forEach(function (mark) {
      var here = document.getElementById(mark.id);
      var seen = here ? parseInt(here.getAttribute("data-event-id"), 10) : NaN;
      var read = parseInt(mark.getAttribute("data-event-id"), 10);
      if (here && !(seen >= read)) here.setAttribute("data-event-id", String(read));
    });
    refreshAges();
    reachScrollables();
  }

  document.addEventListener("htmx:oobAfterSwap", function (evt) {
    var target = evt.detail.target;
    if (target && /-changed$/.test(target.id)) liveRefresh();
  });

  setInterval(function () {
    if (document.querySelector("[data-live-busy]")) liveRefresh();
  }, BUSY_POLL_MS);

  function indent(root) {
    root.querySelectorAll(".tree-node[data-depth]").forEach(function (node) {
      var depth = parseInt(node.getAttribute("data-depth"), 10);
      if (depth > 8) node.style.setProperty("--depth", String(depth));
    });
  }

  // htmx:load fires for the page and for every swapped-in fragment.
  document.addEventListener("htmx:load", function (evt) { indent(evt.detail.elt); });

  // -- times and ages -------------------------------------------------------------------
  var TIMES_KEY = "forge-times";

  function inUtc() {
    try { return window.localStorage.getItem(TIMES_KEY) === "utc"; } catch (e) { return false; }
  }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function zoneLabel(date) {
    var offset = -date.getTimezoneOffset();
    if (offset === 0) return "UTC";
    var sign = offset > 0 ? "+" : "-";
    offset = Math.abs(offset);
    return "UTC" + sign + pad(Math.floor(offset / 60)) + ":" + pad(offset % 60);
  }

  function exact(date) {
    if (inUtc()) {
      return date.getUTCFullYear() + "-" + pad(date.getUTCMonth() + 1) + "-" + pad(date.getUTCDate()) +
        " " + pad(date.getUTCHours()) + ":" + pad(date.getUTCMinutes()) + ":" +
        pad(date.getUTCSeconds()) + " UTC";
    }
    return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) + " " +
      pad(date.getHours()) + ":" + pad(date.getMinutes()) + ":" + pad(date.getSeconds()) + " " +
      zoneLabel(date);
  }

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
    (root || document).querySelectorAll("time[datetime]").forEach(function (el) {
      var then = Date.parse(el.getAttribute("datetime"));
      if (isNaN(then)) return;
      if (el.hasAttribute("data-due")) {
        var left = (then - now) / 1000;
        el.textContent = left > 0 ? "due in " + age(Math.max(left, 45)) : "due now";
        el.setAttribute("title", exact(new Date(then)));
      } else if (el.hasAttribute("data-relative") || el.hasAttribute("data-age")) {
        var ago = age(Math.max(0, (now - then) / 1000));
        el.textContent = ago === "just now" ? ago : ago + " ago";
        el.setAttribute("title", exact(new Date(then)));
      } else if (/^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(el.getAttribute("datetime"))) {
        el.textContent = exact(new Date(then));
      }
    });
    var toggle = document.getElementById("tz-toggle");
    if (toggle) toggle.textContent = "Times: " + (inUtc() ? "UTC" : "local (" + zoneLabel(new Date()) + ")");
  }

  document.addEventListener("click", function (evt) {
    if (!evt.target.closest || !evt.target.closest("#tz-toggle")) return;
    try { window.localStorage.setItem(TIMES_KEY, inUtc() ? "local" : "utc"); } catch (e) { return; }
    refreshAges();
  });

  // -- scrollable boxes are keyboard-reachable -------------------------------------------
  function reachScrollables(root) {
    (root || document).querySelectorAll("pre, .table-wrap, .bulk-report ul").forEach(function (box) {
      var scrolls = box.scrollHeight > box.clientHeight + 1 || box.scrollWidth > box.clientWidth + 1;
      if (scrolls && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
        if (!box.hasAttribute("aria-label")) box.setAttribute("aria-label", "Scrollable content");
      }
    });
  }

  document.addEventListener("toggle", function () { reachScrollables(); }, true);
  window.addEventListener("resize", function () { reachScrollables(); });

  // -- notes: characters left ---------------------------------------------------------------
  document.addEventListener("input", function (evt) {
    var field = evt.target;
    if (!field.hasAttribute || !field.hasAttribute("data-count")) return;
    var hint = document.getElementById(field.getAttribute("aria-describedby"));
    var max = parseInt(field.getAttribute("maxlength"), 10);
    if (hint && !isNaN(max)) hint.textContent = field.value.length + " of " + max + " characters used.";
  });

  // -- after a refused form, focus the first thing to fix --------------------------------------
  var ERROR_FIELDS = ".has-error input, .has-error select, .has-error textarea, [aria-invalid=true]";

  function focusFirstError(root) {
    var field = root.querySelector(ERROR_FIELDS);
    if (!field) {
      field = root.querySelector("[role=alert], .error, .notice-error");
      if (field && !field.hasAttribute("tabindex")) field.setAttribute("tabindex", "-1");
    }
    if (field) field.focus();
  }

  document.addEventListener("htmx:afterSettle", function (evt) {
    var xhr = evt.detail.xhr;
    if (xhr && xhr.status === 422 && document.body.contains(evt.target)) focusFirstError(evt.target);
  });

  document.addEventListener("DOMContentLoaded", function () {
    refreshAges();
    reachScrollables();
    if (document.querySelector(ERROR_FIELDS)) focusFirstError(document.getElementById("content"));
  });
  document.addEventListener("htmx:afterSettle", function () { refreshAges(); reachScrollables(); });
  setInterval(refreshAges, 15000);
})();
