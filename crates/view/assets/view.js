// critbench view's script: the labelling controls (each click saved at once), keyboard
// shortcuts (j/k move, r right, w wrong, u clear, v verdicts) and the blind switch.
(function () {
  "use strict";
  var cards = Array.prototype.slice.call(document.querySelectorAll(".answer[data-answer-id]"));
  var toggle = document.getElementById("show-verdicts");
  if (toggle) {
    toggle.addEventListener("change", function () {
      document.getElementById("labelling").classList.toggle("blind", !toggle.checked);
    });
  }
  function progress(state) {
    var labelled = document.getElementById("labelled");
    if (labelled && state) { labelled.textContent = String(state.labelled); }
  }
  function label(card, gold) {
    var id = card.getAttribute("data-answer-id");
    var body = "answer_id=" + encodeURIComponent(id) + "&gold=" + encodeURIComponent(gold);
    var status = card.querySelector(".saved");
    if (status) { status.textContent = "saving…"; }
    return fetch("/api/label", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: body
    }).then(function (response) {
      return response.json().then(function (state) {
        if (!response.ok) { throw new Error(state.error || response.statusText); }
        card.setAttribute("data-gold", gold === "null" ? "" : gold);
        if (status) { status.textContent = gold === "null" ? "cleared" : "saved"; }
        progress(state);
      });
    }).catch(function (error) {
      if (status) { status.textContent = "not saved: " + error.message; }
    });
  }
  cards.forEach(function (card) {
    card.querySelectorAll("button[data-gold]").forEach(function (button) {
      button.addEventListener("click", function () { card.focus(); label(card, button.getAttribute("data-gold")); });
    });
  });
  function focused() {
    var index = cards.indexOf(document.activeElement);
    return index;
  }
  function move(step) {
    if (!cards.length) { return; }
    var index = focused();
    var next = index < 0 ? 0 : Math.min(cards.length - 1, Math.max(0, index + step));
    cards[next].focus();
    cards[next].scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var tag = (event.target && event.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") { return; }
    var index = focused();
    var card = index >= 0 ? cards[index] : null;
    switch (event.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "r": if (card) { label(card, "true"); move(1); } break;
      case "w": if (card) { label(card, "false"); move(1); } break;
      case "u": if (card) { label(card, "null"); } break;
      case "v": if (toggle) { toggle.checked = !toggle.checked; toggle.dispatchEvent(new Event("change")); } break;
      default: return;
    }
    event.preventDefault();
  });
})();
