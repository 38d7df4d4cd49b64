/* Number links that land on the value (render/numbers/links.py, anchor_href). A link to the raw samples rows a
   number was computed from reads "?rows=95-99&col=time_s#row-95" ("rows": runs joined by "_"): the browser lands
   on the first row's own element; this marks every row named (class pb-hit) and scrolls the first one's cell in
   that column into view both ways, so the value is on screen at 390 px as at 1440 px (the row number stays
   pinned at the left, numbers.css). Without scripts the reader still lands on the first row, highlighted. A number
   no row shows as its page does lands on its own entry ("?rows=95-99&col=time_s#n-…"): the rows are marked, and
   the entry, not the rows, stays in view. */
(function () {
  "use strict";
  var ROWS = /^[0-9]+(?:-[0-9]+)?(?:_[0-9]+(?:-[0-9]+)?)*$/;
  var MAX_ROWS = 500; // render.numbers.links.MAX_ROWS: rows an evidence page shows

  function rowsOf(spec) {
    var out = [];
    spec.split("_").forEach(function (run) {
      var ends = run.split("-").map(Number);
      var last = Math.min(ends.length > 1 ? ends[1] : ends[0], MAX_ROWS - 1);
      for (var i = ends[0]; i <= last; i++) out.push(i);
    });
    return out;
  }

  function columnIndex(table, name) {
    var heads = table ? table.querySelectorAll("thead th") : [];
    for (var i = 0; i < heads.length; i++) if (heads[i].textContent.trim() === name) return i;
    return 0;
  }

  // A link's target inside a folded table (render/evidence/folds.py) opens its fold: Chromium opens a closed
  // <details> for a fragment itself, other browsers may not, and a target in a closed fold is not shown.
  function unfold() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) return;
    var folded = false;
    for (var d = target.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) {
      if (!d.open) { d.open = true; folded = true; }
    }
    if (folded) target.scrollIntoView({ block: "center" });
  }

  function land() {
    unfold();
    document.querySelectorAll("tr.pb-hit").forEach(function (tr) { tr.classList.remove("pb-hit"); });
    var query = new URLSearchParams(location.search);
    var spec = query.get("rows") || "";
    var column = query.get("col") || "";
    var target = /^#row-([0-9]+)$/.exec(location.hash);
    if (!ROWS.test(spec)) return;
    var first = null;
    rowsOf(spec).forEach(function (i) {
      var mark = document.getElementById("row-" + i);
      var tr = mark && mark.closest("tr");
      if (!tr) return;
      tr.classList.add("pb-hit");
      if (!first) first = tr;
    });
    // a number landing on its own entry ("#n-…", render/evidence/taken.py): its rows are marked, the entry stays
    if (!first || !target) return;
    var cell = first.children[column ? columnIndex(first.closest("table"), column) : 0] || first.children[0];
    cell.classList.add("pb-value");
    cell.scrollIntoView({ block: "center", inline: "center" });
  }

  // after the browser's own jump to the fragment (on load), or it would undo the horizontal scroll
  function later() { window.setTimeout(land, 0); }
  window.addEventListener("hashchange", later);
  if (document.readyState === "complete") later();
  else window.addEventListener("load", later);
})();

// The theme's search box is a dialog (role="dialog") without a name: a screen reader announces an unnamed dialog
// (axe-core's aria-dialog-name). It is named here, as the theme writes no attribute a page could set.
(function () {
  "use strict";
  var search = document.querySelector(".md-search[role='dialog']");
  if (search && !search.hasAttribute("aria-label")) search.setAttribute("aria-label", "Search");
})();
