-- wrk script of the capacity workload (bench/wrk.py runs it): every request is the same
-- 2026-07-28 tools/call, every reply is checked, and done() prints one parseable line.
-- Arguments after "--": the tool name, the JSON-RPC body (id 1), a Lua pattern only a correct
-- reply matches (the echoed text as a JSON member).

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  wrk.method = "POST"
  wrk.body = args[2]
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
  wrk.headers["Mcp-Method"] = "tools/call"
  wrk.headers["Mcp-Name"] = args[1]
  expect = args[3]
  replies, non200, bad = 0, 0, 0
end

-- A 200 is correct only with a JSON-RPC result for id 1, isError false and the echoed text: a JSON-RPC
-- error or a tool error inside a 200 counts as a bad reply, not as a call.
function response(status, headers, body)
  replies = replies + 1
  if status ~= 200 then
    non200 = non200 + 1
  elseif not (body:find('"result"%s*:') and body:find('"id"%s*:%s*1[,}]') and body:find(expect))
      or body:find('"isError"%s*:%s*true') then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local replies_all, non200_all, bad_all = 0, 0, 0
  for _, thread in ipairs(threads) do
    replies_all = replies_all + thread:get("replies")
    non200_all = non200_all + thread:get("non200")
    bad_all = bad_all + thread:get("bad")
  end
  local e = summary.errors
  io.write(string.format(
    'WRK-RESULT {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"replies":%d,"non200":%d,"bad":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
    e.status, e.timeout, replies_all, non200_all, bad_all,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
