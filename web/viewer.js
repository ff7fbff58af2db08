// The duel replay viewer: loads one duel-replay/1 JSON and plays it exchange by
// exchange, or follows a match live. No build step, no dependencies, no
// network beyond this site.
//
// Where the match comes from:
// - `?src=URL`: that replay JSON, only from this page's own origin (a page that
//   fetched any URL it was handed would lend this site's name to anyone's file);
// - `/live/{id}/view`: the live feed `/live/{id}` (server-sent events `start`,
//   `exchange`, `end` or `aborted`) while the match runs, then the finished
//   replay `/replays/{id}`; when no such match is live (any more), the replay;
// - otherwise the page's own path without its trailing `/view` (the service
//   serves the viewer at /replays/{id}/view and the JSON at /replays/{id}).
//
// Where it opens: a finished match (a replay, or a live URL opened again once
// its match is over) on its last exchange, the whole chart drawn; a live match
// on its newest exchange, following it; `#r2e7` on that exchange (once it is
// played, live); `#start` at the opening bell.
//
// Nothing ahead of the exchange on screen is ever in the page: table rows,
// chart points and round results are added as playback reaches them, so going
// back to the opening bell (|◀, Home, `#start`) and playing never spoils.
(function () {
  "use strict";

  // What each ruleset starts a round with (RULES-1.0.0.md).
  const RULESETS = { "1.0.0": { hp: 160, stamina: 100 } };
  const SUBSTITUTIONS = { timeout: "timeout", budget: "out of tokens", fault: "fault" };
  const ROUND_ENDS = { ko: "by knockout", hp: "on HP", stamina: "on stamina", damage: "on damage dealt",
    draw: "on the cards" };
  const SVG = "http://www.w3.org/2000/svg";

  const $ = (id) => document.getElementById(id);

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function svg(tag, attributes) {
    const node = document.createElementNS(SVG, tag);
    Object.entries(attributes || {}).forEach(([name, value]) => node.setAttribute(name, String(value)));
    return node;
  }

  // The replay to load, or `{ refused }` when `?src=` points at another origin.
  function source() {
    const src = new URLSearchParams(location.search).get("src");
    if (src !== null) {
      let url;
      try { url = new URL(src, location.href); } catch (_) { return { refused: src }; }
      if (url.origin !== location.origin || url.protocol !== location.protocol) return { refused: src };
      return { replay: url.pathname + url.search };
    }
    const live = /^(.*)\/live\/([^/]+)\/view\/?$/.exec(location.pathname);
    if (live) {
      return { live: live[1] + "/live/" + live[2], replay: live[1] + "/replays/" + live[2],
        site: "/api/matches/" + live[2] };
    }
    if (/\/view\/?$/.test(location.pathname)) return { replay: location.pathname.replace(/\/view\/?$/, "") };
    return null;
  }

  function fighterName(replay, side) {
    const fighter = replay.fighters[side === "a" ? 0 : 1];
    return fighter && fighter.name ? fighter.name : side.toUpperCase();
  }

  // The ladder match this page shows, `{ id, bots: [A, B] }`, or null: a
  // replay that names a season and a match id is a ranked ladder match; a live
  // match is one when the site beside this service knows it (`siteMatch`,
  // from `/api/matches/{id}`: live feeds do not name a season).
  function ladderMatch(replay, siteMatch) {
    if (replay.season && replay.match_id) {
      return { id: replay.match_id, bots: [fighterName(replay, "a"), fighterName(replay, "b")] };
    }
    if (siteMatch && siteMatch.id === replay.match_id) return siteMatch;
    return null;
  }

  // A ranked ladder match links back to the ladder's pages, which sit at the
  // root of the same site. Names and ids go through encodeURIComponent and
  // textContent only.
  function showLadderLinks(replay, siteMatch) {
    const nav = $("ladder-links");
    const ladder = ladderMatch(replay, siteMatch);
    if (!ladder) {
      nav.hidden = true;
      return;
    }
    $("link-match").href = "/matches/" + encodeURIComponent(ladder.id);
    ["a", "b"].forEach((side, i) => {
      const link = $("link-bot-" + side);
      link.textContent = ladder.bots[i];
      link.href = "/bots/" + encodeURIComponent(ladder.bots[i]);
    });
    nav.hidden = false;
  }

  // A fork names its parent and the first exchange it played anew. The
  // parent's viewer sits beside this one on a replay service
  // (`…/replays/{parent}/view`), opened at the same exchange; elsewhere (a
  // `?src=` file) the parent is named without a link.
  function showFork(replay, url) {
    const note = $("fork-note");
    const fork = replay.fork;
    if (!fork || typeof fork.at !== "string" || typeof fork.parent_match_id !== "string") {
      note.hidden = true;
      return;
    }
    const parent = $("fork-parent");
    parent.textContent = clean(fork.parent_match_id);
    const service = /^(.*)\/replays\/[^/]+$/.exec(url);
    if (service) {
      parent.href = service[1] + "/replays/" + encodeURIComponent(fork.parent_match_id) + "/view#" +
        encodeURIComponent(fork.at);
    } else {
      parent.removeAttribute("href");
    }
    const point = $("fork-point");
    point.textContent = fork.at;
    point.href = "#" + encodeURIComponent(fork.at);
    const swapped = Array.isArray(fork.swapped) ? fork.swapped.filter((side) => side === "a" || side === "b") : [];
    $("fork-swapped").textContent = swapped.length === 0 ? "; the same bots play on from there"
      : "; from there " + swapped.map((side) => side.toUpperCase() + " is " + clean(fighterName(replay, side))).join(", ");
    note.hidden = false;
  }

  function winnerText(replay, winner) {
    if (winner === "a" || winner === "b") return fighterName(replay, winner) + " wins";
    return "draw";
  }

  function roundResultText(replay, number, result) {
    if (result.winner !== "a" && result.winner !== "b") {
      return "Round " + number + ": drawn" + (result.by === "ko" ? " (both knocked out)" : " on the cards");
    }
    return "Round " + number + ": " + winnerText(replay, result.winner) + " " + (ROUND_ENDS[result.by] || "by " + result.by);
  }

  // Damage each fighter dealt in one exchange, [A, B], counted exactly as the
  // tape counts it (referee/src/render.rs, `exchange_line`): what A dealt is
  // what B took, after multipliers.
  function dealt(exchange) {
    return [exchange.b.damage_taken, exchange.a.damage_taken];
  }

  // As the tape prints it: "→ 6", nothing when no damage was dealt.
  function dealtText(damage) {
    return damage > 0 ? "→ " + damage : "";
  }

  // Control characters (a hostile replay's terminal escapes) as spaces, as on
  // the tape; the text itself is always set with textContent, never as HTML.
  function clean(text) {
    return String(text).replace(/[\u0000-\u001f\u007f-\u009f]/g, " ").trimEnd();
  }

  // Frame 0 is the opening bell; frame i is the state after the i-th exchange.
  function buildFrames(replay) {
    const start = RULESETS[replay.ruleset] || { hp: 160, stamina: 100 };
    const frames = [{ round: 1, exchange: 0, a: null, b: null, hp: [start.hp, start.hp],
      stamina: [start.stamina, start.stamina], roundResult: null, roundIndex: -1, roundsDone: 0 }];
    let roundsDone = 0;
    (replay.rounds || []).forEach((round, roundIndex) => {
      const exchanges = round.exchanges || [];
      exchanges.forEach((exchange, index) => {
        // A live round in progress has no result yet: its last exchange so far
        // does not end it.
        const ends = index === exchanges.length - 1 && !!round.result;
        if (ends) roundsDone += 1;
        frames.push({
          round: round.number,
          exchange: exchange.number,
          a: exchange.a,
          b: exchange.b,
          hp: [exchange.a.hp, exchange.b.hp],
          stamina: [exchange.a.stamina, exchange.b.stamina],
          dealt: dealt(exchange),
          firstOfRound: index === 0,
          roundResult: ends ? round.result : null,
          roundIndex,
          roundsDone,
        });
      });
    });
    return { frames, start };
  }

  function renderAction(container, side, damage) {
    container.replaceChildren();
    if (!side) {
      container.appendChild(el("span", "muted", "—"));
      return;
    }
    container.appendChild(el("span", "move", side.exhausted ? side.action + " (exhausted)" : side.action));
    appendBadges(container, side);
    if (damage > 0) container.appendChild(el("span", "damage", dealtText(damage)));
    if (side.tokens > 0) container.appendChild(el("div", "muted", side.tokens + " tokens"));
  }

  function appendBadges(container, side) {
    if (side.source && side.source !== "bot") {
      const badge = el("span", "badge sub", "substituted: " + (SUBSTITUTIONS[side.source] || side.source));
      badge.dataset.source = side.source;
      container.appendChild(badge);
    }
    if (side.restarted) {
      const badge = el("span", "badge restart", "↺ restarted");
      badge.title = "started afresh after an earlier failure: its memory of the match is lost";
      container.appendChild(badge);
    }
    if (side.exhausted) container.appendChild(el("span", "badge exh", "exhausted"));
    if (side.staggered) container.appendChild(el("span", "badge stag", "staggered"));
  }

  // What one model call cost, as the line under the exchange says it.
  function callText(call) {
    let text = "model " + clean(call.model || "(none)") + " · " + call.prompt_tokens + "+" +
      call.completion_tokens + " tokens";
    if (call.outcome !== "ok") text += " · " + call.outcome;
    return text;
  }

  // The model calls of one side of one exchange: what the replay records
  // and, when the viewer has the transcript, what was said (the answer on
  // the line, the prompt folded under it).
  function callNotes(replay, frame, side, label) {
    const record = frame[side];
    const calls = record.calls || [];
    const said = replay.transcript ? replay.transcript[frame.round + ":" + frame.exchange + ":" + side] : null;
    return calls.map((call, index) => {
      const line = noteLine("call side-" + side, label, callText(call));
      const spoken = said && said[index];
      if (spoken && spoken.completion) {
        line.appendChild(el("span", "said", " “" + clean(spoken.completion).replace(/\s+/g, " ").trim() + "”"));
      }
      if (spoken && spoken.messages && spoken.messages.length > 0) {
        const prompt = el("details", "prompt");
        prompt.appendChild(el("summary", "", "prompt (" + spoken.messages.length + " message" +
          (spoken.messages.length === 1 ? "" : "s") + (spoken.truncated ? ", cut at the transcript's bounds" : "") + ")"));
        spoken.messages.forEach((message) => {
          const row = el("div", "message");
          row.appendChild(el("span", "role", clean(message.role) + ": "));
          row.appendChild(el("span", "", clean(message.content)));
          prompt.appendChild(row);
        });
        line.appendChild(prompt);
      }
      return line;
    });
  }

  // The substitution cause in full, for the line under the exchange.
  function reasonText(side) {
    const cause = SUBSTITUTIONS[side.source] || side.source;
    const reason = side.reason ? clean(side.reason).replace(/\s+/g, " ").trim() : "";
    return "substituted (" + cause + ")" + (reason ? ": " + reason : "");
  }

  function setBar(bar, value, max, isHp) {
    const percent = Math.max(0, Math.min(100, (value / max) * 100));
    bar.style.width = percent + "%";
    if (isHp) {
      bar.classList.toggle("ko", value <= 0);
      bar.classList.toggle("low", value > 0 && percent < 30);
    }
  }

  // The table rows of frame `index` (≥ 1): the round's heading before its first
  // exchange, the exchange, a row of causes and logs when there are any, and the
  // round's result after its last exchange.
  function frameRows(replay, frame, index) {
    const rows = [];
    const columns = 9;
    if (frame.firstOfRound) {
      const heading = el("tr", "round-head");
      const cell = el("th");
      cell.appendChild(el("span", "", "Round " + frame.round));
      cell.colSpan = columns;
      cell.scope = "colgroup";
      heading.appendChild(cell);
      rows.push(heading);
    }
    const id = "r" + frame.round + "e" + frame.exchange;
    if (replay.fork && replay.fork.at === id && id !== "r1e1") {
      const mark = el("tr", "fork-head");
      const cell = el("th", "", "Fork point " + id + ": from here the fork plays on");
      cell.colSpan = columns;
      cell.scope = "colgroup";
      mark.appendChild(cell);
      rows.push(mark);
    }
    const row = el("tr", "exchange");
    row.id = id;
    row.dataset.frame = String(index);
    const number = el("th", "num");
    number.scope = "row";
    const link = el("a", "", frame.round + "·" + frame.exchange);
    link.href = "#" + id;
    link.title = "Link to round " + frame.round + ", exchange " + frame.exchange;
    number.appendChild(link);
    row.appendChild(number);
    ["a", "b"].forEach((side, i) => {
      const record = frame[side];
      const action = el("td", "act side-" + side);
      action.appendChild(el("span", "move", record.action));
      appendBadges(action, record);
      row.appendChild(action);
      const damage = el("td", "dealt side-" + side, dealtText(frame.dealt[i]));
      damage.dataset.dealt = String(frame.dealt[i]);
      row.appendChild(damage);
    });
    ["a", "b"].forEach((side, i) => {
      row.appendChild(el("td", "hp side-" + side, String(frame.hp[i])));
      row.appendChild(el("td", "st side-" + side, String(frame.stamina[i])));
    });
    rows.push(row);

    const notes = [];
    ["a", "b"].forEach((side) => {
      const record = frame[side];
      const label = side.toUpperCase();
      if (record.source && record.source !== "bot") {
        notes.push(noteLine("reason side-" + side, label, reasonText(record)));
      }
      callNotes(replay, frame, side, label).forEach((note) => notes.push(note));
      (record.log || []).forEach((line) => notes.push(noteLine("log side-" + side, label, clean(line))));
      if (record.log_truncated) {
        notes.push(noteLine("log truncated side-" + side, label, "… log truncated (lines cut or dropped at the bounds)"));
      }
    });
    if (notes.length > 0) {
      const detail = el("tr", "detail");
      detail.dataset.frame = String(index);
      const cell = el("td");
      cell.colSpan = columns;
      const box = el("div", "notes");
      notes.forEach((note) => box.appendChild(note));
      cell.appendChild(box);
      detail.appendChild(cell);
      rows.push(detail);
    }
    if (frame.roundResult) {
      const end = el("tr", "round-end");
      const cell = el("td");
      cell.appendChild(el("span", "", roundResultText(replay, frame.round, frame.roundResult)));
      cell.colSpan = columns;
      end.appendChild(cell);
      rows.push(end);
    }
    return rows;
  }

  function noteLine(className, label, text) {
    const line = el("div", "note " + className);
    line.appendChild(el("span", "who", label + " │ "));
    line.appendChild(el("span", "text", text));
    return line;
  }

  // The HP and stamina chart up to frame `upTo`: y is the share of what a round
  // starts with (HP on the left axis, stamina on the right), x one step per
  // exchange of the whole match, a dashed line where each round begins. Each
  // round's lines start from the round's opening values.
  function drawChart(chart, frames, upTo, last, start) {
    // One unit of the drawing is one CSS pixel, so its text stays legible on
    // a phone as on a desktop.
    const width = Math.max(320, Math.round(chart.getBoundingClientRect().width) || 640);
    const height = width < 500 ? 200 : 240;
    const left = 34;
    const right = 52;
    const top = 12;
    const bottom = 24;
    const plotWidth = width - left - right;
    const plotHeight = height - top - bottom;
    const step = plotWidth / Math.max(last, 1);
    const x = (exchangeIndex) => left + exchangeIndex * step;
    const y = (share) => top + (1 - Math.max(0, Math.min(1, share))) * plotHeight;
    chart.replaceChildren();
    chart.setAttribute("viewBox", "0 0 " + width + " " + height);

    [0, 0.5, 1].forEach((share) => {
      chart.appendChild(svg("line", { class: "grid", x1: left, x2: width - right, y1: y(share), y2: y(share) }));
      const hp = svg("text", { class: "axis", x: left - 4, y: y(share) + 4, "text-anchor": "end" });
      hp.textContent = String(Math.round(start.hp * share));
      chart.appendChild(hp);
      const stamina = svg("text", { class: "axis", x: width - right + 4, y: y(share) + 4 });
      stamina.textContent = String(Math.round(start.stamina * share));
      chart.appendChild(stamina);
    });
    const hpLabel = svg("text", { class: "axis", x: left - 4, y: height - 6, "text-anchor": "end" });
    hpLabel.textContent = "HP";
    chart.appendChild(hpLabel);
    const staminaLabel = svg("text", { class: "axis", x: width - right + 4, y: height - 6 });
    staminaLabel.textContent = "stamina";
    chart.appendChild(staminaLabel);

    const series = [
      { key: "hp-a", pick: (f) => f.hp[0] / start.hp, value: (f) => f.hp[0], name: "A HP" },
      { key: "hp-b", pick: (f) => f.hp[1] / start.hp, value: (f) => f.hp[1], name: "B HP" },
      { key: "st-a", pick: (f) => f.stamina[0] / start.stamina, value: (f) => f.stamina[0], name: "A stamina" },
      { key: "st-b", pick: (f) => f.stamina[1] / start.stamina, value: (f) => f.stamina[1], name: "B stamina" },
    ];
    // The rounds reached so far, each with its frames up to `upTo`.
    const rounds = [];
    for (let index = 1; index <= upTo; index += 1) {
      const frame = frames[index];
      if (frame.firstOfRound || rounds.length === 0) rounds.push({ number: frame.round, first: index, frames: [] });
      rounds[rounds.length - 1].frames.push({ frame, index });
    }
    rounds.forEach((round) => {
      const boundary = x(round.first - 1);
      if (round.first > 1) {
        chart.appendChild(svg("line", { class: "round-boundary", x1: boundary, x2: boundary, y1: top, y2: top + plotHeight }));
      }
      const label = svg("text", { class: "round-label", x: boundary + 3, y: height - 6 });
      label.textContent = "R" + round.number;
      chart.appendChild(label);
      series.forEach((line) => {
        const points = [[boundary, y(1)]].concat(round.frames.map(({ index, frame }) =>
          [x(index - 0.5), y(line.pick(frame))]));
        chart.appendChild(svg("polyline", { class: "series " + line.key,
          points: points.map((p) => p[0].toFixed(1) + "," + p[1].toFixed(1)).join(" ") }));
      });
    });
    // The points last, above every line.
    rounds.forEach((round) => {
      round.frames.forEach(({ index, frame }) => {
        series.forEach((line) => {
          const point = svg("circle", { class: "point " + line.key, cx: x(index - 0.5).toFixed(1),
            cy: y(line.pick(frame)).toFixed(1), r: index === upTo ? 3.5 : 2.2,
            "data-round": frame.round, "data-exchange": frame.exchange, "data-value": line.value(frame) });
          const title = svg("title");
          title.textContent = "Round " + frame.round + " · exchange " + frame.exchange + ": " + line.name + " " + line.value(frame);
          point.appendChild(title);
          chart.appendChild(point);
        });
      });
    });
    chart.dataset.points = String(Math.max(0, upTo));
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
    // The ladder match the site beside this service knows (live pages).
    let siteMatch = null;
    // A `#r…e…` of a live match that has not reached that exchange yet: it is
    // shown when it arrives.
    let pendingHash = false;
    // The exchange a `#r…e…` opened stays on screen as a live match grows,
    // until the spectator moves.
    let pinned = false;
    // The frame a `#r…e…` opened, highlighted (also in rows rebuilt when the
    // match grows or its transcript arrives); -1 for none.
    let targeted = -1;
    // Table rows per frame, built when the match (re)arrives, attached only
    // up to the frame shown.
    let rowsByFrame = [];
    let shownRows = 0;
    const rounds = $("rounds");
    const scrub = $("scrub");
    const tbody = $("exchange-rows");
    const tableWrap = $("table-wrap");

    function showRows(upTo) {
      if (upTo < shownRows) {
        tbody.replaceChildren(...rowsByFrame.slice(1, upTo + 1).flat());
      } else {
        for (let frame = shownRows + 1; frame <= upTo; frame += 1) tbody.append(...rowsByFrame[frame]);
      }
      shownRows = upTo;
      tbody.querySelectorAll("tr.current").forEach((row) => row.classList.remove("current"));
      if (upTo > 0) {
        const row = rowsByFrame[upTo].find((candidate) => candidate.classList.contains("exchange"));
        row.classList.add("current");
        // Keep the current row in view inside the table's own scroll area
        // without moving the page.
        const rowTop = row.offsetTop;
        if (rowTop < tableWrap.scrollTop + 30 || rowTop + row.offsetHeight > tableWrap.scrollTop + tableWrap.clientHeight) {
          tableWrap.scrollTop = Math.max(0, rowTop - tableWrap.clientHeight / 2);
        }
      }
      $("table-empty").hidden = upTo > 0;
    }

    function show(next) {
      if (!replay) return;
      index = Math.max(0, Math.min(last, next));
      const frame = frames[index];
      ["a", "b"].forEach((side, i) => {
        $("hp-" + side + "-value").textContent = String(frame.hp[i]);
        $("stamina-" + side + "-value").textContent = String(frame.stamina[i]);
        setBar($("hp-" + side + "-bar"), frame.hp[i], startState.hp, true);
        setBar($("stamina-" + side + "-bar"), frame.stamina[i], startState.stamina, false);
        renderAction($("action-" + side), frame[side], index > 0 ? frame.dealt[i] : 0);
      });
      $("frame-label").textContent = index === 0
        ? (live && last === 0 ? "Opening bell · waiting for the first exchange" : "Opening bell")
        : "Round " + frame.round + " · exchange " + frame.exchange + " (" + index + "/" + last + ")";
      $("round-result").textContent = frame.roundResult ? roundResultText(replay, frame.round, frame.roundResult) : "";
      // Only the rounds finished by this frame are listed at all.
      const done = (replay.rounds || []).slice(0, frame.roundsDone);
      rounds.replaceChildren(...done.map((round) => el("li", "reached", roundResultText(replay, round.number, round.result))));
      const result = $("match-result");
      result.hidden = index !== last || !replay.result;
      if (result.hidden) {
        result.textContent = "";
      } else {
        const r = replay.result;
        result.textContent = "Match: " + winnerText(replay, r.winner) + " (rounds " + r.round_wins[0] + "–" +
          r.round_wins[1] + ", damage " + r.damage[0] + "–" + r.damage[1] + ")";
      }
      showRows(index);
      drawChart($("chart"), frames, index, last, startState);
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

    // `#r2e7`: round 2, exchange 7. Shows that frame, scrolls its row into view
    // and highlights it. False when the match has no such exchange (yet).
    // `#start`: the opening bell, to play the match without spoilers.
    function goToHash() {
      if (location.hash === "#start" && replay) {
        pause();
        show(0);
        targeted = -1;
        highlightTarget();
        document.body.dataset.target = "start";
        return true;
      }
      const match = /^#r(\d+)e(\d+)$/.exec(location.hash);
      if (!match || !replay) return false;
      const [round, exchange] = [Number(match[1]), Number(match[2])];
      const target = frames.findIndex((frame, i) => i > 0 && frame.round === round && frame.exchange === exchange);
      if (target < 0) return false;
      pause();
      show(target);
      pinned = true;
      targeted = target;
      highlightTarget();
      const row = $(match[0].slice(1));
      if (row) row.scrollIntoView({ block: "center" });
      document.body.dataset.target = match[0].slice(1);
      return true;
    }

    // What the spectator does with the controls; it unpins a linked exchange.
    const moveTo = (frame) => { pinned = false; pause(); show(frame); };
    $("btn-play").onclick = () => { pinned = false; if (timer === null) play(); else pause(); };
    $("btn-back").onclick = () => moveTo(index - 1);
    $("btn-forward").onclick = () => moveTo(index + 1);
    $("btn-start").onclick = () => moveTo(0);
    $("btn-end").onclick = () => moveTo(last);
    $("speed").onchange = () => { if (timer !== null) play(); };
    scrub.oninput = () => moveTo(Number(scrub.value));

    // Marks the linked exchange's rows (`targeted`), and only those.
    function highlightTarget() {
      tbody.querySelectorAll("tr.target").forEach((row) => row.classList.remove("target"));
      (rowsByFrame[targeted] || []).forEach((row) => {
        if (row.classList.contains("exchange") || row.classList.contains("detail")) row.classList.add("target");
      });
    }

    // Tries the page's `#r…e…` now; one the match has not reached stays pending.
    function followHash() {
      pendingHash = !goToHash() && /^#r\d+e\d+$/.test(location.hash);
    }

    window.addEventListener("hashchange", followHash);
    window.addEventListener("resize", () => { if (replay) drawChart($("chart"), frames, index, last, startState); });
    document.addEventListener("keydown", (event) => {
      if (event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
      const actions = { " ": () => $("btn-play").click(), ArrowLeft: () => $("btn-back").click(),
        ArrowRight: () => $("btn-forward").click(), Home: () => $("btn-start").click(), End: () => $("btn-end").click() };
      if (actions[event.key]) { event.preventDefault(); actions[event.key](); }
    });

    // `isLive`: the match is still being played (no signature, no result yet).
    // The first match given is shown at its last exchange (a finished match
    // whole, a live one at its newest), then wherever `#…` points.
    function setReplay(next, url, isLive) {
      const first = replay === null;
      const following = first || (!pinned && index === last && timer === null);
      replay = next;
      live = isLive;
      ({ frames, start: startState } = buildFrames(replay));
      last = frames.length - 1;
      rowsByFrame = frames.map((frame, i) => (i === 0 ? [] : frameRows(replay, frame, i)));
      tbody.replaceChildren();
      shownRows = 0;

      $("title").textContent = fighterName(replay, "a") + " vs " + fighterName(replay, "b");
      $("meta").textContent = [replay.class, "ruleset " + replay.ruleset,
        replay.seed !== undefined ? "seed " + replay.seed : null,
        replay.season ? "season " + replay.season : null, replay.accepted_at].filter(Boolean).join(" · ");
      $("raw-link").href = url;
      showLadderLinks(replay, siteMatch);
      showFork(replay, url);
      if (isLive) setBadge("live", "live", "");
      $("name-a").textContent = fighterName(replay, "a");
      $("name-b").textContent = fighterName(replay, "b");
      $("col-a").textContent = "A = " + fighterName(replay, "a");
      $("col-b").textContent = "B = " + fighterName(replay, "b");
      scrub.max = String(last);

      $("status").hidden = true;
      $("arena").hidden = false;
      $("exchanges-section").hidden = false;
      show(following ? last : index);
      document.body.dataset.frames = String(last);
      if (first || pendingHash) followHash();
      else if (targeted > 0) highlightTarget();
    }

    // The ladder match the site knows by this page's match id: its links back.
    function setSiteMatch(known) {
      siteMatch = known;
      if (replay) showLadderLinks(replay, siteMatch);
    }

    return { setReplay, setSiteMatch };
  }

  // The badge says "signed" only for a signature this browser checked against
  // the key the site publishes.
  function setBadge(state, text, title) {
    const badge = $("signed");
    badge.className = "badge sig-" + state;
    badge.textContent = text;
    badge.title = title;
    document.body.dataset.signature = state;
  }

  // RFC 8785 (JCS) canonical JSON of a parsed value: keys sorted by UTF-16
  // code units, no whitespace, strings and numbers as ECMAScript prints them
  // (the form replays/src/sign.rs signs).
  function canonical(value) {
    if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
    if (value !== null && typeof value === "object") {
      return "{" + Object.keys(value).sort().map((key) => JSON.stringify(key) + ":" + canonical(value[key])).join(",") + "}";
    }
    return JSON.stringify(value);
  }

  function base64Bytes(text) {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  }

  function sameBytes(x, y) {
    return x.length === y.length && x.every((byte, i) => byte === y[i]);
  }

  // Where the site that served `replayUrl` publishes its key: beside its
  // `/replays/` path, else at the site's root.
  function publicKeyUrl(replayUrl) {
    const path = new URL(replayUrl, location.href).pathname;
    const prefix = /^(.*)\/replays\/[^/]+$/.exec(path);
    return (prefix ? prefix[1] : "") + "/public-key";
  }

  // Checks the replay's ed25519 signature in the browser (WebCrypto) against
  // the key the site publishes at `GET /public-key`: "verified", "invalid"
  // (wrong key or a signature that does not match the content) or
  // "unverified" (the check could not be made here), with why.
  async function checkSignature(replay, replayUrl) {
    const signature = replay.signature;
    if (!signature) return { state: "unsigned", why: "" };
    const unverified = (why) => ({ state: "unverified", why });
    if (!(window.crypto && crypto.subtle)) return unverified("this page cannot use WebCrypto (it needs HTTPS or loopback)");
    if (signature.alg !== "ed25519") return unverified("unknown signature algorithm " + signature.alg);
    let published;
    try {
      const response = await fetch(publicKeyUrl(replayUrl), { headers: { Accept: "application/json" } });
      if (!response.ok) return unverified("the site publishes no key (" + response.status + ")");
      published = await response.json();
    } catch (error) {
      return unverified("cannot get the site's key: " + error);
    }
    if (!published || published.alg !== "ed25519" || typeof published.key !== "string") {
      return unverified("the site's key is not an ed25519 key");
    }
    let siteKey;
    let replayKey;
    let signatureBytes;
    try {
      siteKey = base64Bytes(published.key);
      replayKey = base64Bytes(signature.key);
      signatureBytes = base64Bytes(signature.sig);
    } catch (_) {
      return { state: "invalid", why: "the signature or a key is not base64" };
    }
    if (!sameBytes(siteKey, replayKey)) {
      return { state: "invalid", why: "signed by key " + signature.key + ", not by this site's key " + published.key };
    }
    let key;
    try {
      key = await crypto.subtle.importKey("raw", siteKey, { name: "Ed25519" }, false, ["verify"]);
    } catch (error) {
      return unverified("this browser cannot check ed25519 signatures (" + error.name + ")");
    }
    const unsigned = Object.assign({}, replay);
    delete unsigned.signature;
    const bytes = new TextEncoder().encode(canonical(unsigned));
    const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, signatureBytes, bytes);
    return ok ? { state: "verified", why: published.key } : { state: "invalid", why: "the signature does not match the replay's content" };
  }

  async function showSignature(replay, url) {
    if (!replay.signature) return setBadge("unsigned", "unsigned", "");
    setBadge("checking", "signature present, not verified", "checking the signature…");
    let verdict;
    try {
      verdict = await checkSignature(replay, url);
    } catch (error) {
      verdict = { state: "unverified", why: String(error) };
    }
    if (verdict.state === "verified") {
      setBadge("verified", "signed", "ed25519 signature checked in this browser against this site's key " + verdict.why);
    } else if (verdict.state === "invalid") {
      setBadge("invalid", "signature invalid", verdict.why);
    } else {
      setBadge("unverified", "signature present, not verified", verdict.why);
    }
  }

  function fail(message) {
    $("status").hidden = false;
    $("status").textContent = message;
    document.body.dataset.state = "error";
  }

  // The transcript's calls by "round:exchange:side", from a
  // duel-transcript/1 document of this match.
  function transcriptIndex(transcript, matchId) {
    const index = {};
    if (!transcript || transcript.format !== "duel-transcript/1" || transcript.match_id !== matchId) return null;
    (transcript.decisions || []).forEach((decision) => {
      index[decision.round + ":" + decision.exchange + ":" + decision.fighter] = decision.calls || [];
    });
    return index;
  }

  // The transcript beside a replay, where the service offers one (`referee
  // local --watch` to the bot's author; a ladder once it reveals them):
  // `{replay URL}/transcript`. None is not an error.
  async function loadTranscript(viewer, replay, url) {
    if (!/\/replays\/[^/?]+$/.test(url)) return;
    try {
      const response = await fetch(url + "/transcript", { headers: { Accept: "application/json" } });
      if (!response.ok) return;
      const index = transcriptIndex(await response.json(), replay.match_id);
      if (!index) return;
      replay.transcript = index;
      document.body.dataset.transcript = "shown";
      viewer.setReplay(replay, url, false);
    } catch (_) {
      // No transcript: the replay alone is shown.
    }
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
      await showSignature(replay, url);
      await loadTranscript(viewer, replay, url);
    } catch (error) {
      fail("Cannot load the replay: " + error);
    }
  }

  // The live feed's match on the ladder whose site is served beside this
  // service (Duel TV's "open in viewer", a ranked match in play): the site's
  // JSON twin of the match page, `/api/matches/{id}`, names its season and
  // bots. Only those are taken from it (it holds the result once the match is
  // settled, and a live page must not spoil it). Elsewhere (`referee local
  // --watch`) there is no such page and no ladder link.
  async function findSiteMatch(viewer, src) {
    let known = null;
    try {
      const response = await fetch(src.site, { headers: { Accept: "application/json" } });
      const page = response.ok ? await response.json() : null;
      if (page && typeof page.id === "string" && typeof page.season === "string" &&
          typeof page.bot_a === "string" && typeof page.bot_b === "string") {
        known = { id: page.id, bots: [page.bot_a, page.bot_b] };
      }
    } catch (_) {
      // Not a ladder's site: no links to it.
    }
    if (known) viewer.setSiteMatch(known);
    document.body.dataset.siteMatch = known ? "found" : "none";
  }

  // Follows a live feed, then shows the finished (signed) replay. A reconnect
  // sends the whole history again from `start`, so the match is rebuilt then.
  function followLive(viewer, src) {
    findSiteMatch(viewer, src);
    const feed = new EventSource(src.live);
    let match = null;
    let received = 0;
    let over = false;
    const countEvent = () => { received += 1; document.body.dataset.liveEvents = String(received); };
    const data = (event) => JSON.parse(event.data);

    feed.addEventListener("start", (event) => {
      const start = data(event);
      match = { format: "duel-replay/1", match_id: start.match_id, ruleset: start.ruleset,
        class: start.class, seed: start.seed, fighters: start.fighters, rounds: [], result: null,
        transcript: {} };
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
      (step.transcript || []).forEach((decision) => {
        match.transcript[decision.round + ":" + decision.exchange + ":" + decision.fighter] = decision.calls || [];
      });
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
    if (src.refused !== undefined) {
      return fail("Refused ?src=" + src.refused + ": this viewer only loads replays from " +
        (location.origin === "null" ? "its own site" : location.origin) + ".");
    }
    const viewer = createViewer();
    if (src.live) followLive(viewer, src);
    else loadReplay(viewer, src.replay);
  }

  window.DuelViewer = { buildFrames, dealt, canonical, checkSignature, transcriptIndex };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", load);
  else load();
})();
