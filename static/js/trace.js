// The trace page: keyboard navigation, permalinks, help overlay.
// No inline script anywhere (CSP); everything hangs off data- attributes and classes.
(() => {
  "use strict";

  function init() {
    const page = document.querySelector("[data-trace-page]");
    if (!page) return;
    const help = document.getElementById("keys-help");
    let current = null;

    const blocks = () => Array.from(document.querySelectorAll("#rows [data-block]"));
    const stickyOffset = () => {
      const heads = document.querySelector(".lane-heads");
      return heads ? heads.getBoundingClientRect().height : 0;
    };

    function setCurrent(el, { scroll = true, updateHash = true } = {}) {
      if (current) current.classList.remove("is-current");
      current = el;
      if (!el) return;
      el.classList.add("is-current");
      if (scroll) {
        const rect = el.getBoundingClientRect();
        const top = stickyOffset();
        const fits = rect.top >= top && rect.bottom <= window.innerHeight;
        if (!fits) el.scrollIntoView({ block: "start", behavior: "auto" });
      }
      el.focus({ preventScroll: true });
      if (updateHash && el.id) {
        history.replaceState(history.state, "", "#" + el.id);
      }
    }

    function firstVisible(list) {
      const top = stickyOffset();
      return list.find((el) => el.getBoundingClientRect().bottom > top + 4) || list[0];
    }

    function move(step) {
      const list = blocks();
      if (!list.length) return;
      let index = current ? list.indexOf(current) : -1;
      if (index < 0) {
        setCurrent(firstVisible(list));
        return;
      }
      index += step;
      if (index >= list.length) {
        // Past the last loaded block: bring the next chunk in.
        const more = document.querySelector(".more-rows");
        if (more) more.scrollIntoView({ block: "end" });
        return;
      }
      if (index < 0) index = 0;
      setCurrent(list[index]);
    }

    function follow(rel) {
      const link = document.querySelector(`.trace-nav a[rel="${rel}"]`);
      if (link) window.location.assign(link.href);
    }

    function toggleHelp(show) {
      if (!help) return;
      const open = show === undefined ? help.hidden : show;
      help.hidden = !open;
      if (open) {
        const close = help.querySelector("[data-close-help]");
        if (close) close.focus();
      }
    }

    function closeAll() {
      toggleHelp(false);
      document.querySelectorAll("details.drawer[open]").forEach((d) => { d.open = false; });
    }

    function clickIn(el, selector) {
      const target = el && el.querySelector(selector);
      if (target) target.click();
    }

    function isTyping(target) {
      if (!target) return false;
      const tag = target.tagName;
      return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
    }

    document.addEventListener("keydown", (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.key === "Escape") {
        if (isTyping(event.target)) event.target.blur();
        closeAll();
        return;
      }
      if (isTyping(event.target)) return;
      switch (event.key) {
        case "j": move(1); break;
        case "k": move(-1); break;
        case "J": follow("next"); break;
        case "K": follow("prev"); break;
        case "?": toggleHelp(); break;
        case "o":
          if (current) {
            const drawer = current.querySelector(":scope > details.drawer");
            if (drawer) drawer.open = !drawer.open;
          }
          break;
        case "e": clickIn(current, ":scope > .block-body > .show-all"); break;
        case "1": clickIn(current, ":scope > .block-head .thumb-up"); break;
        case "0": clickIn(current, ":scope > .block-head .thumb-down"); break;
        default: return;
      }
      event.preventDefault();
    });

    document.addEventListener("click", (event) => {
      const target = event.target instanceof Element ? event.target : null;
      if (!target) return;
      if (target.closest("[data-open-help]")) { toggleHelp(true); return; }
      if (target.closest("[data-close-help]") || target === help) { toggleHelp(false); return; }
      const permalink = target.closest("a.permalink");
      if (permalink) {
        event.preventDefault();
        const block = permalink.closest("[data-block]");
        setCurrent(block, { scroll: false });
        if (navigator.clipboard && window.isSecureContext) {
          const label = permalink.textContent;
          navigator.clipboard.writeText(window.location.href).then(() => {
            permalink.textContent = "copied";
            setTimeout(() => { permalink.textContent = label; }, 1200);
          }, () => {});
        }
        return;
      }
      const block = target.closest("#rows [data-block]");
      if (block && block !== current && !target.closest("a, button, input, summary")) {
        setCurrent(block, { scroll: false });
      }
    });

    // A permalink to a block that is not on the page yet: ask the server for the rows
    // around it (?focus=), which works however far down the trace it is.
    // `?focus=<block>` without `#<block>` (a link written by hand, an API's) opens there
    // too.
    // "Go to block n" (?block=n) and "Row n" (?row=n): the server opens the page at the
    // rows around it; here it is scrolled to and marked, wherever it is in the chunk.
    function jumpTarget(params) {
      const number = (params.get("block") || "").trim();
      if (/^[0-9]{1,12}$/.test(number)) {
        const title = `Permalink to block ${Number(number)}`;
        const link = [...document.querySelectorAll("#rows a.permalink")].find(
          (a) => a.title === title
        );
        const block = link && link.closest("[data-block]");
        return block ? block.id : "";
      }
      const row = (params.get("row") || "").trim();
      if (/^[0-9]{1,12}$/.test(row) && Number(row) >= 1) {
        const el = document.getElementById(`row-${Number(row) - 1}`);
        const block = el && el.querySelector("[data-block]");
        return block ? block.id : "";
      }
      return "";
    }

    function showHash() {
      const params = new URL(window.location.href).searchParams;
      const id =
        decodeURIComponent(window.location.hash.slice(1)) ||
        params.get("focus") ||
        jumpTarget(params) ||
        "";
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) return;
      const el = document.getElementById(id);
      if (el && el.matches("[data-block]")) {
        setCurrent(el, { updateHash: false, scroll: false });
        el.scrollIntoView({ block: "start" });
        el.classList.remove("is-target");
        void el.offsetWidth; // restart the animation
        el.classList.add("is-target");
        return;
      }
      if (!el && !id.startsWith("row-")) {
        const url = new URL(page.dataset.traceUrl, window.location.href);
        const here = new URL(window.location.href);
        if (here.searchParams.get("focus") === id) return; // the server did not find it
        url.searchParams.set("focus", id);
        url.hash = id;
        window.location.replace(url.toString());
      }
    }
    window.addEventListener("hashchange", showHash);
    showHash();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
