// The duel replay viewer: loads one duel-replay/1 JSON and plays it exchange by
// exchange. No build step, no dependencies.
//
// Where the replay comes from: `?src=URL` when given, otherwise the page's own
// path without its trailing `/view` (the service serves the viewer at
// /replays/{id}/view and the JSON at /replays/{id}).
(function () {
  "use strict";

  // What each ruleset starts a round with (RULES-1.0.0.md).
  const RULESETS = { "1.0.0": { hp: 160, stamina: 100 } };
  const SUBSTITUTIONS = { timeout: "timeout", budget: "out of tokens", fault: "fault" };

  const $ = (id) => document.getElementById(id);

  function replayUrl() {
    const src = new URLSearchParams(location.search).get("src");
    if (src) return src;
    if (/\/view\/?$/.test(location.pathname)) return location.pathname.replace(/\/view\/?$/, "");
    return null;
  }

  function fighterName(replay, side) {
    const fighter = replay.fighters[side === "a" ? 0 : 1];
    return fighter && fighter.name ? fighter.name : side.toUpperCase();
  }

  function winnerText(replay, winner) {
    if (winner === "a" || winner === "b") return fighterName(replay, winner) + " wins";
    return "draw";
  }

  // Frame 0 is the opening bell; frame i is the state after the i-th exchange.
  function buildFrames(replay) {
    const start = RULESETS[replay.ruleset] || { hp: 160, stamina: 100 };
    const frames = [{ round: 1, exchange: 0, a: null, b: null, hp: [start.hp, start.hp],
      stamina: [start.stamina, start.stamina], roundResult: null, roundIndex: -1 }];
    (replay.rounds || []).forEach((round, roundIndex) => {
      const exchanges = round.exchanges || [];
      exchanges.forEach((exchange, index) => {
        frames.push({
          round: round.number,
          exchange: exchange.number,
          a: exchange.a,
          b: exchange.b,
          hp: [exchange.a.hp, exchange.b.hp],
          stamina: [exchange.a.stamina, exchange.b.stamina],
          roundResult: index === exchanges.length - 1 ? round.result : null,
          roundIndex: index === exchanges.length - 1 ? roundIndex : roundIndex - 1,
        });
      });
    });
    return { frames, start };
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function renderAction(container, side) {
    container.replaceChildren();
    if (!side) {
      container.appendChild(el("span", "muted", "—"));
      return;
    }
    container.appendChild(el("span", "move", side.exhausted ? side.action + " (exhausted)" : side.action));
    if (side.source && side.source !== "bot") {
      const badge = el("span", "badge sub", "substituted: " + (SUBSTITUTIONS[side.source] || side.source));
      badge.dataset.source = side.source;
      if (side.reason) badge.title = side.reason;
      container.appendChild(badge);
    }
    if (side.restarted) {
      const badge = el("span", "badge restart", "restarted");
      badge.title = "started afresh after an earlier failure: its memory of the match is lost";
      container.appendChild(badge);
    }
    if (side.exhausted) container.appendChild(el("span", "badge exh", "exhausted"));
    if (side.staggered) container.appendChild(el("span", "badge stag", "staggered"));
    if (side.damage_taken > 0) container.appendChild(el("span", "damage", "−" + side.damage_taken));
    if (side.tokens > 0) container.appendChild(el("div", "muted", side.tokens + " tokens"));
  }

  function setBar(bar, value, max, isHp) {
    const percent = Math.max(0, Math.min(100, (value / max) * 100));
    bar.style.width = percent + "%";
    if (isHp) {
      bar.classList.toggle("ko", value <= 0);
      bar.classList.toggle("low", value > 0 && percent < 30);
    }
  }

  function start(replay, url) {
    const { frames, start: startState } = buildFrames(replay);
    const last = frames.length - 1;
    let index = 0;
    let timer = null;

    $("title").textContent = fighterName(replay, "a") + " vs " + fighterName(replay, "b");
    $("meta").textContent = [replay.class, "ruleset " + replay.ruleset, "seed " + replay.seed,
      replay.season ? "season " + replay.season : null, replay.accepted_at].filter(Boolean).join(" · ");
    $("raw-link").href = url;
    const signed = $("signed");
    signed.textContent = replay.signature ? "signed" : "unsigned";
    if (replay.signature) signed.title = "ed25519 key " + replay.signature.key;
    $("name-a").textContent = fighterName(replay, "a");
    $("name-b").textContent = fighterName(replay, "b");
    const rounds = $("rounds");
    rounds.replaceChildren();
    (replay.rounds || []).forEach(() => rounds.appendChild(el("li", "")));
    const scrub = $("scrub");
    scrub.max = String(last);

    function show(next) {
      index = Math.max(0, Math.min(last, next));
      const frame = frames[index];
      ["a", "b"].forEach((side, i) => {
        $("hp-" + side + "-value").textContent = String(frame.hp[i]);
        $("stamina-" + side + "-value").textContent = String(frame.stamina[i]);
        setBar($("hp-" + side + "-bar"), frame.hp[i], startState.hp, true);
        setBar($("stamina-" + side + "-bar"), frame.stamina[i], startState.stamina, false);
        renderAction($("action-" + side), frame[side]);
      });
      $("frame-label").textContent = index === 0 ? "Opening bell"
        : "Round " + frame.round + " · exchange " + frame.exchange + " (" + index + "/" + last + ")";
      $("round-result").textContent = frame.roundResult
        ? "Round " + frame.round + ": " + winnerText(replay, frame.roundResult.winner) + " by " + frame.roundResult.by
        : "";
      // Results of rounds not reached yet stay hidden, so scrubbing never spoils.
      Array.from(rounds.children).forEach((item, i) => {
        const round = replay.rounds[i];
        const reached = i <= frame.roundIndex;
        item.classList.toggle("reached", reached);
        item.textContent = "Round " + round.number + ": " +
          (reached ? winnerText(replay, round.result.winner) + " by " + round.result.by : "…");
      });
      const result = $("match-result");
      result.hidden = index !== last;
      if (index === last && replay.result) {
        const r = replay.result;
        result.textContent = "Match: " + winnerText(replay, r.winner) + " (rounds " + r.round_wins[0] + "–" +
          r.round_wins[1] + ", damage " + r.damage[0] + "–" + r.damage[1] + ")";
      }
      scrub.value = String(index);
      $("btn-back").disabled = $("btn-start").disabled = index === 0;
      $("btn-forward").disabled = $("btn-end").disabled = index === last;
      document.body.dataset.frame = String(index);
      if (index === last) pause();
    }

    function pause() {
      if (timer !== null) clearInterval(timer);
      timer = null;
      $("btn-play").textContent = "Play";
    }

    function play() {
      if (index === last) show(0);
      pause();
      $("btn-play").textContent = "Pause";
      timer = setInterval(() => show(index + 1), Number($("speed").value) || 800);
    }

    $("btn-play").onclick = () => (timer === null ? play() : pause());
    $("btn-back").onclick = () => { pause(); show(index - 1); };
    $("btn-forward").onclick = () => { pause(); show(index + 1); };
    $("btn-start").onclick = () => { pause(); show(0); };
    $("btn-end").onclick = () => { pause(); show(last); };
    $("speed").onchange = () => { if (timer !== null) play(); };
    scrub.oninput = () => { pause(); show(Number(scrub.value)); };
    document.addEventListener("keydown", (event) => {
      if (event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
      const actions = { " ": () => $("btn-play").click(), ArrowLeft: () => $("btn-back").click(),
        ArrowRight: () => $("btn-forward").click(), Home: () => $("btn-start").click(), End: () => $("btn-end").click() };
      if (actions[event.key]) { event.preventDefault(); actions[event.key](); }
    });

    $("status").hidden = true;
    $("arena").hidden = false;
    show(0);
    document.body.dataset.frames = String(last);
    document.body.dataset.state = "ready";
  }

  function fail(message) {
    $("status").textContent = message;
    document.body.dataset.state = "error";
  }

  async function load() {
    const url = replayUrl();
    if (!url) return fail("No replay given: open /replays/{id}/view, or add ?src=URL.");
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      if (!response.ok) {
        let detail = response.statusText;
        try { detail = (await response.json()).error || detail; } catch (_) { /* not JSON */ }
        return fail("Cannot load the replay: " + detail);
      }
      const replay = await response.json();
      if (!replay || replay.format !== "duel-replay/1") return fail("Not a duel-replay/1 file.");
      start(replay, url);
    } catch (error) {
      fail("Cannot load the replay: " + error);
    }
  }

  window.DuelViewer = { buildFrames };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", load);
  else load();
})();
