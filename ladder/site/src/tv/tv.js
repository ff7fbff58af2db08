// Duel TV widget: fills <section id="tv"> on the home page with the match on
// air at /tv (server-sent events: start, exchange, end, across matches), live.
// No framework, no inline style, no HTML parsed from data: text goes in through
// textContent, bar widths through element.style (the site's CSP allows both).
(function () {
  "use strict";

  // What a fighter starts each round with when /tv/now does not say (RULES-1.0.0.md).
  const DEFAULTS = { start_hp: 160, max_stamina: 100 };
  const ROUND_ENDS = { ko: "by knockout", hp: "on HP", stamina: "on stamina",
    damage: "on damage dealt", draw: "on the cards" };
  const SUBSTITUTIONS = { timeout: "timed out", budget: "out of tokens", fault: "fault" };
  const WHY = { upset: "an upset", comeback: "a comeback", close: "a close one", latest: "the latest match" };
  const SIDES = ["a", "b"];

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function bar(kind, label) {
    const wrap = el("div", "tv-meter tv-" + kind);
    const head = el("div", "tv-meter-label");
    head.appendChild(el("span", "", label));
    const value = el("span", "tv-value", "–");
    head.appendChild(value);
    const track = el("div", "tv-bar");
    const fill = el("div", "tv-fill");
    track.appendChild(fill);
    wrap.appendChild(head);
    wrap.appendChild(track);
    return { wrap: wrap, value: value, fill: fill };
  }

  function setBar(meter, value, max) {
    const percent = Math.max(0, Math.min(100, (value / Math.max(max, 1)) * 100));
    meter.value.textContent = String(value);
    meter.fill.style.width = percent + "%";
    meter.fill.classList.toggle("tv-low", percent > 0 && percent < 30);
    meter.fill.classList.toggle("tv-out", value <= 0);
  }

  function build(root) {
    while (root.firstChild) root.removeChild(root.firstChild);
    const head = el("div", "tv-head");
    head.appendChild(el("span", "tv-badge", "Duel TV"));
    const status = el("span", "tv-status", "Tuning in…");
    head.appendChild(status);
    root.appendChild(head);
    const fighters = el("div", "tv-fighters");
    const sides = SIDES.map(function (side) {
      const box = el("div", "tv-fighter tv-side-" + side);
      const name = el("div", "tv-name", side === "a" ? "A" : "B");
      const action = el("div", "tv-action", "–");
      const hp = bar("hp", "HP");
      const stamina = bar("stamina", "Stamina");
      box.appendChild(name);
      box.appendChild(action);
      box.appendChild(hp.wrap);
      box.appendChild(stamina.wrap);
      fighters.appendChild(box);
      return { name: name, action: action, hp: hp, stamina: stamina };
    });
    root.appendChild(fighters);
    const progress = el("p", "tv-progress", "");
    const result = el("p", "tv-result", "");
    result.setAttribute("aria-live", "polite");
    const link = el("a", "tv-link", "open in viewer");
    link.hidden = true;
    root.appendChild(progress);
    root.appendChild(result);
    root.appendChild(link);
    return { root: root, status: status, sides: sides, progress: progress, result: result, link: link };
  }

  function start(root) {
    const view = build(root);
    let match = null;

    function nameOf(winner) {
      if (!match || winner === "draw") return null;
      return match.names[winner === "a" ? 0 : 1];
    }

    function reset(event) {
      const names = (event.fighters || []).map(function (f) { return String(f.name || "?"); });
      match = { id: String(event.match_id), names: [names[0] || "A", names[1] || "B"],
        hp: DEFAULTS.start_hp, stamina: DEFAULTS.max_stamina, over: false };
      root.dataset.matchId = match.id;
      root.dataset.state = "live";
      root.dataset.exchanges = "0";
      view.status.textContent = "Live · " + String(event.class || "");
      view.sides.forEach(function (side, i) {
        side.name.textContent = match.names[i];
        side.action.textContent = "–";
        setBar(side.hp, match.hp, match.hp);
        setBar(side.stamina, match.stamina, match.stamina);
      });
      view.progress.textContent = "Round 1";
      view.result.textContent = "";
      view.link.href = "/live/" + encodeURIComponent(match.id) + "/view";
      view.link.textContent = "open in viewer";
      view.link.hidden = false;
      describe(match.id, 2);
    }

    // The maxima of the bars and why this match is on air, from /tv/now;
    // tried again once a second later when it fails (the defaults stay).
    function describe(id, tries) {
      fetch("/tv/now", { headers: { accept: "application/json" } })
        .then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.json();
        })
        .then(function (now) {
          const onAir = now && now.on_air;
          if (!onAir || !match || onAir.match_id !== id || match.id !== id) return;
          match.hp = onAir.start_hp || match.hp;
          match.stamina = onAir.max_stamina || match.stamina;
          if (match.over) return;
          view.status.textContent = "Live · " + onAir.class + " · season " + onAir.season +
            " · " + (WHY[onAir.why] || onAir.why);
        })
        .catch(function () {
          if (tries > 1) setTimeout(function () { describe(id, tries - 1); }, 1000);
        });
    }

    function actionText(side) {
      let text = String(side.action || "").toLowerCase();
      if (side.source && side.source !== "bot") {
        text += " (" + (SUBSTITUTIONS[side.source] || side.source) + ")";
      }
      if (side.damage_taken > 0) text += " · took " + side.damage_taken;
      return text;
    }

    function exchange(event) {
      if (!match) return;
      const record = event.exchange || {};
      [record.a, record.b].forEach(function (side, i) {
        if (!side) return;
        const view_side = view.sides[i];
        view_side.action.textContent = actionText(side);
        setBar(view_side.hp, side.hp, match.hp);
        setBar(view_side.stamina, side.stamina, match.stamina);
      });
      root.dataset.exchanges = String(Number(root.dataset.exchanges || "0") + 1);
      view.progress.textContent = "Round " + event.round + " · exchange " + record.number;
      const round = event.round_result;
      if (round) {
        const winner = nameOf(round.winner);
        view.result.textContent = "Round " + event.round + ": " +
          (winner ? winner + " wins " : "drawn ") + (ROUND_ENDS[round.by] || round.by);
      } else {
        view.result.textContent = "";
      }
    }

    function end(event) {
      if (!match) return;
      const result = event.result || {};
      const wins = result.round_wins || [0, 0];
      const winner = nameOf(result.winner);
      view.result.textContent = (winner ? winner + " wins the match " : "The match is a draw ") +
        wins[0] + "–" + wins[1];
      view.status.textContent = "Finished · next match soon";
      view.link.href = "/replays/" + encodeURIComponent(match.id) + "/view";
      view.link.textContent = "open in viewer (replay)";
      root.dataset.state = "ended";
      match.over = true;
    }

    const feed = new EventSource("/tv");
    function on(kind, handle) {
      feed.addEventListener(kind, function (message) {
        let event;
        try { event = JSON.parse(message.data); } catch (error) { return; }
        handle(event);
      });
    }
    on("start", reset);
    on("exchange", exchange);
    on("end", end);
    feed.onopen = function () {
      if (!match) view.status.textContent = "Waiting for a ranked match…";
    };
    // EventSource reconnects by itself; the history it gets again replaces ours.
    feed.onerror = function () {
      view.status.textContent = "Reconnecting…";
    };
  }

  function init() {
    const root = document.getElementById("tv");
    if (root) start(root);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
