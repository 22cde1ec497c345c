// The inspector works without script; this only marks the row of a linked message.
document.addEventListener("DOMContentLoaded", function () {
  var target = document.querySelector(".msg.target");
  if (target) { target.scrollIntoView({ block: "center" }); }
});
