// The duel replay viewer: loads one duel-replay/1 JSON and plays it exchange by
// exchange, or follows a match live. No build step, no dependencies.
//
// Where the match comes from:
// - `?src=URL`: that replay JSON;
// - `/live/{id}/view`: the live feed `/live/{id}` (server-sent events `start`,
//   `exchange`, `end` or `aborted`) while the match runs, then the finished
//   replay `/replays/{id}`; when no such match is live (any more), the replay;
// - otherwise the page's own path without its trailing `/view` (the service
//   serves the viewer at /replays/{id}/view and the JSON at /replays/{id}).
(function () {
  "use strict";

  // What each ruleset starts a round with (RULES-1.0.0.md).
  const RULESETS = { "1.0.0": { hp: 160, stamina: 100 } };
  const SUBSTITUTIONS = { timeout: "timeout", budget: "out of tokens", fault: "fault" };

  const $ = (id) => document.getElementById(id);

  function source() {
    const src = new URLSearchParams(location.search).get("src");
    if (src) return { replay: src };
    const live = /^(.*)\/live\/([^/]+)\/view\/?$/.exec(location.pathname);
    if (live) return { live: live[1] + "/live/" + live[2], replay: live[1] + "/replays/" + live[2] };
    if (/\/view\/?$/.test(location.pathname)) return { replay: location.pathname.replace(/\/view\/?$/, "") };
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
        // A live round in progress has no result yet: its last exchange so far
        // does not end it.
        const ends = index === exchanges.length - 1 && !!round.result;
        frames.push({
          round: round.number,
          exchange: exchange.number,
          a: exchange.a,
          b: exchange.b,
          hp: [exchange.a.hp, exchange.b.hp],
          stamina: [exchange.a.stamina, exchange.b.stamina],
          roundResult: ends ? round.result : null,
          roundIndex: ends ? roundIndex : roundIndex - 1,
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

  // One viewer per page; it is given the match again whenever it grows (live)
  // or is replaced by the finished replay, and keeps the frame shown unless it
  // was following the newest exchange.
  function createViewer() {
    let replay = null;
    let frames = [];
    let startState = RULESETS["1.0.0"];
    let last = 0;
    let index = 0;
    let timer = null;
    let live = false;
    const rounds = $("rounds");
    const scrub = $("scrub");

    function show(next) {
      if (!replay) return;
      index = Math.max(0, Math.min(last, next));
      const frame = frames[index];
      ["a", "b"].forEach((side, i) => {
        $("hp-" + side + "-value").textContent = String(frame.hp[i]);
        $("stamina-" + side + "-value").textContent = String(frame.stamina[i]);
        setBar($("hp-" + side + "-bar"), frame.hp[i], startState.hp, true);
        setBar($("stamina-" + side + "-bar"), frame.stamina[i], startState.stamina, false);
        renderAction($("action-" + side), frame[side]);
      });
      $("frame-label").textContent = index === 0
        ? (live && last === 0 ? "Opening bell · waiting for the first exchange" : "Opening bell")
        : "Round " + frame.round + " · exchange " + frame.exchange + " (" + index + "/" + last + ")";
      $("round-result").textContent = frame.roundResult
        ? "Round " + frame.round + ": " + winnerText(replay, frame.roundResult.winner) + " by " + frame.roundResult.by
        : "";
      // Results of rounds not reached yet stay hidden, so scrubbing never spoils.
      Array.from(rounds.children).forEach((item, i) => {
        const round = replay.rounds[i];
        const reached = i <= frame.roundIndex && !!round.result;
        item.classList.toggle("reached", reached);
        item.textContent = "Round " + round.number + ": " +
          (reached ? winnerText(replay, round.result.winner) + " by " + round.result.by : "…");
      });
      const result = $("match-result");
      result.hidden = index !== last || !replay.result;
      if (!result.hidden) {
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

    // `isLive`: the match is still being played (no signature, no result yet).
    function setReplay(next, url, isLive) {
      const first = replay === null;
      const following = first ? isLive : index === last && timer === null;
      replay = next;
      live = isLive;
      ({ frames, start: startState } = buildFrames(replay));
      last = frames.length - 1;

      $("title").textContent = fighterName(replay, "a") + " vs " + fighterName(replay, "b");
      $("meta").textContent = [replay.class, "ruleset " + replay.ruleset,
        replay.seed !== undefined ? "seed " + replay.seed : null,
        replay.season ? "season " + replay.season : null, replay.accepted_at].filter(Boolean).join(" · ");
      $("raw-link").href = url;
      const badge = $("signed");
      badge.classList.toggle("live", isLive);
      badge.textContent = isLive ? "live" : replay.signature ? "signed" : "unsigned";
      badge.title = !isLive && replay.signature ? "ed25519 key " + replay.signature.key : "";
      $("name-a").textContent = fighterName(replay, "a");
      $("name-b").textContent = fighterName(replay, "b");
      rounds.replaceChildren();
      (replay.rounds || []).forEach(() => rounds.appendChild(el("li", "")));
      scrub.max = String(last);

      $("status").hidden = true;
      $("arena").hidden = false;
      show(following ? last : index);
      document.body.dataset.frames = String(last);
    }

    return { setReplay };
  }

  function fail(message) {
    $("status").hidden = false;
    $("status").textContent = message;
    document.body.dataset.state = "error";
  }

  async function loadReplay(viewer, url) {
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      if (!response.ok) {
        let detail = response.statusText;
        try { detail = (await response.json()).error || detail; } catch (_) { /* not JSON */ }
        return fail("Cannot load the replay: " + detail);
      }
      const replay = await response.json();
      if (!replay || replay.format !== "duel-replay/1") return fail("Not a duel-replay/1 file.");
      viewer.setReplay(replay, url, false);
      document.body.dataset.state = "ready";
    } catch (error) {
      fail("Cannot load the replay: " + error);
    }
  }

  // Follows a live feed, then shows the finished (signed) replay. A reconnect
  // sends the whole history again from `start`, so the match is rebuilt then.
  function followLive(viewer, src) {
    const feed = new EventSource(src.live);
    let match = null;
    let received = 0;
    let over = false;
    const countEvent = () => { received += 1; document.body.dataset.liveEvents = String(received); };
    const data = (event) => JSON.parse(event.data);

    feed.addEventListener("start", (event) => {
      const start = data(event);
      match = { format: "duel-replay/1", match_id: start.match_id, ruleset: start.ruleset,
        class: start.class, seed: start.seed, fighters: start.fighters, rounds: [], result: null };
      received = 0;
      countEvent();
      viewer.setReplay(match, src.replay, true);
      document.body.dataset.state = "live";
    });
    feed.addEventListener("exchange", (event) => {
      if (!match) return;
      const step = data(event);
      let round = match.rounds[match.rounds.length - 1];
      if (!round || round.number !== step.round) {
        round = { number: step.round, exchanges: [] };
        match.rounds.push(round);
      }
      round.exchanges.push(step.exchange);
      if (step.round_result) round.result = step.round_result;
      countEvent();
      viewer.setReplay(match, src.replay, true);
    });
    feed.addEventListener("end", (event) => {
      over = true;
      feed.close();
      if (match) {
        match.result = data(event).result;
        countEvent();
        viewer.setReplay(match, src.replay, true);
      }
      loadReplay(viewer, src.replay);
    });
    feed.addEventListener("aborted", (event) => {
      over = true;
      feed.close();
      countEvent();
      fail("The match was aborted: " + data(event).reason);
    });
    feed.onerror = () => {
      // CLOSED: the feed was refused (no such match is live, or it is over):
      // the replay, if there is one. Otherwise the browser reconnects itself.
      if (!over && feed.readyState === EventSource.CLOSED) {
        over = true;
        loadReplay(viewer, src.replay);
      }
    };
  }

  function load() {
    const src = source();
    if (!src) return fail("No replay given: open /replays/{id}/view, or add ?src=URL.");
    const viewer = createViewer();
    if (src.live) followLive(viewer, src);
    else loadReplay(viewer, src.replay);
  }

  window.DuelViewer = { buildFrames };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", load);
  else load();
})();
