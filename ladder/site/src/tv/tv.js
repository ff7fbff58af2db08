// Duel TV: fills <section id="tv"> (the home page's box, or the whole /tv
// page) with the match on air from the stream at data-events (server-sent
// events: start, exchange, end, across matches). On /tv it also keeps the
// queue (#tv-queue) and the playlist (#tv-playlist) current from /api/tv.
// Every broadcast replays a settled match: it is a first showing or a rerun,
// never live; why it was picked is said from what was known before the bell,
// and its result only once it ended.
// No framework, no inline style, no HTML parsed from data: text goes in through
// textContent, bar widths through element.style (the site's CSP allows both).
(function () {
  "use strict";

  // What a fighter starts each round with when /tv/now does not say (RULES-1.0.0.md).
  const DEFAULTS = { start_hp: 160, max_stamina: 100 };
  const ROUND_ENDS = { ko: "by knockout", hp: "on HP", stamina: "on stamina",
    damage: "on damage dealt", draw: "on the cards" };
  const SUBSTITUTIONS = { timeout: "timed out", budget: "out of tokens", fault: "fault" };
  const SIDES = ["a", "b"];

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function link(className, text, href) {
    const node = el("a", className, text);
    node.href = href;
    return node;
  }

  function botHref(name) { return "/bots/" + encodeURIComponent(name); }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
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

  function ratingText(rating, deviation) {
    if (typeof rating !== "number") return "new this season";
    if (typeof deviation !== "number") return String(Math.round(rating));
    return Math.round(rating) + " ± " + Math.round(deviation);
  }

  function build(root) {
    clear(root);
    const head = el("div", "tv-head");
    head.appendChild(el("span", "tv-badge", "Duel TV"));
    const label = el("span", "tv-label", "");
    label.hidden = true;
    head.appendChild(label);
    const status = el("span", "tv-status", "Tuning in…");
    head.appendChild(status);
    root.appendChild(head);
    const fighters = el("div", "tv-fighters");
    const sides = SIDES.map(function (side) {
      const box = el("div", "tv-fighter tv-side-" + side);
      const name = el("div", "tv-name", side === "a" ? "A" : "B");
      const rating = el("div", "tv-rating", "");
      const action = el("div", "tv-action", "–");
      const hp = bar("hp", "HP");
      const stamina = bar("stamina", "Stamina");
      const burn = el("div", "tv-burn", "");
      box.appendChild(name);
      box.appendChild(rating);
      box.appendChild(action);
      box.appendChild(hp.wrap);
      box.appendChild(stamina.wrap);
      box.appendChild(burn);
      fighters.appendChild(box);
      return { name: name, rating: rating, action: action, hp: hp, stamina: stamina, burn: burn };
    });
    root.appendChild(fighters);
    const score = el("p", "tv-score", "");
    const progress = el("p", "tv-progress", "");
    const result = el("p", "tv-result", "");
    result.setAttribute("aria-live", "polite");
    const links = el("p", "tv-links", "");
    const viewer = link("tv-link", "follow in the viewer", "#");
    const matchPage = link("tv-match", "match page", "#");
    links.appendChild(viewer);
    links.appendChild(el("span", "tv-sep", " · "));
    links.appendChild(matchPage);
    links.hidden = true;
    const log = el("ol", "tv-log", "");
    log.setAttribute("aria-label", "Exchanges so far");
    root.appendChild(score);
    root.appendChild(progress);
    root.appendChild(result);
    root.appendChild(links);
    root.appendChild(log);
    return { status: status, label: label, sides: sides, score: score, progress: progress,
      result: result, links: links, viewer: viewer, matchPage: matchPage, log: log };
  }

  // The queue and the playlist of the /tv page, from /api/tv.
  function refreshLists() {
    const queue = document.getElementById("tv-queue");
    const playlist = document.getElementById("tv-playlist");
    if (!queue || !playlist) return;
    fetch("/api/tv", { headers: { accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (page) {
        const airing = page.on_air && !page.on_air.ended ? page.on_air.match_id : null;
        clear(queue);
        (page.queue || []).forEach(function (next) {
          const item = el("li");
          fighterLinks(item, next.fighters);
          item.appendChild(el("span", "note", " · " + next.class + " · " + next.why_text));
          queue.appendChild(item);
        });
        toggleEmpty("tv-queue-empty", queue);
        clear(playlist);
        (page.playlist || []).forEach(function (aired) {
          const item = el("li");
          fighterLinks(item, aired.fighters);
          item.appendChild(el("span", "note", " · " + aired.class + (aired.rerun ? " · rerun" : "")));
          const result = aired.result;
          if (result && aired.match_id !== airing) {
            item.appendChild(el("br"));
            item.appendChild(result.winner ? el("span", "win", result.winner + " won") : el("span", "draw", "draw"));
            item.appendChild(document.createTextNode(" "));
            item.appendChild(el("span", "score", result.round_wins[0] + "–" + result.round_wins[1]));
            if (result.verdict_text) item.appendChild(el("span", "note", " · " + result.verdict_text));
            item.appendChild(document.createTextNode(" · "));
            item.appendChild(link("", "match", "/matches/" + encodeURIComponent(aired.match_id)));
            item.appendChild(document.createTextNode(" · "));
            item.appendChild(link("", "replay", "/replays/" + encodeURIComponent(aired.match_id) + "/view"));
          } else {
            item.appendChild(el("span", "note", " · on air again: result after it ends"));
          }
          playlist.appendChild(item);
        });
        toggleEmpty("tv-playlist-empty", playlist);
      })
      .catch(function () { /* the lists stay as they were */ });
  }

  function fighterLinks(item, fighters) {
    const names = (fighters || []).map(String);
    item.appendChild(link("", names[0] || "A", botHref(names[0] || "")));
    item.appendChild(document.createTextNode(" vs "));
    item.appendChild(link("", names[1] || "B", botHref(names[1] || "")));
  }

  function toggleEmpty(id, list) {
    const empty = document.getElementById(id);
    if (empty) empty.hidden = list.children.length > 0;
  }

  function start(root) {
    const view = build(root);
    let match = null;

    function nameOf(winner) {
      if (!match || winner === "draw") return null;
      return match.names[winner === "a" ? 0 : 1];
    }

    function burnText(i) {
      const parts = [match.tokens[i] + " tokens"];
      const causes = Object.keys(match.fallbacks[i]);
      if (causes.length === 0) {
        parts.push("no fallbacks");
      } else {
        const count = causes.reduce(function (sum, cause) { return sum + match.fallbacks[i][cause]; }, 0);
        parts.push(count + (count === 1 ? " fallback: " : " fallbacks: ") + causes.map(function (cause) {
          return match.fallbacks[i][cause] + " " + (SUBSTITUTIONS[cause] || cause);
        }).join(", "));
      }
      return parts.join(" · ");
    }

    function showScore() {
      view.score.textContent = "Rounds " + match.names[0] + " " + match.rounds[0] + "–" +
        match.rounds[1] + " " + match.names[1];
    }

    function reset(event) {
      const names = (event.fighters || []).map(function (f) { return String(f.name || "?"); });
      match = { id: String(event.match_id), names: [names[0] || "A", names[1] || "B"],
        hp: DEFAULTS.start_hp, stamina: DEFAULTS.max_stamina, over: false,
        tokens: [0, 0], fallbacks: [{}, {}], rounds: [0, 0] };
      root.dataset.matchId = match.id;
      root.dataset.state = "on-air";
      root.dataset.exchanges = "0";
      view.label.hidden = true;
      view.status.textContent = String(event.class || "");
      view.sides.forEach(function (side, i) {
        clear(side.name);
        side.name.appendChild(link("", match.names[i], botHref(match.names[i])));
        side.rating.textContent = "";
        side.action.textContent = "–";
        setBar(side.hp, match.hp, match.hp);
        setBar(side.stamina, match.stamina, match.stamina);
        side.burn.textContent = burnText(i);
      });
      showScore();
      view.progress.textContent = "Round 1";
      view.result.textContent = "";
      clear(view.log);
      view.viewer.href = "/live/" + encodeURIComponent(match.id) + "/view";
      view.viewer.textContent = "follow in the viewer";
      view.matchPage.href = "/matches/" + encodeURIComponent(match.id);
      view.matchPage.textContent = "match page (shows the result)";
      view.links.hidden = false;
      describe(match.id, 2);
      refreshLists();
    }

    // The bars' maxima, the ratings before the match, first showing or
    // rerun, and why it airs, from /tv/now; tried again once a second later
    // when it fails (the defaults stay).
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
          root.dataset.rerun = String(Boolean(onAir.rerun));
          view.label.textContent = onAir.rerun ? "rerun" : "first showing";
          view.label.hidden = false;
          view.sides.forEach(function (side, i) {
            side.rating.textContent = ratingText((onAir.ratings || [])[i], (onAir.deviations || [])[i]);
          });
          if (match.over) return;
          view.status.textContent = onAir.class + " · season " + onAir.season + " · " +
            (onAir.why_text || "");
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
      const entry = el("li", "tv-entry");
      entry.appendChild(el("span", "tv-when", "R" + event.round + "·" + record.number));
      [record.a, record.b].forEach(function (side, i) {
        if (!side) return;
        const viewSide = view.sides[i];
        const text = actionText(side);
        viewSide.action.textContent = text;
        setBar(viewSide.hp, side.hp, match.hp);
        setBar(viewSide.stamina, side.stamina, match.stamina);
        match.tokens[i] += Number(side.tokens) || 0;
        if (side.source && side.source !== "bot") {
          match.fallbacks[i][side.source] = (match.fallbacks[i][side.source] || 0) + 1;
        }
        viewSide.burn.textContent = burnText(i);
        entry.appendChild(el("span", "tv-side-" + SIDES[i], match.names[i] + ": " + text));
      });
      view.log.insertBefore(entry, view.log.firstChild);
      root.dataset.exchanges = String(Number(root.dataset.exchanges || "0") + 1);
      view.progress.textContent = "Round " + event.round + " · exchange " + record.number;
      const round = event.round_result;
      if (round) {
        const winner = nameOf(round.winner);
        if (round.winner === "a") match.rounds[0] += 1;
        if (round.winner === "b") match.rounds[1] += 1;
        showScore();
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
      view.status.textContent = "Ended · next match soon";
      view.viewer.href = "/replays/" + encodeURIComponent(match.id) + "/view";
      view.viewer.textContent = "open in viewer (replay)";
      view.matchPage.textContent = "match page";
      root.dataset.state = "ended";
      match.over = true;
      refreshLists();
    }

    const feed = new EventSource(root.dataset.events || "/tv/events");
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
