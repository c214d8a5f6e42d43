// Notes anchored to text on the trace page (issue 13 item 3; explorer/trace_anchors.py).
//
// The page carries its anchored notes as data (JSON in #anchor-notes's data-notes, inside the
// labels-and-comments card): each with its block, the text it covers as stored (`quote`)
// and where that starts as a fraction of the text (`hint`). This script finds the quote in
// the block as drawn (the occurrence nearest the hint; white space compared loosely, as
// Markdown folds it), highlights it with the DOM Range API, and writes the note beside the
// block. Selecting text in a block offers "Comment": a small form that htmx posts; the
// server turns the selection into an Explorer address (traces/anchors.py).
//
// Why a script and not htmx alone: htmx sends requests and swaps the HTML it gets back,
// but it cannot read a text selection (window.getSelection, its Range) nor mark up text
// the server drew, and the page must not re-render every block to show a highlight. So
// this script does only those two things; the comment itself goes through htmx.
//
// Everything a note holds (comment, address, extra_metadata, quote) is hostile: it is only
// ever set as textContent, never as HTML. No inline script (the CSP forbids it).
(() => {
  "use strict";

  const SKIP = ".show-all, .fold-mark, button, summary, aside.anchor-notes";

  function island() {
    const el = document.getElementById("anchor-notes");
    if (!el) return null;
    try {
      return JSON.parse(el.dataset.notes);
    } catch {
      return null;
    }
  }

  function bodyOf(article) {
    return article.querySelector(":scope > .block-body");
  }

  // --- Placing notes ------------------------------------------------------------------

  function clear() {
    document.querySelectorAll("mark.anchor-hl").forEach((mark) => {
      const parent = mark.parentNode;
      while (mark.firstChild) parent.insertBefore(mark.firstChild, mark);
      parent.removeChild(mark);
      parent.normalize();
    });
    document.querySelectorAll("aside.anchor-notes").forEach((aside) => aside.remove());
  }

  // How loosely a quote is compared with what the page drew, tried in this order: white
  // space runs as one space (Markdown folds lines); no white space (JSON is drawn
  // indented); no white space nor Markdown signs (the page drew `**bold**` as bold).
  const LOOSE = [
    { drop: null, quote: (q) => q.replace(/\s+/g, " ").trim() },
    { drop: /\s/, quote: (q) => q.replace(/\s+/g, "") },
    { drop: /[\s*_`~#>[\]]/, quote: (q) => q.replace(/\]\([^)\s]*\)/g, "").replace(/[\s*_`~#>[\]]/g, "") },
  ];

  // The body's text as a reader sees it, compared as `loose` says, and for each of its
  // characters the text node and offset it comes from.
  function flatten(body, loose) {
    const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT, {
      acceptNode: (node) =>
        node.parentElement.closest(SKIP) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
    });
    let text = "";
    const where = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const data = node.data;
      for (let i = 0; i < data.length; i++) {
        if (loose.drop && loose.drop.test(data[i])) continue;
        const space = /\s/.test(data[i]);
        if (space && text.endsWith(" ")) continue;
        text += space ? " " : data[i];
        where.push([node, i]);
      }
    }
    return { text, where };
  }

  // [start, end) of the quote's occurrence in `text` nearest `hint`; null if none.
  function find(text, quote, hint, loose) {
    const wanted = loose.quote(quote);
    if (!wanted) return null;
    let best = null;
    for (let at = text.indexOf(wanted); at >= 0; at = text.indexOf(wanted, at + 1)) {
      const distance = Math.abs(at / Math.max(1, text.length) - hint);
      if (best === null || distance < best.distance) best = { at, distance };
    }
    return best === null ? null : [best.at, best.at + wanted.length];
  }

  // Wrap [start, end) of the flattened body in <mark>s, one per text node it crosses.
  function highlight(flat, start, end, id) {
    const pieces = [];
    for (let i = start; i < end; i++) {
      const [node, offset] = flat.where[i];
      const last = pieces[pieces.length - 1];
      if (last && last.node === node) last.to = offset + 1;
      else pieces.push({ node, from: offset, to: offset + 1 });
    }
    for (const { node, from, to } of pieces) {
      const range = document.createRange();
      range.setStart(node, from);
      range.setEnd(node, to);
      const mark = document.createElement("mark");
      mark.className = "anchor-hl";
      mark.dataset.note = id;
      range.surroundContents(mark);
    }
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function noteCard(note, shown) {
    const card = el("div", "anchor-note");
    card.dataset.note = note.id;
    const head = el("div", "anchor-note-head small");
    head.append(el("b", "", note.author || "someone"), " ");
    head.append(el("code", "anchor-address", note.address));
    card.append(head);
    if (note.why) {
      const badge = el("span", "badge warn anchor-unplaced", "unresolvable");
      badge.title = note.why;
      card.append(badge, el("span", "small faint", " " + note.why));
    } else if (note.quote && !shown) {
      card.append(el("p", "small faint", "The text it covers is not in this view (folded or formatted): "));
      card.append(el("q", "anchor-quote", note.quote.slice(0, 200)));
    }
    if (note.comment) card.append(el("p", "anchor-comment", note.comment));
    if (note.extra_metadata) {
      const details = el("details", "anchor-meta");
      details.append(el("summary", "small", "extra_metadata"), el("pre", "text", note.extra_metadata));
      card.append(details);
    }
    return card;
  }

  function place() {
    const data = island();
    clear();
    if (!data) return;
    for (const note of data.notes) {
      if (!note.block) continue; // listed on the trace's card only
      const article = document.getElementById(note.block);
      const body = article && article.matches("[data-block]") ? bodyOf(article) : null;
      if (!body) continue; // its block is not on the page (yet)
      let shown = false;
      if (note.quote && !note.why) {
        for (const loose of LOOSE) {
          const flat = flatten(body, loose);
          const span = find(flat.text, note.quote, note.hint, loose);
          if (span) {
            highlight(flat, span[0], span[1], note.id);
            shown = true;
            break;
          }
        }
      }
      let aside = article.querySelector(":scope > aside.anchor-notes");
      if (!aside) {
        aside = el("aside", "anchor-notes");
        aside.setAttribute("aria-label", "Notes on this block");
        body.after(aside);
      }
      aside.append(noteCard(note, shown || !note.quote));
    }
  }

  // A note and its highlight light up together.
  function hot(event, on) {
    const target = event.target.closest && event.target.closest("[data-note]");
    if (!target) return;
    const id = target.dataset.note;
    document.querySelectorAll(`[data-note="${CSS.escape(id)}"]`).forEach((n) => n.classList.toggle("is-hot", on));
  }
  document.addEventListener("mouseover", (e) => hot(e, true));
  document.addEventListener("mouseout", (e) => hot(e, false));

  // --- Commenting on a selection ------------------------------------------------------

  let pending = null; // {block, quote, hint} of the current selection
  let button = null;
  let composer = null;

  function selected() {
    const sel = window.getSelection();
    if (!sel || sel.isCollapsed || !sel.rangeCount) return null;
    const range = sel.getRangeAt(0);
    const start = range.startContainer.parentElement && range.startContainer.parentElement.closest(".block-body");
    const end = range.endContainer.parentElement && range.endContainer.parentElement.closest(".block-body");
    if (!start || start !== end) return null; // within one block's text only
    const article = start.closest("article[data-block]");
    const quote = sel.toString();
    if (!article || !quote.trim()) return null;
    const before = document.createRange();
    before.selectNodeContents(start);
    before.setEnd(range.startContainer, range.startOffset);
    const hint = before.toString().length / Math.max(1, start.textContent.length);
    return { block: article.id, quote, hint, rect: range.getBoundingClientRect() };
  }

  function hideButton() {
    if (button) button.hidden = true;
  }

  function showButton(at) {
    if (!button) {
      button = el("button", "anchor-comment-button small", "Comment");
      button.type = "button";
      button.addEventListener("mousedown", (e) => e.preventDefault()); // keep the selection
      button.addEventListener("click", openComposer);
      document.body.append(button);
    }
    button.hidden = false;
    button.style.top = `${window.scrollY + at.bottom + 4}px`;
    button.style.left = `${window.scrollX + Math.max(0, at.right - 80)}px`;
  }

  function closeComposer() {
    if (composer) composer.remove();
    composer = null;
  }

  function field(form, name, value) {
    const input = el("input");
    input.type = "hidden";
    input.name = name;
    input.value = value;
    form.append(input);
  }

  function openComposer() {
    const data = island();
    if (!pending || !data) return;
    closeComposer();
    hideButton();
    composer = el("form", "anchor-composer card");
    composer.method = "post";
    composer.action = data.url;
    composer.setAttribute("hx-post", data.url);
    composer.setAttribute("hx-target", "#annotations");
    composer.setAttribute("hx-swap", "outerHTML");
    // One note a submit: a second press (or click) while the first is sent is dropped.
    composer.setAttribute("hx-sync", "this:drop");
    field(composer, "block", pending.block);
    field(composer, "quote", pending.quote);
    field(composer, "hint", String(pending.hint));
    composer.append(el("q", "anchor-quote", pending.quote.slice(0, 200)));
    const text = el("textarea");
    text.name = "comment";
    text.required = true;
    text.maxLength = 10000;
    text.rows = 3;
    text.placeholder = "Comment on the selected text (Ctrl+Enter saves)";
    text.setAttribute("aria-label", "Comment on the selected text");
    // Enter starts a new line of the comment; Ctrl+Enter (Cmd+Enter) saves it, as in
    // most comment boxes.
    text.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        if (!event.repeat) composer.requestSubmit();  // a held key saves once
      }
    });
    const save = el("button", "", "Comment");
    save.type = "submit";
    const cancel = el("button", "link-button small", "Cancel");
    cancel.type = "button";
    cancel.addEventListener("click", closeComposer);
    const error = el("span", "error small");
    error.id = "anchor-error";
    const tools = el("div", "anchor-composer-tools");
    tools.append(save, " ", cancel, " ", error);
    composer.append(text, tools);
    composer.style.top = `${window.scrollY + pending.rect.bottom + 4}px`;
    composer.style.left = `${window.scrollX + Math.max(0, pending.rect.left)}px`;
    document.body.append(composer);
    if (window.htmx) window.htmx.process(composer);
    text.focus();
  }

  function onSelect(event) {
    if (event.target.closest && event.target.closest(".anchor-comment-button, .anchor-composer")) return;
    const data = island();
    pending = data && data.can_comment ? selected() : null;
    if (pending) showButton(pending.rect);
    else hideButton();
  }
  document.addEventListener("mouseup", onSelect);
  document.addEventListener("keyup", (event) => {
    if (event.key === "Escape") {
      closeComposer();
      hideButton();
    } else if (event.shiftKey) {
      onSelect(event);
    }
  });

  // A saved note comes back as the card (with its island): hide the form, place the notes
  // again once htmx settles. The form goes only then: htmx announces the settle on it, and
  // a form already out of the page would not pass that on to the document.
  document.addEventListener("htmx:afterRequest", (event) => {
    const { elt, xhr } = event.detail;
    if (composer && elt === composer && xhr && xhr.status < 300) composer.hidden = true;
  });
  document.addEventListener("htmx:afterSettle", () => {
    place();
    if (composer && composer.hidden) closeComposer();
  });
  document.addEventListener("DOMContentLoaded", place);
})();
