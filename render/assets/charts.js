// Interactive charts (ARCHITECTURE.md §Charts and tables, render/site/assets.py). Each chart on a page is a pair
// of static SVGs (light and dark) followed by a link to its Vega-Lite spec. With scripts on, this
// draws the spec of the page's colour scheme with vega-embed (bundled into the site, never fetched
// from elsewhere) and hides the SVGs; when the scheme changes it draws the other spec. Without
// scripts, opened from disk (file: cannot fetch), or if anything fails, the static SVGs stay.
(function () {
  "use strict";
  var SPEC = /\.vl\.json$/;
  var charts = [];

  function scheme() {
    return document.body.getAttribute("data-md-color-scheme") === "slate" ? "dark" : "light";
  }

  function draw(chart) {
    var theme = scheme();
    if (chart.theme === theme) return;
    chart.theme = theme;
    var href = chart.link.getAttribute("href");
    var url = theme === "dark" ? href.replace(SPEC, ".dark.vl.json") : href;
    fetch(url)
      .then(function (response) {
        if (!response.ok) throw new Error(url + ": HTTP " + response.status);
        return response.json();
      })
      .then(function (spec) {
        if (chart.view) chart.view.finalize();
        return window.vegaEmbed(chart.holder, spec, { actions: false, renderer: "svg" });
      })
      .then(function (result) {
        chart.view = result;
        chart.holder.hidden = false;
        chart.figure.hidden = true;
      })
      .catch(function () {
        chart.theme = null;
        chart.holder.hidden = true;
        chart.figure.hidden = false;
      });
  }

  function setup() {
    if (typeof window.vegaEmbed !== "function" || window.location.protocol === "file:") return;
    var images = Array.prototype.slice.call(document.querySelectorAll("article img"));
    document.querySelectorAll("article a[href$='.vl.json']").forEach(function (link) {
      var base = link.getAttribute("href").replace(SPEC, "");
      var pair = images.filter(function (img) {
        var src = img.getAttribute("src");
        return src === base + ".svg#only-light" || src === base + ".dark.svg#only-dark";
      });
      if (!pair.length) return;
      var figure = pair[0].parentElement;
      var holder = document.createElement("div");
      holder.className = "pb-chart";
      holder.hidden = true;
      holder.setAttribute("role", "img");
      holder.setAttribute("aria-label", pair[0].getAttribute("alt") || "chart");
      figure.parentNode.insertBefore(holder, figure);
      charts.push({ link: link, holder: holder, figure: figure, theme: null, view: null });
    });
    charts.forEach(draw);
    new MutationObserver(function () {
      charts.forEach(draw);
    }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
