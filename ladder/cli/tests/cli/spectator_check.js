// What a spectator would see wrong on the page in front of them, as a list of
// sentences (empty when nothing is). Evaluated in the page by
// site_browser.rs as `(<this function>)("site" | "viewer")`: the argument
// names whose header the page must wear. Three kinds of check:
//
// - overlapping text: the boxes of every visible text node (one per line
//   fragment, from Range.getClientRects; an SVG label's own box), cut to
//   what their scroll boxes show, compared pairwise: two texts of different
//   nodes sharing more than 2 px each way overlap, unless a sticky header
//   with a background lies over one of them there (the viewer's table
//   head over the rows scrolled beneath it);
// - clipping: text cut by an ancestor that hides its overflow (overflow
//   hidden or clip, an ellipsis) rather than scrolling it, text running past
//   the screen's left or right edge outside any scroll box, a page wider than
//   the screen;
// - empty states: a main without text, "undefined", "NaN", "null" or
//   "[object …]" in the text, a raw JSON body, a page without its header, a
//   table without a row, a chart without a point.
(expect) => {
  const problems = [];
  const slack = 2;
  const screen = document.documentElement.clientWidth;
  const label = (el) => {
    let text = el.tagName.toLowerCase();
    if (el.id) text += "#" + el.id;
    const classes = el.getAttribute("class");
    if (classes && classes.trim()) text += "." + classes.trim().split(/\s+/).join(".");
    return text;
  };
  const quote = (text) => JSON.stringify(text.replace(/\s+/g, " ").trim().slice(0, 60));
  const box = (r) =>
    `(${Math.round(r.left)},${Math.round(r.top)} ${Math.round(r.right - r.left)}×${Math.round(r.bottom - r.top)})`;

  // An element's clipping boxes, itself included, outermost first: each
  // element below <body> whose overflow is not visible, with its padding
  // box and whether it scrolls (auto, scroll) or cuts (hidden, clip) on
  // each axis. <html> and <body> hand their overflow to the screen.
  const chains = new Map();
  const clipChain = (el) => {
    if (!el || el === document.body || el === document.documentElement) return [];
    if (chains.has(el)) return chains.get(el);
    const chain = clipChain(el.parentElement).slice();
    const style = getComputedStyle(el);
    const svgViewport = el instanceof SVGSVGElement;
    if (style.overflowX !== "visible" || style.overflowY !== "visible") {
      const outer = el.getBoundingClientRect();
      const inner =
        svgViewport || !(el instanceof HTMLElement)
          ? outer
          : {
              left: outer.left + el.clientLeft,
              top: outer.top + el.clientTop,
              right: outer.left + el.clientLeft + el.clientWidth,
              bottom: outer.top + el.clientTop + el.clientHeight,
            };
      const scrolls = (value) => value === "auto" || value === "scroll";
      chain.push({
        el,
        rect: inner,
        scrollsX: !svgViewport && scrolls(style.overflowX),
        scrollsY: !svgViewport && scrolls(style.overflowY),
      });
    }
    chains.set(el, chain);
    return chain;
  };

  // Every visible text fragment, cut to its scroll boxes.
  const texts = [];
  const cutOff = [];
  const skip = "script, style, noscript, template, title, head, select, option, datalist";
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || !node.textContent.trim() || el.closest(skip)) continue;
    if (!el.checkVisibility({ opacityProperty: true, visibilityProperty: true })) continue;
    let rects;
    if (el instanceof SVGElement) {
      rects = [el.getBoundingClientRect()];
    } else {
      range.selectNodeContents(node);
      rects = [...range.getClientRects()];
    }
    for (const rect of rects) {
      if (rect.width < 1 || rect.height < 1) continue;
      let r = { left: rect.left, top: rect.top, right: rect.right, bottom: rect.bottom };
      for (const clip of clipChain(el)) {
        const c = clip.rect;
        const outX = r.left < c.left - slack || r.right > c.right + slack;
        const outY = r.top < c.top - slack || r.bottom > c.bottom + slack;
        if ((outX && !clip.scrollsX) || (outY && !clip.scrollsY)) {
          const shown =
            Math.min(r.right, c.right) > Math.max(r.left, c.left) &&
            Math.min(r.bottom, c.bottom) > Math.max(r.top, c.top);
          // Partly outside a box that cuts is text cut in two; wholly
          // outside, a line cut off, unless the whole text is (a closed
          // panel hides it by design).
          if (shown) {
            problems.push(
              `clipped: ${quote(node.textContent)} in ${label(el)} ${box(r)} is cut by ${label(clip.el)} ${box(c)}`,
            );
          } else {
            cutOff.push({ node, el, r, clip: clip.el, c });
          }
        }
        r = {
          left: Math.max(r.left, c.left),
          top: Math.max(r.top, c.top),
          right: Math.min(r.right, c.right),
          bottom: Math.min(r.bottom, c.bottom),
        };
        if (r.right - r.left < 1 || r.bottom - r.top < 1) break;
      }
      if (r.right - r.left < 1 || r.bottom - r.top < 1) continue;
      if (r.right > screen + slack || r.left < -slack) {
        problems.push(
          `off screen: ${quote(node.textContent)} in ${label(el)} ${box(r)} runs past the screen's ${r.left < -slack ? "left" : "right"} edge (${screen} px)`,
        );
      }
      texts.push({ node, el, r });
    }
  }

  const told = new Set();
  for (const line of cutOff) {
    if (!told.has(line.node) && texts.some((shown) => shown.node === line.node)) {
      told.add(line.node);
      problems.push(
        `clipped: a line of ${quote(line.node.textContent)} in ${label(line.el)} ${box(line.r)} is hidden by ${label(line.clip)} ${box(line.c)}`,
      );
    }
  }

  // Text ending in an ellipsis, as well as text a box hides.
  for (const el of document.body.querySelectorAll("*")) {
    if (el instanceof HTMLElement && el.textContent.trim() && el.checkVisibility()) {
      const style = getComputedStyle(el);
      if (style.textOverflow === "ellipsis" && el.scrollWidth > el.clientWidth + 1) {
        problems.push(`clipped: ${quote(el.textContent)} in ${label(el)} ends in an ellipsis`);
      }
    }
  }
  // Against the layout viewport: a phone zooms out to show a page wider than
  // itself whole, and then its innerWidth is the page's.
  const wide = document.documentElement.scrollWidth;
  if (wide > screen) {
    problems.push(`the page is ${wide} px wide on a ${screen}-px screen`);
  }

  // Whether a sticky or fixed element with a background lies over `el` at
  // (x, y) on the screen.
  const covered = (el, x, y) => {
    const stack = document.elementsFromPoint(x, y);
    const at = stack.indexOf(el);
    for (const above of at < 0 ? [] : stack.slice(0, at)) {
      if (above.contains(el) || el.contains(above)) continue;
      const style = getComputedStyle(above);
      const opaque = !/^rgba\(.*, 0\)$|^transparent$/.test(style.backgroundColor);
      if ((style.position === "sticky" || style.position === "fixed") && opaque) return true;
    }
    return false;
  };

  // Overlaps, sweeping down the page.
  const start = window.scrollY;
  const pages = texts.map((t) => ({ ...t, r: { ...t.r, top: t.r.top + start, bottom: t.r.bottom + start } }));
  pages.sort((a, b) => a.r.top - b.r.top);
  const reported = new Set();
  for (let i = 0; i < pages.length; i++) {
    const a = pages[i];
    for (let j = i + 1; j < pages.length && pages[j].r.top < a.r.bottom - slack; j++) {
      const b = pages[j];
      if (a.node === b.node) continue;
      const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
      const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
      if (w <= slack || h <= slack) continue;
      const key = label(a.el) + " " + label(b.el);
      if (reported.has(key)) continue;
      const x = Math.max(a.r.left, b.r.left) + w / 2;
      const y = Math.max(a.r.top, b.r.top) + h / 2;
      window.scrollTo(0, Math.max(0, y - window.innerHeight / 2));
      const viewY = y - window.scrollY;
      if (covered(a.el, x, viewY) || covered(b.el, x, viewY)) continue;
      reported.add(key);
      problems.push(
        `overlap: ${quote(a.node.textContent)} in ${label(a.el)} ${box(a.r)} and ` +
          `${quote(b.node.textContent)} in ${label(b.el)} ${box(b.r)} share ${Math.round(w)}×${Math.round(h)} px`,
      );
    }
  }
  window.scrollTo(0, start);

  // Empty states, and what a template or script left unfilled.
  const main = document.querySelector("main");
  if (!main || !main.innerText.trim()) problems.push("empty: the page has no main text");
  const said = document.body.innerText;
  const hole = said.match(/.{0,30}(\bundefined\b|\bNaN\b|\bnull\b|\[object [A-Za-z]*\]).{0,30}/);
  if (hole) problems.push(`unfilled: the page says ${JSON.stringify(hole[0])}`);
  if (document.contentType !== "text/html" || /^\s*[[{]/.test(said)) {
    problems.push(`raw data: the page is ${document.contentType}: ${quote(said)}`);
  }
  if (expect === "site") {
    const brand = document.querySelector("header.top a.brand");
    if (!brand || brand.textContent.trim() !== "duel ladder" || !brand.checkVisibility()) {
      problems.push("no header: the site's header (duel ladder · TV · Seasons · Matches) is missing");
    }
  } else if (expect === "viewer") {
    const links = document.getElementById("ladder-links");
    if (document.body.dataset.state !== "ready" || !links || !links.checkVisibility()) {
      problems.push(`no header: the viewer is ${document.body.dataset.state}, its links to the ladder hidden`);
    }
  }
  for (const table of document.querySelectorAll("table")) {
    if (!table.checkVisibility()) continue;
    const rows = [...table.tBodies].flatMap((body) => [...body.rows]);
    if (!rows.some((row) => row.innerText.trim())) {
      problems.push(`empty: table ${label(table)} has no row`);
    }
  }
  for (const chart of document.querySelectorAll("figure svg")) {
    if (chart.checkVisibility() && !chart.querySelector("circle")) {
      problems.push(`empty: chart ${label(chart)} has no point`);
    }
  }
  return problems;
}
