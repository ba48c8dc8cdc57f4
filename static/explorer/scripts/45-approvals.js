/* ---------- the approver's queue (/approvals) ---------- */
/* Person approvals waiting for a decision, with Approve and Decline. Only an approver's token (or,
   with auth off, a loopback page) gets the list; anyone else's refusal shows nothing. */
async function pendingApprovals() {
  const path = state.config && state.config.approvalsPath;
  if (!path) return null;
  try { return (await getJSON(path)).pending; } catch (error) { return null; }
}

function approvalsCard(entries) {
  const body = entries.length
    ? el("table", { class: "upstreams" },
      el("thead", {}, el("tr", {}, ["tool", "asked by", "arguments (secrets masked)", "decision"].map((t) => el("th", { text: t })))),
      el("tbody", {}, entries.map(approvalRow)))
    : el("p", { class: "meta", text: "No approval is waiting." });
  return el("section", { class: "card", id: "approvals" }, el("h3", { text: "Approvals waiting (approver)" }), body);
}

/* The same form the approval page posts: its decision and the form key the server gave the queue. */
function approvalRow(entry) {
  const status = el("span", { class: "status" });
  const buttons = [];
  const decide = (decision) => async () => {
    buttons.forEach((button) => { button.disabled = true; });
    const body = new URLSearchParams({ decision, form_key: entry.form_key });
    try {
      const response = await fetch(entry.path, { method: "POST", body, headers: authHeaders({}), cache: "no-store" });
      status.textContent = response.ok ? (decision === "approve" ? "approved" : "declined") : "no longer waiting";
    } catch (error) { status.textContent = error.message; }
  };
  buttons.push(el("button", { type: "button", class: "approve", text: "Approve", onclick: decide("approve") }),
    el("button", { type: "button", class: "decline", text: "Decline", onclick: decide("decline") }));
  return el("tr", { "data-tool": entry.tool },
    el("td", {}, el("code", { text: entry.tool })),
    el("td", { text: entry.asked_by }),
    el("td", {}, el("pre", { text: entry.arguments })),
    el("td", {}, buttons, status));
}
