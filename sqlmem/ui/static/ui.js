// The inspector works without script. This only brings a linked message into view and
// fills the sections whose content is its own request (`data-load`: the overview's
// counts), with the same section of that page; on any failure the link stays.
document.addEventListener("DOMContentLoaded", function () {
  var target = document.querySelector(".msg.target");
  if (target) { target.scrollIntoView({ block: "center" }); }
  document.querySelectorAll("[data-load]").forEach(function (section) {
    section.classList.add("loading");
    fetch(section.getAttribute("data-load"), { credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        var page = new DOMParser().parseFromString(html, "text/html");
        var loaded = page.getElementById(section.id);
        if (loaded) { section.replaceWith(document.importNode(loaded, true)); }
      })
      .catch(function () { section.classList.remove("loading"); });
  });
});
