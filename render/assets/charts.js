// Interactive charts (ARCHITECTURE.md §Charts and tables, render/site/assets.py). Each chart on a page is a pair
// of static SVGs (light and dark) followed by a link to its Vega-Lite spec. With scripts on, this
// draws the spec of the page's colour scheme with vega-embed (bundled into the site, never fetched
// from elsewhere) and hides the SVGs; when the scheme changes it draws the other spec. Without
// scripts, opened from disk (file: cannot fetch), or if anything fails, the static SVGs stay.
//
// Prose can write any link and image, so a link's shape never makes a chart: only a spec listed in the
// build's manifest (charts.json beside this script, written by the build) is drawn, fetched from this
// site's own origin without following a redirect. A spec's own options are never used (vega-embed
// would read usermeta.embedOptions: actions, a View Source that runs the spec's HTML), the options below
// are fixed, and a spec that would load data from a URL, or any loader call at all, is refused.
(function () {
  "use strict";
  var SPEC = /\.vl\.json$/;
  var MAX_DEPTH = 64;
  var own = document.currentScript && document.currentScript.src;
  var charts = [];
  var SAME_ORIGIN = { credentials: "same-origin", mode: "same-origin", redirect: "error" };

  function refuse() {
    return Promise.reject(new Error("charts load no data or image from a URL"));
  }

  // vega's loader interface, every call refused: a spec draws its inline data only
  var NO_LOADER = { load: refuse, sanitize: refuse, http: refuse, file: refuse };

  function options() {
    // a new object per call: vega-embed must never see an option a spec set
    return { actions: false, renderer: "svg", mode: "vega-lite", loader: NO_LOADER };
  }

  // A spec loads nothing: no "url" key anywhere (data, datasets, layers, images), and no nesting past MAX_DEPTH.
  function inert(node, depth) {
    if (depth > MAX_DEPTH) return false;
    if (Array.isArray(node)) return node.every(function (v) { return inert(v, depth + 1); });
    if (node === null || typeof node !== "object") return true;
    return Object.keys(node).every(function (key) {
      return key !== "url" && inert(node[key], depth + 1);
    });
  }

  function checked(spec) {
    if (spec === null || typeof spec !== "object" || Array.isArray(spec)) throw new Error("not a spec");
    var schema = spec.$schema;
    if (schema !== undefined && !/^https:\/\/vega\.github\.io\/schema\/vega-lite\//.test(String(schema))) {
      throw new Error("not a Vega-Lite spec");
    }
    if (!inert(spec, 0)) throw new Error("a spec that loads from a URL");
    delete spec.usermeta; // vega-embed reads usermeta.embedOptions: a spec's options are never used
    return spec;
  }

  // The chart bundle (vega-embed, Vega-Lite, Vega: about 0.9 MB) is not named by any page: it is loaded once, by
  // this script, when the first chart nears the screen, so a page without a chart, or whose charts are not read,
  // never downloads it (issue 42). Until then, and if it fails, the static SVGs show.
  var bundle = null;
  function loadBundle() {
    if (bundle) return bundle;
    bundle = new Promise(function (resolve, reject) {
      if (typeof window.vegaEmbed === "function") return resolve();
      var tag = document.createElement("script");
      tag.src = new URL("vega-embed.js", own).href;
      tag.onload = function () {
        if (typeof window.vegaEmbed === "function") resolve();
        else reject(new Error("no vegaEmbed"));
      };
      tag.onerror = function () { reject(new Error("no chart bundle")); };
      document.head.appendChild(tag);
    });
    return bundle;
  }

  function scheme() {
    return document.body.getAttribute("data-md-color-scheme") === "slate" ? "dark" : "light";
  }

  function draw(chart) {
    var theme = scheme();
    if (chart.theme === theme) return;
    chart.theme = theme;
    var url = theme === "dark" ? chart.dark : chart.light;
    loadBundle()
      .then(function () { return fetch(url, SAME_ORIGIN); })
      .then(function (response) {
        if (!response.ok || response.redirected || response.url !== url) throw new Error(url + ": refused");
        return response.json();
      })
      .then(function (spec) {
        var safe = checked(spec);
        if (chart.view) chart.view.finalize();
        chart.view = null;
        return window.vegaEmbed(chart.holder, safe, options());
      })
      .then(function (result) {
        chart.view = result;
        chart.holder.setAttribute("data-state", "drawn");
        chart.holder.hidden = false;
        chart.figure.hidden = true;
      })
      .catch(function () {
        chart.theme = null;
        chart.holder.setAttribute("data-state", "static");
        chart.holder.hidden = true;
        chart.figure.hidden = false;
      });
  }

  // The page's charts: links to a spec the manifest lists (light and dark), each beside its own SVGs.
  function find(listed) {
    var images = Array.prototype.slice.call(document.querySelectorAll("article img"));
    document.querySelectorAll("article a[href]").forEach(function (link) {
      var spec;
      try {
        spec = new URL(link.getAttribute("href"), document.baseURI);
      } catch (e) {
        return;
      }
      if (spec.origin !== window.location.origin || spec.search || spec.hash) return;
      var light = spec.href;
      var dark = light.replace(SPEC, ".dark.vl.json");
      if (!SPEC.test(light) || !listed.has(light) || !listed.has(dark)) return;
      var base = light.replace(SPEC, "");
      var pair = images.filter(function (img) {
        var src = img.src;
        return src === base + ".svg#only-light" || src === base + ".dark.svg#only-dark";
      });
      if (!pair.length) return;
      var figure = pair[0].parentElement;
      var holder = document.createElement("div");
      holder.className = "pb-chart";
      holder.hidden = true;
      holder.setAttribute("data-state", "waiting"); // until it nears the screen and is drawn ("drawn") or not ("static")
      holder.setAttribute("role", "img");
      holder.setAttribute("aria-label", pair[0].getAttribute("alt") || "chart");
      figure.parentNode.insertBefore(holder, figure);
      charts.push({ light: light, dark: dark, holder: holder, figure: figure, theme: null, view: null });
    });
  }

  function setup() {
    if (window.location.protocol === "file:" || !own) return;
    if (!document.querySelector("article a[href$='.vl.json']")) return; // no chart here: no manifest, no bundle
    var manifest = new URL("charts.json", own);
    if (manifest.origin !== window.location.origin) return;
    var root = new URL("../../", own); // the script sits in assets/probebook/ (render/site/assets.py FOLDER)
    fetch(manifest.href, SAME_ORIGIN)
      .then(function (response) {
        if (!response.ok || response.redirected) throw new Error("no chart manifest");
        return response.json();
      })
      .then(function (doc) {
        var specs = doc && Array.isArray(doc.specs) ? doc.specs : [];
        var listed = new Set();
        specs.forEach(function (path) {
          if (typeof path === "string") listed.add(new URL(path, root).href);
        });
        find(listed);
        if (!charts.length) return;
        var near = function (chart) { chart.near = true; draw(chart); };
        if ("IntersectionObserver" in window) {
          var watch = new IntersectionObserver(function (entries) {
            entries.forEach(function (entry) {
              if (!entry.isIntersecting) return;
              watch.unobserve(entry.target);
              charts.forEach(function (chart) { if (chart.figure === entry.target) near(chart); });
            });
          }, { rootMargin: "300px 0px" });
          charts.forEach(function (chart) { watch.observe(chart.figure); });
        } else {
          charts.forEach(near);
        }
        new MutationObserver(function () {
          charts.forEach(function (chart) { if (chart.near) draw(chart); }); // a chart not yet near stays unloaded
        }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
      })
      .catch(function () {
        /* the static SVGs stay */
      });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
