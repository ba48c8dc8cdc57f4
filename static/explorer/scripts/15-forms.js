
/* ---------- the form engine: a JSON Schema becomes labelled controls, values and errors ----------
   buildForm(schema, {values}) -> { node, collect(), setErrors(errorsByPointer), values(), set(values) }.
   Every widget is { node, read(pointer, errors|null), set(value), mark(pointer, errors) }: read() returns
   the value (undefined = omitted) and, given an errors map, adds a message per JSON pointer; mark()
   shows (or clears) the messages beside the fields. Pointers are computed on each walk, so a reordered
   array item reports under its new index. */
function resolve(schema, root, depth) {
  let s = schema || {};
  for (let hops = 0; s.$ref && hops < 20; hops++) {
    const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(s.$ref);
    const target = match && root[match[1]] && root[match[1]][decodeURIComponent(match[2])];
    if (!target) break;
    const { $ref, ...rest } = s;
    s = { ...target, ...rest };
  }
  let nullable = false;
  const union = s.anyOf || s.oneOf;
  if (Array.isArray(union)) {
    const branches = union.filter((b) => !(b && b.type === "null"));
    nullable = branches.length < union.length;
    const { anyOf, oneOf, ...rest } = s;
    if (branches.length && branches.every((b) => b && "const" in b)) {
      // oneOf/anyOf of consts is how titled enums are written: a select with the titles.
      s = { ...rest, enum: branches.map((b) => b.const), enumTitles: branches.map((b) => b.title || null) };
    } else if (branches.length === 1) {
      const inner = resolve(branches[0], root, depth);
      s = { ...inner.schema, ...rest };
      nullable = nullable || inner.nullable;
    }
  }
  if ("const" in s && !Array.isArray(s.enum)) s = { ...s, enum: [s.const] };
  let type = s.type;
  if (Array.isArray(type)) {
    nullable = nullable || type.includes("null");
    const rest = type.filter((t) => t !== "null");
    type = rest.length === 1 ? rest[0] : undefined;
  }
  if (!type && s.properties) type = "object";
  if (!type && Array.isArray(s.enum)) type = "enum";
  return { schema: s, type, nullable };
}

const isScalar = (r) => ["string", "integer", "number", "boolean"].includes(r.type) || Array.isArray(r.schema.enum);
const LONG_NAME = /(description|body|content|prompt|message|notes?|comment|markdown|html|code|script|query|sql)$/i;
const FORMAT_INPUT = { date: "date", time: "time", email: "email", uri: "url", url: "url" };
const PLACEHOLDERS = { "date-time": "2026-01-31T12:00:00Z", date: "2026-01-31", time: "12:00:00", email: "name@example.com",
  uri: "https://example.com/", uuid: "00000000-0000-0000-0000-000000000000" };
const show = (v) => (typeof v === "string" ? v : JSON.stringify(v));
const pointerText = (pointer) => pointer.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~")).join(" › ") || "arguments";
const childPointer = (pointer, key) => pointer + "/" + String(key).replace(/~/g, "~0").replace(/\//g, "~1");

/* An error line under a field; the control (or group) points at it with aria-describedby. */
function errorSlot(targets, hintId) {
  const id = nextId() + "-error";
  const node = el("div", { class: "field-error", id, hidden: true });
  return {
    node,
    show(message, pointer) {
      node.textContent = message || "";
      node.hidden = !message;
      node.dataset.pointer = message ? pointer : "";
      for (const t of [].concat(typeof targets === "function" ? targets() : targets)) {
        if (message) t.setAttribute("aria-invalid", "true"); else t.removeAttribute("aria-invalid");
        const described = [hintId, message ? id : null].filter(Boolean).join(" ");
        if (described) t.setAttribute("aria-describedby", described); else t.removeAttribute("aria-describedby");
      }
    },
  };
}

/* ---- client-side validation of one scalar value against its schema ---- */
const FORMAT_CHECKS = {
  "date-time": (v) => /^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d(:\d\d(\.\d+)?)?([Zz]|[+-]\d\d:?\d\d)?$/.test(v) && !isNaN(Date.parse(v.slice(0, 10))),
  date: (v) => /^\d{4}-\d\d-\d\d$/.test(v) && !isNaN(Date.parse(v)),
  time: (v) => /^\d\d:\d\d(:\d\d(\.\d+)?)?([Zz]|[+-]\d\d:?\d\d)?$/.test(v),
  email: (v) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v),
  uri: (v) => { try { return Boolean(new URL(v).protocol); } catch (e) { return false; } },
  uuid: (v) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v),
};
FORMAT_CHECKS.url = FORMAT_CHECKS.uri;

function checkValue(value, s, type) {
  if (Array.isArray(s.enum) && !s.enum.some((x) => JSON.stringify(x) === JSON.stringify(value))) {
    return "Choose one of: " + s.enum.map(show).join(", ");
  }
  if (type === "integer" || type === "number") {
    if (typeof value !== "number" || !isFinite(value)) return "Enter a number";
    if (type === "integer" && !Number.isInteger(value)) return "Enter a whole number";
    if (s.minimum !== undefined && value < s.minimum) return "Must be at least " + s.minimum;
    if (s.maximum !== undefined && value > s.maximum) return "Must be at most " + s.maximum;
    if (typeof s.exclusiveMinimum === "number" && value <= s.exclusiveMinimum) return "Must be more than " + s.exclusiveMinimum;
    if (typeof s.exclusiveMaximum === "number" && value >= s.exclusiveMaximum) return "Must be less than " + s.exclusiveMaximum;
    if (s.multipleOf && Math.abs(value / s.multipleOf - Math.round(value / s.multipleOf)) > 1e-9) return "Must be a multiple of " + s.multipleOf;
  } else if (type === "string") {
    if (typeof value !== "string") return "Enter text";
    const length = [...value].length;
    if (s.minLength !== undefined && length < s.minLength) return `At least ${s.minLength} character${s.minLength === 1 ? "" : "s"}`;
    if (s.maxLength !== undefined && length > s.maxLength) return `At most ${s.maxLength} characters`;
    if (s.pattern) {
      let re = null;
      try { re = new RegExp(s.pattern, "u"); } catch (e) { re = null; }  // a pattern JS cannot read is left to the server
      if (re && !re.test(value)) return "Must match the pattern " + s.pattern;
    }
    if (s.format && FORMAT_CHECKS[s.format] && !FORMAT_CHECKS[s.format](value)) return "Not a valid " + s.format;
  } else if (type === "boolean" && typeof value !== "boolean") return "Choose true or false";
  return null;
}

/* datetime-local shows local wall time; the value sent is ISO 8601 with the browser's offset. */
const pad2 = (n) => String(Math.abs(n)).padStart(2, "0");
function localToIso(local) {
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d))?/.exec(local);
  if (!m) return local;
  const date = new Date(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0));
  const offset = -date.getTimezoneOffset();
  return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] || "00"}${offset < 0 ? "-" : "+"}${pad2(Math.trunc(offset / 60))}:${pad2(offset % 60)}`;
}
function isoToLocal(value) {
  if (typeof value !== "string") return "";
  if (/^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d(:\d\d)?$/.test(value)) return value.replace(/[t ]/, "T");
  const date = new Date(value);
  if (isNaN(date.getTime())) return "";
  return `${date.getFullYear()}-${pad2(date.getMonth() + 1)}-${pad2(date.getDate())}T${pad2(date.getHours())}:${pad2(date.getMinutes())}:${pad2(date.getSeconds())}`;
}

function buildField(name, schema, required, root, depth) {
  const r = resolve(schema, root, depth);
  const s = r.schema;
  const optional = !required;
  const id = nextId(), hintId = id + "-hint";
  const typeText = (Array.isArray(s.enum) ? "enum" : r.type || "any") + (s.format ? " · " + s.format : "") +
    (r.nullable ? " · nullable" : "");
  const examples = Array.isArray(s.examples) ? s.examples : s.example !== undefined ? [s.example] : [];
  const extra = [s.default !== undefined && s.default !== null && s.default !== "" ? "default: " + show(s.default) : "",
    examples.length ? "e.g. " + examples.slice(0, 3).map(show).join(", ") : ""].filter(Boolean).join(" · ");
  const reqMark = () => (required ? el("span", { class: "req", title: "required", text: "*" }) : el("span", { class: "meta", text: "optional" }));
  const hintText = [s.description, s.minimum !== undefined ? "min " + s.minimum : "",
    s.maximum !== undefined ? "max " + s.maximum : ""].filter(Boolean).join(" · ");
  const hint = hintText ? el("div", { class: "hint", id: hintId, text: hintText }) : null;
  const common = { id, "aria-describedby": hint ? hintId : null, "aria-required": required ? "true" : null, "data-path": name };

  if (r.type === "object" && s.properties && depth < 8) return objectField(name, s, required, root, depth, { id, hint, hintId, reqMark });
  if (r.type === "array" && depth < 8 && (s.items === undefined || typeof s.items === "object")) {
    const item = resolve(s.items || {}, root, depth);
    if (isScalar(item) || (item.type === "object" && item.schema.properties)) {
      return arrayField(name, s, item, required, root, depth, { id, hint, hintId, reqMark, extra });
    }
  }

  const head = el("div", { class: "field-head" }, el("label", { for: id, text: name }), reqMark(),
    el("span", { class: "meta", text: typeText }), extra ? el("span", { class: "meta", text: extra }) : null);
  let control, get, set, badInput = () => null;
  let widgetNode;
  const placeholder = examples.length && typeof examples[0] !== "object" ? String(examples[0]) : PLACEHOLDERS[s.format] || null;

  if (Array.isArray(s.enum) || (r.type === "boolean" && (r.nullable || (optional && s.default === undefined)))) {
    const values = Array.isArray(s.enum) ? s.enum : [true, false];
    const titles = s.enumTitles || s.enumNames || [];  // enumNames: the older elicitation spelling
    control = el("select", common);
    control.append(el("option", { value: "", text: required ? "— choose —" : "— not set —" }));
    values.forEach((v, i) => control.append(el("option", { value: String(i), text: titles[i] ? titles[i] + " (" + show(v) + ")" : show(v) })));
    get = () => (control.value === "" ? undefined : values[Number(control.value)]);
    set = (v) => { const i = values.findIndex((x) => JSON.stringify(x) === JSON.stringify(v)); control.value = i < 0 ? "" : String(i); };
  } else if (r.type === "boolean") {
    control = el("input", { ...common, type: "checkbox" });
    widgetNode = el("div", { class: "check" }, control, el("span", { class: "meta", text: "true when checked" }));
    get = () => control.checked;
    set = (v) => { control.checked = Boolean(v); };
  } else if (r.type === "integer" || r.type === "number") {
    control = el("input", { ...common, type: "number", min: s.minimum ?? s.exclusiveMinimum, max: s.maximum ?? s.exclusiveMaximum,
      step: r.type === "integer" ? "1" : "any", inputmode: r.type === "integer" ? "numeric" : "decimal", placeholder });
    get = () => (control.value.trim() === "" ? undefined : Number(control.value));
    set = (v) => { control.value = v === undefined || v === null ? "" : String(v); };
    badInput = () => (control.validity && control.validity.badInput ? "Enter a number" : null);
  } else if (r.type === "string" && s.format === "date-time") {
    control = el("input", { ...common, type: "datetime-local", step: "1", placeholder });
    // A value set from JSON (a default, saved or shared arguments) is sent back as written until edited:
    // the local-time control cannot show its offset or fractions.
    let original = null;
    get = () => {
      if (control.value === "") return undefined;
      if (original && original.shown === control.value) return original.value;
      return localToIso(control.value);
    };
    set = (v) => {
      control.value = v === undefined || v === null ? "" : isoToLocal(v);
      original = control.value && typeof v === "string" ? { shown: control.value, value: v } : null;
    };
    badInput = () => (control.validity && control.validity.badInput ? "Not a valid date and time" : null);
  } else if (r.type === "string") {
    const long = (s.maxLength || 0) > 200 || s.format === "textarea" || s["x-multiline"] || LONG_NAME.test(name);
    const type = FORMAT_INPUT[s.format] || (s.format === "password" || s.writeOnly ? "password" : "text");
    control = long ? el("textarea", { ...common, class: "prose", rows: 4, placeholder })
      : el("input", { ...common, type, placeholder: placeholder || s.pattern || null, step: type === "time" ? "1" : null,
        minlength: s.minLength, maxlength: s.maxLength, spellcheck: "false", autocomplete: type === "password" ? "off" : null });
    get = () => (control.value === "" ? undefined : control.value);
    set = (v) => { control.value = v === undefined || v === null ? "" : typeof v === "string" ? v : JSON.stringify(v); };
    badInput = () => (control.validity && control.validity.badInput ? "Not a valid " + s.format : null);
  } else {
    control = el("textarea", { ...common, rows: 4, spellcheck: "false",
      placeholder: r.type === "array" ? "[ … ] as JSON" : r.type === "object" ? "{ … } as JSON" : "any JSON value" });
    const parsed = () => {
      if (control.value.trim() === "") return {};
      try { return { value: JSON.parse(control.value) }; } catch (e) { return { problem: "Not valid JSON: " + e.message }; }
    };
    get = () => parsed().value;
    set = (v) => { control.value = v === undefined ? "" : JSON.stringify(v, null, 2); };
    badInput = () => parsed().problem || null;
  }
  const error = errorSlot(control, hint ? hintId : null);
  const node = el("div", { class: "field" }, head, widgetNode || control, hint, error.node);
  if (s.default !== undefined) set(s.default);
  return {
    node, set, control,
    read(pointer, errors) {
      const bad = badInput();
      const value = get();
      if (errors) {
        if (bad) errors[pointer] = bad;
        else if (value !== undefined) { const message = checkValue(value, s, r.type); if (message) errors[pointer] = message; }
      }
      return bad ? undefined : value;
    },
    mark(pointer, errors) { error.show(errors[pointer], pointer); },
  };
}

/* A nested object: a fieldset; when optional, an "include" checkbox reveals it and decides whether it is sent. */
function objectField(name, s, required, root, depth, parts) {
  const inner = buildObject(s, root, depth + 1);
  const include = required ? null : el("input", { type: "checkbox", id: parts.id + "-include", class: "include" });
  const legend = el("legend", {}, el("span", { class: "field-name", text: name }), " ", parts.reqMark());
  const box = el("fieldset", { id: parts.id, "data-path": name }, legend);
  if (include) {
    legend.append(" ", el("span", { class: "include-toggle" }, include, el("label", { for: include.id, text: "include " + name })));
  }
  const body = el("div", { class: "object-body" }, parts.hint, inner.node);
  const error = errorSlot(box, parts.hint ? parts.hintId : null);
  box.append(error.node, body);
  const sync = () => { if (include) body.hidden = !include.checked; };
  if (include) include.addEventListener("change", () => {
    sync();
    if (include.checked) { const first = body.querySelector("input, select, textarea, button"); if (first) first.focus(); }
  });
  const set = (v) => {
    if (include) include.checked = Boolean(v && typeof v === "object");
    inner.set(v);
    sync();
  };
  if (s.default !== undefined && s.default !== null) set(s.default); else sync();
  return {
    node: el("div", { class: "field" }, box), set,
    read(pointer, errors) { return include && !include.checked ? undefined : inner.read(pointer, errors); },
    mark(pointer, errors) { error.show(errors[pointer], pointer); if (!include || include.checked) inner.mark(pointer, errors); },
  };
}

/* Arrays of scalars or of objects: repeatable items with add, remove and move buttons. */
function arrayField(name, s, item, required, root, depth, parts) {
  const optional = !required;
  const list = el("div", { class: "items" });
  const entries = [];
  const objects = !isScalar(item);
  let box = null;
  const error = errorSlot(() => (box ? [box] : []), parts.hint ? parts.hintId : null);
  const relabel = () => entries.forEach((entry, i) => {
    const label = name + " item " + (i + 1);
    if (entry.legend) entry.legend.textContent = label; else entry.widget.control.setAttribute("aria-label", label);
    entry.up.setAttribute("aria-label", `Move item ${i + 1} of ${name} up`); entry.up.disabled = i === 0;
    entry.down.setAttribute("aria-label", `Move item ${i + 1} of ${name} down`); entry.down.disabled = i === entries.length - 1;
    entry.remove.setAttribute("aria-label", "Remove item " + (i + 1) + " of " + name);
  });
  const move = (entry, by, button) => {
    const from = entries.indexOf(entry), to = from + by;
    if (to < 0 || to >= entries.length) return;
    entries.splice(from, 1); entries.splice(to, 0, entry);
    entries.forEach((e) => list.append(e.row));
    relabel();
    (button.disabled ? (by < 0 ? entry.down : entry.up) : button).focus();  // keep the keyboard on the moved item
  };
  const add = (value) => {
    const widget = objects ? buildObject(item.schema, root, depth + 1) : buildField(name, s.items, true, root, depth + 1);
    const entry = { widget };
    entry.up = el("button", { type: "button", class: "small", text: "↑", onclick: () => move(entry, -1, entry.up) });
    entry.down = el("button", { type: "button", class: "small", text: "↓", onclick: () => move(entry, 1, entry.down) });
    entry.remove = el("button", { type: "button", class: "small", text: "✕", onclick: () => {
      const at = entries.indexOf(entry);
      entries.splice(at, 1); entry.row.remove(); relabel();
      const next = entries[Math.min(at, entries.length - 1)];
      (next ? next.remove : addButton).focus();
    } });
    const buttons = el("span", { class: "item-buttons" }, entry.up, entry.down, entry.remove);
    if (objects) {
      entry.legend = el("legend", {});
      entry.row = el("fieldset", { class: "item" }, entry.legend, widget.node, buttons);
    } else {
      const control = widget.control;
      const hold = control.parentElement && control.parentElement.classList.contains("check") ? control.parentElement : control;
      entry.row = el("div", { class: "row" }, hold, buttons);
      entry.error = widget.node.querySelector(".field-error");
      entry.row.append(entry.error);
    }
    entries.push(entry);
    list.append(entry.row);
    relabel();
    if (value !== undefined) widget.set(value);
    return entry;
  };
  const addButton = el("button", { type: "button", class: "small", text: "+ Add item", onclick: () => {
    const entry = add();
    const first = entry.row.querySelector("input, select, textarea");
    (first || entry.remove).focus();
  } });
  box = el("fieldset", { id: parts.id, "data-path": name, class: "array" },
    el("legend", {}, el("span", { class: "field-name", text: name }), " ", parts.reqMark(),
      el("span", { class: "meta", text: " list" + (s.minItems ? " · at least " + s.minItems : "") + (s.maxItems ? " · at most " + s.maxItems : "") }),
      parts.extra ? el("span", { class: "meta", text: " · " + parts.extra }) : null),
    parts.hint, error.node, list, addButton);
  const set = (v) => { entries.splice(0).forEach((e) => e.row.remove()); (Array.isArray(v) ? v : []).forEach((x) => add(x)); relabel(); };
  if (s.default !== undefined) set(s.default);
  return {
    node: el("div", { class: "field" }, box), set,
    read(pointer, errors) {
      const values = [];
      entries.forEach((entry, i) => {
        const at = childPointer(pointer, i);  // as mark() numbers them; an empty item is an error, never skipped silently
        const v = entry.widget.read(at, errors);
        if (v !== undefined) values.push(v);
        else if (errors && !objects) errors[at] = "Empty item: fill it in or remove it";
      });
      if (optional && !values.length && s.default === undefined && !entries.length) return undefined;
      if (errors) {
        if (s.minItems !== undefined && values.length < s.minItems) errors[pointer] = `At least ${s.minItems} item${s.minItems === 1 ? "" : "s"}`;
        if (s.maxItems !== undefined && values.length > s.maxItems) errors[pointer] = `At most ${s.maxItems} items`;
        if (s.uniqueItems && new Set(values.map((v) => JSON.stringify(v))).size < values.length) errors[pointer] = "Items must be unique";
      }
      return values;
    },
    mark(pointer, errors) {
      error.show(errors[pointer], pointer);
      entries.forEach((entry, i) => entry.widget.mark(childPointer(pointer, i), errors));
    },
  };
}

function buildObject(schema, root, depth) {
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([key, sub]) => [key, buildField(key, sub, required.has(key), root, depth)]);
  let extras = {};
  const node = el("div", { class: "object" }, fields.map(([, f]) => f.node));
  if (!fields.length && depth === 0) node.append(el("p", { class: "meta", text: "This tool takes no arguments." }));
  return { node,
    read(pointer, errors) {
      const out = {};
      for (const [key, f] of fields) {
        const at = childPointer(pointer, key);
        const v = f.read(at, errors);
        if (v !== undefined) out[key] = v;
        else if (errors && required.has(key) && !errors[at]) errors[at] = "Required";
      }
      return { ...out, ...extras };
    },
    mark(pointer, errors) { for (const [key, f] of fields) f.mark(childPointer(pointer, key), errors); },
    set(value) {
      const v = value && typeof value === "object" && !Array.isArray(value) ? value : {};
      extras = {};
      for (const key of Object.keys(v)) if (!fields.some(([k]) => k === key)) extras[key] = v[key];
      for (const [key, f] of fields) f.set(v[key]);
    } };
}

/* The server's "Input validation failed:" text (one "- a.0.b: message (code)" line per problem) as
   errors by JSON pointer, for setErrors. */
function validationErrors(text) {
  const errors = {};
  if (!/Input validation failed/.test(String(text || ""))) return errors;
  for (const line of String(text).split("\n")) {
    const m = /^- ([^:]+): (.*?)(?: \([\w.-]+\))?$/.exec(line.trim());
    if (!m) continue;
    const pointer = m[1] === "(root)" ? "" : m[1].split(".").reduce((at, part) => childPointer(at, part), "");
    errors[pointer] = errors[pointer] ? errors[pointer] + "; " + m[2] : m[2];
  }
  return errors;
}

function buildForm(schema, options) {
  const root = schema || {};
  const top = resolve(root, root, 0);
  const form = buildObject(top.schema, root, 0);
  const summary = el("div", { class: "form-summary", role: "alert", hidden: true, tabindex: "-1" });
  const node = el("div", { class: "form-body" }, summary, form.node);
  // The control beside an error: the field's own, or the first one inside an invalid group.
  const controlFor = (slot) => {
    const owner = slot.closest(".row") || slot.closest("fieldset") || slot.closest(".field");
    return owner && (owner.querySelector("input[aria-invalid='true'], select[aria-invalid='true'], textarea[aria-invalid='true']") ||
      owner.querySelector("input, select, textarea, button"));
  };
  function showErrors(errors) {
    form.mark("", errors);
    const keys = Object.keys(errors);
    summary.replaceChildren();
    summary.hidden = !keys.length;
    if (!keys.length) return;
    summary.append(el("p", { text: keys.length === 1 ? "1 field needs attention:" : keys.length + " fields need attention:" }));
    const list = el("ul", {});
    const slots = [...node.querySelectorAll(".field-error:not([hidden])")];
    for (const pointer of keys) {
      const text = pointerText(pointer) + ": " + errors[pointer];
      const slot = slots.find((e) => e.dataset.pointer === pointer);
      // An entry whose field is on screen takes the keyboard there; one without (a server's) is text.
      list.append(el("li", {}, slot ? el("button", { type: "button", class: "link", text, onclick: () => {
        const control = controlFor(slot);
        if (control) control.focus();
      } }) : text));
    }
    summary.append(list);
  }
  const api = {
    node,
    values: () => form.read("", null),
    collect() {
      const errors = {};
      const value = form.read("", errors);
      showErrors(errors);
      if (Object.keys(errors).length) {
        const slot = node.querySelector(".field-error:not([hidden])");
        const control = slot && controlFor(slot);
        (control || summary).focus();
        const error = new Error("Some arguments need attention (see the fields above)");
        error.fieldErrors = errors;
        throw error;
      }
      return value;
    },
    setErrors(errors) { showErrors(errors || {}); },
    set(values) { form.set(values); showErrors({}); },
  };
  if (options && options.values && typeof options.values === "object") form.set(options.values);
  return api;
}
