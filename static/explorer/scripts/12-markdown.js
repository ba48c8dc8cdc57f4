
/* ---------- a module's documentation as Markdown: a small subset, built as DOM nodes ----------
   markdownView(text) -> <div class="doc markdown">. Headings (# … ######, shown two levels down: the
   page's own h1 and the tool's h2 stay above them), paragraphs, "-"/"*"/"+" and "1." lists, block
   quotes, fenced code, `inline code`, *emphasis*, **strong**, and [links](https://…) to http(s) only.
   Every piece of text goes in through textContent, never as HTML: a <script> or <img onerror> in the
   documentation stays text, and a link to any other scheme (javascript:, data:) stays text too. */
const MD_HEADING = /^(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
const MD_FENCE = /^[ \t]{0,3}(`{3,}|~{3,})/;
const MD_ITEM = /^[ \t]{0,3}([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;
const MD_QUOTE = /^[ \t]{0,3}>[ \t]?(.*)$/;
const MD_DEPTH = 8;  // block quotes nest at most this deep; deeper ones are plain text

/* Inline spans: the earliest match wins; a code span's content is never read as Markdown. */
const MD_INLINE = [
  { re: /`([^`]+)`/, make: (m) => el("code", { text: m[1] }) },
  { re: /\[([^\]\n]+)\]\(([^)\s]+)\)/, make: (m, depth) => markdownLink(m, depth) },
  { re: /\*\*(?=\S)([\s\S]*?\S)\*\*/, make: (m, depth) => el("strong", {}, markdownInline(m[1], depth + 1)) },
  { re: /__(?=\S)([\s\S]*?\S)__/, make: (m, depth) => el("strong", {}, markdownInline(m[1], depth + 1)) },
  { re: /\*(?=[^\s*])([^*]*?[^\s*])?\*/, make: (m, depth) => el("em", {}, markdownInline(m[0].slice(1, -1), depth + 1)) },
  { re: /(?<![\w])_(?=[^\s_])([^_]*?[^\s_])?_(?![\w])/, make: (m, depth) => el("em", {}, markdownInline(m[0].slice(1, -1), depth + 1)) },
];

function markdownLink(match, depth) {
  let url = null;
  try { url = new URL(match[2]); } catch (e) { url = null; }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) return match[0];  // shown as written
  return el("a", { href: url.href, target: "_blank", rel: "noopener noreferrer" }, markdownInline(match[1], depth + 1));
}

function markdownInline(text, depth) {
  const out = [];
  let rest = String(text);
  while (rest) {
    let best = null;
    if ((depth || 0) < MD_DEPTH) {
      for (const rule of MD_INLINE) {
        const m = rule.re.exec(rest);
        if (m && (!best || m.index < best.m.index)) best = { m, rule };
      }
    }
    if (!best) { out.push(rest); break; }
    if (best.m.index) out.push(rest.slice(0, best.m.index));
    out.push(best.rule.make(best.m, depth || 0));
    rest = rest.slice(best.m.index + best.m[0].length);
  }
  return out;
}

function markdownBlocks(lines, depth) {
  const blocks = [];
  let i = 0;
  const paragraph = [];
  const flush = () => {
    if (paragraph.length) blocks.push(el("p", {}, markdownInline(paragraph.join(" "), 0)));
    paragraph.length = 0;
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = MD_FENCE.exec(line);
    const heading = MD_HEADING.exec(line);
    const item = MD_ITEM.exec(line);
    const quote = depth < MD_DEPTH ? MD_QUOTE.exec(line) : null;
    if (fence) {
      flush();
      const code = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) code.push(lines[i]);
      i++;  // the closing fence (or the end of the text)
      blocks.push(el("pre", { class: "code" }, el("code", { text: code.join("\n") })));
    } else if (heading) {
      flush();
      blocks.push(el("h" + Math.min(6, heading[1].length + 2), {}, markdownInline(heading[2], 0)));
      i++;
    } else if (item) {
      flush();
      const ordered = /\d/.test(item[1]);
      const list = el(ordered ? "ol" : "ul", {});
      if (ordered && parseInt(item[1], 10) !== 1) list.setAttribute("start", String(parseInt(item[1], 10)));
      while (i < lines.length) {
        const next = MD_ITEM.exec(lines[i]);
        if (!next || /\d/.test(next[1]) !== ordered) break;
        const text = [next[2]];
        // Indented lines that follow continue the item.
        for (i++; i < lines.length && /^[ \t]+\S/.test(lines[i]) && !MD_ITEM.exec(lines[i]); i++) text.push(lines[i].trim());
        list.append(el("li", {}, markdownInline(text.join(" "), 0)));
      }
      blocks.push(list);
    } else if (quote) {
      flush();
      const inner = [];
      for (; i < lines.length; i++) {
        const q = MD_QUOTE.exec(lines[i]);
        if (!q) break;
        inner.push(q[1]);
      }
      blocks.push(el("blockquote", {}, markdownBlocks(inner, depth + 1)));
    } else if (!line.trim()) {
      flush();
      i++;
    } else {
      paragraph.push(line.trim());
      i++;
    }
  }
  flush();
  return blocks;
}

function markdownView(text) {
  return el("div", { class: "doc markdown" }, markdownBlocks(String(text || "").split(/\r\n|\r|\n/), 0));
}
